package interpreter

import (
	"context"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/wire"
	"github.com/go-json-experiment/json/jsontext"
)

// BenchmarkRPCRoundTrip: an RPC from sandboxed code to a host handler that
// answers at once, timed inside Python (p50 over 1000 calls).
func BenchmarkRPCRoundTrip(b *testing.B) {
	in := start(b, Options{RPC: func(ctx context.Context, method string, params jsontext.Value) (jsontext.Value, *wire.RPCError) {
		return jsontext.Value(`[]`), nil
	}})
	code := "import time, mcp.runtime as rt\nrpc = rt._session.rpc\nfor _ in range(100): rpc.call('x', {})\n" +
		"t = []\nfor _ in range(1000):\n    t0 = time.perf_counter(); rpc.call('x', {}); t.append(time.perf_counter() - t0)\n" +
		"t.sort(); print(round(t[500] * 1e6))"
	for b.Loop() {
		var out strings.Builder
		c, _ := in.Exec(ExecRequest{Code: code, Output: func(s Stream, d []byte) { out.Write(d) }})
		<-c.Done()
		b.Log("p50 µs:", strings.TrimSpace(out.String()))
	}
}
