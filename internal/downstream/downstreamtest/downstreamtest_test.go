package downstreamtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBarrier: calls in flight together meet; calls one after the other
// never do, and a round that met leaves the next one to meet afresh.
func TestBarrier(t *testing.T) {
	var b barrier
	answer := func(count int, wait time.Duration) string {
		res, err := b.meet(context.Background(), count, wait)
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	together := func(n int) []string {
		out := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[i] = answer(n, 10*time.Second)
			}()
		}
		wg.Wait()
		return out
	}
	for round := range 2 {
		for _, got := range together(3) {
			if got != "met 3" {
				t.Fatalf("round %d: three calls in flight together answered %q", round, got)
			}
		}
	}
	for i := range 2 {
		if got := answer(2, 50*time.Millisecond); got != "alone: 2 calls were never in flight at once" {
			t.Fatalf("call %d of 2 run one after the other answered %q", i, got)
		}
	}
}
