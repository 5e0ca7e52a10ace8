package testenv

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestShortModeChild is what TestShortMode runs in a child test binary;
// run directly, it does nothing.
func TestShortModeChild(t *testing.T) {
	switch os.Getenv("CODEMODE_TESTENV_CHILD") {
	case "missing":
		Missing(t, "thing", "not here")
	case "python":
		Python(t)
	case "slow":
		Slow(t, "the thing suite")
	default:
		t.Skip("run by TestShortMode")
	}
}

// TestShortMode checks what a missing prerequisite and a slow suite do
// with and without -short: the full run fails on what is missing, -short
// skips it, and both say why.
func TestShortMode(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	tests := []struct {
		name  string
		short bool
		env   []string
		want  string // PASS, FAIL or SKIP
		says  string
	}{
		{"missing", false, []string{"CODEMODE_TESTENV_CHILD=missing"}, "FAIL", "CODEMODE_TEST_ALLOW_MISSING=thing"},
		{"missing short", true, []string{"CODEMODE_TESTENV_CHILD=missing"}, "SKIP", "skipped under -short"},
		{"missing allowed", false, []string{"CODEMODE_TESTENV_CHILD=missing", "CODEMODE_TEST_ALLOW_MISSING=node,thing"}, "SKIP", "allowed by CODEMODE_TEST_ALLOW_MISSING"},
		{"python override", false, []string{"CODEMODE_TESTENV_CHILD=python", "CODEMODE_TEST_PYTHON=/bin/sh"}, "PASS", ""},
		{"python override missing", false, []string{"CODEMODE_TESTENV_CHILD=python", "CODEMODE_TEST_PYTHON=" + empty + "/python3"}, "FAIL", "prerequisite python3 missing"},
		{"python override missing short", true, []string{"CODEMODE_TESTENV_CHILD=python", "CODEMODE_TEST_PYTHON=" + empty + "/python3"}, "SKIP", "prerequisite python3 missing"},
		{"python not in PATH short", true, []string{"CODEMODE_TESTENV_CHILD=python", "PATH=" + empty}, "SKIP", "prerequisite python3 missing"},
		{"slow", false, []string{"CODEMODE_TESTENV_CHILD=slow"}, "PASS", ""},
		{"slow short", true, []string{"CODEMODE_TESTENV_CHILD=slow"}, "SKIP", "-short skips the thing suite; " + FullSuite + " runs it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"-test.run", "^TestShortModeChild$", "-test.v"}
			if tt.short {
				args = append(args, "-test.short")
			}
			cmd := exec.CommandContext(t.Context(), self, args...)
			cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
				return strings.HasPrefix(kv, "CODEMODE_TEST_ALLOW_MISSING=") || strings.HasPrefix(kv, "CODEMODE_TEST_PYTHON=")
			}), tt.env...)
			out, _ := cmd.CombinedOutput()
			if !strings.Contains(string(out), "--- "+tt.want+": TestShortModeChild") || !strings.Contains(string(out), tt.says) {
				t.Errorf("child run = \n%s\nwant %s saying %q", out, tt.want, tt.says)
			}
		})
	}
}
