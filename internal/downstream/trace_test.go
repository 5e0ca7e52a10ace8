package downstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestTraceContextPropagation(t *testing.T) {
	const want = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	traced := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	var header string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { header = r.Header.Get("traceparent") }))
	defer srv.Close()
	client := (&server{}).httpClient()
	tests := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"traced call", traced, want},
		{"untraced call", context.Background(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := traceMeta(tt.ctx)["traceparent"]
			if got != tt.want {
				t.Errorf("_meta traceparent = %q, want %q", got, tt.want)
			}
			req, _ := http.NewRequestWithContext(tt.ctx, http.MethodGet, srv.URL, nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if header != tt.want {
				t.Errorf("traceparent header = %q, want %q", header, tt.want)
			}
		})
	}
}
