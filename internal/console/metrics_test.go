package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/codemode/codemode/internal/activity"
	"github.com/codemode/codemode/internal/executor"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/policy"
	"github.com/codemode/codemode/internal/telemetry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestHeadlinesFromTheRealMetrics(t *testing.T) {
	tel, err := telemetry.New(context.Background(), telemetry.Options{Backend: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, status := range []string{executor.StatusSuccess, executor.StatusError, executor.StatusError, executor.StatusTimeout} {
		_, end := tel.StartRunPython(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "run_python"}})
		end(status)
	}
	tel.ToolMiddleware(func(context.Context, *hostrpc.ToolCall) (any, error) {
		return nil, &hostrpc.Error{Kind: "denied", Message: "no"}
	})(context.Background(), &hostrpc.ToolCall{Server: "fs", Tool: "rm"})
	tel.PolicyDecision(policy.Decision{Effect: policy.Ask})
	tel.SandboxExited(executor.ExitOOM)
	tel.ServerEnded("web")
	tel.ServerEnded("web")

	rec := activity.New(activity.Options{})
	c := New(Options{Recorder: rec, Metrics: tel.Registry, Servers: servers{"fs": "running", "web": "stopped"}, Login: func(tok string) (Identity, bool) {
		id, ok := tokens[tok]
		return id, ok
	}})
	mux := http.NewServeMux()
	mux.Handle(Prefix, c)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	f := &fixture{srv: srv, rec: rec}

	st, _ := f.state(t, f.client(t, "admin-token-0123456789"))
	want := map[string]float64{"run_python calls": 4, "run_python errors": 2, "run_python timeouts": 1, "nested tool calls": 1,
		"tool calls denied": 1, "policy asks": 1, "sandboxes killed at the memory limit": 1, "downstream server restarts": 2}
	if len(st.Headlines) != len(want) {
		t.Fatalf("headlines = %+v", st.Headlines)
	}
	for _, h := range st.Headlines {
		if want[h.Name] != h.Value {
			t.Errorf("%s = %v, want %v", h.Name, h.Value, want[h.Name])
		}
	}
	if st.Servers[1].Name != "web" || st.Servers[1].Restarts != 2 || st.Servers[0].Restarts != 0 {
		t.Errorf("servers = %+v", st.Servers)
	}
	if st, _ := f.state(t, f.client(t, "alice-token-0123456789")); len(st.Headlines) != 0 || st.Servers[1].Restarts != 2 {
		t.Errorf("a non-admin sees headlines %+v, servers %+v", st.Headlines, st.Servers)
	}
}
