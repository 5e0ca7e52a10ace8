package render

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

func out(s string) Output { return Output{Head: []byte(s), Total: int64(len(s))} }

// The cases follow the reference's examples (compat.md §3.1), with its
// bugs fixed: blank lines and "()" are kept, errors carry exitCode.
var cases = []struct {
	name string
	res  Result
}{
	{"success_output_and_stderr", Result{Status: StatusSuccess, ExitCode: Intp(0), Servers: []string{"stub"}, Stdout: out("a\n\nb\n()\n"), Stderr: out("warn\n")}},
	{"success_no_output", Result{Status: StatusSuccess, ExitCode: Intp(0)}},
	{"exception", Result{Status: StatusError, ExitCode: Intp(1), Stdout: out("before\n"), Stderr: out("Traceback (most recent call last):\n  File \"<cell-1>\", line 1, in <module>\nValueError: boom\n"), Error: "ValueError: boom"}},
	{"exception_no_output", Result{Status: StatusError, ExitCode: Intp(1), Error: "NameError: name 'x' is not defined"}},
	{"timeout", Result{Status: StatusTimeout, Stdout: out("partial\n"), TimeoutSeconds: 5, Error: "Execution timed out after 5s"}},
	{"validation", Result{Status: StatusValidationError, Error: "Missing 'code' argument"}},
	{"killed", Result{Status: StatusError, ExitCode: Intp(137), Error: "the sandbox was killed at its memory limit (512 MiB)", StateLost: true,
		Notes: []string{"the session's state was lost (the sandbox was killed at its memory limit (512 MiB)); the next call starts a fresh interpreter"}}},
	{"truncated", Result{Status: StatusSuccess, ExitCode: Intp(0), Stdout: Output{Head: []byte("first line\nsecond"), Tail: []byte(" line\nlast line\n"), Total: 1 << 20}}},
	{"invalid_utf8", Result{Status: StatusSuccess, ExitCode: Intp(0), Stdout: out("ok \xff\xfe end\n")}},
}

func TestGolden(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.res
			st, err := json.MarshalIndent(r.Structured(), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got := "-- text --\n" + r.CompactText() + "\n-- structuredContent --\n" + string(st) + "\n"
			path := filepath.Join("testdata", tc.name+".golden")
			if *update {
				os.MkdirAll("testdata", 0o755)
				os.WriteFile(path, []byte(got), 0o644)
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSummaries(t *testing.T) {
	for status, want := range map[string]string{StatusSuccess: "Success (no output)", StatusTimeout: "Timeout: execution exceeded 7s",
		StatusValidationError: "bad", StatusError: "Sandbox error: bad"} {
		r := Result{Status: status, Error: "bad", TimeoutSeconds: 7}
		r.Finish()
		if r.Summary != want {
			t.Errorf("summary for %s = %q, want %q", status, r.Summary, want)
		}
	}
}

func TestTextModes(t *testing.T) {
	r := Result{Status: StatusSuccess, ExitCode: Intp(0), Stdout: out("hi\n")}
	if got := r.Text("compact", nil); got != "hi" {
		t.Errorf("compact = %q", got)
	}
	got := r.Text("toon", func(b []byte) (string, error) { return "ENC " + string(b), nil })
	if !strings.HasPrefix(got, "```toon\nENC {\"status\":\"success\",\"summary\":\"Success\",\"exitCode\":0") || !strings.HasSuffix(got, "\n```") {
		t.Errorf("toon = %q", got)
	}
	if got := r.Text("toon", nil); !strings.HasPrefix(got, "```json\n{") {
		t.Errorf("toon without encoder = %q", got)
	}
}
