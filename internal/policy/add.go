package policy

import (
	"fmt"
	"slices"
)

// Registries are the kinds of catalog entries add rules can name: the
// package registries of the MCP Registry's server.json and "remote" for
// servers reached over HTTP.
var Registries = []string{"npm", "pypi", "oci", "nuget", "mcpb", "remote"}

// addRule decides whether code may add a catalog entry as a server.
type addRule struct {
	ref      RuleRef
	name     *glob // nil: any entry
	registry string
	source   *glob // nil: any catalog
	effect   Effect
	reason   string
}

// AddInput is a request from code to add a server from a catalog.
type AddInput struct {
	// Name is the entry's name in the catalog, such as
	// "io.github.modelcontextprotocol/server-memory".
	Name string
	// Registry is how it would run: npm, pypi, oci, ... or remote.
	Registry string
	// Source is the catalog (file or URL) the entry comes from.
	Source string
	// Catalogued is false for a name no catalog holds.
	Catalogued bool
}

// AddDefault is the effect of adds no add rule matches.
func (p *Policy) AddDefault() Effect { return p.addDef }

// DecideAdd applies the add rules to a request: a name in no catalog is
// always denied; otherwise the first matching rule decides, else
// add_default (ask unless the file says otherwise).
func (p *Policy) DecideAdd(in AddInput) Decision {
	if !in.Catalogued {
		return Decision{Effect: Deny, Rule: RuleRef{Index: -1, Label: "catalog"}, Reason: "not in any catalog; only catalog entries can be added from code"}
	}
	for i := range p.adds {
		r := &p.adds[i]
		if r.name != nil && !r.name.match(in.Name) || r.registry != "" && r.registry != in.Registry ||
			r.source != nil && !r.source.match(in.Source) {
			continue
		}
		return Decision{Effect: r.effect, Rule: r.ref, Reason: r.reason}
	}
	return Decision{Effect: p.addDef, Rule: p.addDefRef, Reason: "no add rule matched"}
}

func (d *decoder) addRule(i int, n *node) (addRule, bool) {
	path := fmt.Sprintf("add[%d]", i)
	r := addRule{ref: RuleRef{Index: i, Label: path, Line: n.line}}
	if n.kind != kindMap {
		d.errorf(n.line, path, "want a table, got %s", n.kind)
		return r, false
	}
	before := len(d.errs)
	hasDecision := false
	for _, f := range n.fields {
		fp := path + "." + f.key
		switch f.key {
		case "name":
			r.name = d.pattern(f, fp)
		case "source":
			r.source = d.pattern(f, fp)
		case "registry":
			s, ok := d.str(f, fp)
			if !ok {
				continue
			}
			if !slices.Contains(Registries, s) {
				d.errorf(f.line, fp, "unknown registry %q (want one of %v)", s, Registries)
				continue
			}
			r.registry = s
		case "decision":
			hasDecision = true
			if e, ok := d.effect(f, fp); ok {
				r.effect = e
			}
		case "reason":
			r.reason, _ = d.str(f, fp)
		default:
			d.errorf(f.line, fp, "unknown key (want name, registry, source, decision or reason)")
		}
	}
	return r, d.ruleDone(n, path, hasDecision, before)
}
