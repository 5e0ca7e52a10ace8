package policy

import (
	"context"
	"fmt"
	"github.com/codemode/codemode/internal/egress"
	"maps"
	"strings"

	"cel.dev/cel-go/cel"
)

// Policy is a parsed policy file. It is immutable and safe for concurrent
// use; a reload makes a new one.
type Policy struct {
	def    Effect
	defRef RuleRef
	rules  []rule
	limits Limits

	addDef    Effect
	addDefRef RuleRef
	adds      []addRule

	egress *egress.List // [egress] allow: hosts sandboxes may reach, besides the settings'
}

// EgressAllow is the policy's egress allow-list ([egress] allow), empty
// when the file has none.
func (p *Policy) EgressAllow() *egress.List {
	if p.egress == nil {
		return &egress.List{}
	}
	return p.egress
}

type rule struct {
	ref    RuleRef
	server *glob // nil: any server
	tool   *glob // nil: a server-level rule, matching every tool
	when   *condition
	effect Effect
	reason string
	redact bool
}

// Input is one nested tool call, as the policy sees it.
type Input struct {
	Server string
	Tool   string
	// Args are the arguments actually sent, as encoding/json decodes a
	// JSON object into a map[string]any. When Args is nil, ArgsJSON (the
	// object's JSON text) is decoded instead, and only if a condition that
	// reads args is evaluated.
	Args     map[string]any
	ArgsJSON []byte
	// Annotations are the tool's annotations as it declares them (the JSON
	// object of MCP's ToolAnnotations: readOnlyHint, destructiveHint,
	// idempotentHint, openWorldHint, title). Hints the tool does not declare
	// are absent, not filled in with MCP's defaults, so rules can test them
	// with has().
	Annotations map[string]any
	// Principal is the caller: its token's name or its OAuth subject.
	Principal string
	// Claims are the caller's JWT claims, if it has any.
	Claims  map[string]any
	Session string
}

// Default is the effect of calls no rule matches.
func (p *Policy) Default() Effect { return p.def }

// Limits are the call limits in force.
func (p *Policy) Limits() Limits { return p.limits }

// Decide applies the rules to a call: the first rule whose server, tool
// and condition all match decides; without one, the default does. A
// condition that fails to evaluate does not match and is listed in
// ConditionErrors. If ctx ends during a condition, the call is denied.
func (p *Policy) Decide(ctx context.Context, in Input) Decision {
	act := activation{in: &in}
	var condErrs []ConditionError
	for i := range p.rules {
		r := &p.rules[i]
		if r.server != nil && !r.server.match(in.Server) || r.tool != nil && !r.tool.match(in.Tool) {
			continue
		}
		if r.when != nil {
			ok, err := r.when.eval(ctx, &act)
			if err != nil {
				if ctx.Err() != nil {
					return Decision{Effect: Deny, Rule: r.ref, Reason: fmt.Sprintf("policy evaluation stopped: %v", ctx.Err()), ConditionErrors: condErrs}
				}
				condErrs = append(condErrs, ConditionError{Rule: r.ref, Message: err.Error()})
				continue
			}
			if !ok {
				continue
			}
		}
		return Decision{Effect: r.effect, Rule: r.ref, Reason: r.reason, Redact: r.redact, ConditionErrors: condErrs}
	}
	return Decision{Effect: p.def, Rule: p.defRef, Reason: "no rule matched", ConditionErrors: condErrs}
}

// Hidden reports whether every call to server's tool is denied, whoever
// makes it and whatever its arguments: such tools are left out of
// discovery. It walks the rules in order, as Decide does, treating a
// condition it cannot settle from the server and tool names alone as one
// that might hold either way; an allow or ask rule that might match makes
// the tool visible. A default of deny hides every tool that no rule might
// allow.
func (p *Policy) Hidden(server, tool string) bool {
	d, _ := p.certainDeny(context.Background(), server, &tool, map[string]any{varServer: server, varTool: tool})
	return d
}

// HiddenFor is Hidden for a known caller and tool: everything in in but
// the arguments is taken as known (an empty Claims or Annotations means
// none).
func (p *Policy) HiddenFor(in Input) bool {
	d, _ := p.certainDeny(context.Background(), in.Server, &in.Tool, map[string]any{
		varServer: in.Server, varTool: in.Tool, varAnnotations: emptyIfNil(in.Annotations),
		varPrincipal: in.Principal, varClaims: emptyIfNil(in.Claims), varSession: in.Session,
	})
	return d
}

// ServerHidden reports whether every call to server is denied whoever
// makes it: the server need not start, and it is left out of discovery.
// An unconditional server-level deny does this, unless an earlier rule
// might allow one of its tools.
func (p *Policy) ServerHidden(server string) bool {
	d, _ := p.certainDeny(context.Background(), server, nil, map[string]any{varServer: server})
	return d
}

// ServerDecision decides whether the caller described by in (Server,
// Principal, Claims, Session; the rest is ignored) may use server at all:
// Deny when every call it could make to the server is denied, Allow
// otherwise (calls are then decided one by one; ask rules ask then).
// Rule names the rule that settled it.
func (p *Policy) ServerDecision(ctx context.Context, in Input) Decision {
	deny, r := p.certainDeny(ctx, in.Server, nil, map[string]any{
		varServer: in.Server, varPrincipal: in.Principal, varClaims: emptyIfNil(in.Claims), varSession: in.Session,
	})
	if deny {
		reason := r.reason
		if r.ref.Index < 0 {
			reason = "no rule allows any of its tools"
		}
		return Decision{Effect: Deny, Rule: r.ref, Reason: reason}
	}
	reason := r.reason
	if r.effect == Deny || r.ref.Index < 0 {
		reason = ""
	}
	return Decision{Effect: Allow, Rule: r.ref, Reason: reason}
}

// certainDeny walks the rules for calls of which only known is known, the
// tool included when tool is not nil, and reports whether all of them are
// denied, with the rule that settles it (or the default).
func (p *Policy) certainDeny(ctx context.Context, server string, tool *string, known map[string]any) (bool, *rule) {
	var base cel.PartialActivation // made on first use
	for i := range p.rules {
		r := &p.rules[i]
		if r.server != nil && !r.server.match(server) {
			continue
		}
		m, named := yes, false
		switch {
		case r.tool == nil:
		case tool != nil:
			if !r.tool.match(*tool) {
				continue
			}
		case r.tool.kind == globLiteral:
			m, named = maybe, true
		case r.tool.kind != globAll:
			m = maybe
		}
		if r.when != nil {
			var vars cel.PartialActivation
			var err error
			switch {
			case named:
				// The rule names one tool: its condition sees that name.
				withTool := maps.Clone(known)
				withTool[varTool] = r.tool.lit
				vars, err = partialVars(withTool)
			case base == nil:
				base, err = partialVars(known)
				vars = base
			default:
				vars = base
			}
			if err != nil {
				m = maybe
			} else {
				m = m.and(r.when.evalPartial(ctx, vars))
			}
		}
		switch {
		case m == no:
		case m == yes:
			return r.effect == Deny, r
		case r.effect != Deny:
			return false, r // might allow or ask
		}
	}
	return p.def == Deny, &rule{ref: p.defRef, effect: p.def}
}

// Summary states the policy in force in one line, for the capabilities
// manual: "policy: default allow; 3 rules (1 deny, 1 ask); limits: 200
// calls/run, 16 concurrent, 600/min".
func (p *Policy) Summary() string {
	var deny, ask int
	for _, r := range p.rules {
		switch r.effect {
		case Deny:
			deny++
		case Ask:
			ask++
		}
	}
	rules := "no rules"
	if n := len(p.rules); n > 0 {
		rules = fmt.Sprintf("%d rule", n)
		if n > 1 {
			rules += "s"
		}
		var parts []string
		if deny > 0 {
			parts = append(parts, fmt.Sprintf("%d deny", deny))
		}
		if ask > 0 {
			parts = append(parts, fmt.Sprintf("%d ask", ask))
		}
		if len(parts) > 0 {
			rules += " (" + strings.Join(parts, ", ") + ")"
		}
	}
	return fmt.Sprintf("policy: default %s; %s; limits: %s", p.def, rules, p.limits)
}

// describe states what a rule matches and says, for Explain.
func (r *rule) describe() string {
	var parts []string
	if r.server != nil {
		parts = append(parts, fmt.Sprintf("server %q", r.server.source))
	} else {
		parts = append(parts, "any server")
	}
	if r.tool != nil {
		parts = append(parts, fmt.Sprintf("tool %q", r.tool.source))
	} else {
		parts = append(parts, "every tool")
	}
	if r.when != nil {
		parts = append(parts, "when "+r.when.src)
	}
	s := strings.Join(parts, ", ") + ": " + r.effect.String()
	if r.redact {
		s += ", redact"
	}
	return s
}
