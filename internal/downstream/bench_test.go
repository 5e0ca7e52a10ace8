package downstream

import (
	"sort"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/serverconfig"
)

// BenchmarkPoolCall measures one tool call through the pool (p50).
func BenchmarkPoolCall(b *testing.B) {
	p := New(Options{Servers: []serverconfig.Server{benchServer(b)}})
	defer p.Close()
	args := map[string]any{"message": "x"}
	for range 50 {
		if _, err := p.CallTool(b.Context(), "tools", "echo", args); err != nil {
			b.Fatal(err)
		}
	}
	var durs []time.Duration
	for b.Loop() {
		t0 := time.Now()
		p.CallTool(b.Context(), "tools", "echo", args)
		durs = append(durs, time.Since(t0))
	}
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
}
