package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/audit"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), args, IO{Stdout: &stdout, Stderr: &stderr, Home: t.TempDir(), Cwd: t.TempDir()})
	return code, stdout.String(), stderr.String()
}

func TestPolicyCommands(t *testing.T) {
	dir := t.TempDir()
	starter := filepath.Join(dir, "policy.toml")
	broken := filepath.Join(dir, "broken.toml")
	os.WriteFile(broken, []byte("default = \"allow\"\n[[rules]]\ntool = \"x\"\ndecision = \"dney\"\n"), 0o644)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
	}{
		{"init writes the starter", []string{"policy", "init", starter}, 0, ""},
		{"init never overwrites", []string{"policy", "init", starter}, 1, ""},
		{"check the starter", []string{"policy", "check", starter}, 0, "ok; policy: default allow; 1 rule (1 ask)"},
		{"check names the line", []string{"policy", "check", broken}, 1, `line 4: rules[0].decision: invalid decision "dney"`},
		{"explain a destructive tool", []string{"policy", "explain", starter, "--server", "fs", "--tool", "delete", "--annotations", `{"destructiveHint":true}`}, 0, "decision: ask\nrule: rules[0]"},
		{"explain a read-only tool", []string{"policy", "explain", starter, "--server", "fs", "--tool", "read", "--annotations", `{"readOnlyHint":true}`}, 0, "decision: allow"},
		{"explain needs a tool", []string{"policy", "explain", starter, "--server", "fs"}, 2, ""},
		{"unknown subcommand", []string{"policy", "frobnicate"}, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.wantCode || !strings.Contains(stdout, tc.wantStdout) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d with %q", code, stdout, stderr, tc.wantCode, tc.wantStdout)
			}
		})
	}
}

func TestAuditVerifyCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"read", "write", "delete"} {
		if err := l.Append(context.Background(), audit.Record{Kind: audit.KindDecision, Server: "fs", Tool: tool, Decision: audit.DecisionAllow, Rule: "default"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, "audit", "verify", path); code != 0 || !strings.HasPrefix(stdout, "ok: 3 records") {
		t.Fatalf("intact log: exit %d, %q %q", code, stdout, stderr)
	}
	data, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(data, []byte(`"tool":"write"`), []byte(`"tool":"wrote"`), 1), 0o644)
	if code, stdout, _ := runCLI(t, "audit", "verify", path); code != 1 || !strings.Contains(stdout, "audit.log:3:") {
		t.Fatalf("edited line 2: exit %d, %q; want exit 1 naming line 3 (the record after the edit)", code, stdout)
	}
	if code, _, _ := runCLI(t, "audit"); code != 2 {
		t.Fatalf("audit without verify: exit %d", code)
	}
}
