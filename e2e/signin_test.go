package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/signin/signintest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	probe = exec.Command(codemodeBin, "servers", "--probe")
	probe.Env = append(baseEnv(t), env...)
	if got, _ := probe.CombinedOutput(); !strings.Contains(string(got), "running (2 tools); signed in, token expires") {
		t.Fatalf("servers --probe after sign-in: %s", got)
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

// TestSignInThroughClient: served over stdio to a client that can open
// URLs (URL-mode elicitation), a call that needs sign-in shows the user
// the authorization URL and completes once they approve, with no command.
func TestSignInThroughClient(t *testing.T) {
	// 2025-11-25: the question is a request of its own; newest: it travels
	// in run_python's result.
	for _, protocol := range []string{"2025-11-25", ""} {
		t.Run("protocol "+protocol, func(t *testing.T) { signInThroughClient(t, protocol) })
	}
}

func signInThroughClient(t *testing.T, protocol string) {
	as := signintest.NewAuthServer(t)
	url := signintest.ProtectedServer(t, as)
	env := []string{writeConfig(t, map[string]any{"remote": map[string]any{"url": url}}), "CODEMODE_STATE_DIR=" + t.TempDir()}
	var asked []string
	completed := make(chan string, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "url-e2e", Version: "1"}, &mcp.ClientOptions{
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			completed <- req.Params.ElicitationID
		},
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.ElicitationID+" "+req.Params.Message)
			signintest.Browser(ctx, req.Params.URL) // the user opens the link and approves
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	s := startWithClient(t, client, &mcp.ClientSessionOptions{ProtocolVersion: protocol}, env...)
	if out := strings.Join(s.stdoutOf(t, "print((await mcp_remote.whoami()).text)"), "\n"); out != "whoami ok" {
		t.Fatalf("call: %s", out)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "sign in to remote") {
		t.Fatalf("asked: %q", asked)
	}
	select {
	case id := <-completed:
		if !strings.HasPrefix(asked[0], id+" ") {
			t.Fatalf("completed %q, asked %q", id, asked[0])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client was not told the sign-in completed")
	}
}
