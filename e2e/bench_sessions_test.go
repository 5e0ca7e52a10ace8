package e2e

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkHTTPSessions is a warm run_python("pass") over streamable HTTP
// (bearer token, go-sdk client, built binary, native sandbox), addressed
// the three ways a session can be: a stateful connection's default session,
// a principal's named session from that connection, and a handle passed
// back on stateless 2026-07-28 requests (each POST stands alone: the
// server keeps no MCP session). One run, side by side.
func BenchmarkHTTPSessions(b *testing.B) {
	h := startHTTP(b, "CODEMODE_LOG_LEVEL=info")
	stateful, err := h.connect(b, aliceToken)
	if err != nil {
		b.Fatal(err)
	}
	defer stateful.Close()
	stateless, err := h.connectVersion(b, aliceToken, "")
	if err != nil {
		b.Fatal(err)
	}
	defer stateless.Close()
	if v := stateless.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		b.Fatalf("the stateless client negotiated %s", v)
	}
	res, err := stateless.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "pass"}})
	if err != nil || res.IsError {
		b.Fatalf("minting a handle: %v %+v", err, res)
	}
	handle, _ := res.StructuredContent.(map[string]any)["session"].(string)
	if !handleName.MatchString(handle) {
		b.Fatalf("no handle in %+v", res.StructuredContent)
	}
	b.Run("stateful-default", func(b *testing.B) { benchCall(b, stateful, map[string]any{"code": "pass"}) })
	b.Run("stateful-named", func(b *testing.B) { benchCall(b, stateful, map[string]any{"code": "pass", "session": "bench"}) })
	b.Run("stateless-handle", func(b *testing.B) { benchCall(b, stateless, map[string]any{"code": "pass", "session": handle}) })
}
