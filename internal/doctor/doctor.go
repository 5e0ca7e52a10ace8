// Package doctor examines every sandbox backend on this host: what it needs
// (Diagnose), what it enforces (Probe) and, with a real sandbox, whether the
// isolation holds from the inside (posture). `codemode doctor` prints the
// report; its JSON form is additive-only.
package doctor

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/sandbox/posture"
)

// Target is one backend to examine.
type Target struct {
	Backend  sandbox.Backend
	Template sandbox.Spec   // limits and environment for the test sandbox
	Expect   posture.Expect // what this backend legitimately differs in
}

// Result is the verdict on one backend.
type Result struct {
	Backend     string               `json:"backend"`
	Usable      bool                 `json:"usable"`
	Selected    bool                 `json:"selected"`
	Engine      string               `json:"engine,omitempty"`
	Error       string               `json:"error,omitempty"`
	Checks      []sandbox.Check      `json:"checks"`
	Protections []sandbox.Protection `json:"protections,omitempty"`
	Notes       []string             `json:"notes,omitempty"`
}

// Report is the whole examination.
type Report struct {
	Version  string   `json:"version"`
	Runtime  string   `json:"runtimeHash"`
	Selected string   `json:"selected"`
	Required []string `json:"required"`
	Results  []Result `json:"results"`
	// Observability: whether metrics and tracing are configured and reachable.
	Observability []sandbox.Check `json:"observability,omitempty"`
	// Host: what on this machine sets the cost of tool calls from code.
	Host []sandbox.Check `json:"host,omitempty"`
}

// Examine runs every target. preference lists backend names in the order
// codemode would choose them; the first usable one is marked selected.
// required are the protections the settings demand.
func Examine(ctx context.Context, targets []Target, preference, required []string) Report {
	var rep Report
	rep.Required = required
	byName := map[string]*Result{}
	for _, t := range targets {
		r := examine(ctx, t, required)
		rep.Results = append(rep.Results, r)
	}
	for i := range rep.Results {
		byName[rep.Results[i].Backend] = &rep.Results[i]
	}
	for _, name := range preference {
		if r := byName[name]; r != nil && r.Usable {
			r.Selected = true
			rep.Selected = name
			break
		}
	}
	// A backend chosen explicitly stays the selection when it cannot run:
	// that is what codemode would try, and fail with.
	if rep.Selected == "" && len(preference) == 1 {
		if r := byName[preference[0]]; r != nil {
			r.Selected = true
			rep.Selected = preference[0]
		}
	}
	return rep
}

func examine(ctx context.Context, t Target, required []string) Result {
	r := Result{Backend: t.Backend.Name(), Checks: []sandbox.Check{}}
	if d, ok := t.Backend.(sandbox.Diagnoser); ok {
		r.Checks = append(r.Checks, d.Diagnose(ctx)...)
	}
	caps, err := t.Backend.Probe(ctx)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Engine, r.Protections, r.Notes = caps.Engine, caps.Protections, caps.Notes
	if missing := caps.Missing(required); len(missing) > 0 {
		r.Checks = append(r.Checks, sandbox.Check{Name: "required protections", OK: false,
			Detail: "not enforced: " + strings.Join(missing, ", "),
			Fix:    "fix the checks above, or accept a weaker sandbox with --allow-weaker-sandbox"})
	}
	tmpl := t.Template
	tmpl.ID = "doctor"
	_, findings, err := posture.Run(ctx, t.Backend, tmpl, t.Expect)
	if err != nil {
		r.Checks = append(r.Checks, sandbox.Check{Name: "test sandbox", OK: false, Detail: err.Error()})
		r.Error = "test sandbox failed: " + err.Error()
		return r
	}
	failed := posture.Failed(findings)
	if len(failed) == 0 {
		r.Checks = append(r.Checks, sandbox.Check{Name: "isolation from inside", OK: true,
			Detail: fmt.Sprintf("%d checks passed in a test sandbox (uid 65534, no capabilities, no network, read-only root, syscalls refused, host files invisible, ...)", len(findings))})
	}
	for _, f := range failed {
		r.Checks = append(r.Checks, sandbox.Check{Name: "isolation: " + f.Check, OK: false, Detail: "got " + f.Got,
			Fix: "this backend does not isolate as codemode requires on this host; use another backend"})
	}
	r.Usable = len(failed) == 0 && !hasFailed(r.Checks, "required protections")
	return r
}

func hasFailed(cs []sandbox.Check, name string) bool {
	for _, c := range cs {
		if c.Name == name && !c.OK {
			return true
		}
	}
	return false
}

// SelectedUsable reports whether the selected backend can run.
func (rep Report) SelectedUsable() bool {
	for _, r := range rep.Results {
		if r.Selected {
			return r.Usable
		}
	}
	return false
}

// Write prints the report for people.
func (rep Report) Write(w io.Writer) {
	fmt.Fprintf(w, "%s (runtime %s)\n", rep.Version, rep.Runtime)
	switch {
	case rep.Selected != "" && rep.SelectedUsable():
		fmt.Fprintf(w, "selected backend: %s\n", rep.Selected)
	case rep.Selected != "":
		fmt.Fprintf(w, "selected backend: %s, which CANNOT run (see below)\n", rep.Selected)
	default:
		fmt.Fprintf(w, "selected backend: NONE usable\n")
	}
	results := append([]Result(nil), rep.Results...)
	sort.SliceStable(results, func(i, j int) bool { return results[i].Selected && !results[j].Selected })
	for _, r := range results {
		status := "OK  "
		if !r.Usable {
			status = "FAIL"
		}
		head := r.Engine
		if r.Error != "" {
			head = r.Error
		}
		fmt.Fprintf(w, "\n%s %-7s %s\n", status, r.Backend, head)
		for _, c := range r.Checks {
			writeCheck(w, c)
		}
		for _, p := range r.Protections {
			state := "enforced"
			if !p.Enforced {
				state = "NOT enforced"
			}
			fmt.Fprintf(w, "    %-20s %-13s %s\n", p.Name, state, p.How)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(w, "    note: %s\n", n)
		}
	}
	if len(rep.Observability) > 0 {
		fmt.Fprintf(w, "\nobservability\n")
	}
	for _, c := range rep.Observability {
		writeCheck(w, c)
	}
	if len(rep.Host) > 0 {
		fmt.Fprintf(w, "\nhost\n")
	}
	for _, c := range rep.Host {
		writeCheck(w, c)
	}
}

// writeCheck prints one check with its mark, and its fix when it failed.
func writeCheck(w io.Writer, c sandbox.Check) {
	mark := "✓"
	if !c.OK {
		mark = "✗"
	}
	fmt.Fprintf(w, "  %s %s: %s\n", mark, c.Name, c.Detail)
	if !c.OK && c.Fix != "" {
		fmt.Fprintf(w, "      fix: %s\n", c.Fix)
	}
}
