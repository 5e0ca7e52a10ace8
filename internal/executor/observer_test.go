package executor

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// recorder is an Observer that keeps what it was told.
type recorder struct {
	mu     sync.Mutex
	starts []bool
	exits  []string
}

func (r *recorder) SandboxStarted(spare bool, _ time.Duration) {
	r.mu.Lock()
	r.starts = append(r.starts, spare)
	r.mu.Unlock()
}

func (r *recorder) SandboxExited(cause string) {
	r.mu.Lock()
	r.exits = append(r.exits, cause)
	r.mu.Unlock()
}

func TestObserverSeesStartsAndExits(t *testing.T) {
	rec := &recorder{}
	m := New(Options{Backend: backend(), Observer: rec, InterruptGrace: 300 * time.Millisecond})
	steps := []struct {
		req    Request
		status string
	}{
		{Request{Code: "pass"}, StatusSuccess},
		{Request{Code: "pass", Reset: true}, StatusSuccess},
		{Request{Code: "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except BaseException:\n        pass", Timeout: time.Second}, StatusTimeout},
		{Request{Code: "import os\nos._exit(3)"}, StatusError},
		{Request{Code: "pass"}, StatusSuccess},
	}
	for _, st := range steps {
		st.req.Owner = "test"
		if r := m.Run(context.Background(), st.req); r.Status != st.status {
			t.Fatalf("%q: status %s (%s), want %s", st.req.Code, r.Status, r.Error, st.status)
		}
	}
	m.Close()
	want := []string{ExitReset, ExitTimeoutKill, ExitCrash, ExitShutdown}
	if !slices.Equal(rec.exits, want) {
		t.Errorf("exits %q, want %q", rec.exits, want)
	}
	if !slices.Equal(rec.starts, []bool{false, false, false, false}) {
		t.Errorf("starts %v, want four session starts", rec.starts)
	}
}
