package activity

import (
	"context"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/approval"
	"github.com/codemode/codemode/internal/executor"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/peer"
	"github.com/codemode/codemode/internal/policy"
	"github.com/go-json-experiment/json/jsontext"
)

func all(string) bool { return true }

// cell runs one recorded call whose code makes the given nested calls.
func cell(t *testing.T, r *Recorder, principal, owner, session string, calls []hostrpc.ToolCaller, res *executor.Result) {
	t.Helper()
	ctx := peer.With(context.Background(), &peer.Peer{Principal: principal, ClientName: "claude-code"})
	ctx = r.CallStarted(ctx, executor.CallInfo{Principal: principal, Owner: owner, Session: session, Code: "print('<b>hi</b>')"})
	for _, final := range calls {
		r.Middleware(final)(ctx, &hostrpc.ToolCall{Caller: hostrpc.Caller{Principal: principal, Owner: owner, Session: session},
			Server: "fs", Tool: "read", Arguments: map[string]jsontext.Value{"path": jsontext.Value(`"/x"`)}})
	}
	r.CallEnded(ctx, res)
}

func TestRecordsCellsAndNestedCalls(t *testing.T) {
	r := New(Options{})
	changed, v0 := r.Changed()
	ok := func(ctx context.Context, c *hostrpc.ToolCall) (any, error) {
		r.Decided(ctx, policy.Decision{Effect: policy.Allow, Rule: policy.RuleRef{Label: "rules[0]"}})
		return "fine", nil
	}
	refused := func(ctx context.Context, c *hostrpc.ToolCall) (any, error) {
		r.Decided(ctx, policy.Decision{Effect: policy.Deny, Rule: policy.RuleRef{Label: "default"}})
		return nil, &hostrpc.Error{Kind: "denied", Message: "no"}
	}
	res := &executor.Result{Status: executor.StatusSuccess, Stdout: executor.Output{Head: []byte("<b>hi</b>\n"), Total: 10},
		Files: []executor.File{{URI: "codemode://s/output/stdout-1.txt", Name: "output/stdout-1.txt"}}}
	cell(t, r, "alice", "conn1", "default", []hostrpc.ToolCaller{ok, refused}, res)
	select {
	case <-changed:
	default:
		t.Fatal("Changed was not closed by a change")
	}
	v := r.View(all)
	if v.Version <= v0 || len(v.Sessions) != 1 {
		t.Fatalf("view = %+v", v)
	}
	s := v.Sessions[0]
	if s.Principal != "alice" || s.Client != "claude-code" || s.Name != "default" || len(s.Cells) != 1 {
		t.Fatalf("session = %+v", s)
	}
	c := s.Cells[0]
	if c.Status != "success" || c.Code != "print('<b>hi</b>')" || c.Output != "<b>hi</b>\n" || len(c.Files) != 1 || c.Files[0].URI != "codemode://s/output/stdout-1.txt" {
		t.Errorf("cell = %+v", c)
	}
	want := []struct{ outcome, decision, rule string }{{"ok", "allow", "rules[0]"}, {"denied", "deny", "default"}}
	if len(c.Calls) != len(want) {
		t.Fatalf("calls = %+v", c.Calls)
	}
	for i, w := range want {
		got := c.Calls[i]
		if got.Outcome != w.outcome || got.Decision != w.decision || got.Rule != w.rule || got.Server != "fs" || got.Tool != "read" || got.Arguments != `{"path":"/x"}` {
			t.Errorf("call %d = %+v, want %+v", i, got, w)
		}
	}
}

func TestVisibilityAndLimits(t *testing.T) {
	r := New(Options{MaxSessions: 2, MaxCells: 2, Preview: 5})
	done := &executor.Result{Status: executor.StatusError, Error: "ééééééé"}
	cell(t, r, "alice", "c1", "a", nil, done)
	time.Sleep(time.Millisecond)
	cell(t, r, "bob", "c2", "b", nil, done)
	for range 3 {
		cell(t, r, "bob", "c2", "b", nil, done)
	}
	if v := r.View(func(p string) bool { return p == "alice" }); len(v.Sessions) != 1 || v.Sessions[0].Principal != "alice" {
		t.Errorf("alice sees %+v", v.Sessions)
	}
	v := r.View(func(p string) bool { return p == "bob" })
	if len(v.Sessions) != 1 || len(v.Sessions[0].Cells) != 2 {
		t.Fatalf("bob sees %+v", v.Sessions)
	}
	if e := v.Sessions[0].Cells[0].Error; e != "éé…" {
		t.Errorf("error cut to %q, want whole runes", e)
	}
	time.Sleep(time.Millisecond)
	cell(t, r, "carol", "c3", "c", nil, done)
	v = r.View(all)
	if len(v.Sessions) != 2 || v.Sessions[0].Principal != "carol" || v.Sessions[1].Principal != "bob" {
		t.Errorf("after pruning: %+v", v.Sessions)
	}
	if _, _, err := r.Session(v.Sessions[0].ID, func(p string) bool { return p == "bob" }); err != ErrNotFound {
		t.Errorf("bob found carol's session: %v", err)
	}
	if owner, name, err := r.Session(v.Sessions[0].ID, all); owner != "c3" || name != "c" || err != nil {
		t.Errorf("Session = %q %q %v", owner, name, err)
	}
}

func TestBoard(t *testing.T) {
	r := New(Options{})
	cell(t, r, "alice", "c1", "s", nil, &executor.Result{Status: executor.StatusSuccess})
	replies, withdraw := r.Post(context.Background(), approval.Request{Principal: "alice", Owner: "c1", Session: "s", Server: "fs", Tool: "rm", Arguments: jsontext.Value(`{"p":1}`), Reason: "destructive"})
	v := r.View(all)
	if len(v.Approvals) != 1 || v.Approvals[0].SessionID != v.Sessions[0].ID || v.Approvals[0].Reason != "destructive" {
		t.Fatalf("approvals = %+v", v.Approvals)
	}
	id := v.Approvals[0].ID
	if err := r.Answer(id, func(p string) bool { return p == "bob" }, approval.Reply{Allowed: true}); err != ErrNotFound {
		t.Errorf("bob answered alice's ask: %v", err)
	}
	if err := r.Answer(id, all, approval.Reply{Allowed: true, Approver: "console:admin"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Answer(id, all, approval.Reply{}); err != ErrNotFound {
		t.Errorf("a second answer: %v", err)
	}
	if got := <-replies; !got.Allowed || got.Approver != "console:admin" {
		t.Errorf("reply = %+v", got)
	}
	withdraw()
	if v := r.View(all); len(v.Approvals) != 0 {
		t.Errorf("withdrawn ask still shown: %+v", v.Approvals)
	}
}

// TestClosedSessionKeepsItsTimeline: a session that ended stays in view,
// marked ended and no longer actionable; a new session under the same name
// starts a timeline of its own.
func TestClosedSessionKeepsItsTimeline(t *testing.T) {
	r := New(Options{})
	done := &executor.Result{Status: executor.StatusSuccess}
	cell(t, r, "alice", "principal:alice", "work", nil, done)
	first := r.View(all).Sessions[0]
	r.SessionClosed("principal:alice", "work")
	r.SessionClosed("principal:alice", "nope") // unknown: nothing happens
	if _, _, err := r.Session(first.ID, all); err == nil {
		t.Error("an ended session can still be acted on")
	}
	time.Sleep(time.Millisecond) // the view orders by last activity
	cell(t, r, "alice", "principal:alice", "work", nil, done)
	cell(t, r, "alice", "principal:alice", "work", nil, done)
	v := r.View(all)
	if len(v.Sessions) != 2 {
		t.Fatalf("want the ended and the new timeline, got %d sessions", len(v.Sessions))
	}
	now, old := v.Sessions[0], v.Sessions[1]
	if old.ID != first.ID || old.Ended.IsZero() || len(old.Cells) != 1 {
		t.Errorf("ended timeline: id %s (want %s), ended %v, %d cells", old.ID, first.ID, old.Ended, len(old.Cells))
	}
	if now.ID == first.ID || !now.Ended.IsZero() || len(now.Cells) != 2 {
		t.Errorf("new timeline: id %s, ended %v, %d cells", now.ID, now.Ended, len(now.Cells))
	}
	if owner, name, err := r.Session(now.ID, all); err != nil || owner != "principal:alice" || name != "work" {
		t.Errorf("Session(new) = %q %q %v", owner, name, err)
	}
}
