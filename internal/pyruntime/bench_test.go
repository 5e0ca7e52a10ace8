package pyruntime

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/codemode/codemode/internal/testenv"
)

// BenchmarkLoneCall is the runtime's own cost of a lone awaited tool call,
// timed inside Python with every answer already on the direct reply pipe
// (tests/bench_lone_call.py): no host, no server, no wake-ups. One run is
// 9 rounds of 2,000 calls; run it with -benchtime 1x.
func BenchmarkLoneCall(b *testing.B) {
	for b.Loop() {
		median, fastest := loneCall(b)
		b.ReportMetric(median, "µs/call")
		b.ReportMetric(fastest, "min-µs/call")
	}
}

// TestLoneCallBenchmarkRuns keeps BenchmarkLoneCall's script working: a
// short run must make its calls and print its figures.
func TestLoneCallBenchmarkRuns(t *testing.T) {
	if median, fastest := loneCall(t, "50", "2"); fastest <= 0 || median < fastest {
		t.Fatalf("bench_lone_call.py printed median %v, min %v", median, fastest)
	}
}

// loneCall runs tests/bench_lone_call.py with args (calls per round,
// rounds) and returns its median and fastest µs per call.
func loneCall(tb testing.TB, args ...string) (median, fastest float64) {
	tb.Helper()
	out, err := exec.Command(testenv.Python(tb), append([]string{"-B", "tests/bench_lone_call.py"}, args...)...).Output()
	if err != nil {
		tb.Fatalf("bench_lone_call.py: %v", err)
	}
	var r struct {
		Median float64 `json:"median_us"`
		Min    float64 `json:"min_us"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		tb.Fatalf("bench_lone_call.py printed %q: %v", out, err)
	}
	return r.Median, r.Min
}
