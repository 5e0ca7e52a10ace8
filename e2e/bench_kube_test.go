package e2e

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkKube measures the kubernetes backend on the test cluster, with
// codemode on the host: a session's first call when it must create a Pod
// (cold), when a spare Pod is ready (warm pool), and a warm call.
//
//	go test -run '^$' -bench Kube -benchtime 5x ./e2e/
func BenchmarkKube(b *testing.B) {
	k := testenv.Cluster(b)
	ns := benchNamespace(b, k)
	b.Run("cold-start", func(b *testing.B) {
		cs := startServerB(b, kubeEnv(k, ns, "CODEMODE_SPARES=0")...)
		benchFirstCalls(b, cs, nil)
	})
	b.Run("warm-pool-start", func(b *testing.B) {
		cs := startServerB(b, kubeEnv(k, ns, "CODEMODE_SPARES=1")...)
		benchFirstCalls(b, cs, func() { waitSpare(b, k, ns) })
	})
	b.Run("warm-call", func(b *testing.B) {
		cs := startServerB(b, kubeEnv(k, ns, "CODEMODE_SPARES=0")...)
		benchPass(b, cs)
	})
}

// benchFirstCalls times each new session's first `pass`, closing it after;
// ready (outside the timer) waits for whatever the next start should find.
func benchFirstCalls(b *testing.B, cs *mcp.ClientSession, ready func()) {
	ctx := context.Background()
	var durs []time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		if ready != nil {
			ready()
		}
		i++
		name := fmt.Sprintf("bench-%d", i)
		b.StartTimer()
		t0 := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"session": name, "code": "pass"}})
		if err != nil || res.IsError {
			b.Fatalf("first call: %v %+v", err, res)
		}
		durs = append(durs, time.Since(t0))
		b.StopTimer()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"session": name, "close": true}}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	b.ReportMetric(float64(durs[len(durs)/2].Milliseconds()), "p50-ms")
}

// waitSpare waits until a spare session Pod is running in ns.
func waitSpare(b *testing.B, k testenv.Kube, ns string) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		out, _ := kubeTry(k, "-n", ns, "get", "pods", "-l", "app.kubernetes.io/managed-by=codemode,codemode.session=spare",
			"--field-selector=status.phase=Running", "-o", "name")
		if out != "" {
			time.Sleep(time.Second) // the spare's interpreter boots after its Pod runs
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatal("no spare Pod became ready in 2 minutes")
}

func benchNamespace(b *testing.B, k testenv.Kube) string {
	ns := fmt.Sprintf("codemode-bench-%d", time.Now().UnixNano()%1e9)
	if out, err := kubeTry(k, "create", "namespace", ns); err != nil {
		b.Fatalf("creating namespace: %v\n%s", err, out)
	}
	b.Cleanup(func() { kubeTry(k, "delete", "namespace", ns, "--wait=true", "--timeout=120s") })
	return ns
}
