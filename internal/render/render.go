// Package render turns the outcome of a run_python call into what the MCP
// client receives: a compact text (or a TOON block) for the model and a
// structuredContent object for programs. Field names, the status vocabulary
// and the compact-text rules are the reference project's (see
// ../shared/reference/compat.md §3), with its bugs fixed: blank output lines
// are kept, errors carry exitCode, and truncation is stated explicitly.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Statuses of a call.
const (
	StatusSuccess         = "success"
	StatusError           = "error"
	StatusTimeout         = "timeout"
	StatusValidationError = "validation_error"
)

// Result is everything known about one call.
type Result struct {
	Status         string
	Summary        string // computed by Finish when empty
	ExitCode       *int
	Servers        []string
	Stdout         Output
	Stderr         Output
	Error          string
	TimeoutSeconds int
	Session        string
	StateLost      bool     // the session's interpreter ended during or before this call
	Notes          []string // facts the caller should know (state lost, fresh session, ...)
	Images         []Image  // returned as MCP image content
	Files          []File   // returned as MCP resource links
}

// Image is an image the code returned.
type Image struct {
	MIMEType   string `json:"mimeType"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
	Bytes      int    `json:"bytes"`
	Downscaled bool   `json:"downscaled,omitempty"`
	Name       string `json:"name,omitempty"`
	Data       []byte `json:"-"`
}

// File is a file the code published, readable with resources/read.
type File struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	MIMEType    string `json:"mimeType"`
	Size        int64  `json:"size"`
	Description string `json:"description,omitempty"`
}

// Output is a captured stream, possibly cut in the middle.
type Output struct {
	Head, Tail []byte // Tail is non-empty only when bytes were omitted between them
	Total      int64  // bytes the code wrote
}

// Omitted is the number of bytes not kept.
func (o Output) Omitted() int64 { return o.Total - int64(len(o.Head)+len(o.Tail)) }

// Lines splits the kept text into lines, keeping blank lines and marking
// the cut. A final newline does not make an empty last line.
func (o Output) Lines() []string {
	if o.Total == 0 {
		return nil
	}
	lines := splitLines(o.Head)
	if o.Omitted() > 0 {
		lines = append(lines, fmt.Sprintf("[... %d bytes omitted ...]", o.Omitted()))
		lines = append(lines, splitLines(o.Tail)...)
	}
	return lines
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}

// Intp returns a pointer to n, for Result.ExitCode.
func Intp(n int) *int { return &n }

// Finish fills the summary from the status, as the reference words it.
func (r *Result) Finish() {
	if r.Summary != "" {
		return
	}
	switch r.Status {
	case StatusSuccess:
		if r.Stdout.Total == 0 && r.Stderr.Total == 0 && len(r.Images) == 0 && len(r.Files) == 0 {
			r.Summary = "Success (no output)"
		} else {
			r.Summary = "Success"
		}
	case StatusTimeout:
		r.Summary = fmt.Sprintf("Timeout: execution exceeded %ds", r.TimeoutSeconds)
	case StatusValidationError:
		r.Summary = r.Error
	default:
		r.Summary = "Sandbox error: " + r.Error
	}
}

// Structured is the structuredContent object. Empty fields are omitted;
// keys keep the reference's order.
type Structured struct {
	Status         string      `json:"status"`
	Summary        string      `json:"summary"`
	ExitCode       *int        `json:"exitCode,omitempty"`
	Servers        []string    `json:"servers,omitempty"`
	Stdout         []string    `json:"stdout,omitempty"`
	Stderr         []string    `json:"stderr,omitempty"`
	Error          string      `json:"error,omitempty"`
	TimeoutSeconds int         `json:"timeoutSeconds,omitempty"`
	Session        string      `json:"session,omitempty"`
	Truncated      *Truncation `json:"truncated,omitempty"`
	StateLost      bool        `json:"stateLost,omitempty"`
	Notes          []string    `json:"notes,omitempty"`
	Images         []Image     `json:"images,omitempty"`
	Files          []File      `json:"files,omitempty"`
}

// Truncation reports streams that were cut to the output limit.
type Truncation struct {
	Stdout *StreamCut `json:"stdout,omitempty"`
	Stderr *StreamCut `json:"stderr,omitempty"`
}

// StreamCut describes one cut stream.
type StreamCut struct {
	TotalBytes   int64 `json:"totalBytes"`
	OmittedBytes int64 `json:"omittedBytes"`
}

// Structured builds the structuredContent object.
func (r *Result) Structured() Structured {
	r.Finish()
	s := Structured{
		Status: r.Status, Summary: r.Summary, ExitCode: r.ExitCode, Servers: r.Servers,
		Stdout: r.Stdout.Lines(), Stderr: r.Stderr.Lines(), Error: r.Error,
		TimeoutSeconds: r.TimeoutSeconds, Session: r.Session, StateLost: r.StateLost, Notes: r.Notes,
		Images: r.Images, Files: r.Files,
	}
	cut := func(o Output) *StreamCut {
		if o.Omitted() <= 0 {
			return nil
		}
		return &StreamCut{TotalBytes: o.Total, OmittedBytes: o.Omitted()}
	}
	if so, se := cut(r.Stdout), cut(r.Stderr); so != nil || se != nil {
		s.Truncated = &Truncation{Stdout: so, Stderr: se}
	}
	return s
}

// CompactText renders the text content with the reference's compact rules:
// stdout lines; then "stderr:" and stderr lines; the summary when there is
// no output; "error: ..." when there is no output or the status is not a
// plain error (whose traceback is already in stderr); "exit: N" and
// "status: ..." in front when they are not the happy values.
func (r *Result) CompactText() string {
	r.Finish()
	var lines []string
	lines = append(lines, r.Stdout.Lines()...)
	if r.Stdout.Omitted() > 0 {
		lines = append(lines, fmt.Sprintf("[stdout truncated: %d of %d bytes shown]", r.Stdout.Total-r.Stdout.Omitted(), r.Stdout.Total))
	}
	if stderr := r.Stderr.Lines(); len(stderr) > 0 {
		lines = append(lines, "stderr:")
		lines = append(lines, stderr...)
		if r.Stderr.Omitted() > 0 {
			lines = append(lines, fmt.Sprintf("[stderr truncated: %d of %d bytes shown]", r.Stderr.Total-r.Stderr.Omitted(), r.Stderr.Total))
		}
	}
	for _, img := range r.Images {
		note := ""
		if img.Downscaled {
			note = ", downscaled"
		}
		lines = append(lines, fmt.Sprintf("[image %dx%d %s%s]", img.Width, img.Height, img.MIMEType, note))
	}
	for _, f := range r.Files {
		desc := ""
		if f.Description != "" {
			desc = " — " + f.Description
		}
		lines = append(lines, fmt.Sprintf("[file %s (%d bytes) %s%s]", f.Name, f.Size, f.URI, desc))
	}
	hasOutput := len(lines) > 0
	if !hasOutput {
		lines = append(lines, r.Summary)
	}
	if r.Error != "" && (!hasOutput || r.Status != StatusError) {
		lines = append(lines, "error: "+r.Error)
	}
	for _, n := range r.Notes {
		lines = append(lines, "note: "+n)
	}
	var head []string
	if r.Status != StatusSuccess {
		head = append(head, "status: "+r.Status)
	}
	if r.ExitCode != nil && *r.ExitCode != 0 {
		head = append(head, "exit: "+strconv.Itoa(*r.ExitCode))
	}
	text := strings.Join(append(head, lines...), "\n")
	if text == "" {
		return StatusSuccess
	}
	return text
}

// TOONEncoder encodes JSON (keeping key order) as TOON.
type TOONEncoder func(jsonData []byte) (string, error)

// Text renders the text content for an output mode ("compact" or "toon").
// TOON mode is a fenced ```toon block of the structured payload, as the
// reference does; if encoding fails it falls back to a JSON block.
func (r *Result) Text(mode string, toon TOONEncoder) string {
	if mode != "toon" {
		return r.CompactText()
	}
	data, err := json.Marshal(r.Structured())
	if err != nil {
		return r.CompactText()
	}
	if toon != nil {
		if enc, err := toon(data); err == nil {
			return "```toon\n" + enc + "\n```"
		}
	}
	var pretty bytes.Buffer
	json.Indent(&pretty, data, "", "  ")
	return "```json\n" + pretty.String() + "\n```"
}
