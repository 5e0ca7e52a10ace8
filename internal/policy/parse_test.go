package policy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// errorList flattens what Parse returns into its located errors.
func errorList(t *testing.T, err error) []*Error {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if pe, ok := err.(*Error); ok {
			out = append(out, pe)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		if u := errors.Unwrap(err); u != nil {
			walk(u)
		}
	}
	walk(err)
	if len(out) == 0 {
		t.Fatalf("error %v carries no *Error", err)
	}
	return out
}

type located struct {
	Line  int
	Field string
}

func TestParseErrorsLocated(t *testing.T) {
	want := func(rule1, server, when, typo, rule2, decision, redact, maxCalls, perMin int) []located {
		l := []located{
			{rule1, "rules[1]"}, {server, "rules[1].server"}, {when, "rules[1].when"}, {typo, "rules[1].decison"},
			{rule2, "rules[2].when"}, {decision, "rules[2].decision"}, {redact, "rules[2].redact"},
			{maxCalls, "limits.max_calls_per_run"}, {perMin, "limits.calls_per_min"},
		}
		slices.SortFunc(l, func(a, b located) int { return strings.Compare(a.Field, b.Field) })
		return l
	}
	tests := []struct {
		file string
		want []located
	}{
		{"errors.toml", want(7, 8, 10, 11, 14, 15, 16, 19, 20)},
		{"errors.json", want(5, 6, 8, 9, 12, 13, 14, 18, 19)},
		{"errors.yaml", want(5, 5, 7, 8, 9, 10, 11, 13, 14)},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", tt.file))
			var got []located
			for _, e := range errorList(t, err) {
				got = append(got, located{e.Line, e.Field})
			}
			slices.SortFunc(got, func(a, b located) int { return strings.Compare(a.Field, b.Field) })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s\nfull error:\n%v", diff, err)
			}
			msg := err.Error()
			for _, s := range []string{
				"policy: load testdata/" + tt.file,
				`invalid decision "nope" (want allow, deny or ask)`,
				"unknown key (want server, tool, when, decision, reason or redact)",
				"undeclared reference to 'argz'",
				"(at 1:1 of the condition)",
				"want bool",
				`invalid pattern "fs["`,
				"missing decision",
			} {
				if !strings.Contains(msg, s) {
					t.Errorf("error lacks %q:\n%s", s, msg)
				}
			}
		})
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	tests := []struct {
		file string
		line int
	}{
		{"syntax.toml", 4},
		{"syntax.json", 4},
		{"syntax.yaml", 4},
		{"duplicate.toml", 3},
		{"duplicate.json", 3},
		{"duplicate.yaml", 3},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", tt.file))
			errs := errorList(t, err)
			if len(errs) != 1 || errs[0].Line != tt.line {
				t.Errorf("Load: %v; want one error on line %d", err, tt.line)
			}
			if !strings.Contains(err.Error(), "line ") {
				t.Errorf("message %q names no line", err)
			}
		})
	}
}

func TestParseValues(t *testing.T) {
	tests := []struct {
		name, format, doc, want string
	}{
		{"default invalid", "toml", `default = "permit"`, `line 1: default: invalid decision "permit" (want allow, deny or ask)`},
		{"default wrong type", "json", `{"default": true}`, `line 1: default: want a string, got a boolean`},
		{"unknown top-level key", "yaml", "rule:\n  - decision: deny", "line 1: rule: unknown key (want default, rules, limits, add_default, add or egress)"},
		{"egress pattern in another notation", "toml", "[egress]\nallow = [\n  \"pypi.org\",\n  \"2130706433\",\n]", "line 4: egress.allow[1]: egress pattern \"2130706433\": \"2130706433\" looks like an IP address in a non-standard form"},
		{"egress unknown key", "yaml", "egress:\n  hosts: [a.example]", "line 2: egress.hosts: unknown key (want allow)"},
		{"egress allow not a list", "json", `{"egress": {"allow": "pypi.org"}}`, "line 1: allow: want a list of host patterns, got a string"},
		{"rules not a list", "toml", "[rules]\ndecision = \"deny\"", "line 1: rules: want a list of rules, got a table"},
		{"rule not a table", "json", `{"rules": ["deny"]}`, "line 1: rules[0]: want a table, got a string"},
		{"empty server", "toml", "[[rules]]\nserver = \"\"\ndecision = \"deny\"", "line 2: rules[0].server: empty pattern; leave server out to match any"},
		{"empty condition", "toml", "[[rules]]\nwhen = \" \"\ndecision = \"deny\"", "line 2: rules[0].when: empty condition"},
		{"fractional limit", "json", `{"limits": {"calls_per_minute": 1.5}}`, "line 1: limits.calls_per_minute: want a whole number from 0 (unlimited) up, got 1.5"},
		{"limits not a table", "yaml", "limits: 5", "line 1: limits: want a table, got an integer"},
		{"top level not a table", "json", `[1]`, "line 1: the document is a list, want a table of settings"},
		{"trailing JSON", "json", "{}\n{}", "line 2: unexpected data after the top-level value"},
		{"truncated JSON", "json", "{\n\"default\":", "line 2: unexpected end of file"},
		{"two YAML documents", "yaml", "default: allow\n---\ndefault: deny", "line 2: a policy is one YAML document; found another"},
		{"YAML alias", "yaml", "default: &d allow\nrules: []", "line 1: YAML anchors and aliases are not supported in a policy"},
		{"date value", "toml", "default = 1979-05-27", "line 1: default: want a string, got a date, time or tagged value"},
		{"add not a list", "toml", "[add]\ndecision = \"deny\"", "line 1: add: want a list of add rules, got a table"},
		{"add unknown registry", "toml", "[[add]]\nregistry = \"cargo\"\ndecision = \"deny\"", `line 2: add[0].registry: unknown registry "cargo"`},
		{"add unknown key", "yaml", "add:\n  - server: x\n    decision: deny", "line 2: add[0].server: unknown key (want name, registry, source, decision or reason)"},
		{"add without decision", "json", `{"add": [{"name": "x"}]}`, "line 1: add[0]: missing decision (allow, deny or ask)"},
		{"add_default invalid", "toml", `add_default = "maybe"`, `line 1: add_default: invalid decision "maybe"`},
		{"unknown format", "ini", "", `unknown policy format "ini" (want toml, json or yaml)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc), tt.format)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse: %v\nwant an error containing %q", err, tt.want)
			}
		})
	}
}

// The same policy in every format parses to the same rules and decisions.
func TestParseFormatsAgree(t *testing.T) {
	dir := t.TempDir()
	yml, err := os.ReadFile("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "valid.yml"), yml, 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string][2]int{ // rule lines
		"testdata/valid.toml":           {4, 9},
		"testdata/valid.json":           {4, 9},
		"testdata/valid.yaml":           {4, 7},
		filepath.Join(dir, "valid.yml"): {4, 7},
	}
	inputs := []Input{
		{Server: "fs", Tool: "read_file", Args: map[string]any{"path": "/etc/passwd"}},
		{Server: "fs", Tool: "write_file", Args: map[string]any{"path": "/etc/passwd"}},
		{Server: "fs", Tool: "write_file", Args: map[string]any{"path": "/tmp/x"}},
		{Server: "fs", Tool: "write_file"},
		{Server: "git", Tool: "push"},
	}
	want := []string{"allow rules[0]", "deny rules[1] redact", "ask default", "ask default", "ask default"}
	for file, lines := range files {
		p, err := Load(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range p.rules {
			if r.ref.Line != lines[i] {
				t.Errorf("%s: rules[%d] on line %d, want %d", file, i, r.ref.Line, lines[i])
			}
		}
		if l := p.Limits(); l != (Limits{200, 16, 600}) {
			t.Errorf("%s: limits %+v", file, l)
		}
		for _, c := range []struct {
			in   AddInput
			want string
		}{
			{AddInput{Name: "io.github.modelcontextprotocol/server-memory", Registry: "npm", Catalogued: true}, "allow add[0]"},
			{AddInput{Name: "io.github.modelcontextprotocol/server-memory", Registry: "pypi", Catalogued: true}, "deny add_default"},
			{AddInput{Name: "io.github.modelcontextprotocol/server-memory", Registry: "npm"}, "deny catalog"},
		} {
			if d := p.DecideAdd(c.in); d.Effect.String()+" "+d.Rule.Label != c.want {
				t.Errorf("%s: DecideAdd(%+v) = %s, want %s", file, c.in, d, c.want)
			}
		}
		for i, in := range inputs {
			d := p.Decide(context.Background(), in)
			got := d.Effect.String() + " " + d.Rule.Label
			if d.Redact {
				got += " redact"
			}
			if got != want[i] {
				t.Errorf("%s: Decide(%+v) = %s, want %s", file, in, got, want[i])
			}
		}
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load("policy.ini"); err == nil || !strings.Contains(err.Error(), `unknown policy format ".ini"`) {
		t.Errorf("Load(.ini): %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.toml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing): %v", err)
	}
}

// An empty document, in any format, allows everything.
func TestParseEmpty(t *testing.T) {
	for _, format := range []string{"toml", "json", "yaml"} {
		p, err := Parse([]byte(" \n"), format)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if d := p.Decide(context.Background(), Input{Server: "s", Tool: "t"}); d.Effect != Allow {
			t.Errorf("%s: %v", format, d)
		}
	}
}

func TestParseEgress(t *testing.T) {
	p, err := Parse([]byte("[egress]\nallow = [\"pypi.org\", \"10.0.0.0/8:5432\"]\n"), "toml")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.EgressAllow().Patterns(); !slices.Equal(got, []string{"pypi.org", "10.0.0.0/8:5432"}) {
		t.Errorf("EgressAllow() = %v", got)
	}
	empty, _ := Parse(nil, "toml")
	if !empty.EgressAllow().Empty() {
		t.Errorf("the empty policy allows egress to %v", empty.EgressAllow().Patterns())
	}
}
