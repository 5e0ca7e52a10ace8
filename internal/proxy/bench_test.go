package proxy

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/go-json-experiment/json/jsontext"
)

// BenchmarkCallTool measures the host's part of a proxied call: the
// call_tool request as the runtime sends it, through the Mux, the proxy
// and the pool to the Go test server, against the bare pool call to the
// same server in the same run (p50 of each, alternating).
func BenchmarkCallTool(b *testing.B) {
	px := newProxy(b, "", toolsServer(b))
	mux := hostrpc.NewMux()
	px.Register(mux)
	req := &hostrpc.Request{Method: hostrpc.CallTool, Params: jsontext.Value(`{"server":"my_tools","tool":"echo","arguments":{"message":"x"}}`)}
	args := map[string]jsontext.Value{"message": jsontext.Value(`"x"`)}
	ctx := context.Background()
	for range 50 {
		if _, rerr := mux.Serve(ctx, req); rerr != nil {
			b.Fatal(rerr.Message)
		}
	}
	var viaMux, bare []time.Duration
	for b.Loop() {
		t0 := time.Now()
		mux.Serve(ctx, req)
		viaMux = append(viaMux, time.Since(t0))
		t0 = time.Now()
		px.opts.Pool.CallTool(ctx, "my-tools", "echo", args)
		bare = append(bare, time.Since(t0))
	}
	p50 := func(d []time.Duration) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[len(d)/2].Nanoseconds()) / 1e3
	}
	b.ReportMetric(p50(viaMux), "mux-p50-µs")
	b.ReportMetric(p50(bare), "pool-p50-µs")
}
