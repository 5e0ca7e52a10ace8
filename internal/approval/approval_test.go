package approval

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/peer"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// user answers elicitations as scripted and records the questions.
type user struct {
	mu      sync.Mutex
	action  string
	content map[string]any
	block   bool
	err     error
	asked   []string
}

func (u *user) elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	u.mu.Lock()
	u.asked = append(u.asked, p.Message)
	u.mu.Unlock()
	if u.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if u.err != nil {
		return nil, u.err
	}
	return &mcp.ElicitResult{Action: u.action, Content: u.content}, nil
}

func TestAsk(t *testing.T) {
	req := Request{Principal: "alice", Session: "s1", Server: "fs", Tool: "delete_file", Arguments: jsontext.Value(`{"path":"/x"}`), Reason: "deletes files"}
	tests := []struct {
		name        string
		user        *user // nil: no elicitation support
		wantAllowed bool
		wantWhy     string
		approver    string
	}{
		{"no elicitation", nil, false, "this client cannot ask its user", ""},
		{"approved", &user{action: "accept", content: map[string]any{"approve": true}}, true, "", "client:test-client"},
		{"accepted without approving", &user{action: "accept", content: map[string]any{"approve": false}}, false, "did not approve fs.delete_file (decline)", "client:test-client"},
		{"declined", &user{action: "decline"}, false, "(decline)", "client:test-client"},
		{"cancelled", &user{action: "cancel"}, false, "(cancel)", "client:test-client"},
		{"no answer", &user{block: true}, false, "was not approved within 50ms", ""},
		{"client error", &user{err: errors.New("boom")}, false, "failed (boom)", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New(Options{Timeout: 50 * time.Millisecond})
			p := &peer.Peer{Principal: "alice", ClientName: "test-client"}
			if tc.user != nil {
				p.Elicit = tc.user.elicit
			}
			ans, err := a.Ask(peer.With(context.Background(), p), req)
			if err != nil {
				t.Fatal(err)
			}
			if ans.Allowed != tc.wantAllowed || !strings.Contains(ans.Why, tc.wantWhy) || ans.Approver != tc.approver {
				t.Fatalf("answer = %+v, want allowed=%v why~%q approver=%q", ans, tc.wantAllowed, tc.wantWhy, tc.approver)
			}
			if !tc.wantAllowed && !strings.Contains(ans.Why, `decision = "allow" for server "fs" and tool "delete_file"`) {
				t.Errorf("refusal does not say how to allow the call: %q", ans.Why)
			}
			if tc.user != nil {
				tc.user.mu.Lock()
				defer tc.user.mu.Unlock()
				if len(tc.user.asked) != 1 || !strings.Contains(tc.user.asked[0], `fs.delete_file with arguments {"path":"/x"}. Policy: deletes files.`) {
					t.Errorf("question = %q", tc.user.asked)
				}
			}
		})
	}
}

func TestRememberForSession(t *testing.T) {
	u := &user{action: "accept", content: map[string]any{"approve": true, "remember": true}}
	a := New(Options{})
	ctx := peer.With(context.Background(), &peer.Peer{Elicit: u.elicit})
	req := Request{Principal: "alice", Session: "s1", Server: "fs", Tool: "write"}
	for i := 0; i < 3; i++ {
		if ans, _ := a.Ask(ctx, req); !ans.Allowed {
			t.Fatalf("ask %d refused: %+v", i, ans)
		}
	}
	if len(u.asked) != 1 {
		t.Fatalf("asked %d times, want once (remembered)", len(u.asked))
	}
	other := req
	other.Session = "s2" // another session of the same principal is asked again
	if a.Ask(ctx, other); len(u.asked) != 2 {
		t.Fatalf("another session was not asked")
	}
	a.Forget("alice", "", "s1")
	if a.Ask(ctx, req); len(u.asked) != 3 {
		t.Fatalf("a forgotten session was not asked again")
	}
}

func TestCancelledCallIsAnError(t *testing.T) {
	u := &user{block: true}
	a := New(Options{Timeout: time.Minute})
	ctx, cancel := context.WithCancel(peer.With(context.Background(), &peer.Peer{Elicit: u.elicit}))
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := a.Ask(ctx, Request{Server: "fs", Tool: "x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestLongArgumentsAreCut(t *testing.T) {
	u := &user{action: "decline"}
	a := New(Options{MaxArgChars: 10})
	a.Ask(peer.With(context.Background(), &peer.Peer{Elicit: u.elicit}), Request{Server: "fs", Tool: "x", Arguments: jsontext.Value(`{"data":"` + strings.Repeat("a", 100) + `"}`)})
	if !strings.Contains(u.asked[0], `{"data":"a… (101 more characters)`) {
		t.Fatalf("question = %q", u.asked[0])
	}
}

// board is a second place to answer, scripted.
type board struct {
	reply  *Reply // nil: nobody answers there
	posted []Request
	open   int
}

func (b *board) Post(ctx context.Context, req Request) (<-chan Reply, func()) {
	b.posted = append(b.posted, req)
	b.open++
	ch := make(chan Reply, 1)
	if b.reply != nil {
		ch <- *b.reply
	}
	return ch, func() { b.open-- }
}

func TestBoardFirstAnswerWins(t *testing.T) {
	req := Request{Principal: "alice", Session: "s1", Server: "fs", Tool: "rm"}
	tests := []struct {
		name         string
		user         *user // nil: no elicitation support
		reply        *Reply
		wantAllowed  bool
		wantApprover string
		wantWhy      string
	}{
		{"console approves, client cannot ask", nil, &Reply{Allowed: true, Approver: "console:admin"}, true, "console:admin", ""},
		{"console denies while the client waits", &user{block: true}, &Reply{Approver: "console:admin"}, false, "console:admin", "(decline)"},
		{"client answers, console silent", &user{action: "accept", content: map[string]any{"approve": true}}, nil, true, "client:Claude Code", ""},
		{"client cancels, console silent", &user{action: "cancel"}, nil, false, "client:Claude Code", "(cancel)"},
		{"nobody answers", nil, nil, false, "", "was not approved within"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &board{reply: tc.reply}
			a := New(Options{Timeout: 100 * time.Millisecond, Board: b})
			p := &peer.Peer{ClientName: "Claude Code"}
			if tc.user != nil {
				p.Elicit = tc.user.elicit
			}
			ans, err := a.Ask(peer.With(context.Background(), p), req)
			if err != nil {
				t.Fatal(err)
			}
			if ans.Allowed != tc.wantAllowed || ans.Approver != tc.wantApprover || !strings.Contains(ans.Why, tc.wantWhy) {
				t.Errorf("answer = %+v", ans)
			}
			if len(b.posted) != 1 || b.posted[0].Tool != "rm" || b.open != 0 {
				t.Errorf("posted %+v, still open %d", b.posted, b.open)
			}
		})
	}
}

func TestBoardRemembers(t *testing.T) {
	b := &board{reply: &Reply{Allowed: true, Remember: true, Approver: "console:a"}}
	a := New(Options{Board: b})
	req := Request{Principal: "alice", Session: "s1", Server: "fs", Tool: "rm"}
	for range 2 {
		if ans, _ := a.Ask(context.Background(), req); !ans.Allowed {
			t.Fatalf("refused: %+v", ans)
		}
	}
	if len(b.posted) != 1 {
		t.Errorf("posted %d times, want once (remembered)", len(b.posted))
	}
}
