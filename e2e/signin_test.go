package e2e

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/signin/signintest"
)

// TestSignIn drives a remote server behind OAuth as a user would: code's
// call fails with kind auth_required naming the command, `codemode auth
// login` signs in through a (non-interactive) browser and a loopback
// redirect, the same code then succeeds in the running codemode, and
// `codemode auth status` and `logout` report and forget the sign-in.
func TestSignIn(t *testing.T) {
	as := signintest.NewAuthServer(t)
	url := signintest.ProtectedServer(t, as)
	env := []string{writeConfig(t, map[string]any{"remote": map[string]any{"url": url}}), "CODEMODE_STATE_DIR=" + t.TempDir()}
	s := startServer(t, env...)
	code := "try:\n    print((await mcp_remote.whoami()).text)\nexcept runtime.MCPError as e:\n    print(e.kind, e)"

	out := strings.Join(s.stdoutOf(t, code), "\n")
	if !strings.HasPrefix(out, "auth_required ") || !strings.Contains(out, "run `codemode auth login remote`") {
		t.Fatalf("before sign-in: %s", out)
	}

	auth := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(codemodeBin, append([]string{"auth"}, args...)...)
		// The browser: fetch the authorization URL and follow its redirect
		// to codemode's loopback listener, as a user who approves.
		cmd.Env = append(append(baseEnv(t), env...), "BROWSER=curl -sfL -o /dev/null")
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("codemode auth %s: %v\n%s", strings.Join(args, " "), err, got)
		}
		return string(got)
	}
	probe := exec.Command(codemodeBin, "servers", "--probe")
	probe.Env = append(baseEnv(t), env...)
	if got, _ := probe.CombinedOutput(); !strings.Contains(string(got), "sign-in required") {
		t.Fatalf("servers --probe: %s", got)
	}
	if got := auth("login", "remote"); !strings.Contains(got, "To sign in to remote, open this URL") || !strings.Contains(got, "remote: signed in, token expires") {
		t.Fatalf("login: %s", got)
	}
	if out := strings.Join(s.stdoutOf(t, code), "\n"); out != "whoami ok" {
		t.Fatalf("after sign-in: %s", out)
	}
	if got := auth("status"); !strings.HasPrefix(got, "remote: signed in") {
		t.Fatalf("status: %s", got)
	}
	if got := auth("logout", "remote"); got != "signed out of remote\n" {
		t.Fatalf("logout: %s", got)
	}
	if got := auth("status"); got != "remote: not signed in\n" {
		t.Fatalf("status after logout: %s", got)
	}
}
