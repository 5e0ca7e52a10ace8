package policy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Limits bound the nested calls of sandboxed code. Zero means unlimited.
type Limits struct {
	// MaxCallsPerRun bounds the calls one run_python call makes.
	MaxCallsPerRun int
	// MaxConcurrentCalls bounds one principal's calls in flight; a call
	// over it waits for a slot.
	MaxConcurrentCalls int
	// CallsPerMinute bounds one principal's call rate (a token bucket that
	// holds a minute's worth).
	CallsPerMinute int
}

func (l Limits) String() string {
	var parts []string
	if l.MaxCallsPerRun > 0 {
		parts = append(parts, fmt.Sprintf("%d calls/run", l.MaxCallsPerRun))
	}
	if l.MaxConcurrentCalls > 0 {
		parts = append(parts, fmt.Sprintf("%d concurrent", l.MaxConcurrentCalls))
	}
	if l.CallsPerMinute > 0 {
		parts = append(parts, fmt.Sprintf("%d/min", l.CallsPerMinute))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// LimitSource gives the limits in force; *Policy and *Store are ones, the
// latter following reloads.
type LimitSource interface {
	Limits() Limits
}

// Run counts the nested calls of one run_python call. The zero value is
// ready; make one per run_python call.
type Run struct {
	calls atomic.Int64
}

// Calls is how many calls the run has been granted.
func (r *Run) Calls() int { return int(r.calls.Load()) }

// LimitError is a call refused by a limit.
type LimitError struct {
	// Limit is the setting's name in the policy file.
	Limit string
	Value int
	msg   string
	cause error
}

func (e *LimitError) Error() string { return e.msg }

// Kind is the error kind sandboxed code sees.
func (e *LimitError) Kind() string { return "limit" }

// Unwrap gives the context's error when a wait for a slot was cut short.
func (e *LimitError) Unwrap() error { return e.cause }

// Enforcer applies Limits to calls, per run and per principal. It reads the
// limits from its source on every call, so reloads apply at once.
type Enforcer struct {
	src LimitSource
	now func() time.Time

	mu         sync.Mutex
	principals map[string]*principalState
}

// principalState is what the Enforcer keeps per principal.
type principalState struct {
	mu       sync.Mutex
	inflight int
	freed    chan struct{} // closed, and replaced, when a slot frees up
	bucket   *rate.Limiter // nil until calls_per_minute is set
	perMin   int           // what bucket was configured for
}

// NewEnforcer returns an Enforcer for the limits src gives.
func NewEnforcer(src LimitSource) *Enforcer {
	return &Enforcer{src: src, now: time.Now, principals: map[string]*principalState{}}
}

// Acquire admits one call by principal within run (nil: not counted per
// run), or returns a *LimitError naming the limit. It waits while the
// principal has max_concurrent_calls in flight, until ctx ends. A nil
// error comes with release, which the caller must call when the call is
// over; calling it again does nothing.
func (e *Enforcer) Acquire(ctx context.Context, principal string, run *Run) (release func(), err error) {
	lim := e.src.Limits()
	if run != nil && lim.MaxCallsPerRun > 0 && !run.take(int64(lim.MaxCallsPerRun)) {
		return nil, &LimitError{Limit: "max_calls_per_run", Value: lim.MaxCallsPerRun,
			msg: fmt.Sprintf("limit: this run reached max_calls_per_run = %d tool calls; do the rest in another run", lim.MaxCallsPerRun)}
	} else if run != nil && lim.MaxCallsPerRun <= 0 {
		run.calls.Add(1)
	}
	undo := func() {
		if run != nil {
			run.calls.Add(-1)
		}
	}
	st := e.state(principal)
	if lim.CallsPerMinute > 0 && !st.allow(e.now(), lim.CallsPerMinute) {
		undo()
		return nil, &LimitError{Limit: "calls_per_minute", Value: lim.CallsPerMinute,
			msg: fmt.Sprintf("limit: calls_per_minute = %d reached; wait before calling again", lim.CallsPerMinute)}
	}
	if err := st.enter(ctx, e.src); err != nil {
		undo()
		n := e.src.Limits().MaxConcurrentCalls
		return nil, &LimitError{Limit: "max_concurrent_calls", Value: n, cause: err,
			msg: fmt.Sprintf("limit: max_concurrent_calls = %d calls in flight; gave up waiting for one to finish: %v", n, err)}
	}
	var once sync.Once
	return func() { once.Do(st.leave) }, nil
}

// take counts a call if the run has had fewer than limit.
func (r *Run) take(limit int64) bool {
	for {
		n := r.calls.Load()
		if n >= limit {
			return false
		}
		if r.calls.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (e *Enforcer) state(principal string) *principalState {
	e.mu.Lock()
	defer e.mu.Unlock()
	st, ok := e.principals[principal]
	if !ok {
		st = &principalState{freed: make(chan struct{})}
		e.principals[principal] = st
	}
	return st
}

// allow takes a token from the principal's bucket, which refills at
// perMin a minute and holds as many.
func (st *principalState) allow(now time.Time, perMin int) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	every := rate.Limit(float64(perMin) / 60)
	switch {
	case st.bucket == nil:
		st.bucket = rate.NewLimiter(every, perMin)
	case st.perMin != perMin:
		st.bucket.SetLimitAt(now, every)
		st.bucket.SetBurstAt(now, perMin)
	}
	st.perMin = perMin
	return st.bucket.AllowN(now, 1)
}

// enter takes a slot, waiting while the principal is at its concurrency
// limit (read afresh after each wait, so a reload that raises it frees
// waiters on the next release).
func (st *principalState) enter(ctx context.Context, src LimitSource) error {
	for {
		st.mu.Lock()
		limit := src.Limits().MaxConcurrentCalls
		if limit <= 0 || st.inflight < limit {
			st.inflight++
			st.mu.Unlock()
			return nil
		}
		freed := st.freed
		st.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (st *principalState) leave() {
	st.mu.Lock()
	st.inflight--
	close(st.freed)
	st.freed = make(chan struct{})
	st.mu.Unlock()
}
