package e2e

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestAttacksCommand runs `codemode attacks` on the native backend with a
// few attacks: the table goes to stdout, progress to stderr, and the exit
// status says whether anything escaped. (The whole corpus on every backend
// runs in internal/attacks.)
func TestAttacksCommand(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		exit     int
		stdout   []string
		stderrIn string
	}{
		{name: "table", args: []string{"--backends", "native", "--only", "ns-unshare-user,net-tcp-loopback,host-env"}, exit: 0,
			stdout: []string{"| category | attack | native |", "| namespaces | ns-unshare-user | blocked: seccomp EPERM |",
				"| network | net-tcp-loopback | blocked:", "native: 3 blocked, 0 contained, 0 escaped, 0 errors."},
			stderrIn: "3 attacks on native"},
		{name: "list", args: []string{"--list", "--only", "res-fork-bomb"}, exit: 0, stdout: []string{"res-fork-bomb", "EAGAIN"}},
		{name: "unknown attack", args: []string{"--only", "no-such-attack"}, exit: 2, stderrIn: "no attack named no-such-attack"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(codemodeBin, append([]string{"attacks"}, tt.args...)...)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.exit {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.exit, stdout.String(), stderr.String())
			}
			for _, want := range tt.stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
			if !strings.Contains(stderr.String(), tt.stderrIn) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderrIn, stderr.String())
			}
		})
	}
}
