package policy

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/codemode/codemode/internal/egress"
	"os"
	"path/filepath"
	"strings"

	"cel.dev/cel-go/cel"
)

// Error is a mistake in a policy document, located as precisely as the
// format allows.
type Error struct {
	// Line is 1-based, 0 when unknown.
	Line int
	// Field is the setting at fault, such as "rules[2].when"; empty for
	// syntax errors.
	Field string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads a policy file, choosing the format by its extension: .toml,
// .json, .yaml or .yml.
func Load(path string) (*Policy, error) {
	format, err := formatOf(path)
	if err != nil {
		return nil, fmt.Errorf("policy: load %s: %w", path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy: load %s: %w", path, err)
	}
	p, err := parse(data, format)
	if err != nil {
		return nil, fmt.Errorf("policy: load %s: %w", path, err)
	}
	return p, nil
}

func formatOf(path string) (string, error) {
	ext := strings.ToLower(filepath.Ext(path))
	switch ext {
	case ".toml", ".json", ".yaml", ".yml":
		return ext[1:], nil
	}
	return "", fmt.Errorf("unknown policy format %q (want .toml, .json, .yaml or .yml)", ext)
}

// Parse reads a policy document in format "toml", "json", "yaml" or "yml".
// Every mistake is reported, each as an *Error with its line (use
// errors.As): syntax errors, unknown keys, values of the wrong type,
// invalid decisions, globs and conditions. An empty document is the
// policy that allows everything.
func Parse(data []byte, format string) (*Policy, error) {
	p, err := parse(data, format)
	if err != nil {
		return nil, fmt.Errorf("policy: parse: %w", err)
	}
	return p, nil
}

func parse(data []byte, format string) (*Policy, error) {
	var read func([]byte) (*node, error)
	switch strings.TrimPrefix(strings.ToLower(format), ".") {
	case "toml":
		read = parseTOMLTree
	case "json":
		read = parseJSONTree
	case "yaml", "yml":
		read = parseYAMLTree
	default:
		return nil, fmt.Errorf("unknown policy format %q (want toml, json or yaml)", format)
	}
	root := &node{kind: kindMap, line: 1}
	if len(bytes.TrimSpace(data)) > 0 {
		var err error
		if root, err = read(data); err != nil {
			return nil, err
		}
	}
	env, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("condition language: %w", err)
	}
	d := &decoder{env: env}
	p := d.policy(root)
	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
	}
	return p, nil
}

// decoder turns a document tree into a Policy, collecting every error.
type decoder struct {
	env  *cel.Env
	errs []error
}

func (d *decoder) errorf(line int, field, format string, a ...any) {
	d.errs = append(d.errs, &Error{Line: line, Field: field, Msg: fmt.Sprintf(format, a...)})
}

func (d *decoder) policy(root *node) *Policy {
	p := &Policy{def: Allow, defRef: RuleRef{Index: -1, Label: "default"},
		addDef: Ask, addDefRef: RuleRef{Index: -1, Label: "add_default"}}
	if root.kind != kindMap {
		d.errorf(root.line, "", "the document is %s, want a table of settings", root.kind)
		return p
	}
	for _, f := range root.fields {
		switch f.key {
		case "default":
			if e, ok := d.effect(f, f.key); ok {
				p.def, p.defRef.Line = e, f.line
			}
		case "rules":
			d.list(f, "rules", func(i int, n *node) {
				if r, ok := d.rule(i, n); ok {
					p.rules = append(p.rules, r)
				}
			})
		case "limits":
			p.limits = d.limits(f)
		case "add_default":
			if e, ok := d.effect(f, f.key); ok {
				p.addDef, p.addDefRef.Line = e, f.line
			}
		case "add":
			d.list(f, "add rules", func(i int, n *node) {
				if r, ok := d.addRule(i, n); ok {
					p.adds = append(p.adds, r)
				}
			})
		case "egress":
			p.egress = d.egress(f)
		default:
			d.errorf(f.line, f.key, "unknown key (want default, rules, limits, add_default, add or egress)")
		}
	}
	return p
}

func (d *decoder) rule(i int, n *node) (rule, bool) {
	path := fmt.Sprintf("rules[%d]", i)
	r := rule{ref: RuleRef{Index: i, Label: path, Line: n.line}}
	if n.kind != kindMap {
		d.errorf(n.line, path, "want a table, got %s", n.kind)
		return r, false
	}
	before := len(d.errs)
	hasDecision := false
	for _, f := range n.fields {
		fp := path + "." + f.key
		switch f.key {
		case "server":
			r.server = d.pattern(f, fp)
		case "tool":
			r.tool = d.pattern(f, fp)
		case "when":
			s, ok := d.str(f, fp)
			if !ok {
				continue
			}
			if strings.TrimSpace(s) == "" {
				d.errorf(f.line, fp, "empty condition; leave when out to match always")
				continue
			}
			c, err := compileCondition(d.env, s)
			if err != nil {
				d.errorf(f.line, fp, "%v", err)
				continue
			}
			r.when = c
		case "decision":
			hasDecision = true
			if e, ok := d.effect(f, fp); ok {
				r.effect = e
			}
		case "reason":
			r.reason, _ = d.str(f, fp)
		case "redact":
			if f.val.kind != kindBool {
				d.errorf(f.line, fp, "want true or false, got %s", f.val.kind)
				continue
			}
			r.redact = f.val.b
		default:
			d.errorf(f.line, fp, "unknown key (want server, tool, when, decision, reason or redact)")
		}
	}
	return r, d.ruleDone(n, path, hasDecision, before)
}

// pattern reads a glob field; nil (any name) after reporting a mistake.
func (d *decoder) pattern(f field, path string) *glob {
	s, ok := d.str(f, path)
	if !ok {
		return nil
	}
	if s == "" {
		d.errorf(f.line, path, "empty pattern; leave %s out to match any", f.key)
		return nil
	}
	g, err := compileGlob(s)
	if err != nil {
		d.errorf(f.line, path, "invalid pattern %q: %v", s, err)
		return nil
	}
	return g
}

// ruleDone reports a rule without a decision and says whether the rule
// decoded without mistakes (errors beyond the count before it).
func (d *decoder) ruleDone(n *node, path string, hasDecision bool, before int) bool {
	if !hasDecision {
		d.errorf(n.line, path, "missing decision (allow, deny or ask)")
	}
	return len(d.errs) == before
}

// list decodes each item of a list field with item.
func (d *decoder) list(f field, what string, item func(i int, n *node)) {
	if f.val.kind != kindList {
		d.errorf(f.line, f.key, "want a list of %s, got %s", what, f.val.kind)
		return
	}
	for i, n := range f.val.items {
		item(i, n)
	}
}

func (d *decoder) limits(f field) Limits {
	var l Limits
	if f.val.kind != kindMap {
		d.errorf(f.line, f.key, "want a table, got %s", f.val.kind)
		return l
	}
	for _, lf := range f.val.fields {
		fp := "limits." + lf.key
		var dst *int
		switch lf.key {
		case "max_calls_per_run":
			dst = &l.MaxCallsPerRun
		case "max_concurrent_calls":
			dst = &l.MaxConcurrentCalls
		case "calls_per_minute":
			dst = &l.CallsPerMinute
		default:
			d.errorf(lf.line, fp, "unknown key (want max_calls_per_run, max_concurrent_calls or calls_per_minute)")
			continue
		}
		v, ok := lf.val.asInt()
		if !ok || v < 0 {
			d.errorf(lf.line, fp, "want a whole number from 0 (unlimited) up, got %s", describe(lf.val))
			continue
		}
		*dst = v
	}
	return l
}

// egress reads the [egress] table: allow, a list of egress.ParsePattern
// entries.
func (d *decoder) egress(f field) *egress.List {
	l := &egress.List{}
	if f.val.kind != kindMap {
		d.errorf(f.line, f.key, "want a table, got %s", f.val.kind)
		return l
	}
	for _, ef := range f.val.fields {
		if ef.key != "allow" {
			d.errorf(ef.line, "egress."+ef.key, "unknown key (want allow)")
			continue
		}
		var entries []string
		d.list(ef, "host patterns", func(i int, n *node) {
			fp := fmt.Sprintf("egress.allow[%d]", i)
			if n.kind != kindString {
				d.errorf(n.line, fp, "want a string, got %s", n.kind)
				return
			}
			if _, err := egress.ParsePattern(n.s); err != nil {
				d.errorf(n.line, fp, "%v", err)
				return
			}
			entries = append(entries, n.s)
		})
		l, _ = egress.ParseList(entries)
	}
	return l
}

func (d *decoder) str(f field, path string) (string, bool) {
	if f.val.kind != kindString {
		d.errorf(f.line, path, "want a string, got %s", f.val.kind)
		return "", false
	}
	return f.val.s, true
}

func (d *decoder) effect(f field, path string) (Effect, bool) {
	s, ok := d.str(f, path)
	if !ok {
		return 0, false
	}
	e, ok := parseEffect(s)
	if !ok {
		d.errorf(f.line, path, "invalid decision %q (want allow, deny or ask)", s)
	}
	return e, ok
}

// describe names a value in an error message.
func describe(n *node) string {
	switch n.kind {
	case kindInt:
		return fmt.Sprint(n.i)
	case kindFloat:
		return fmt.Sprint(n.f)
	case kindString:
		return fmt.Sprintf("%q", n.s)
	}
	return n.kind.String()
}
