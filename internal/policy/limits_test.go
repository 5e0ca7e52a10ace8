package policy

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// mutableLimits is a LimitSource a test can change, as a reload would.
type mutableLimits struct {
	mu sync.Mutex
	l  Limits
}

func (m *mutableLimits) Limits() Limits {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.l
}

func (m *mutableLimits) set(l Limits) {
	m.mu.Lock()
	m.l = l
	m.mu.Unlock()
}

func wantLimit(t *testing.T, err error, limit string, value int) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) {
		t.Fatalf("error %v, want a *LimitError", err)
	}
	if le.Limit != limit || le.Value != value || le.Kind() != "limit" {
		t.Fatalf("LimitError %+v, want %s = %d", le, limit, value)
	}
	if want := limit + " = "; !strings.Contains(err.Error(), want) {
		t.Fatalf("message %q does not name %q", err, want)
	}
}

func TestLimitCallsPerRun(t *testing.T) {
	p := mustParse(t, "toml", "[limits]\nmax_calls_per_run = 3")
	e := NewEnforcer(p)
	ctx := context.Background()
	var run Run
	for range 3 {
		release, err := e.Acquire(ctx, "alice", &run)
		if err != nil {
			t.Fatal(err)
		}
		release()
		release() // twice is harmless
	}
	_, err := e.Acquire(ctx, "alice", &run)
	wantLimit(t, err, "max_calls_per_run", 3)
	if run.Calls() != 3 {
		t.Errorf("Calls() = %d, want 3", run.Calls())
	}
	var other Run
	if _, err := e.Acquire(ctx, "alice", &other); err != nil {
		t.Errorf("a new run is refused: %v", err)
	}
	if _, err := e.Acquire(ctx, "alice", nil); err != nil {
		t.Errorf("a call outside any run is refused: %v", err)
	}
}

func TestLimitConcurrency(t *testing.T) {
	src := &mutableLimits{l: Limits{MaxConcurrentCalls: 2}}
	e := NewEnforcer(src)
	ctx := context.Background()
	r1, err := e.Acquire(ctx, "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := e.Acquire(ctx, "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Another principal has slots of its own.
	rb, err := e.Acquire(ctx, "bob", nil)
	if err != nil {
		t.Fatalf("bob waits on alice: %v", err)
	}
	rb()

	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	var run Run
	_, err = e.Acquire(short, "alice", &run)
	wantLimit(t, err, "max_concurrent_calls", 2)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap the context's", err)
	}
	if run.Calls() != 0 {
		t.Errorf("a refused call counts in its run: %d", run.Calls())
	}

	// A waiting call goes ahead when a slot frees.
	got := make(chan error, 1)
	go func() {
		release, err := e.Acquire(ctx, "alice", nil)
		if err == nil {
			release()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("third call did not wait: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	r1()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting call never went ahead")
	}
	r2()

	// Raising the limit takes effect on the next call.
	src.set(Limits{MaxConcurrentCalls: 3})
	var releases []func()
	for range 3 {
		release, err := e.Acquire(ctx, "alice", nil)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	for _, r := range releases {
		r()
	}
}

func TestLimitCallsPerMinute(t *testing.T) {
	src := &mutableLimits{l: Limits{CallsPerMinute: 60}}
	e := NewEnforcer(src)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.now = func() time.Time { return now }
	ctx := context.Background()
	for i := range 60 {
		release, err := e.Acquire(ctx, "alice", nil)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		release()
	}
	var run Run
	_, err := e.Acquire(ctx, "alice", &run)
	wantLimit(t, err, "calls_per_minute", 60)
	if run.Calls() != 0 {
		t.Errorf("a refused call counts in its run: %d", run.Calls())
	}
	if _, err := e.Acquire(ctx, "bob", nil); err != nil {
		t.Errorf("bob is limited by alice's calls: %v", err)
	}
	now = now.Add(time.Second) // 60/min refills one a second
	if _, err := e.Acquire(ctx, "alice", nil); err != nil {
		t.Errorf("no call a second later: %v", err)
	}
	if _, err := e.Acquire(ctx, "alice", nil); err == nil {
		t.Error("two calls a second later")
	}
	// Raised to 120/min, the bucket refills two a second.
	src.set(Limits{CallsPerMinute: 120})
	_, err = e.Acquire(ctx, "alice", nil)
	wantLimit(t, err, "calls_per_minute", 120)
	now = now.Add(time.Second)
	for i := range 2 {
		if _, err := e.Acquire(ctx, "alice", nil); err != nil {
			t.Errorf("after raising to 120/min, call %d: %v", i, err)
		}
	}
	if _, err := e.Acquire(ctx, "alice", nil); err == nil {
		t.Error("three calls a second at 120/min")
	}
}

func TestLimitsUnlimited(t *testing.T) {
	e := NewEnforcer(mustParse(t, "toml", ""))
	var run Run
	for range 1000 {
		if _, err := e.Acquire(context.Background(), "alice", &run); err != nil {
			t.Fatal(err)
		}
	}
	if run.Calls() != 1000 {
		t.Errorf("Calls() = %d", run.Calls())
	}
}

// A run's budget is shared by its concurrent calls exactly.
func TestLimitCallsPerRunConcurrent(t *testing.T) {
	e := NewEnforcer(&mutableLimits{l: Limits{MaxCallsPerRun: 50}})
	var run Run
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 200 {
		wg.Go(func() {
			if release, err := e.Acquire(context.Background(), "alice", &run); err == nil {
				release()
				mu.Lock()
				granted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if granted != 50 {
		t.Errorf("granted %d calls, want 50", granted)
	}
}
