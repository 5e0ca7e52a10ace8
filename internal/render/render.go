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
	"unicode/utf8"
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

// Size is what a result costs the client in characters: the text content,
// the resource links and the structuredContent. Image data is not counted;
// images have their own budget (artifacts.Budget).
func Size(r *executor.Result, mode string, toon TOONEncoder) int {
	n := utf8.RuneCountInString(Text(r, mode, toon))
	if data, err := json.Marshal(ToStructured(r)); err == nil {
		n += utf8.RuneCount(data)
	}
	for _, f := range r.Files {
		n += utf8.RuneCountInString(f.URI) + utf8.RuneCountInString(f.Name) + utf8.RuneCountInString(f.MIMEType) + utf8.RuneCountInString(f.Description) + 64
	}
	return n
}

// Fit cuts the middle of r's streams until the whole result fits limit
// characters (see Size), keeping the start and end of each stream and
// stating the cut. It reports whether it cut anything. A stream's full text
// is the executor's to keep (it links it as a session file).
func Fit(r *executor.Result, limit int, mode string, toon TOONEncoder) bool {
	size := Size(r, mode, toon)
	if limit <= 0 || size <= limit {
		return false
	}
	out, errs := r.Stdout, r.Stderr
	kept := func(o executor.Output) int { return len(o.Head) + len(o.Tail) }
	// Each kept byte appears about twice (text and structuredContent); start
	// from that estimate and shrink until the measured size fits.
	budget := (kept(out) + kept(errs)) * limit / size
	for range 12 {
		// stderr usually ends in the error: it gets up to half the budget.
		eb := min(kept(errs), budget/2)
		r.Stdout, r.Stderr = shrink(out, budget-eb), shrink(errs, eb)
		if size = Size(r, mode, toon); size <= limit || budget == 0 {
			break
		}
		budget = budget * limit / size * 9 / 10
	}
	return true
}

// shrink keeps at most n bytes of o, three quarters from its start and the
// rest from its end, cut at line ends when one is near and never inside a
// UTF-8 sequence.
func shrink(o executor.Output, n int) executor.Output {
	all := o.Head
	if len(o.Tail) > 0 {
		all = append(append([]byte(nil), o.Head...), o.Tail...)
	}
	if len(all) <= n {
		return o
	}
	headN := n * 3 / 4
	head := all[:headN]
	if i := bytes.LastIndexByte(head, '\n'); i >= headN/2 {
		head = head[:i+1]
	}
	head = trimPartialRune(head)
	var tail []byte
	if tailN := n - len(head); tailN > 0 && len(o.Tail) > 0 {
		tail = o.Tail[max(0, len(o.Tail)-tailN):]
	} else if tailN > 0 {
		tail = all[len(all)-tailN:]
	}
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return executor.Output{Head: head, Tail: tail, Total: o.Total}
}

func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}
