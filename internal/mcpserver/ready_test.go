package mcpserver

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// A readiness check outlives the probe that started it: a probe that gives
// up early does not cancel it, and the next probe gets its result without
// starting another.
func TestReadinessOutlivesItsProbe(t *testing.T) {
	var checks atomic.Int32
	release := make(chan struct{})
	rd := &readiness{check: func(ctx context.Context) error {
		checks.Add(1)
		select {
		case <-release:
			return ctx.Err() // nil unless the check itself was cancelled
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	probe, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := rd.result(probe); err == nil {
		t.Fatal("a probe that gave up before the first check ended was answered ready")
	}
	if err := rd.result(probe); err == nil || checks.Load() != 1 {
		t.Fatalf("second impatient probe: %v, %d checks running (want one)", err, checks.Load())
	}
	close(release)
	if err := rd.result(context.Background()); err != nil {
		t.Fatalf("after the check succeeded: %v (was it cancelled with its probe?)", err)
	}
	for range 5 {
		if err := rd.result(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := checks.Load(); n != 1 {
		t.Fatalf("%d checks for probes within %s, want 1", n, readyFor)
	}
}

// A failed check is kept only briefly; meanwhile probes get the failure.
func TestReadinessRetriesFailures(t *testing.T) {
	var checks atomic.Int32
	rd := &readiness{check: func(context.Context) error {
		checks.Add(1)
		return errors.New("no sandbox")
	}}
	if err := rd.result(context.Background()); err == nil {
		t.Fatal("a failed check was answered ready")
	}
	rd.mu.Lock()
	rd.checked = time.Now().Add(-notReadyFor - time.Second) // the failure has aged out
	rd.mu.Unlock()
	if err := rd.result(context.Background()); err == nil {
		t.Fatal("the stale failure was not served while the new check ran")
	}
	deadline := time.Now().Add(5 * time.Second)
	for checks.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if checks.Load() != 2 {
		t.Fatalf("%d checks, want a retry after %s", checks.Load(), notReadyFor)
	}
}
