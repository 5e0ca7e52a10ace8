package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/app"
)

// The help texts list every backend of the table with its summary.
func TestHelpListsBackends(t *testing.T) {
	tests := []struct {
		args   []string
		stderr bool // the flag package prints -h to stderr
	}{
		{args: []string{"help"}},
		{args: []string{"--help"}, stderr: true}, // serve's flags
		{args: []string{"serve", "-h"}, stderr: true},
		{args: []string{"run", "-h"}, stderr: true},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Run(t.Context(), tc.args, IO{Stdout: &stdout, Stderr: &stderr, Home: t.TempDir(), Cwd: t.TempDir()}); code != 0 {
				t.Fatalf("exit %d\nstderr: %s", code, stderr.String())
			}
			out := stdout.String()
			if tc.stderr {
				out = stderr.String()
			}
			for _, c := range app.BackendChoices() {
				if !strings.Contains(out, c.Name) || !strings.Contains(out, c.Summary) {
					t.Errorf("help lacks backend %s (%s):\n%s", c.Name, c.Summary, out)
				}
			}
		})
	}
}
