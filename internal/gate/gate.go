// Package gate is the policy boundary every nested tool call passes: a
// hostrpc.ToolMiddleware that decides the call by the policy in force
// (rules, limits), asks a human when the policy says ask, records each
// decision and each completed call in the audit log, and only then lets the
// call go downstream. It also tells discovery what to hide.
package gate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/codemode/codemode/internal/approval"
	"github.com/codemode/codemode/internal/audit"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/peer"
	"github.com/codemode/codemode/internal/policy"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Source gives the policy in force (a *policy.Store, which follows the file).
type Source interface {
	Current() *policy.Policy
}

// Options configure a Gate.
type Options struct {
	Policy   Source             // required
	Approver *approval.Approver // nil: every ask is denied
	Audit    *audit.Log         // nil: no audit log
	// Observe, if set, learns every decision (metrics).
	Observe func(d policy.Decision)
	// EgressObserve, if set, learns each network request of a sandbox: the
	// allow-list entry that allowed its host (EgressUnlisted when none did),
	// its decision and bytes.
	EgressObserve func(host, decision string, in, out int64)
	// Decided, if set, learns each decision with its call's context (the
	// web console files it under the call).
	Decided func(ctx context.Context, d policy.Decision)
	Logger  *slog.Logger
}

// Gate enforces a policy on tool calls.
type Gate struct {
	opts   Options
	limits *policy.Enforcer
	log    *slog.Logger
}

// New returns a Gate.
func New(opts Options) *Gate {
	g := &Gate{opts: opts, log: opts.Logger, limits: policy.NewEnforcer(limitsOf{opts.Policy})}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.opts.Approver == nil {
		g.opts.Approver = approval.New(approval.Options{})
	}
	return g
}

type limitsOf struct{ src Source }

func (l limitsOf) Limits() policy.Limits { return l.src.Current().Limits() }

type runKey struct{}

// WithRun marks ctx as one run_python call, whose calls count against
// max_calls_per_run together.
func WithRun(ctx context.Context) context.Context {
	return context.WithValue(ctx, runKey{}, &policy.Run{})
}

// ServerHidden reports whether the policy denies every call to server.
func (g *Gate) ServerHidden(server string) bool { return g.opts.Policy.Current().ServerHidden(server) }

// ToolHidden reports whether the policy denies every call to the tool.
func (g *Gate) ToolHidden(server, tool string) bool {
	return g.opts.Policy.Current().Hidden(server, tool)
}

// Summary states the policy in force in one line (for the model's manual).
func (g *Gate) Summary() string { return g.opts.Policy.Current().Summary() }

// SessionEnded drops the approvals remembered for a session that was reset
// or closed: a new interpreter is a new session.
func (g *Gate) SessionEnded(principal, owner, session string) {
	g.opts.Approver.Forget(principal, owner, session)
}

// Middleware decides each call before it goes downstream.
func (g *Gate) Middleware(next hostrpc.ToolCaller) hostrpc.ToolCaller {
	return func(ctx context.Context, c *hostrpc.ToolCall) (any, error) {
		start := time.Now()
		argsJSON, err := jsonv2.Marshal(c.Arguments, jsonv2.Deterministic(true))
		if err != nil {
			return nil, hostrpc.Errorf(hostrpc.KindInvalid, "arguments of %s.%s: %v", c.Server, c.Tool, err)
		}
		in := policy.Input{Server: c.Server, Tool: c.Tool, ArgsJSON: argsJSON,
			Principal: c.Caller.Principal, Session: c.Caller.Session}
		p := peer.From(ctx)
		if p != nil {
			in.Claims = p.Claims
		}
		if len(c.Annotations) > 0 {
			if err := jsonv2.Unmarshal(c.Annotations, &in.Annotations); err != nil {
				g.log.WarnContext(ctx, "tool annotations unreadable; rules see none", "server", c.Server, "tool", c.Tool, "error", err)
			}
		}
		d := g.decide(ctx, in)
		if g.opts.Decided != nil {
			g.opts.Decided(ctx, d)
		}
		rec := audit.Record{Kind: audit.KindDecision, Principal: c.Caller.Principal, Session: c.Caller.Session,
			CallID: newCallID(), Server: c.Server, Tool: c.Tool, Decision: d.Effect.String(), Rule: d.Rule.Label, Reason: d.Reason}
		setArgs(&rec, argsJSON, d.Redact)
		finish := func(outcome string, err error) {
			call := rec
			call.Kind, call.Outcome, call.DurationMS = audit.KindCall, outcome, time.Since(start).Milliseconds()
			if err != nil {
				call.Error = err.Error()
			}
			g.record(call)
		}

		if d.Effect == policy.Deny {
			rec.Outcome = audit.OutcomeDenied
			g.record(rec)
			return nil, &hostrpc.Error{Kind: "denied", Server: c.Server, Tool: c.Tool, Message: deniedBy(c.Server+"."+c.Tool+" is denied", d)}
		}
		// Limits before asking: a human is not asked for a call that could
		// not run anyway.
		run, _ := ctx.Value(runKey{}).(*policy.Run)
		if run == nil {
			run = &policy.Run{}
		}
		release, err := g.limits.Acquire(ctx, c.Caller.Principal, run)
		if err != nil {
			var le *policy.LimitError
			if errors.As(err, &le) {
				rec.Outcome = audit.OutcomeLimit
				g.record(rec)
				return nil, &hostrpc.Error{Kind: "limit", Message: le.Error(), Server: c.Server, Tool: c.Tool}
			}
			return nil, err
		}
		defer release()

		if d.Effect == policy.Ask {
			resume := hostrpc.PauseTimeout(ctx) // the human's time is not the code's
			ans, err := g.opts.Approver.Ask(ctx, approval.Request{Principal: c.Caller.Principal, Owner: c.Caller.Owner, Session: c.Caller.Session,
				Server: c.Server, Tool: c.Tool, Arguments: jsontext.Value(argsJSON), Reason: d.Reason, Rule: d.Rule.Label})
			resume()
			if err != nil {
				return nil, err
			}
			rec.Approver = ans.Approver
			if !ans.Allowed {
				rec.Outcome = audit.OutcomeDenied
				rec.Reason = joinReason(d.Reason, ans.Why)
				g.record(rec)
				return nil, &hostrpc.Error{Kind: "denied", Server: c.Server, Tool: c.Tool, Message: ans.Why}
			}
		}
		g.record(rec)
		res, err := next(ctx, c)
		if err != nil {
			finish(audit.OutcomeError, err)
			return nil, err
		}
		finish(audit.OutcomeOK, nil)
		return res, nil
	}
}

// decide asks the policy in force, logging conditions that failed to
// evaluate (their rules did not match) and counting the decision.
func (g *Gate) decide(ctx context.Context, in policy.Input) policy.Decision {
	d := g.opts.Policy.Current().Decide(ctx, in)
	for _, ce := range d.ConditionErrors {
		g.log.WarnContext(ctx, "policy condition failed; the rule did not match", "rule", ce.Rule.Label, "line", ce.Rule.Line, "error", ce.Message, "server", in.Server, "tool", in.Tool)
	}
	if g.opts.Observe != nil {
		g.opts.Observe(d)
	}
	return d
}

// setArgs puts a call's arguments in its audit record, or only their
// digest when the rule redacts them.
func setArgs(rec *audit.Record, argsJSON []byte, redact bool) {
	if redact {
		rec.ArgsSHA256, _ = audit.ArgsDigest(jsontext.Value(argsJSON))
	} else {
		rec.Args = jsontext.Value(argsJSON)
	}
}

// record appends to the audit log; a failing log is reported, and the call
// goes on (the log's own error stops later records, see audit.Log).
func (g *Gate) record(r audit.Record) {
	if err := g.opts.Audit.Append(context.Background(), r); err != nil {
		g.log.Error("audit log", "error", err)
	}
}

// deniedBy says why the policy refused an action ("X is denied by policy
// (rule, line N): reason"), the same for tool calls, adds and egress;
// refused is the sentence's start ("X is denied").
func deniedBy(refused string, d policy.Decision) string {
	msg := fmt.Sprintf("%s by policy (%s", refused, d.Rule.Label)
	if d.Rule.Line > 0 {
		msg += fmt.Sprintf(", line %d", d.Rule.Line)
	}
	msg += ")"
	if d.Reason != "" {
		msg += ": " + d.Reason
	}
	return msg
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func newCallID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// AddRequest is code asking to add a server from a catalog.
type AddRequest struct {
	Caller hostrpc.Caller
	policy.AddInput
	// Persist asks to keep the server in codemode's config file: a human
	// must approve that even when the rules allow the add.
	Persist bool
}

// DecideAdd decides whether code may add a catalog entry as a server, asks
// a human when the add rules say ask, and writes one audit record of kind
// add. A refusal is an *hostrpc.Error of kind denied (not_found for a name
// in no catalog).
func (g *Gate) DecideAdd(ctx context.Context, r AddRequest) error {
	d := g.opts.Policy.Current().DecideAdd(r.AddInput)
	if r.Persist && d.Effect == policy.Allow {
		d.Effect, d.Reason = policy.Ask, joinReason(d.Reason, "it would be kept in codemode's config file")
	}
	if g.opts.Observe != nil {
		g.opts.Observe(d)
	}
	rec := audit.Record{Kind: audit.KindAdd, Principal: r.Caller.Principal, Session: r.Caller.Session, CallID: newCallID(),
		Server: r.Name, Decision: d.Effect.String(), Rule: d.Rule.Label, Reason: d.Reason}
	refuse := func(kind, msg string) error {
		rec.Outcome = audit.OutcomeDenied
		g.record(rec)
		return &hostrpc.Error{Kind: kind, Server: r.Name, Message: msg}
	}
	switch {
	case !r.Catalogued:
		return refuse("not_found", fmt.Sprintf("%s is in no catalog; only catalog entries can be added from code (runtime.find_servers lists them)", r.Name))
	case d.Effect == policy.Deny:
		return refuse("denied", deniedBy("adding "+r.Name+" is denied", d))
	case d.Effect == policy.Ask:
		action := fmt.Sprintf("add the MCP server %s (%s, from %s) and start it", r.Name, r.Registry, r.Source)
		if r.Persist {
			action += ", and keep it in codemode's config file"
		}
		ans, err := g.opts.Approver.Ask(ctx, approval.Request{Principal: r.Caller.Principal, Owner: r.Caller.Owner, Session: r.Caller.Session,
			Server: r.Name, Reason: d.Reason, Rule: d.Rule.Label, Action: action})
		if err != nil {
			return err
		}
		rec.Approver = ans.Approver
		if !ans.Allowed {
			rec.Reason = joinReason(d.Reason, ans.Why)
			return refuse("denied", ans.Why)
		}
	}
	rec.Outcome = audit.OutcomeOK
	g.record(rec)
	return nil
}
