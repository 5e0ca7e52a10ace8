package telemetry

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/downstream"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/policy"
	"github.com/codemode/codemode/internal/telemetry/telemetrytest"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
)

// result is a tool result as the pool returns it.
func result(t testing.TB, data string) downstream.Result {
	t.Helper()
	r, err := downstream.NewResult(jsontext.Value(data))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// fakeDownstream answers like the pool would for each tool name.
func fakeDownstream(_ context.Context, c *hostrpc.ToolCall) (any, error) {
	switch c.Tool {
	case "fail":
		r, err := downstream.NewResult(jsontext.Value(`{"content":[],"isError":true}`))
		return r, err
	case "slow":
		return nil, &downstream.Error{Server: c.Server, Tool: c.Tool, Kind: "timeout", Err: context.DeadlineExceeded}
	case "secret":
		return nil, &hostrpc.Error{Kind: "denied", Message: "denied by policy"}
	}
	return downstream.NewResult(jsontext.Value(`{"content":[]}`))
}

func TestMetricsCountKnownCalls(t *testing.T) {
	tel, err := New(t.Context(), Options{Backend: "native"})
	if err != nil {
		t.Fatal(err)
	}
	tel.ToolsLoaded("tools", []*mcp.Tool{{Name: "echo"}, {Name: "fail"}, {Name: "slow"}, {Name: "secret"}})
	tel.CountSessions(func() int { return 2 })
	call := tel.ToolMiddleware(fakeDownstream)
	for _, tool := range []string{"echo", "echo", "fail", "slow", "secret", "made-up-1", "made-up-2"} {
		call(t.Context(), &hostrpc.ToolCall{Server: "tools", Tool: tool})
	}
	for _, status := range []string{"success", "success", "timeout", ""} {
		_, end := tel.StartRunPython(t.Context(), &mcp.CallToolRequest{})
		end(status)
	}
	tel.SandboxStarted(false, 300*time.Millisecond)
	tel.SandboxStarted(true, 200*time.Millisecond)
	tel.SandboxStarted(true, 250*time.Millisecond)
	tel.SandboxExited("reset")
	tel.SandboxExited("oom")
	tel.PolicyDecision(policy.Decision{Effect: policy.Deny})
	tel.PolicyDecision(policy.Decision{Effect: policy.Allow})
	tel.PolicyDecision(policy.Decision{Effect: policy.Allow})
	tel.ServerEnded("tools")
	tel.EgressRequest("pypi.org", "allow", 1000, 200)
	tel.EgressRequest("pypi.org", "allow", 500, 0)
	tel.EgressRequest("(not allowed)", "deny", 0, 0)

	srv := httptest.NewServer(tel.Handler())
	defer srv.Close()
	fams := telemetrytest.Scrape(t, srv.URL)
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"codemode_tool_calls_total", map[string]string{"server": "tools", "tool": "echo", "outcome": "ok"}, 2},
		{"codemode_tool_calls_total", map[string]string{"server": "tools", "tool": "fail", "outcome": "tool_error"}, 1},
		{"codemode_tool_calls_total", map[string]string{"server": "tools", "tool": "slow", "outcome": "timeout"}, 1},
		{"codemode_tool_calls_total", map[string]string{"server": "tools", "tool": "secret", "outcome": "denied"}, 1},
		// Names the server never listed fold into one series.
		{"codemode_tool_calls_total", map[string]string{"server": "tools", "tool": Other, "outcome": "ok"}, 2},
		{"codemode_tool_call_duration_seconds", map[string]string{"server": "tools"}, 7},
		{"codemode_run_python_calls_total", map[string]string{"status": "success"}, 2},
		{"codemode_run_python_calls_total", map[string]string{"status": "timeout"}, 1},
		{"codemode_run_python_calls_total", map[string]string{"status": "unknown"}, 1},
		{"codemode_run_python_duration_seconds", map[string]string{}, 4},
		{"codemode_sandbox_start_seconds", map[string]string{"backend": "native", "spare": "false"}, 1},
		{"codemode_sandbox_start_seconds", map[string]string{"backend": "native", "spare": "true"}, 2},
		{"codemode_sandbox_exits_total", map[string]string{"backend": "native", "cause": "reset"}, 1},
		{"codemode_sandbox_exits_total", map[string]string{"backend": "native", "cause": "oom"}, 1},
		{"codemode_sessions_active", map[string]string{"backend": "native"}, 2},
		{"codemode_policy_decisions_total", map[string]string{"decision": "allow"}, 2},
		{"codemode_policy_decisions_total", map[string]string{"decision": "deny"}, 1},
		{"codemode_downstream_restarts_total", map[string]string{"server": "tools"}, 1},
		{"codemode_egress_requests_total", map[string]string{"host": "pypi.org", "decision": "allow"}, 2},
		{"codemode_egress_requests_total", map[string]string{"host": "(not allowed)", "decision": "deny"}, 1},
		{"codemode_egress_bytes_total", map[string]string{"host": "pypi.org", "direction": "in"}, 1500},
		{"codemode_egress_bytes_total", map[string]string{"host": "pypi.org", "direction": "out"}, 200},
	}
	for _, tt := range tests {
		if got := fams.Value(tt.name, tt.labels); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	for _, name := range []string{"process_resident_memory_bytes", "go_goroutines"} {
		if fams[name] == nil {
			t.Errorf("no %s: the process and Go collectors are missing", name)
		}
	}
}

const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"

func TestSpanTree(t *testing.T) {
	tests := []struct {
		name    string
		content bool
	}{
		{"content off", false},
		{"content on", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rcv := telemetrytest.Start(t)
			tel, err := New(t.Context(), Options{Backend: "native", OTLPEndpoint: rcv.URL, TraceContent: tt.content})
			if err != nil {
				t.Fatal(err)
			}
			defer tel.Close(context.Background())
			if on, _ := tel.Tracing(); !on {
				t.Fatal("tracing is off with an endpoint")
			}
			req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "run_python", Arguments: []byte(`{"code":"print(1)"}`),
				Meta: mcp.Meta{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"}}}
			ctx, end := tel.StartRunPython(t.Context(), req)
			var downstreamParent trace.SpanContext
			tel.ToolMiddleware(func(ctx context.Context, c *hostrpc.ToolCall) (any, error) {
				downstreamParent = trace.SpanContextFromContext(ctx)
				return result(t, `{"content":[]}`), nil
			})(ctx, &hostrpc.ToolCall{Server: "tools", Tool: "echo", Arguments: map[string]jsontext.Value{"message": jsontext.Value(`"hi"`)}})
			end("timeout")
			if err := tel.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			spans := rcv.WaitFor(t, "tools/call run_python", 10*time.Second)
			byName := map[string]telemetrytest.Span{}
			for _, s := range spans {
				byName[s.Name] = s
			}
			run, call := byName["tools/call run_python"], byName["tools/call echo"]
			if run.TraceID != clientTrace || run.ParentID != clientSpan {
				t.Errorf("run_python span in trace %s under %s, want the client's %s under %s", run.TraceID, run.ParentID, clientTrace, clientSpan)
			}
			if run.Kind.String() != "SPAN_KIND_SERVER" || call.Kind.String() != "SPAN_KIND_CLIENT" {
				t.Errorf("kinds: run_python %s, echo %s", run.Kind, call.Kind)
			}
			for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "run_python", "error.type": "timeout"} {
				if run.Attributes[k] != v {
					t.Errorf("run_python %s = %q, want %q", k, run.Attributes[k], v)
				}
			}
			if !run.Error {
				t.Error("a timed-out run_python span is not an error")
			}
			if call.TraceID != clientTrace || call.ParentID != run.SpanID || call.Attributes["gen_ai.tool.name"] != "echo" || call.Attributes["codemode.server"] != "tools" {
				t.Errorf("echo span %+v not under run_python %s", call, run.SpanID)
			}
			if downstreamParent.SpanID().String() != call.SpanID {
				t.Errorf("the downstream call's context carries span %s, want the CLIENT span %s", downstreamParent.SpanID(), call.SpanID)
			}
			_, hasCode := run.Attributes["codemode.code"]
			_, hasArgs := call.Attributes["codemode.arguments"]
			if hasCode != tt.content || hasArgs != tt.content {
				t.Errorf("content recorded: code %v, arguments %v; want %v", hasCode, hasArgs, tt.content)
			}
		})
	}
}

func TestExporterSelection(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		env      []string
		want     string // "" = tracing off
		wantErr  bool
	}{
		{"nothing configured", "", nil, "", false},
		{"flag", "http://127.0.0.1:4318", nil, "http http://127.0.0.1:4318", false},
		{"standard variable", "", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318"}, "http http://collector:4318", false},
		{"grpc", "http://127.0.0.1:4317", []string{"OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, "grpc http://127.0.0.1:4317", false},
		{"disabled", "http://127.0.0.1:4318", []string{"OTEL_SDK_DISABLED=true"}, "", false},
		{"unknown protocol", "http://127.0.0.1:4318", []string{"OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tel, err := New(t.Context(), Options{OTLPEndpoint: tt.endpoint, Environ: tt.env})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			defer tel.Close(context.Background())
			if on, where := tel.Tracing(); where != tt.want || on != (tt.want != "") {
				t.Errorf("Tracing() = %v %q, want %q", on, where, tt.want)
			}
		})
	}
}
