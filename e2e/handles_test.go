package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// handleName is the shape of the session handles codemode mints.
var handleName = regexp.MustCompile(`^h-[0-9a-f]{32}$`)

// callArgs calls run_python with arguments over an SDK client session.
func callArgs(t *testing.T, cs *mcp.ClientSession, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_python", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return structured(t, res)
}

// postCall sends one run_python call as a bare 2026-07-28 request: no
// initialize, no Mcp-Session-Id, everything the server needs in the request.
func postCall(t *testing.T, h *httpServer, token string, args map[string]any) map[string]any {
	t.Helper()
	res, err := tryPostCall(t, h, token, args)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// tryPostCall is postCall, returning what went wrong instead of failing.
func tryPostCall(t *testing.T, h *httpServer, token string, args map[string]any) (map[string]any, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": "run_python", "arguments": args,
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw-e2e", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		},
	}})
	req, _ := http.NewRequestWithContext(t.Context(), "POST", h.url, strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "run_python")
	client := http.DefaultClient
	if h.client != nil {
		client = h.client
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") != "" {
		return nil, fmt.Errorf("stateless call: status %d, Mcp-Session-Id %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
	}
	// The answer is an SSE stream (or plain JSON) ending with the response.
	var msg struct {
		Result *struct {
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"result"`
		Error *struct{ Message string } `json:"error"`
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data: ")
		if strings.HasPrefix(line, "{") && strings.Contains(line, `"id":1`) {
			if err := json.Unmarshal([]byte(line), &msg); err != nil {
				return nil, err
			}
		}
	}
	if msg.Error != nil || msg.Result == nil {
		return nil, fmt.Errorf("stateless call: error %+v", msg.Error)
	}
	return msg.Result.StructuredContent, nil
}

func waitSandboxes(t *testing.T, h *httpServer, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for sandboxes(h.cmd.Process.Pid) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d sandboxes after 30 s, want %d", sandboxes(h.cmd.Process.Pid), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestHTTPSessionsBelongToPrincipals: a named session is its principal's,
// not its connection's: alice reaches it again from a new MCP session,
// bob's session of the same name is another interpreter, and a
// connection's default session stays that connection's.
func TestHTTPSessionsBelongToPrincipals(t *testing.T) {
	h := startHTTP(t)
	first, err := h.connect(t, aliceToken)
	if err != nil {
		t.Fatal(err)
	}
	callArgs(t, first, map[string]any{"code": "x = 'alice-state'", "session": "work"})
	callArgs(t, first, map[string]any{"code": "y = 'first-connection'"})
	first.Close()

	again, err := h.connect(t, aliceToken)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.ID() == first.ID() {
		t.Fatal("the reconnection reused the MCP session id")
	}
	if st := callArgs(t, again, map[string]any{"code": "print(x)", "session": "work"}); !slices.Equal(lines(st["stdout"]), []string{"alice-state"}) {
		t.Errorf("alice's named session after reconnecting: %v", st)
	}
	if st := callArgs(t, again, map[string]any{"code": "print('y' in globals())"}); !slices.Equal(lines(st["stdout"]), []string{"False"}) {
		t.Errorf("a new connection's default session: %v", st)
	}
	bob, err := h.connect(t, bobToken)
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	if st := callArgs(t, bob, map[string]any{"code": "print('x' in globals())", "session": "work"}); !slices.Equal(lines(st["stdout"]), []string{"False"}) {
		t.Errorf("bob's session named like alice's: %v", st)
	}
	if st := callArgs(t, again, map[string]any{"code": "print(x)", "session": "work"}); !slices.Equal(lines(st["stdout"]), []string{"alice-state"}) {
		t.Errorf("alice's session after bob used the name: %v", st)
	}
}

// TestHTTPStatelessHandles: 2026-07-28 requests carry no MCP session; a
// call without `session` gets a handle that later requests (bare POSTs or
// an SDK client speaking that revision) pass back. Another principal cannot
// use the handle, and closing it ends its sandbox.
func TestHTTPStatelessHandles(t *testing.T) {
	h := startHTTP(t, "CODEMODE_SPARES=0")
	st := postCall(t, h, aliceToken, map[string]any{"code": "x = 7"})
	handle, _ := st["session"].(string)
	if st["status"] != "success" || !handleName.MatchString(handle) {
		t.Fatalf("first stateless call: %v", st)
	}
	if notes := strings.Join(lines(st["notes"]), "\n"); !strings.Contains(notes, `"session": "`+handle+`"`) {
		t.Errorf("the result does not tell the model its handle: %q", notes)
	}
	if st := postCall(t, h, aliceToken, map[string]any{"code": "print(x * 6)", "session": handle}); !slices.Equal(lines(st["stdout"]), []string{"42"}) {
		t.Errorf("second stateless call with the handle: %v", st)
	}
	if st := postCall(t, h, aliceToken, map[string]any{"code": "print('x' in globals())"}); !slices.Equal(lines(st["stdout"]), []string{"False"}) || st["session"] == handle {
		t.Errorf("a call without the handle reached its session: %v", st)
	}
	if st := postCall(t, h, bobToken, map[string]any{"code": "print(x)", "session": handle}); st["status"] != "error" || !strings.Contains(st["error"].(string), "no such session") {
		t.Errorf("bob used alice's handle: %v", st)
	}

	// The SDK client asks for the newest revision, and gets it.
	cs, err := h.connectVersion(t, aliceToken, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Errorf("the SDK client negotiated %s", v)
	}
	if st := callArgs(t, cs, map[string]any{"code": "print(x)", "session": handle}); !slices.Equal(lines(st["stdout"]), []string{"7"}) {
		t.Errorf("SDK client with the handle: %v", st)
	}

	waitSandboxes(t, h, 2) // the handle's and the one of the call without it
	if st := postCall(t, h, aliceToken, map[string]any{"session": handle, "close": true}); st["status"] != "success" {
		t.Fatalf("close: %v", st)
	}
	waitSandboxes(t, h, 1)
	if st := postCall(t, h, aliceToken, map[string]any{"code": "1", "session": handle}); st["status"] != "error" || !strings.Contains(st["error"].(string), "no such session") {
		t.Errorf("the closed handle still answers: %v", st)
	}
}

// TestHTTPSessionsExpireIdle: a session nobody calls ends after
// --idle-timeout, sandbox and all, whoever owned it; its handle is then
// unknown.
func TestHTTPSessionsExpireIdle(t *testing.T) {
	h := startHTTP(t, "CODEMODE_SPARES=0", "CODEMODE_IDLE_TIMEOUT=2s")
	st := postCall(t, h, aliceToken, map[string]any{"code": "x = 1"})
	handle, _ := st["session"].(string)
	cs, err := h.connect(t, bobToken)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	callArgs(t, cs, map[string]any{"code": "y = 1", "session": "named"})
	waitSandboxes(t, h, 0)
	if st := postCall(t, h, aliceToken, map[string]any{"code": "1", "session": handle}); st["status"] != "error" || !strings.Contains(st["error"].(string), "no such session") {
		t.Errorf("the expired handle still answers: %v", st)
	}
	if st := callArgs(t, cs, map[string]any{"code": "print('y' in globals())", "session": "named"}); !slices.Equal(lines(st["stdout"]), []string{"False"}) {
		t.Errorf("the expired named session kept its state: %v", st)
	}
}

// TestHTTPStatelessHangUpLeavesNoSandbox: a stateless client that hangs up
// during a call that minted a handle never learns the handle, so the
// session ends with the call instead of waiting for idle expiry.
func TestHTTPStatelessHangUpLeavesNoSandbox(t *testing.T) {
	h := startHTTP(t, "CODEMODE_SPARES=0")
	cs, err := h.connectVersion(t, aliceToken, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx, cancel := context.WithCancel(t.Context())
	go cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "while True: pass", "timeout": 60}})
	waitSandboxes(t, h, 1)
	time.Sleep(time.Second) // into the loop: the call is running, not starting
	cancel()
	waitSandboxes(t, h, 0)
}

// TestHTTPDroppedHandlesMakeRoom: a stateless client that never passes its
// handles back does not lock itself out at --max-client-sessions: its
// least recently used idle handle is closed for the new session.
func TestHTTPDroppedHandlesMakeRoom(t *testing.T) {
	h := startHTTP(t, "CODEMODE_SPARES=0", "CODEMODE_MAX_CLIENT_SESSIONS=2")
	var handles []string
	for i := range 4 {
		st := postCall(t, h, aliceToken, map[string]any{"code": "1"})
		if st["status"] != "success" {
			t.Fatalf("call %d without a handle at the cap: %v", i, st)
		}
		handles = append(handles, st["session"].(string))
	}
	waitSandboxes(t, h, 2)
	for i, handle := range handles {
		st := postCall(t, h, aliceToken, map[string]any{"code": "1", "session": handle})
		if evicted := i < 2; evicted != (st["status"] == "error") {
			t.Errorf("handle %d of 4: %v", i, st)
		}
	}
}
