package telemetry

import (
	"context"
	"testing"

	"github.com/codemode/codemode/internal/telemetry/telemetrytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
)

// BenchmarkRunPythonOverhead is what telemetry adds to one run_python: the
// SERVER span and metrics, and the executor's three child spans, with
// tracing off and on (exported to an in-process OTLP receiver).
func BenchmarkRunPythonOverhead(b *testing.B) {
	rcv := telemetrytest.Start(b)
	for _, bc := range []struct {
		name     string
		endpoint string
	}{
		{"tracing=off", ""},
		{"tracing=on", rcv.URL},
	} {
		b.Run(bc.name, func(b *testing.B) {
			tel, err := New(b.Context(), Options{Backend: "native", OTLPEndpoint: bc.endpoint})
			if err != nil {
				b.Fatal(err)
			}
			defer tel.Close(context.Background())
			req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "run_python", Arguments: []byte(`{"code":"pass"}`)}}
			for b.Loop() {
				ctx, end := tel.StartRunPython(b.Context(), req)
				tr := trace.SpanFromContext(ctx).TracerProvider().Tracer("bench")
				for _, name := range []string{"session acquire", "sandbox acquire", "cell execute"} {
					_, span := tr.Start(ctx, name)
					span.End()
				}
				end("success")
			}
		})
	}
}
