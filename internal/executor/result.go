package executor

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/codemode/codemode/internal/artifacts"
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
	StateLost      bool              // the session's interpreter ended during or before this call
	Notes          []string          // facts the caller should know (state lost, fresh session, ...)
	Images         []artifacts.Image // returned as MCP image content
	Files          []File            // returned as MCP resource links
	ToolCalls      int64             // tool calls the code made (for the log)
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
