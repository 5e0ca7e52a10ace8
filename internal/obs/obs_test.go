package obs

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestRecordsCarryRequestAndTraceIDs(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	withReq, id := WithRequestID(context.Background())
	traced := trace.ContextWithSpanContext(withReq, trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))
	tests := []struct {
		name      string
		ctx       context.Context
		want, not []string
	}{
		{"no request", context.Background(), nil, []string{"request_id", "trace_id"}},
		{"request", withReq, []string{"request_id=" + id}, []string{"trace_id"}},
		{"traced request", traced, []string{"request_id=" + id, "trace_id=" + tid.String(), "span_id=" + sid.String()}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			NewLogger(&buf, slog.LevelInfo).With("component", "x").InfoContext(tt.ctx, "hello")
			for _, w := range tt.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("%q lacks %s", buf.String(), w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(buf.String(), n) {
					t.Errorf("%q has %s", buf.String(), n)
				}
			}
		})
	}
}
