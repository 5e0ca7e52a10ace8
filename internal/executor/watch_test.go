package executor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// watcher records what a CallWatcher learns.
type watcher struct {
	mu     sync.Mutex
	events []string
}

type watchKey struct{}

func (w *watcher) CallStarted(ctx context.Context, c CallInfo) context.Context {
	w.mu.Lock()
	w.events = append(w.events, "start "+c.Principal+"/"+c.Owner+"/"+c.Session+": "+c.Code)
	w.mu.Unlock()
	return context.WithValue(ctx, watchKey{}, c.Code)
}

func (w *watcher) CallEnded(ctx context.Context, res *Result) {
	w.mu.Lock()
	w.events = append(w.events, "end "+ctx.Value(watchKey{}).(string)+": "+res.Status+" "+stdout(res))
	w.mu.Unlock()
}

func TestWatcherSeesEveryCall(t *testing.T) {
	w := &watcher{}
	m := newManager(t, Options{Watcher: w})
	m.Run(context.Background(), Request{Owner: "o", Session: "s", Principal: "alice", Code: "print(1)"})
	m.Run(context.Background(), Request{Owner: "o", Code: "raise SystemExit(3)"})
	want := []string{
		"start alice/o/s: print(1)", "end print(1): success 1",
		"start default/o/default: raise SystemExit(3)", "end raise SystemExit(3): error ",
	}
	if strings.Join(w.events, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(w.events, "\n"), strings.Join(want, "\n"))
	}
}

func TestResetAndCloseOneSession(t *testing.T) {
	var ended []string
	m := newManager(t, Options{SessionEnded: func(principal, owner, session string, closed bool) {
		ended = append(ended, fmt.Sprintf("%s/%s closed=%v", owner, session, closed))
	}})
	for _, s := range []string{"a", "b"} {
		if r := run(t, m, s, "x = 1"); r.Status != StatusSuccess {
			t.Fatalf("session %s: %+v", s, r)
		}
	}
	if !m.ResetSession("test", "a", "reset from the console") {
		t.Fatal("ResetSession found no session a")
	}
	r := run(t, m, "a", "print('x' in globals())")
	if stdout(r) != "False" || !strings.Contains(strings.Join(r.Notes, " "), "reset from the console") {
		t.Errorf("after reset: %q, notes %q", stdout(r), r.Notes)
	}
	if !m.CloseSession("test", "b") || m.CloseSession("test", "b") || m.ResetSession("test", "nope", "") {
		t.Error("CloseSession closed b twice, or an unknown session was found")
	}
	var names []string
	for _, s := range m.Sessions() {
		names = append(names, s.Name+":"+s.Principal)
	}
	if strings.Join(names, ",") != "a:default" || strings.Join(ended, ",") != "test/a closed=false,test/b closed=true" {
		t.Errorf("sessions %v, ended %v", names, ended)
	}
}
