package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/codemode/codemode/internal/approval"
	"github.com/codemode/codemode/internal/audit"
	"github.com/codemode/codemode/internal/egress"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/peer"
	"github.com/codemode/codemode/internal/policy"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// EgressServer is the server name egress requests have in policy rules and
// the audit log; the tool is the host.
const EgressServer = "net"

// EgressUnlisted is the host label of requests to hosts off the allow-list
// in metrics: code could otherwise mint one series per name it tries.
const EgressUnlisted = "(not allowed)"

// Govern implements egress.Governor: the policy decides a sandbox's request
// to a host on the allow-list as it decides a tool call (server "net", tool
// the host, args {method, path, port}), asking a human when it says ask;
// each request is one audit record of kind egress, with its bytes, and is
// counted by EgressObserve under the allow-list entry that allowed it (so
// a wildcard cannot mint a series per name).
func (g *Gate) Govern(ctx context.Context, r egress.Request) (func(egress.Outcome), error) {
	start := time.Now()
	argsJSON, _ := jsonv2.Marshal(map[string]any{"method": r.Method, "path": r.Path, "port": r.Port}, jsonv2.Deterministic(true))
	rec := audit.Record{Kind: audit.KindEgress, Principal: r.Caller.Principal, Session: r.Caller.Session, CallID: newCallID(),
		Server: EgressServer, Tool: r.Host}
	observe := func(host, decision string, in, out int64) {
		if g.opts.EgressObserve != nil {
			g.opts.EgressObserve(host, decision, in, out)
		}
	}
	if r.Refusal != "" {
		setArgs(&rec, argsJSON, false)
		rec.Decision, rec.Rule, rec.Outcome, rec.Reason = audit.DecisionDeny, "egress", audit.OutcomeDenied, r.Refusal
		g.record(rec)
		observe(EgressUnlisted, audit.DecisionDeny, 0, 0)
		return nil, nil
	}
	in := policy.Input{Server: EgressServer, Tool: r.Host, ArgsJSON: argsJSON, Principal: r.Caller.Principal, Session: r.Caller.Session}
	if p := peer.From(ctx); p != nil {
		in.Claims = p.Claims
	}
	d := g.decide(ctx, in)
	rec.Decision, rec.Rule, rec.Reason = d.Effect.String(), d.Rule.Label, d.Reason
	setArgs(&rec, argsJSON, d.Redact)
	refuse := func(msg string) (func(egress.Outcome), error) {
		rec.Outcome = audit.OutcomeDenied
		g.record(rec)
		observe(r.Entry, audit.DecisionDeny, 0, 0)
		return nil, errors.New(msg)
	}
	switch d.Effect {
	case policy.Deny:
		return refuse(deniedBy("requests to "+r.Host+" are denied", d))
	case policy.Ask:
		resume := hostrpc.PauseTimeout(ctx) // the human's time is not the code's
		ans, err := g.opts.Approver.Ask(ctx, approval.Request{Principal: r.Caller.Principal, Owner: r.Caller.Owner, Session: r.Caller.Session,
			Server: EgressServer, Tool: r.Host, Arguments: jsontext.Value(argsJSON), Reason: d.Reason, Rule: d.Rule.Label})
		resume()
		if err != nil {
			return refuse(fmt.Sprintf("asking to reach %s: %v", r.Host, err))
		}
		rec.Approver = ans.Approver
		if !ans.Allowed {
			rec.Reason = joinReason(d.Reason, ans.Why)
			return refuse(ans.Why)
		}
	}
	return func(o egress.Outcome) {
		done := rec
		done.Outcome, done.DurationMS, done.BytesIn, done.BytesOut = audit.OutcomeOK, time.Since(start).Milliseconds(), o.BytesIn, o.BytesOut
		if o.Err != nil {
			done.Outcome, done.Error = audit.OutcomeError, o.Err.Error()
		}
		g.record(done)
		observe(r.Entry, audit.DecisionAllow, o.BytesIn, o.BytesOut)
	}, nil
}
