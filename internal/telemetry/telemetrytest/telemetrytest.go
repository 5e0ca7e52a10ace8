// Package telemetrytest is an OTLP/HTTP trace receiver for tests: it
// decodes what an exporter sends with the OTLP protobuf types and keeps the
// spans, so tests assert on what really left the process.
package telemetrytest

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is a received span with its ids in hex.
type Span struct {
	Name, TraceID, SpanID, ParentID string
	Kind                            tracepb.Span_SpanKind
	Attributes                      map[string]string
	Error                           bool
}

// Receiver accepts OTLP/HTTP protobuf trace exports.
type Receiver struct {
	URL   string // the endpoint, e.g. http://127.0.0.1:PORT
	mu    sync.Mutex
	spans []Span
}

// Start serves a receiver until the test ends.
func Start(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf POST to /v1/traces", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(req.Body)
	var export coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &export)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range export.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, convert(s))
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func convert(s *tracepb.Span) Span {
	sp := Span{Name: s.Name, TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
		ParentID: hex.EncodeToString(s.ParentSpanId), Kind: s.Kind, Attributes: map[string]string{},
		Error: s.Status != nil && s.Status.Code == tracepb.Status_STATUS_CODE_ERROR}
	for _, kv := range s.Attributes {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			sp.Attributes[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			sp.Attributes[kv.Key] = strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			sp.Attributes[kv.Key] = strconv.FormatBool(v.BoolValue)
		default:
			sp.Attributes[kv.Key] = kv.Value.String()
		}
	}
	return sp
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// WaitFor waits up to timeout for a span named name and returns every span
// received by then.
func (r *Receiver) WaitFor(t testing.TB, name string, timeout time.Duration) []Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		spans := r.Spans()
		for _, s := range spans {
			if s.Name == name {
				return spans
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span %q received within %s (got %d spans)", name, timeout, len(spans))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
