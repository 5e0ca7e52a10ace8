package policy

import (
	"fmt"
	"strings"
)

// Effect is what a policy says about a call. The zero value is no effect
// at all, so that a forgotten Decision never reads as Allow.
type Effect uint8

// The effects, spelled allow, deny and ask in policy files.
const (
	Allow Effect = iota + 1
	Deny
	Ask
)

func (e Effect) String() string {
	switch e {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	case Ask:
		return "ask"
	}
	return fmt.Sprintf("Effect(%d)", uint8(e))
}

// MarshalText writes the effect as a policy file spells it (for JSON audit
// records).
func (e Effect) MarshalText() ([]byte, error) {
	if e < Allow || e > Ask {
		return nil, fmt.Errorf("policy: invalid effect %d", uint8(e))
	}
	return []byte(e.String()), nil
}

// parseEffect reads allow, deny or ask, exactly.
func parseEffect(s string) (Effect, bool) {
	switch s {
	case "allow":
		return Allow, true
	case "deny":
		return Deny, true
	case "ask":
		return Ask, true
	}
	return 0, false
}

// RuleRef names the rule behind a decision.
type RuleRef struct {
	// Index is the rule's position in the file's rules, or -1 for the
	// policy's default.
	Index int `json:"index"`
	// Label is "rules[Index]" or "default".
	Label string `json:"label"`
	// Line is where the rule starts in the policy file, 0 if unknown (the
	// default when the file does not set it).
	Line int `json:"line,omitempty"`
}

func (r RuleRef) String() string {
	if r.Line > 0 {
		return fmt.Sprintf("%s (line %d)", r.Label, r.Line)
	}
	return r.Label
}

// Decision is the policy's answer for one call.
type Decision struct {
	Effect Effect  `json:"effect"`
	Rule   RuleRef `json:"rule"`
	// Reason is the rule's reason, or for the default, why it applied.
	Reason string `json:"reason,omitempty"`
	// Redact asks the audit log to record the SHA-256 of the arguments
	// instead of the arguments.
	Redact bool `json:"redact,omitempty"`
	// ConditionErrors lists the conditions, tried before the deciding rule,
	// that failed to evaluate (a missing key, a value of the wrong type).
	// Their rules did not match.
	ConditionErrors []ConditionError `json:"condition_errors,omitempty"`
}

// ConditionError is a condition that failed to evaluate.
type ConditionError struct {
	Rule    RuleRef `json:"rule"`
	Message string  `json:"message"`
}

// String gives the decision on one line, for logs and error messages.
func (d Decision) String() string {
	s := fmt.Sprintf("%s by %s", d.Effect, d.Rule)
	if d.Reason != "" {
		s += ": " + d.Reason
	}
	return s
}

// Explain renders a decision of p for people (codemode policy explain):
// the effect, the rule that decided and what it says, and the conditions
// that could not be evaluated on the way.
func (p *Policy) Explain(d Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "decision: %s\n", d.Effect)
	if d.Rule.Index < 0 {
		fmt.Fprintf(&b, "rule: none matched, so the default (%s) applies\n", p.def)
	} else {
		fmt.Fprintf(&b, "rule: %s\n", d.Rule)
		if d.Rule.Index < len(p.rules) {
			fmt.Fprintf(&b, "  %s\n", p.rules[d.Rule.Index].describe())
		}
	}
	if d.Reason != "" {
		fmt.Fprintf(&b, "reason: %s\n", d.Reason)
	}
	if d.Redact {
		b.WriteString("audit: arguments recorded as their SHA-256 only\n")
	}
	if len(d.ConditionErrors) > 0 {
		b.WriteString("conditions that failed to evaluate (those rules did not match):\n")
		for _, ce := range d.ConditionErrors {
			fmt.Fprintf(&b, "  %s: %s\n", ce.Rule, ce.Message)
		}
	}
	return b.String()
}
