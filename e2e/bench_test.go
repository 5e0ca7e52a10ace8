package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/downstream/downstreamtest"
	"github.com/codemode/codemode/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkRunPythonPass is a warm run_python("pass") over MCP stdio: a
// go-sdk client, the built codemode binary, the native sandbox.
func BenchmarkRunPythonPass(b *testing.B) {
	benchPass(b, startServerB(b))
}

// benchPass measures warm run_python("pass") calls on s, reporting p50 and p99.
func benchPass(b *testing.B, s *mcp.ClientSession) {
	benchCall(b, s, map[string]any{"code": "pass"})
}

// benchCall measures warm run_python calls with args on s, reporting p50
// and p99.
func benchCall(b *testing.B, s *mcp.ClientSession, args map[string]any) {
	ctx := context.Background()
	// Warm the session (sandbox start) outside the measurement.
	if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: args}); err != nil {
		b.Fatal(err)
	}
	var durs []time.Duration
	for b.Loop() {
		t0 := time.Now()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("call: %v %v", err, res)
		}
		durs = append(durs, time.Since(t0))
	}
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(durs[min(len(durs)-1, len(durs)*99/100)].Microseconds()), "p99-µs")
}

// benchServerConfig configures this test binary's "tools" server.
func benchServerConfig(b *testing.B) string {
	self, _ := os.Executable()
	path := filepath.Join(b.TempDir(), "mcp.json")
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"tools": map[string]any{"command": self, "env": map[string]string{downstreamtest.EnvVar: "tools"}}}})
	os.WriteFile(path, data, 0o644)
	return "CODEMODE_CONFIG=" + path
}

// inSandbox runs code that prints one number and returns it.
func inSandbox(b *testing.B, cs *mcp.ClientSession, code string) float64 {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code, "timeout": 120}})
	if err != nil || res.IsError {
		b.Fatalf("%v %+v", err, res)
	}
	var v float64
	txt := res.Content[0].(*mcp.TextContent).Text
	if _, err := fmt.Sscan(txt, &v); err != nil {
		b.Fatalf("output %q: %v", txt, err)
	}
	return v
}

// BenchmarkProxiedCall: a tool call made by sandboxed code (await
// mcp_tools.echo) through codemode to a Go SDK server, timed inside Python.
func BenchmarkProxiedCall(b *testing.B) {
	cs := startServerB(b, benchServerConfig(b))
	inSandbox(b, cs, "await mcp_tools.echo(message='warm')\nprint(0)")
	for b.Loop() {
		us := inSandbox(b, cs, "import time\nfor _ in range(50): await mcp_tools.echo(message='x')\n"+
			"t = []\nfor _ in range(500):\n    t0 = time.perf_counter(); await mcp_tools.echo(message='x'); t.append(time.perf_counter() - t0)\n"+
			"t.sort(); print(t[len(t)//2] * 1e6)")
		b.ReportMetric(us, "p50-µs/call")
	}
}

// BenchmarkDirectCall: the same tool called by a go-sdk client directly.
func BenchmarkDirectCall(b *testing.B) {
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = []string{downstreamtest.EnvVar + "=tools"}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	call := func() time.Duration {
		t0 := time.Now()
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "x"}}); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	for range 50 {
		call()
	}
	for b.Loop() {
		var durs []time.Duration
		for range 500 {
			durs = append(durs, call())
		}
		sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
		b.ReportMetric(float64(durs[len(durs)/2].Nanoseconds())/1000, "p50-µs/call")
	}
}

// BenchmarkGather32: 32 calls of a 50 ms tool with asyncio.gather vs one by
// one, both inside the same sandbox session; reports the speed-up.
func BenchmarkGather32(b *testing.B) {
	cs := startServerB(b, benchServerConfig(b))
	inSandbox(b, cs, "await mcp_tools.echo(message='warm')\nprint(0)")
	for b.Loop() {
		seq := inSandbox(b, cs, "import time\nt0 = time.perf_counter()\nfor _ in range(32): await mcp_tools.sleep(milliseconds=50)\nprint(time.perf_counter() - t0)")
		par := inSandbox(b, cs, "import time, asyncio\nt0 = time.perf_counter()\nawait asyncio.gather(*[mcp_tools.sleep(milliseconds=50) for _ in range(32)])\nprint(time.perf_counter() - t0)")
		b.ReportMetric(seq*1000, "sequential-ms")
		b.ReportMetric(par*1000, "gather-ms")
		b.ReportMetric(seq/par, "speedup")
	}
}

// BenchmarkEchoEverything is issue 19's proxied-call goal on one line: 300
// sequential `await mcp_everything.echo` timed inside Python against 300
// calls of a go-sdk client straight to another server-everything, the two
// alternating within each iteration; it reports both p50s and their ratio
// (goal ≤ 1.3).
func BenchmarkEchoEverything(b *testing.B) {
	everything := map[string]any{"command": testenv.Node(b),
		"args": []string{testenv.NodePackage(b, "@modelcontextprotocol/server-everything") + "/dist/index.js", "stdio"}}
	path := filepath.Join(b.TempDir(), "mcp.json")
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": everything}})
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	cs := startServerB(b, "CODEMODE_CONFIG="+path)
	cmd := exec.Command(everything["command"].(string), everything["args"].([]string)...)
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	call := func() time.Duration {
		t0 := time.Now()
		if _, err := direct.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "x"}}); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	for range 30 {
		call()
	}
	inSandbox(b, cs, "for _ in range(30): await mcp_everything.echo(message='x')\nprint(0)")
	var proxied, directs, ratios []float64
	for b.Loop() {
		p := inSandbox(b, cs, "import time\nt = []\nfor _ in range(300):\n"+
			"    t0 = time.perf_counter(); await mcp_everything.echo(message='x'); t.append(time.perf_counter() - t0)\n"+
			"t.sort(); print(t[len(t)//2] * 1e6)")
		var durs []time.Duration
		for range 300 {
			durs = append(durs, call())
		}
		sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
		d := float64(durs[len(durs)/2].Nanoseconds()) / 1e3
		proxied, directs, ratios = append(proxied, p), append(directs, d), append(ratios, p/d)
	}
	median := func(v []float64) float64 { sort.Float64s(v); return v[len(v)/2] }
	b.ReportMetric(median(proxied), "proxied-p50-µs")
	b.ReportMetric(median(directs), "direct-p50-µs")
	b.ReportMetric(median(ratios), "ratio")
}
