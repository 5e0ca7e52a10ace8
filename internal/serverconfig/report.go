package serverconfig

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// WriteReport writes a human-readable listing for codemode servers: every
// server with its transport, scope and source file; every skipped entry with
// its reason; the warnings; and every place looked at. Paths under the
// working directory are shown as ./..., under the home directory as ~/... state, if not nil,
// gives each server's runtime state (e.g. "running") for an extra column.
// Env and header values are never printed.
func (r *Result) WriteReport(w io.Writer, state func(name string) string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format, a...) }

	p("Servers (%d)\n", len(r.Servers))
	if len(r.Servers) > 0 {
		if state != nil {
			p("  NAME\tTRANSPORT\tSTATE\tSCOPE\tSOURCE\n")
		} else {
			p("  NAME\tTRANSPORT\tSCOPE\tSOURCE\n")
		}
		for _, s := range r.Servers {
			if state != nil {
				p("  %s\t%s\t%s\t%s\t%s\n", s.Name, s.Transport, state(s.Name), s.Scope, r.short(s.Source))
			} else {
				p("  %s\t%s\t%s\t%s\n", s.Name, s.Transport, s.Scope, r.short(s.Source))
			}
		}
	}
	if r.AllowSelf {
		p("  (self-reference filtering is off: MCP_BRIDGE_ALLOW_SELF_SERVER is set)\n")
	}

	p("\nSkipped (%d)\n", len(r.Skipped))
	if len(r.Skipped) > 0 {
		p("  NAME\tSCOPE\tSOURCE\tREASON\n")
		for _, s := range r.Skipped {
			reason := s.String()
			if s.Reason == SkipShadowed {
				reason = "shadowed by " + r.short(s.Detail)
			}
			p("  %s\t%s\t%s\t%s\n", s.Name, s.Scope, r.short(s.Source), reason)
		}
	}

	if len(r.Warnings) > 0 {
		p("\nWarnings (%d)\n", len(r.Warnings))
		for _, wn := range r.Warnings {
			wn.File = r.short(wn.File)
			p("  %s\n", wn)
		}
	}

	p("\nSources, highest precedence first (the first definition of a name wins)\n")
	p("  SCOPE\tKIND\tSTATUS\tPATH\n")
	for _, s := range r.Sources {
		p("  %s\t%s\t%s\t%s\n", s.Scope, s.Kind, sourceStatus(s), r.short(s.Path))
	}
	return tw.Flush()
}

func sourceStatus(s Source) string {
	switch {
	case s.Note != "" && s.Found:
		return s.Note
	case s.Note != "":
		return "n/a: " + s.Note
	case !s.Found:
		return "not found"
	case s.Error != "":
		return "error (see warnings)"
	case s.Entries == 1:
		return "1 entry"
	default:
		return fmt.Sprintf("%d entries", s.Entries)
	}
}

// short abbreviates a path under the working directory as ./... and one
// under the home directory as ~/...
func (r *Result) short(path string) string {
	for _, d := range []struct{ dir, abbrev string }{{r.cwd, "."}, {r.home, "~"}} {
		if d.dir == "" {
			continue
		}
		dir := filepath.Clean(d.dir)
		if path == dir {
			return d.abbrev
		}
		if rest, ok := strings.CutPrefix(path, dir+string(filepath.Separator)); ok {
			return d.abbrev + "/" + filepath.ToSlash(rest)
		}
	}
	return path
}
