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
	python := testenv.Python(b)
	for b.Loop() {
		out, err := exec.Command(python, "-B", "tests/bench_lone_call.py").Output()
		if err != nil {
			b.Fatalf("bench_lone_call.py: %v", err)
		}
		var r struct {
			Median float64 `json:"median_us"`
			Min    float64 `json:"min_us"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			b.Fatalf("bench_lone_call.py printed %q: %v", out, err)
		}
		b.ReportMetric(r.Median, "µs/call")
		b.ReportMetric(r.Min, "min-µs/call")
	}
}

// TestLoneCallBenchmarkRuns keeps BenchmarkLoneCall's script working: a
// short run must make its calls and print its figures.
func TestLoneCallBenchmarkRuns(t *testing.T) {
	out, err := exec.Command(testenv.Python(t), "-B", "tests/bench_lone_call.py", "50", "2").Output()
	if err != nil {
		t.Fatalf("bench_lone_call.py: %v", err)
	}
	var r struct {
		Median float64 `json:"median_us"`
		Min    float64 `json:"min_us"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.Min <= 0 || r.Median < r.Min {
		t.Fatalf("bench_lone_call.py printed %q (%v)", out, err)
	}
}
