package render

import (
	"encoding/json"
	"flag"
	"fmt"
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

// TestFitBoundsTheWholeResult checks that any output, once fitted, costs at
// most the limit in characters (text, links and structuredContent), keeps
// the start and end of each stream and states the cut.
func TestFitBoundsTheWholeResult(t *testing.T) {
	var rows strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&rows, `{"id": %d, "name": "row %d", "tags": ["a\tb", "ü"]},`+"\n", i, i)
	}
	tests := []struct {
		name           string
		stdout, stderr string
	}{
		{"5MB one line", strings.Repeat("x", 5<<20), ""},
		{"5MB lines", strings.Repeat("line of output\n", 5<<20/15), ""},
		{"2000-row JSON dump", rows.String(), ""},
		{"control characters", strings.Repeat("\x01\x02", 50000), ""},
		{"stdout and traceback", strings.Repeat("row\n", 100000), strings.Repeat("  File \"<cell-1>\", line 1\n", 4000) + "ValueError: boom\n"},
		{"multi-byte", strings.Repeat("日本語テキスト\n", 50000), ""},
	}
	for _, mode := range []string{"compact", "toon"} {
		for _, tc := range tests {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				r := executor.Result{Status: executor.StatusSuccess, ExitCode: executor.Intp(0), Stdout: out(tc.stdout), Stderr: out(tc.stderr),
					Files: []executor.File{{URI: "codemode://session/x/output/stdout-1.txt", Name: "output/stdout-1.txt", MIMEType: "text/plain", Size: int64(len(tc.stdout)), Description: "the full stdout of this call"}}}
				if !Fit(&r, 24000, mode, nil) {
					t.Fatal("nothing was cut")
				}
				if n := Size(&r, mode, nil); n > 24000 {
					t.Fatalf("fitted result is %d characters", n)
				}
				text := CompactText(&r)
				if !strings.HasPrefix(tc.stdout, string(r.Stdout.Head[:10])) || !strings.HasSuffix(tc.stdout, string(r.Stdout.Tail)) {
					t.Errorf("stdout lost its start or end")
				}
				if !strings.Contains(text, "[stdout truncated: ") || !strings.Contains(text, "bytes omitted ...]") {
					t.Errorf("the cut is not stated:\n%s", text[:min(len(text), 400)])
				}
				if tc.stderr != "" && !strings.Contains(text, "ValueError: boom") {
					t.Errorf("the error at the end of stderr was cut")
				}
			})
		}
	}
	small := executor.Result{Status: executor.StatusSuccess, Stdout: out("hi\n")}
	if Fit(&small, 24000, "compact", nil) || Fit(&small, 0, "compact", nil) {
		t.Error("a small result was cut")
	}
}

// TestFitGolden shows what a model receives for long output: head and tail,
// the cut stated twice (in place and at the end), and the link to the rest.
func TestFitGolden(t *testing.T) {
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	r := executor.Result{Status: executor.StatusSuccess, ExitCode: executor.Intp(0), Stdout: out(b.String()),
		Files: []executor.File{{URI: "codemode://session/s1/output/stdout-1.txt", Name: "output/stdout-1.txt", MIMEType: "text/plain", Size: int64(b.Len()), Description: "the full stdout of this call (48890 bytes)"}}}
	Fit(&r, 1500, "compact", nil)
	st, _ := json.MarshalIndent(ToStructured(&r), "", "  ")
	got := "-- text --\n" + CompactText(&r) + "\n-- structuredContent --\n" + string(st) + "\n"
	path := filepath.Join("testdata", "fitted.golden")
	if *update {
		os.WriteFile(path, []byte(got), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
