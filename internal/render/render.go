// Package render turns the outcome of a run_python call (an
// executor.Result) into what the MCP client receives: a compact text (or a
// TOON block) for the model and a structuredContent object for programs.
// Field names, the status vocabulary and the compact-text rules are the
// reference project's, with its bugs fixed: blank output lines are kept,
// errors carry exitCode, and truncation is stated explicitly.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/codemode/codemode/internal/artifacts"
	"github.com/codemode/codemode/internal/executor"
	"strconv"
	"strings"
)

// Structured is the structuredContent object. Empty fields are omitted;
// keys keep the reference's order.
type Structured struct {
	Status         string            `json:"status"`
	Summary        string            `json:"summary"`
	ExitCode       *int              `json:"exitCode,omitempty"`
	Servers        []string          `json:"servers,omitempty"`
	Stdout         []string          `json:"stdout,omitempty"`
	Stderr         []string          `json:"stderr,omitempty"`
	Error          string            `json:"error,omitempty"`
	TimeoutSeconds int               `json:"timeoutSeconds,omitempty"`
	Session        string            `json:"session,omitempty"`
	Truncated      *Truncation       `json:"truncated,omitempty"`
	StateLost      bool              `json:"stateLost,omitempty"`
	Notes          []string          `json:"notes,omitempty"`
	Images         []artifacts.Image `json:"images,omitempty"`
	Files          []executor.File   `json:"files,omitempty"`
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

// ToStructured builds the structuredContent object.
func ToStructured(r *executor.Result) Structured {
	r.Finish()
	s := Structured{
		Status: r.Status, Summary: r.Summary, ExitCode: r.ExitCode, Servers: r.Servers,
		Stdout: r.Stdout.Lines(), Stderr: r.Stderr.Lines(), Error: r.Error,
		TimeoutSeconds: r.TimeoutSeconds, Session: r.Session, StateLost: r.StateLost, Notes: r.Notes,
		Images: r.Images, Files: r.Files,
	}
	cut := func(o executor.Output) *StreamCut {
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
func CompactText(r *executor.Result) string {
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
	if r.Error != "" && (!hasOutput || r.Status != executor.StatusError) {
		lines = append(lines, "error: "+r.Error)
	}
	for _, n := range r.Notes {
		lines = append(lines, "note: "+n)
	}
	var head []string
	if r.Status != executor.StatusSuccess {
		head = append(head, "status: "+r.Status)
	}
	if r.ExitCode != nil && *r.ExitCode != 0 {
		head = append(head, "exit: "+strconv.Itoa(*r.ExitCode))
	}
	text := strings.Join(append(head, lines...), "\n")
	if text == "" {
		return executor.StatusSuccess
	}
	return text
}

// TOONEncoder encodes JSON (keeping key order) as TOON.
type TOONEncoder func(jsonData []byte) (string, error)

// Text renders the text content for an output mode ("compact" or "toon").
// TOON mode is a fenced ```toon block of the structured payload, as the
// reference does; if encoding fails it falls back to a JSON block.
func Text(r *executor.Result, mode string, toon TOONEncoder) string {
	if mode != "toon" {
		return CompactText(r)
	}
	data, err := json.Marshal(ToStructured(r))
	if err != nil {
		return CompactText(r)
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
