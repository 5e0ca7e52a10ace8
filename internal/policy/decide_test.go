package policy

import (
	"context"
	"strings"
	"testing"
)

func mustParse(t testing.TB, format, text string) *Policy {
	t.Helper()
	p, err := Parse([]byte(text), format)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

const decidePolicy = `
default = "allow"

[[rules]]
server = "fs"
tool = "write_*"
when = 'args.path.endsWith("secret.txt")'
decision = "deny"
reason = "agents may not write here"
redact = true

[[rules]]
server = "fs"
tool = "delete_?"
decision = "ask"

[[rules]]
server = "db[0-9]"
decision = "deny"
reason = "no databases"

[[rules]]
tool = "*admin*"
when = 'principal != "root"'
decision = "deny"

[[rules]]
when = 'has(annotations.destructiveHint) && annotations.destructiveHint'
decision = "ask"

[[rules]]
server = "web"
when = 'claims.?role.orValue("") == "guest" && args.url.startsWith("http://")'
decision = "deny"

[[rules]]
server = "calc"
when = 'args.count > 10'
decision = "deny"

[[rules]]
server = "names/with/slashes"
tool = "*"
decision = "deny"

[[rules]]
server = "opt"
when = 'annotations.?openWorldHint.orValue(false) == true'
decision = "ask"
`

func TestDecide(t *testing.T) {
	p := mustParse(t, "toml", decidePolicy)
	tests := []struct {
		name       string
		in         Input
		effect     Effect
		rule       string
		line       int
		reason     string
		redact     bool
		condErrors []string // labels
	}{
		{name: "CEL on args matches",
			in:     Input{Server: "fs", Tool: "write_file", Args: map[string]any{"path": "/a/secret.txt"}},
			effect: Deny, rule: "rules[0]", line: 4, reason: "agents may not write here", redact: true},
		{name: "CEL on args does not match",
			in:     Input{Server: "fs", Tool: "write_file", Args: map[string]any{"path": "/a/ok.txt"}},
			effect: Allow, rule: "default"},
		{name: "arguments as JSON",
			in:     Input{Server: "fs", Tool: "write_text", ArgsJSON: []byte(`{"path":"x/secret.txt"}`)},
			effect: Deny, rule: "rules[0]", line: 4, reason: "agents may not write here", redact: true},
		{name: "missing key is a condition error, not a match",
			in:     Input{Server: "fs", Tool: "write_file"},
			effect: Allow, rule: "default", condErrors: []string{"rules[0]"}},
		{name: "arguments that are not an object",
			in:     Input{Server: "fs", Tool: "write_file", ArgsJSON: []byte(`[1]`)},
			effect: Allow, rule: "default", condErrors: []string{"rules[0]"}},
		{name: "tool glob does not match",
			in:     Input{Server: "fs", Tool: "read_file", Args: map[string]any{"path": "secret.txt"}},
			effect: Allow, rule: "default"},
		{name: "? matches one character",
			in:     Input{Server: "fs", Tool: "delete_x"},
			effect: Ask, rule: "rules[1]", line: 12},
		{name: "? matches only one character",
			in:     Input{Server: "fs", Tool: "delete_xy"},
			effect: Allow, rule: "default"},
		{name: "character class, server-level rule",
			in:     Input{Server: "db7", Tool: "query"},
			effect: Deny, rule: "rules[2]", line: 17, reason: "no databases"},
		{name: "character class does not match",
			in:     Input{Server: "dbx", Tool: "query"},
			effect: Allow, rule: "default"},
		{name: "any server, CEL on principal",
			in:     Input{Server: "x", Tool: "set_admin_role", Principal: "alice"},
			effect: Deny, rule: "rules[3]", line: 22},
		{name: "CEL on principal false",
			in:     Input{Server: "x", Tool: "set_admin_role", Principal: "root"},
			effect: Allow, rule: "default"},
		{name: "annotations",
			in:     Input{Server: "x", Tool: "drop", Annotations: map[string]any{"destructiveHint": true}},
			effect: Ask, rule: "rules[4]", line: 27},
		{name: "annotation false",
			in:     Input{Server: "x", Tool: "drop", Annotations: map[string]any{"destructiveHint": false, "readOnlyHint": true}},
			effect: Allow, rule: "default"},
		{name: "claims and args",
			in:     Input{Server: "web", Tool: "fetch", Claims: map[string]any{"role": "guest"}, Args: map[string]any{"url": "http://x"}},
			effect: Deny, rule: "rules[5]", line: 31},
		{name: "no claims: optional lookup, no error",
			in:     Input{Server: "web", Tool: "fetch", Args: map[string]any{"url": "http://x"}},
			effect: Allow, rule: "default"},
		{name: "JSON numbers compare with ints",
			in:     Input{Server: "calc", Tool: "add", Args: map[string]any{"count": 11.0}},
			effect: Deny, rule: "rules[6]", line: 36},
		{name: "wrong type is a condition error",
			in:     Input{Server: "calc", Tool: "add", Args: map[string]any{"count": "11"}},
			effect: Allow, rule: "default", condErrors: []string{"rules[6]"}},
		{name: "optional annotation set",
			in:     Input{Server: "opt", Tool: "t", Annotations: map[string]any{"openWorldHint": true}},
			effect: Ask, rule: "rules[8]", line: 46},
		{name: "optional annotation absent",
			in:     Input{Server: "opt", Tool: "t"},
			effect: Allow, rule: "default"},
		{name: "* matches slashes",
			in:     Input{Server: "names/with/slashes", Tool: "a/b"},
			effect: Deny, rule: "rules[7]", line: 41},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Decide(context.Background(), tt.in)
			if d.Effect != tt.effect || d.Rule.Label != tt.rule || d.Reason != tt.reason && tt.reason != "" || d.Redact != tt.redact {
				t.Errorf("Decide = %+v, want %s by %s (%q, redact %v)", d, tt.effect, tt.rule, tt.reason, tt.redact)
			}
			if tt.line != 0 && d.Rule.Line != tt.line {
				t.Errorf("rule line = %d, want %d", d.Rule.Line, tt.line)
			}
			var got []string
			for _, ce := range d.ConditionErrors {
				got = append(got, ce.Rule.Label)
				if ce.Message == "" {
					t.Errorf("condition error of %s has no message", ce.Rule.Label)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.condErrors, ",") {
				t.Errorf("condition errors = %v, want %v (%+v)", got, tt.condErrors, d.ConditionErrors)
			}
		})
	}
}

func TestDecideOrderAndDefault(t *testing.T) {
	tests := []struct {
		name   string
		policy string
		in     Input
		effect Effect
		rule   string
	}{
		{"first match wins over a later deny",
			`[[rules]]
			server = "fs"
			tool = "read_*"
			decision = "allow"
			[[rules]]
			server = "fs"
			decision = "deny"`,
			Input{Server: "fs", Tool: "read_file"}, Allow, "rules[0]"},
		{"later rule applies when the earlier does not match",
			`[[rules]]
			server = "fs"
			tool = "read_*"
			decision = "allow"
			[[rules]]
			server = "fs"
			decision = "deny"`,
			Input{Server: "fs", Tool: "write_file"}, Deny, "rules[1]"},
		{"first match wins over a later allow",
			`[[rules]]
			decision = "ask"
			[[rules]]
			server = "fs"
			decision = "allow"`,
			Input{Server: "fs", Tool: "x"}, Ask, "rules[0]"},
		{"default when omitted is allow", ``, Input{Server: "fs", Tool: "x"}, Allow, "default"},
		{"default deny", `default = "deny"`, Input{Server: "fs", Tool: "x"}, Deny, "default"},
		{"default ask", `default = "ask"
			[[rules]]
			server = "other"
			decision = "allow"`, Input{Server: "fs", Tool: "x"}, Ask, "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, "toml", tt.policy)
			d := p.Decide(context.Background(), tt.in)
			if d.Effect != tt.effect || d.Rule.Label != tt.rule {
				t.Errorf("Decide = %v, want %s by %s", d, tt.effect, tt.rule)
			}
		})
	}
}

// A condition still running when the context ends denies the call.
func TestDecideCancelled(t *testing.T) {
	p := mustParse(t, "toml", `
[[rules]]
when = 'args.items.exists(x, x == "needle")'
decision = "deny"
`)
	items := make([]any, 10000)
	for i := range items {
		items[i] = "hay"
	}
	in := Input{Server: "s", Tool: "t", Args: map[string]any{"items": items}}
	if d := p.Decide(context.Background(), in); d.Effect != Allow {
		t.Fatalf("Decide = %v, want allow", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d := p.Decide(ctx, in)
	if d.Effect != Deny || !strings.Contains(d.Reason, "context canceled") {
		t.Fatalf("Decide with an ended context = %v, want deny naming the context", d)
	}
}

func TestServerDecision(t *testing.T) {
	p := mustParse(t, "toml", `
[[rules]]
server = "prod"
when = 'principal != "ops"'
decision = "deny"
reason = "ops only"

[[rules]]
server = "git"
tool = "push"
when = 'claims.?team.orValue("") == "release"'
decision = "allow"

[[rules]]
server = "git"
decision = "deny"

[[rules]]
server = "ask*"
decision = "ask"
`)
	tests := []struct {
		name   string
		in     Input
		effect Effect
		rule   string
	}{
		{"server-level deny for this principal", Input{Server: "prod", Principal: "alice"}, Deny, "rules[0]"},
		{"server-level deny does not hold", Input{Server: "prod", Principal: "ops"}, Allow, "default"},
		{"a tool rule that may allow keeps the server", Input{Server: "git", Claims: map[string]any{"team": "release"}}, Allow, "rules[1]"},
		{"a tool rule that cannot allow this caller", Input{Server: "git", Claims: map[string]any{"team": "web"}}, Deny, "rules[2]"},
		{"ask lets the server start", Input{Server: "asker"}, Allow, "rules[3]"},
		{"no rule", Input{Server: "other"}, Allow, "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.ServerDecision(context.Background(), tt.in)
			if d.Effect != tt.effect || d.Rule.Label != tt.rule {
				t.Errorf("ServerDecision = %v, want %s by %s", d, tt.effect, tt.rule)
			}
		})
	}
	if d := p.ServerDecision(context.Background(), Input{Server: "prod", Principal: "alice"}); d.Reason != "ops only" {
		t.Errorf("reason = %q, want the rule's", d.Reason)
	}
}

func TestSummary(t *testing.T) {
	tests := []struct{ policy, want string }{
		{``, "policy: default allow; no rules; limits: none"},
		{`default = "deny"
[[rules]]
server = "fs"
decision = "allow"`, "policy: default deny; 1 rule; limits: none"},
		{`[[rules]]
decision = "allow"
[[rules]]
decision = "deny"
[[rules]]
decision = "ask"
[limits]
max_calls_per_run = 200
max_concurrent_calls = 16
calls_per_minute = 600`, "policy: default allow; 3 rules (1 deny, 1 ask); limits: 200 calls/run, 16 concurrent, 600/min"},
		{`[limits]
calls_per_minute = 60`, "policy: default allow; no rules; limits: 60/min"},
	}
	for _, tt := range tests {
		if got := mustParse(t, "toml", tt.policy).Summary(); got != tt.want {
			t.Errorf("Summary() = %q, want %q", got, tt.want)
		}
	}
}

func TestExplain(t *testing.T) {
	p := mustParse(t, "toml", decidePolicy)
	d := p.Decide(context.Background(), Input{Server: "fs", Tool: "write_file", Args: map[string]any{"path": "/secret.txt"}})
	want := `decision: deny
rule: rules[0] (line 4)
  server "fs", tool "write_*", when args.path.endsWith("secret.txt"): deny, redact
reason: agents may not write here
audit: arguments recorded as their SHA-256 only
`
	if got := p.Explain(d); got != want {
		t.Errorf("Explain =\n%s\nwant\n%s", got, want)
	}
	d = p.Decide(context.Background(), Input{Server: "fs", Tool: "write_file"})
	got := p.Explain(d)
	for _, s := range []string{"decision: allow", "none matched, so the default (allow) applies", "rules[0] (line 4): no such key: path"} {
		if !strings.Contains(got, s) {
			t.Errorf("Explain =\n%s\nlacks %q", got, s)
		}
	}
	if s := d.String(); s != "allow by default (line 2): no rule matched" {
		t.Errorf("String() = %q", s)
	}
}

func TestStarter(t *testing.T) {
	p := mustParse(t, "toml", Starter())
	tests := []struct {
		name        string
		annotations map[string]any
		want        Effect
	}{
		{"destructive", map[string]any{"destructiveHint": true}, Ask},
		{"read-only", map[string]any{"readOnlyHint": true}, Allow},
		{"declares nothing", nil, Allow},
		{"not destructive", map[string]any{"destructiveHint": false}, Allow},
	}
	for _, tt := range tests {
		d := p.Decide(context.Background(), Input{Server: "s", Tool: "t", Annotations: tt.annotations})
		if d.Effect != tt.want || len(d.ConditionErrors) > 0 {
			t.Errorf("%s: Decide = %v (%v), want %s", tt.name, d, d.ConditionErrors, tt.want)
		}
	}
}
