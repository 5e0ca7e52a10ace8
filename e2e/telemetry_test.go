package e2e

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/telemetry/telemetrytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// freeAddr returns a loopback address no one listens on.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// A run_python with a client traceparent that calls the npm
// server-everything's echo and the Go test server's traceparent tool: the
// spans reach a real OTLP receiver as one tree under the client's span, the
// downstream server receives the CLIENT span's context, and /metrics counts
// the calls.
func TestTelemetry(t *testing.T) {
	const clientTrace, clientSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	rcv := telemetrytest.Start(t)
	metrics := freeAddr(t)
	everything := npmServer(t, "@modelcontextprotocol/server-everything", "stdio")
	policy := filepath.Join(t.TempDir(), "policy.toml")
	os.WriteFile(policy, []byte("default = \"allow\"\n[[rules]]\nserver = \"tools\"\ntool = \"echo\"\nwhen = 'args.message == \"secret\"'\ndecision = \"deny\"\n"), 0o644)
	s := startServer(t, writeConfig(t, map[string]any{"tools": testServer(t, "tools"), "everything": everything}),
		"CODEMODE_OTLP_ENDPOINT="+rcv.URL, "CODEMODE_METRICS="+metrics, "CODEMODE_POLICY="+policy)

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python",
		Meta:      mcp.Meta{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"},
		Arguments: map[string]any{"code": "print((await mcp_tools.traceparent()).text)\nprint((await mcp_everything.echo(message='hi')).text)"}})
	if err != nil {
		t.Fatal(err)
	}
	out := lines(structured(t, res)["stdout"])
	if len(out) != 2 || out[1] != "Echo: hi" || !strings.HasPrefix(out[0], "00-"+clientTrace+"-") {
		t.Fatalf("stdout %q: want the downstream's traceparent in the client's trace, then the echo", out)
	}
	denied := "try:\n    await mcp_tools.echo(message='secret')\nexcept Exception as e:\n    print(e.kind)"
	if got := s.stdoutOf(t, denied); !slices.Equal(got, []string{"denied"}) {
		t.Fatalf("denied call: %q", got)
	}
	if st := structured(t, s.run(t, "raise ValueError('no')")); st["status"] != "error" {
		t.Fatalf("raise: %v", st)
	}

	// The replacement spare counts as started once it has imported the
	// preload modules, which may take a moment after the calls above.
	spare := map[string]string{"backend": "native", "spare": "true"}
	m := telemetrytest.Scrape(t, "http://"+metrics+"/metrics")
	for deadline := time.Now().Add(30 * time.Second); m.Value("codemode_sandbox_start_seconds", spare) < 1 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		m = telemetrytest.Scrape(t, "http://"+metrics+"/metrics")
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"codemode_run_python_calls_total", map[string]string{"status": "success"}, 2},
		{"codemode_run_python_calls_total", map[string]string{"status": "error"}, 1},
		{"codemode_run_python_duration_seconds", map[string]string{}, 3},
		{"codemode_tool_calls_total", map[string]string{"server": "everything", "tool": "echo", "outcome": "ok"}, 1},
		{"codemode_tool_calls_total", map[string]string{"server": "tools", "tool": "traceparent", "outcome": "ok"}, 1},
		{"codemode_tool_calls_total", map[string]string{"server": "tools", "tool": "echo", "outcome": "denied"}, 1},
		{"codemode_tool_call_duration_seconds", map[string]string{"server": "tools"}, 2},
		{"codemode_policy_decisions_total", map[string]string{"decision": "allow"}, 2},
		{"codemode_policy_decisions_total", map[string]string{"decision": "deny"}, 1},
		{"codemode_tool_call_duration_seconds", map[string]string{"server": "everything"}, 1},
		{"codemode_sessions_active", map[string]string{"backend": "native"}, 1},
	} {
		if got := m.Value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if m.Value("codemode_sandbox_start_seconds", spare) < 1 {
		t.Error("no spare sandbox start measured")
	}
	if m["process_resident_memory_bytes"] == nil {
		t.Error("no process collector")
	}

	// Closing the connection ends codemode, which flushes its spans.
	s.cs.Close()
	spans := rcv.WaitFor(t, "tools/call run_python", 30*time.Second)
	byName := map[string]telemetrytest.Span{}
	for _, sp := range spans {
		if sp.TraceID == clientTrace {
			byName[sp.Name] = sp
		}
	}
	run := byName["tools/call run_python"]
	if run.ParentID != clientSpan || run.Kind.String() != "SPAN_KIND_SERVER" || run.Attributes["mcp.method.name"] != "tools/call" ||
		run.Attributes["gen_ai.tool.name"] != "run_python" {
		t.Fatalf("run_python span %+v: want a SERVER span under the client's %s", run, clientSpan)
	}
	if _, ok := run.Attributes["codemode.code"]; ok {
		t.Error("code recorded without --trace-content")
	}
	var children []string
	for _, sp := range byName {
		if sp.ParentID == run.SpanID {
			children = append(children, sp.Name)
		}
	}
	slices.Sort(children)
	if !slices.Equal(children, []string{"cell execute", "sandbox acquire", "session acquire"}) {
		t.Errorf("run_python's children %q", children)
	}
	// The first session takes the spare if it is ready, else starts its own.
	acq := byName["sandbox acquire"]
	switch src := acq.Attributes["codemode.sandbox.source"]; {
	case acq.Attributes["codemode.sandbox.backend"] != "native":
		t.Errorf("sandbox acquire %+v: want the native backend", acq)
	case src == "cold" && byName["sandbox start"].ParentID != acq.SpanID:
		t.Errorf("a cold sandbox acquire without its sandbox start span: %+v", byName["sandbox start"])
	case src != "cold" && src != "spare":
		t.Errorf("sandbox acquire source %q", src)
	}
	cell := byName["cell execute"]
	for tool, server := range map[string]string{"traceparent": "tools", "echo": "everything"} {
		sp := byName["tools/call "+tool]
		if sp.ParentID != cell.SpanID || sp.Kind.String() != "SPAN_KIND_CLIENT" || sp.Attributes["codemode.server"] != server {
			t.Errorf("%s span %+v: want a CLIENT span under the cell %s", tool, sp, cell.SpanID)
		}
	}
	if want := "00-" + clientTrace + "-" + byName["tools/call traceparent"].SpanID + "-01"; out[0] != want {
		t.Errorf("the downstream server got traceparent %s, want %s", out[0], want)
	}
}

// BenchmarkRunPythonPassTracing is BenchmarkRunPythonPass with tracing off
// and on (spans exported to an in-process OTLP receiver), side by side.
func BenchmarkRunPythonPassTracing(b *testing.B) {
	rcv := telemetrytest.Start(b)
	for _, bc := range []struct {
		name string
		env  []string
	}{
		{"tracing=off", nil},
		{"tracing=on", []string{"CODEMODE_OTLP_ENDPOINT=" + rcv.URL}},
	} {
		b.Run(bc.name, func(b *testing.B) { benchPass(b, startServerB(b, bc.env...)) })
	}
}
