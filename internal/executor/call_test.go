package executor

import (
	"context"
	"runtime"
	"testing"
	"time"
)

type valueKey struct{}

// A request's context has the call's values and the cell's cancellation;
// contexts derived from it (every tool call's timeout) join the cell's
// cancellation without a goroutine each.
func TestWithValues(t *testing.T) {
	cell, cancelCell := context.WithCancel(context.Background())
	defer cancelCell()
	call, cancelCall := context.WithCancel(context.WithValue(context.Background(), valueKey{}, "the call's"))
	defer cancelCall()
	ctx := withValues(cell, call)
	if got := ctx.Value(valueKey{}); got != "the call's" {
		t.Fatalf("value %v", got)
	}

	before := runtime.NumGoroutine()
	var derived []context.Context
	for range 100 {
		d, cancel := context.WithTimeout(context.WithValue(ctx, valueKey{}, "per request"), time.Minute)
		defer cancel()
		derived = append(derived, d)
	}
	if after := runtime.NumGoroutine(); after > before+5 {
		t.Fatalf("100 derived contexts started %d goroutines", after-before)
	}

	cancelCall() // the request ending does not end the cell's calls
	if derived[0].Err() != nil {
		t.Fatal("the call's cancellation reached the cell's requests")
	}
	cancelCell()
	for _, d := range derived {
		select {
		case <-d.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the cell's cancellation did not reach a derived context")
		}
	}
}
