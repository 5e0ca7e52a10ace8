// Package approval asks a human whether a nested tool call that the policy
// marked "ask" may go ahead. The question goes to the user of the MCP client
// behind the run_python call (form elicitation) and, when one is
// configured, to a Board such as the web console — never to the code, which
// cannot answer for itself. The first answer wins. An approval may be remembered for the rest of
// the session; no answer, a decline, a timeout or a client that cannot be
// asked all mean no.
package approval

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/codemode/codemode/internal/peer"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Request is one call waiting for approval.
type Request struct {
	Principal    string
	Owner        string // the session's owner: its principal, or the connection of a default session
	Session      string
	Server, Tool string
	Arguments    jsontext.Value // as they will be sent
	Reason       string         // the rule's reason
	Rule         string         // which rule asked ("rules[2]", "default")
	// Action, when set, is what is asked instead of a tool call ("add the
	// MCP server X from catalog Y"); Server and Tool still key what is
	// remembered.
	Action string
}

// Answer is the human's decision.
type Answer struct {
	Allowed  bool
	Approver string // who answered ("client:<name>", or "session" when remembered)
	// Why explains a refusal to the code (and the model), including how to
	// allow the call for good.
	Why string
}

// Options configure an Approver.
type Options struct {
	// Timeout bounds the wait for an answer (default 2 minutes).
	Timeout time.Duration
	// MaxArgChars bounds the arguments shown in the question (default 600).
	MaxArgChars int
	// Board, if set, shows every question to humans besides the client's
	// user (the web console).
	Board Board
}

// Board is a second place where a human can answer: Post shows req until
// withdraw is called, and sends at most one Reply on replies.
type Board interface {
	Post(ctx context.Context, req Request) (replies <-chan Reply, withdraw func())
}

// Reply is a human's answer given on a Board.
type Reply struct {
	Allowed  bool
	Remember bool   // allow the tool for the rest of the session
	Approver string // who answered ("console:<name>")
}

// Approver asks and remembers "allow for this session" answers.
type Approver struct {
	opts Options

	mu         sync.Mutex
	remembered map[rememberKey]bool
}

type rememberKey struct{ principal, owner, session, server, tool string }

// New returns an Approver.
func New(opts Options) *Approver {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.MaxArgChars <= 0 {
		opts.MaxArgChars = 600
	}
	return &Approver{opts: opts, remembered: map[rememberKey]bool{}}
}

// Ask decides req: a remembered approval, else the answer of the user of the
// client in ctx (see peer). The error is only for a cancelled ctx.
func (a *Approver) Ask(ctx context.Context, req Request) (Answer, error) {
	k := rememberKey{req.Principal, req.Owner, req.Session, req.Server, req.Tool}
	a.mu.Lock()
	ok := a.remembered[k]
	a.mu.Unlock()
	if ok {
		return Answer{Allowed: true, Approver: "session"}, nil
	}
	what := req.Server + "." + req.Tool
	how := fmt.Sprintf("to allow it without asking, add a rule with decision = \"allow\" for server %q and tool %q to the policy file", req.Server, req.Tool)
	if req.Action != "" {
		what = req.Action
		how = fmt.Sprintf("to allow it without asking, add an [[add]] rule with decision = \"allow\" for name %q to the policy file", req.Server)
	}
	p := peer.From(ctx)
	canElicit := p != nil && p.Elicit != nil
	if !canElicit && a.opts.Board == nil {
		return Answer{Why: fmt.Sprintf("%s needs a human's approval, and this client cannot ask its user (no elicitation support); %s", what, how)}, nil
	}
	askCtx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	// The client's answer, or why it could not be asked.
	type clientReply struct {
		Reply
		action string // accept, decline or cancel
		err    error
	}
	replies := make(chan clientReply, 1)
	if canElicit {
		go func() {
			res, err := p.Elicit(askCtx, &mcp.ElicitParams{Mode: "form", Message: a.question(req), RequestedSchema: schema})
			if err != nil {
				if askCtx.Err() == nil {
					replies <- clientReply{err: err}
				}
				return
			}
			approver := "client"
			if p.ClientName != "" {
				approver += ":" + p.ClientName
			}
			action := res.Action
			if action == "accept" && res.Content["approve"] != true {
				action = "decline"
			}
			replies <- clientReply{Reply: Reply{Allowed: action == "accept", Remember: res.Content["remember"] == true, Approver: approver}, action: action}
		}()
	}
	var board <-chan Reply
	if a.opts.Board != nil {
		var withdraw func()
		board, withdraw = a.opts.Board.Post(askCtx, req)
		defer withdraw()
	}
	var r Reply
	action := "decline"
	select {
	case c := <-replies:
		if c.err != nil {
			return Answer{Why: fmt.Sprintf("asking the user to approve %s failed (%v); %s", what, c.err, how)}, nil
		}
		r, action = c.Reply, c.action
	case r = <-board:
	case <-askCtx.Done():
		if ctx.Err() != nil {
			return Answer{}, ctx.Err()
		}
		return Answer{Why: fmt.Sprintf("%s was not approved within %s; %s", what, a.opts.Timeout, how)}, nil
	}
	if !r.Allowed {
		return Answer{Approver: r.Approver, Why: fmt.Sprintf("the user did not approve %s (%s); %s", what, action, how)}, nil
	}
	if r.Remember {
		a.mu.Lock()
		a.remembered[k] = true
		a.mu.Unlock()
	}
	return Answer{Allowed: true, Approver: r.Approver}, nil
}

// Forget drops what was remembered for a session (it was reset or closed).
func (a *Approver) Forget(principal, owner, session string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range a.remembered {
		if k.principal == principal && k.owner == owner && k.session == session {
			delete(a.remembered, k)
		}
	}
}

var schema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"approve":  map[string]any{"type": "boolean", "title": "Allow this call", "default": false},
		"remember": map[string]any{"type": "boolean", "title": "Allow this tool for the rest of the session", "default": false},
	},
	"required": []string{"approve"},
}

// question is what the user reads: what would run, with what, and why it
// needs them.
func (a *Approver) question(req Request) string {
	var b strings.Builder
	if req.Action != "" {
		fmt.Fprintf(&b, "Code running in codemode session %q wants to %s", req.Session, req.Action)
	} else {
		fmt.Fprintf(&b, "Code running in codemode session %q wants to call %s.%s", req.Session, req.Server, req.Tool)
	}
	if len(req.Arguments) > 0 {
		args := string(req.Arguments)
		if utf8.RuneCountInString(args) > a.opts.MaxArgChars {
			r := []rune(args)
			args = string(r[:a.opts.MaxArgChars]) + fmt.Sprintf("… (%d more characters)", len(r)-a.opts.MaxArgChars)
		}
		fmt.Fprintf(&b, " with arguments %s", args)
	}
	b.WriteString(".")
	if req.Reason != "" {
		fmt.Fprintf(&b, " Policy: %s.", req.Reason)
	}
	b.WriteString(" Allow it?")
	return b.String()
}
