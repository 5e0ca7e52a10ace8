package serverconfig

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Scope is a precedence tier. A server defined in a higher tier wins over one
// with the same name in a lower tier.
type Scope string

// Scopes, highest precedence first.
const (
	ScopeExplicit Scope = "explicit" // --config files, CODEMODE_CONFIG, MCP_SERVERS_CONFIG
	ScopeProject  Scope = "project"  // files found from the working directory
	ScopeUser     Scope = "user"     // files in the home directory
)

// Transport is how codemode talks to a server.
type Transport string

// Transports.
const (
	TransportStdio Transport = "stdio" // a child process speaking on stdin/stdout
	TransportHTTP  Transport = "http"  // streamable HTTP
	TransportSSE   Transport = "sse"   // the older HTTP+SSE transport
)

// Env is the part of the process environment that Load depends on. The caller
// fills it (typically from os.Environ, os.UserHomeDir, os.Getwd and
// os.Executable); this package never reads the environment itself.
type Env struct {
	// Vars holds environment variables, used for ${VAR} expansion and for
	// CODEMODE_CONFIG, MCP_SERVERS_CONFIG, MCP_BRIDGE_ALLOW_SELF_SERVER,
	// XDG_CONFIG_HOME, APPDATA and CODEX_HOME.
	Vars map[string]string
	// Home is the user's home directory (absolute). Empty skips user files.
	Home string
	// Cwd is the working directory (absolute): the project whose files
	// are read. Empty skips project files.
	Cwd string
	// GOOS selects the per-OS locations ("linux", "darwin", "windows").
	// Empty means the OS this binary was built for.
	GOOS string
	// Self lists paths of the running codemode binary (os.Executable and
	// its resolved symlink). Entries whose command or arguments name one of
	// them are skipped as self-references.
	Self []string
}

func (e Env) lookup(name string) (string, bool) {
	v, ok := e.Vars[name]
	return v, ok
}

// VarsFromEnviron converts a list of "KEY=value" strings, as returned by
// os.Environ, into a map for Env.Vars. Later duplicates win.
func VarsFromEnviron(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k != "" {
			m[k] = v
		}
	}
	return m
}

// Options adjusts a Load.
type Options struct {
	// Explicit lists files given with --config, in order. They take
	// precedence over everything else.
	Explicit []string
	// NoProject skips the project tier (files found from Env.Cwd), for
	// example when the working directory is an untrusted checkout.
	NoProject bool
}

// Server is one usable server definition.
type Server struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Transport   Transport `json:"transport"`

	// stdio
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"` // added to the child's environment
	Cwd     string            `json:"cwd,omitempty"` // absolute, or empty for the default

	// http and sse
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// OAuth holds pre-registered client credentials and scopes for signing
	// in to the server ("oauth": {"clientId", "clientSecret", "scopes"});
	// nil lets the authorization server register codemode.
	OAuth *OAuth `json:"oauth,omitempty"`

	// StartupTimeout and ToolTimeout are zero unless the file sets them
	// (Codex's startup_timeout_sec and tool_timeout_sec, Gemini CLI's
	// timeout).
	StartupTimeout time.Duration `json:"-"`
	ToolTimeout    time.Duration `json:"-"`

	// IncludeTools, if not empty, lists the only tools to expose;
	// ExcludeTools lists tools to hide and wins over IncludeTools
	// (Gemini CLI's includeTools/excludeTools, Codex's
	// enabled_tools/disabled_tools, Windsurf's disabledTools).
	IncludeTools []string `json:"include_tools,omitempty"`
	ExcludeTools []string `json:"exclude_tools,omitempty"`

	Source     string `json:"source"`      // the file that defined it
	SourceKind string `json:"source_kind"` // Location.Kind, or "flag", "env:CODEMODE_CONFIG", "env:MCP_SERVERS_CONFIG"
	Scope      Scope  `json:"scope"`
}

// OAuth is a remote server's OAuth client configuration.
type OAuth struct {
	ClientID     string   `json:"clientId,omitempty"`
	ClientSecret string   `json:"clientSecret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
}

// MarshalJSON writes the timeouts as duration strings ("20s").
func (s Server) MarshalJSON() ([]byte, error) {
	type plain Server
	out := struct {
		plain
		StartupTimeout string `json:"startup_timeout,omitempty"`
		ToolTimeout    string `json:"tool_timeout,omitempty"`
	}{plain: plain(s)}
	if s.StartupTimeout > 0 {
		out.StartupTimeout = s.StartupTimeout.String()
	}
	if s.ToolTimeout > 0 {
		out.ToolTimeout = s.ToolTimeout.String()
	}
	return json.Marshal(out)
}

// SkipReason says why a definition is not used.
type SkipReason string

// Skip reasons.
const (
	SkipDisabled   SkipReason = "disabled"       // the file disables it
	SkipSelf       SkipReason = "self-reference" // it would start codemode or the reference bridge
	SkipShadowed   SkipReason = "shadowed"       // a higher-precedence file defines the same name
	SkipInvalid    SkipReason = "invalid"        // the entry cannot be used as written
	SkipNeedsInput SkipReason = "needs-input"    // it uses ${input:...}, which only VS Code can prompt for
)

// Skipped is a definition that Load found but does not use.
type Skipped struct {
	Name       string     `json:"name"`
	Source     string     `json:"source"`
	SourceKind string     `json:"source_kind"`
	Scope      Scope      `json:"scope"`
	Reason     SkipReason `json:"reason"`
	// Detail explains the reason; for SkipShadowed it is the file whose
	// definition wins.
	Detail string `json:"detail,omitempty"`
}

// String returns the reason in words, e.g. "shadowed by /p/.mcp.json" or
// "disabled (enabled: false)".
func (s Skipped) String() string {
	switch {
	case s.Reason == SkipShadowed:
		return "shadowed by " + s.Detail
	case s.Reason == SkipDisabled && s.Detail != "":
		return "disabled (" + s.Detail + ")"
	case s.Detail == "":
		return string(s.Reason)
	default:
		return string(s.Reason) + ": " + s.Detail
	}
}

// Warning is a problem that did not stop loading: a file that could not be
// read or parsed (its servers are missing), or an undefined variable.
type Warning struct {
	File    string `json:"file"`
	Server  string `json:"server,omitempty"`
	Message string `json:"message"`
}

func (w Warning) String() string {
	if w.Server != "" {
		return fmt.Sprintf("%s: server %q: %s", w.File, w.Server, w.Message)
	}
	return w.File + ": " + w.Message
}

// Source is one place Load looked at, in precedence order.
type Source struct {
	Path   string `json:"path"` // the file, or the pattern for a glob that matched nothing
	Kind   string `json:"kind"`
	Client string `json:"client,omitempty"`
	Scope  Scope  `json:"scope"`
	Found  bool   `json:"found"`
	// Entries is the number of server definitions in the file, used or not.
	Entries int `json:"entries"`
	// Error is set when the file exists but could not be read or parsed.
	Error string `json:"error,omitempty"`
	// Note explains an absent or ignored source, e.g. "APPDATA is not set"
	// or "same file as claude-code-project".
	Note string `json:"note,omitempty"`
}

// Result is the outcome of Load.
type Result struct {
	Servers  []Server  `json:"servers"`  // sorted by name
	Skipped  []Skipped `json:"skipped"`  // sorted by name, then precedence
	Warnings []Warning `json:"warnings"` // in the order found
	Sources  []Source  `json:"sources"`  // in precedence order
	// AllowSelf reports MCP_BRIDGE_ALLOW_SELF_SERVER: self-references were
	// not filtered.
	AllowSelf bool `json:"allow_self,omitempty"`

	home, cwd string // for abbreviating paths in the report
}

// Server returns the server with the given name.
func (r *Result) Server(name string) (Server, bool) {
	for _, s := range r.Servers {
		if s.Name == name {
			return s, true
		}
	}
	return Server{}, false
}

// Redacted returns a copy of r in which every env and header value is
// replaced by "[redacted]", for printing (codemode servers --json).
func (r *Result) Redacted() *Result {
	c := *r
	c.Servers = make([]Server, len(r.Servers))
	for i, s := range r.Servers {
		s.Env = redactValues(s.Env)
		s.Headers = redactValues(s.Headers)
		if s.OAuth != nil && s.OAuth.ClientSecret != "" {
			o := *s.OAuth
			o.ClientSecret = "[redacted]"
			s.OAuth = &o
		}
		c.Servers[i] = s
	}
	return &c
}

func redactValues(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = "[redacted]"
	}
	return out
}
