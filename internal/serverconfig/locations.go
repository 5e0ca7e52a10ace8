package serverconfig

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Location is one row of the table of well-known configuration files
// (locations.json, embedded). Rows are in precedence order within a scope.
type Location struct {
	// Kind identifies the row, e.g. "cursor-project"; rows that differ
	// only by OS share it.
	Kind   string `json:"kind"`
	Client string `json:"client"`
	Scope  Scope  `json:"scope"` // ScopeProject or ScopeUser
	// OS limits the row to these GOOS values; empty means every OS.
	OS []string `json:"os,omitempty"`
	// Path is a template: "~/" is the home directory, "./" the working
	// directory, and ${VAR} / ${VAR:-default} are environment variables
	// (a row whose variable is unset and has no default does not apply).
	// A "*" in the last element makes it a glob, read in name order.
	// A name ending in ".toml" is TOML, anything else JSON with comments.
	Path string `json:"path"`
	// Key is the path of member names leading to the object of servers;
	// "{cwd}" stands for the working directory (Claude Code keeps
	// per-project servers under projects.<dir>.mcpServers).
	Key []string `json:"key"`
	// Dialect is "gemini" for Gemini CLI files, where "url" means SSE,
	// "httpUrl" streamable HTTP, "timeout" is in milliseconds, env values
	// may use bare $VAR, and mcp.allowed/mcp.excluded filter servers.
	Dialect string `json:"dialect,omitempty"`
}

//go:embed locations.json
var locationsJSON []byte

// Locations returns the table of well-known locations for goos (all rows
// when goos is empty), in precedence order: project rows, then user rows.
func Locations(goos string) []Location {
	var all []Location
	if err := json.Unmarshal(locationsJSON, &all); err != nil {
		panic("serverconfig: bad embedded locations.json: " + err.Error())
	}
	var out []Location
	for _, scope := range []Scope{ScopeProject, ScopeUser} {
		for _, l := range all {
			if l.Scope == scope && (goos == "" || len(l.OS) == 0 || slices.Contains(l.OS, goos)) {
				out = append(out, l)
			}
		}
	}
	return out
}

// resolvePath turns a Location.Path template into an absolute path. A
// non-empty note means the location does not apply here.
func resolvePath(tmpl string, scope Scope, env Env) (path, note string) {
	x := &expander{lookup: env.lookup}
	var ex expansion
	p := x.expand(tmpl, false, &ex)
	if len(ex.undefined) > 0 {
		return "", strings.Join(ex.undefined, ", ") + " is not set"
	}
	if strings.HasPrefix(p, "~") {
		if env.Home == "" {
			return "", "home directory unknown"
		}
		p = expandTilde(p, env.Home)
	}
	if !filepath.IsAbs(p) {
		if scope != ScopeProject {
			return "", fmt.Sprintf("%s is not an absolute path", p)
		}
		if env.Cwd == "" {
			return "", "working directory unknown"
		}
		p = filepath.Join(env.Cwd, p)
	}
	return filepath.Clean(p), ""
}

// splitGlob splits a path whose last element contains '*' into its directory
// and pattern. Only the last element may be a pattern, so a home directory
// containing glob characters is still taken literally.
func splitGlob(path string) (dir, pattern string, ok bool) {
	dir, pattern = filepath.Split(path)
	if !strings.ContainsAny(pattern, "*?[") {
		return "", "", false
	}
	return filepath.Clean(dir), pattern, true
}

// Resolve returns the file a location names for env (the pattern, for a
// glob row). A non-empty note says why the location does not apply.
func (l Location) Resolve(env Env) (path, note string) {
	return resolvePath(l.Path, l.Scope, env)
}
