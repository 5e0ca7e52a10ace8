package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRelayFromDownstream: the reference server's tools that ask the user
// (elicitation) and report progress, called from code, reach the client of
// the run_python call, on the protocol where servers send requests
// mid-call and on the one where questions travel in results.
func TestRelayFromDownstream(t *testing.T) {
	config := writeConfig(t, map[string]any{"everything": npmServer(t, "@modelcontextprotocol/server-everything", "stdio")})
	code := "r = await mcp_everything.trigger_elicitation_request()\nprint(r.text)"
	for _, protocol := range []string{"2025-11-25", ""} {
		t.Run("elicitation "+protocol, func(t *testing.T) {
			s, e := startAnswering(t, protocol, config)
			e.set(reply("accept", map[string]any{"name": "Ada Lovelace", "check": true}))
			out := strings.Join(s.stdoutOf(t, code), "\n")
			if !strings.Contains(out, "User provided the requested information") || !strings.Contains(out, "Ada Lovelace") {
				t.Fatalf("stdout: %s", out)
			}
			asked := e.since(0)
			if len(asked) != 1 || asked[0].Message != "[everything] Please provide inputs for the following fields:" {
				t.Fatalf("asked: %v", asked)
			}
			e.set(reply("decline", nil))
			if out := strings.Join(s.stdoutOf(t, code), "\n"); !strings.Contains(out, "User declined") {
				t.Fatalf("declined: %s", out)
			}
		})
	}

	t.Run("client without elicitation", func(t *testing.T) {
		s := startServer(t, config)
		res := s.run(t, "try:\n    await mcp_everything.trigger_elicitation_request()\nexcept runtime.MCPError as e:\n    print(e)")
		if out := text(res); !strings.Contains(out, "does not support elicitation") {
			t.Fatalf("result: %s", out)
		}
	})

	t.Run("progress", func(t *testing.T) {
		var mu sync.Mutex
		var got []*mcp.ProgressNotificationParams
		client := mcp.NewClient(&mcp.Implementation{Name: "progress-e2e", Version: "1"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				got = append(got, req.Params)
				mu.Unlock()
			},
		})
		s := startWithClient(t, client, nil, config)
		ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
		defer cancel()
		// The elapsed-time ticker reports first (the operation starts after
		// a second), then the server's three steps.
		params := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
			"code": "import asyncio\nawait asyncio.sleep(1.5)\nawait mcp_everything.trigger_long_running_operation(duration=1, steps=3)\nprint('done')"}}
		params.SetProgressToken("e2e")
		res, err := s.cs.CallTool(ctx, params)
		if err != nil || !strings.Contains(text(res), "done") {
			t.Fatalf("call: %v %s", err, text(res))
		}
		mu.Lock()
		defer mu.Unlock()
		var relayed []string
		last := 0.0
		for _, p := range got {
			if p.Progress <= last {
				t.Errorf("progress went from %g to %g", last, p.Progress)
			}
			last = p.Progress
			if m, ok := strings.CutPrefix(p.Message, "everything.trigger-long-running-operation: "); ok {
				relayed = append(relayed, strings.Fields(m)[0])
			}
		}
		if strings.Join(relayed, " ") != "1/3 2/3 3/3" {
			t.Fatalf("relayed steps %q among %d notifications", relayed, len(got))
		}
	})
}
