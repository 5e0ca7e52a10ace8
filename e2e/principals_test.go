package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectAnswering opens a stateful MCP session for token whose client
// answers elicitations as e says.
func (h *httpServer) connectAnswering(t *testing.T, token string, e *elicitor) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "handles-e2e", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: e.handle})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: h.url,
		HTTPClient: &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}}, &mcp.ClientSessionOptions{ProtocolVersion: statefulProtocol})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestHTTPApprovalsFollowTheSession: "allow for the rest of the session"
// belongs to the principal's named session, not to the connection: a
// reconnection of the same principal is not asked again, another principal
// using the same name is, and closing the session forgets the approval.
func TestHTTPApprovalsFollowTheSession(t *testing.T) {
	root, config := policyServers(t)
	h := startHTTP(t, config, policyFile("ask.toml"), "CODEMODE_APPROVAL_TIMEOUT=5s")
	write := func(cs *mcp.ClientSession, file string) string {
		t.Helper()
		st := callArgs(t, cs, map[string]any{"session": "work", "code": fmt.Sprintf(
			"try:\n    await mcp_fs.write_file(path=%q, content='x')\n    print('ok')\nexcept runtime.MCPError as e:\n    print(e.kind)", filepath.Join(root, file))})
		return strings.Join(lines(st["stdout"]), "\n")
	}

	e := &elicitor{}
	e.set(reply("accept", map[string]any{"approve": true, "remember": true}))
	first := h.connectAnswering(t, aliceToken, e)
	if got := write(first, "one.txt"); got != "ok" || len(e.since(0)) != 1 {
		t.Fatalf("approved and remembered: %q after %d questions", got, len(e.since(0)))
	}
	first.Close()

	declines := &elicitor{}
	declines.set(reply("decline", nil))
	again := h.connectAnswering(t, aliceToken, declines)
	defer again.Close()
	if got := write(again, "two.txt"); got != "ok" || len(declines.since(0)) != 0 {
		t.Errorf("alice reconnected: %q after %d questions, want the remembered approval", got, len(declines.since(0)))
	}

	bobAsked := &elicitor{}
	bobAsked.set(reply("decline", nil))
	bob := h.connectAnswering(t, bobToken, bobAsked)
	defer bob.Close()
	if got := write(bob, "bob.txt"); got != "denied" || len(bobAsked.since(0)) != 1 {
		t.Errorf("bob's session named like alice's: %q after %d questions, want asked and denied", got, len(bobAsked.since(0)))
	}

	if st := callArgs(t, again, map[string]any{"session": "work", "close": true}); st["status"] != "success" {
		t.Fatalf("close: %v", st)
	}
	if got := write(again, "three.txt"); got != "denied" || len(declines.since(0)) != 1 {
		t.Errorf("after close: %q after %d questions, want asked again", got, len(declines.since(0)))
	}
}

// TestHTTPSessionFilesFollowThePrincipal: files a named session publishes
// are its principal's: readable from a later connection of the same
// principal, never by another principal.
func TestHTTPSessionFilesFollowThePrincipal(t *testing.T) {
	h := startHTTP(t, "CODEMODE_SPARES=0")
	first, err := h.connect(t, aliceToken)
	if err != nil {
		t.Fatal(err)
	}
	res, err := first.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
		"session": "work", "code": "import os\nos.makedirs('out', exist_ok=True)\nopen('out/r.txt', 'w').write('alice data')"}})
	if err != nil {
		t.Fatal(err)
	}
	ls := links(res)
	if len(ls) != 1 {
		t.Fatalf("want one resource link, got %s", text(res))
	}
	uri := ls[0].URI
	first.Close()

	again, err := h.connect(t, aliceToken)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	r, err := again.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
	if err != nil || r.Contents[0].Text != "alice data" {
		t.Errorf("alice's new connection reads %s: %v %v", uri, r, err)
	}
	bob, err := h.connect(t, bobToken)
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	if _, err := bob.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri}); err == nil {
		t.Errorf("bob read alice's file %s", uri)
	}
}

// TestHTTPStatelessApproval: a sessionless (2026-07-28) client is asked
// inside results (multi round trip); the run that minted a handle returns
// it once the question is answered, and the handle then works.
func TestHTTPStatelessApproval(t *testing.T) {
	root, config := policyServers(t)
	h := startHTTP(t, config, policyFile("ask.toml"), "CODEMODE_APPROVAL_TIMEOUT=5s", "CODEMODE_SPARES=0")
	e := &elicitor{}
	e.set(reply("accept", map[string]any{"approve": true}))
	client := mcp.NewClient(&mcp.Implementation{Name: "handles-e2e", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: e.handle})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: h.url,
		HTTPClient: &http.Client{Transport: bearer{token: aliceToken, base: http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s", v)
	}
	st := callArgs(t, cs, map[string]any{"code": fmt.Sprintf(
		"x = 5\ntry:\n    await mcp_fs.write_file(path=%q, content='x')\n    print('ok')\nexcept runtime.MCPError as e:\n    print(e.kind)", filepath.Join(root, "s.txt"))})
	handle, _ := st["session"].(string)
	if got := strings.Join(lines(st["stdout"]), ""); got != "ok" || len(e.since(0)) != 1 || !handleName.MatchString(handle) {
		t.Fatalf("stateless ask: %q after %d questions, session %q: %v", got, len(e.since(0)), handle, st)
	}
	if st := callArgs(t, cs, map[string]any{"code": "print(x)", "session": handle}); strings.Join(lines(st["stdout"]), "") != "5" {
		t.Errorf("the handle minted by an asking call: %v", st)
	}
}

// TestStdioSessionsAndClose: over stdio the one local user's named
// sessions and the connection's default session are separate, close ends a
// named session (its state is gone when the name is used again), and a
// close-only call of the default session works without code.
func TestStdioSessionsAndClose(t *testing.T) {
	s := startServer(t)
	out := func(args map[string]any) string {
		t.Helper()
		st := structured(t, s.call(t, args))
		if st["status"] != nil && st["status"] != "success" {
			t.Fatalf("%v: %v", args, st)
		}
		return strings.Join(lines(st["stdout"]), "\n")
	}
	out(map[string]any{"code": "d = 'default'"})
	out(map[string]any{"code": "n = 'named'", "session": "work"})
	if got := out(map[string]any{"code": "print('d' in globals(), n)", "session": "work"}); got != "False named" {
		t.Errorf("named session: %q", got)
	}
	if got := out(map[string]any{"code": "print(n)", "session": "work", "close": true}); got != "named" {
		t.Errorf("run then close: %q", got)
	}
	if got := out(map[string]any{"code": "print('n' in globals())", "session": "work"}); got != "False" {
		t.Errorf("a closed session's name starts afresh: %q", got)
	}
	out(map[string]any{"close": true})
	if got := out(map[string]any{"code": "print('d' in globals())"}); got != "False" {
		t.Errorf("the default session after close: %q", got)
	}
}

// TestHTTPStatefulCloseAndDefault: over a stateful connection, close ends
// a named session (its sandbox goes), and the connection's default session
// is not the principal's named one.
func TestHTTPStatefulCloseAndDefault(t *testing.T) {
	h := startHTTP(t, "CODEMODE_SPARES=0")
	cs, err := h.connect(t, aliceToken)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	callArgs(t, cs, map[string]any{"session": "default", "code": "named = 1"})
	if st := callArgs(t, cs, map[string]any{"code": "print('named' in globals())"}); strings.Join(lines(st["stdout"]), "") != "False" {
		t.Errorf("the connection's default session sees the principal's session named default: %v", st)
	}
	waitSandboxes(t, h, 2)
	if st := callArgs(t, cs, map[string]any{"session": "default", "close": true, "code": "print(named)"}); strings.Join(lines(st["stdout"]), "") != "1" {
		t.Errorf("close with code: %v", st)
	}
	waitSandboxes(t, h, 1)
	// A stateless call has no default session: close without session has
	// nothing to close, and says so (rather than naming a handle it
	// minted); with code it is a one-off run that leaves no sandbox.
	if st := postCall(t, h, aliceToken, map[string]any{"close": true}); st["status"] != "validation_error" || !strings.Contains(st["error"].(string), "'close' needs 'session'") {
		t.Errorf("stateless close without session: %v", st)
	}
	if st := postCall(t, h, aliceToken, map[string]any{"close": true, "code": "print(6 * 7)"}); strings.Join(lines(st["stdout"]), "") != "42" || strings.Contains(strings.Join(lines(st["notes"]), ""), "to keep its state") {
		t.Errorf("stateless one-off run: %v", st)
	}
	waitSandboxes(t, h, 1)
}
