package interpreter

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkColdStart measures a new session: sandbox start, interpreter
// start, runtime boot, until the runtime reports ready.
func BenchmarkColdStart(b *testing.B) {
	var durs []time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		in := start(b, Options{})
		durs = append(durs, time.Since(t0))
		in.Kill(b.Context())
	}
	reportPercentiles(b, durs)
}

// BenchmarkPing measures one frame round trip host -> runtime -> host.
func BenchmarkPing(b *testing.B) {
	in := start(b, Options{})
	var durs []time.Duration
	for b.Loop() {
		d, err := in.Ping(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		durs = append(durs, d)
	}
	reportPercentiles(b, durs)
}

// BenchmarkExecPass measures a cell that does nothing, without MCP.
func BenchmarkExecPass(b *testing.B) {
	in := start(b, Options{})
	var durs []time.Duration
	for b.Loop() {
		t0 := time.Now()
		c, err := in.Exec(ExecRequest{Code: "pass"})
		if err != nil {
			b.Fatal(err)
		}
		<-c.Done()
		durs = append(durs, time.Since(t0))
	}
	reportPercentiles(b, durs)
}

// BenchmarkIdleSessionRSS reports the resident memory of an idle session:
// every process of its sandbox (init and interpreter).
func BenchmarkIdleSessionRSS(b *testing.B) {
	for b.Loop() {
		in := start(b, Options{})
		time.Sleep(200 * time.Millisecond)
		kb := sandboxRSSKiB()
		b.ReportMetric(float64(kb)/1024, "MiB-rss/session")
		in.Kill(b.Context())
	}
}

func reportPercentiles(b *testing.B, durs []time.Duration) {
	if len(durs) == 0 {
		return
	}
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	pick := func(p float64) time.Duration { return durs[min(len(durs)-1, int(p*float64(len(durs))))] }
	b.ReportMetric(float64(pick(0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(pick(0.99).Microseconds()), "p99-µs")
}

// sandboxRSSKiB sums VmRSS of this process's sandbox inits and their descendants.
func sandboxRSSKiB() int {
	parent := map[int]int{}
	rss := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "PPid:" {
				parent[pid], _ = strconv.Atoi(f[1])
			}
			if len(f) >= 2 && f[0] == "VmRSS:" {
				rss[pid], _ = strconv.Atoi(f[1])
			}
		}
	}
	self := os.Getpid()
	total := 0
	for pid := range rss {
		for p := pid; p > 1; p = parent[p] {
			if parent[p] == self {
				total += rss[pid]
				break
			}
		}
	}
	return total
}
