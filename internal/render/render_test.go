package render

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/executor"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

func out(s string) executor.Output { return executor.Output{Head: []byte(s), Total: int64(len(s))} }

// The cases follow the reference project's examples, with its
// bugs fixed: blank lines and "()" are kept, errors carry exitCode.
var cases = []struct {
	name string
	res  executor.Result
}{
	{"success_output_and_stderr", executor.Result{Status: executor.StatusSuccess, ExitCode: executor.Intp(0), Servers: []string{"stub"}, Stdout: out("a\n\nb\n()\n"), Stderr: out("warn\n")}},
	{"success_no_output", executor.Result{Status: executor.StatusSuccess, ExitCode: executor.Intp(0)}},
	{"exception", executor.Result{Status: executor.StatusError, ExitCode: executor.Intp(1), Stdout: out("before\n"), Stderr: out("Traceback (most recent call last):\n  File \"<cell-1>\", line 1, in <module>\nValueError: boom\n"), Error: "ValueError: boom"}},
	{"exception_no_output", executor.Result{Status: executor.StatusError, ExitCode: executor.Intp(1), Error: "NameError: name 'x' is not defined"}},
	{"timeout", executor.Result{Status: executor.StatusTimeout, Stdout: out("partial\n"), TimeoutSeconds: 5, Error: "Execution timed out after 5s"}},
	{"validation", executor.Result{Status: executor.StatusValidationError, Error: "Missing 'code' argument"}},
	{"killed", executor.Result{Status: executor.StatusError, ExitCode: executor.Intp(137), Error: "the sandbox was killed at its memory limit (512 MiB)", StateLost: true,
		Notes: []string{"the session's state was lost (the sandbox was killed at its memory limit (512 MiB)); the next call starts a fresh interpreter"}}},
	{"truncated", executor.Result{Status: executor.StatusSuccess, ExitCode: executor.Intp(0), Stdout: executor.Output{Head: []byte("first line\nsecond"), Tail: []byte(" line\nlast line\n"), Total: 1 << 20}}},
	{"invalid_utf8", executor.Result{Status: executor.StatusSuccess, ExitCode: executor.Intp(0), Stdout: out("ok \xff\xfe end\n")}},
}

func TestGolden(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.res
			st, err := json.MarshalIndent(ToStructured(&r), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got := "-- text --\n" + CompactText(&r) + "\n-- structuredContent --\n" + string(st) + "\n"
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

func TestTextModes(t *testing.T) {
	r := executor.Result{Status: executor.StatusSuccess, ExitCode: executor.Intp(0), Stdout: out("hi\n")}
	if got := Text(&r, "compact", nil); got != "hi" {
		t.Errorf("compact = %q", got)
	}
	got := Text(&r, "toon", func(b []byte) (string, error) { return "ENC " + string(b), nil })
	if !strings.HasPrefix(got, "```toon\nENC {\"status\":\"success\",\"summary\":\"Success\",\"exitCode\":0") || !strings.HasSuffix(got, "\n```") {
		t.Errorf("toon = %q", got)
	}
	if got := Text(&r, "toon", nil); !strings.HasPrefix(got, "```json\n{") {
		t.Errorf("toon without encoder = %q", got)
	}
}
