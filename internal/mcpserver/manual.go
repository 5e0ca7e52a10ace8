package mcpserver

import (
	"fmt"
	"strings"
	"time"

	"github.com/codemode/codemode/internal/pyruntime"
	"github.com/codemode/codemode/internal/sandbox"
)

// CapabilitiesURI and the resource's name are the reference project's.
const (
	CapabilitiesURI  = "resource://mcp-server-code-execution-mode/capabilities"
	capabilitiesName = "code-execution-capabilities"
	capabilitiesMIME = "text/markdown"
)

// helpersSummary keeps the reference's wording where the helpers are the same.
const helpersSummary = "Python Sandbox. 1. DISCOVER: `runtime.discovered_servers()`, `runtime.search_tool_docs('query')`. " +
	"Use `discovered_servers(detailed=True)` for descriptions. 2. CALL: `await mcp_server.tool()`. " +
	"3. PERSIST: variables, imports and functions survive between calls in a session. " +
	"Run `print(runtime.capability_summary())` for the full manual."

// ManualInfo is what the manual states about the limits in force.
type ManualInfo struct {
	Backend        sandbox.Capabilities
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	InterruptGrace time.Duration
	IdleTimeout    time.Duration
	MaxSessions    int
	OutputLimit    int
	ResultLimit    int // characters of a whole result; 0 = none
	MemoryBytes    int64
	PIDs           int
	CPUs           float64
	TmpBytes       int64
	WorkspaceBytes int64
	Helpers        []pyruntime.Helper // documented helpers, in order
	Policy         string             // one line on the policy over tool calls ("" = none)
	Packages       string             // the importable Python distributions, "name version, ..." ("" = not known yet)
	DataDir        string             // "" (none), "read-only" or "read-write": a host directory at /workspace/data
	Preload        []string           // modules a new session finds imported when it starts from a spare
	// Egress lists the hosts code may reach through codemode's proxy, as
	// allow-list patterns (none: no network).
	Egress []string
}

// Manual renders the capabilities document: the resource body and the text
// of runtime.capability_summary().
func Manual(m ManualInfo) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# Code Execution MCP Capabilities\n\n%s\n\n", helpersSummary)

	p("## Sessions\n")
	p("- A session is a persistent Python interpreter: variables, imports and functions survive between `run_python` calls. Pass `session` (a name of yours) to use several; a named session is your client's, reachable from any later connection, and other clients never see it. Without `session` a stateful connection uses its own default session; a sessionless client (MCP 2026-07-28 over HTTP) gets a new session each time and its handle in the result (`session`, also a note): pass it back as `session` to keep the state. `reset: true` starts the session from a fresh interpreter; `close: true` ends it after the call (code may then be omitted; a sessionless client's call without `session` then leaves nothing behind).\n")
	p("- Top-level `await` works, and the value of a final expression is printed, as in a REPL. `input()` sees end of file.\n")
	p("- Timeout: %s by default, at most %s per call. On timeout the code gets KeyboardInterrupt; if it has not stopped %s later the sandbox is killed and the session's state is lost (the result says so).\n",
		secs(m.DefaultTimeout), secs(m.MaxTimeout), secs(m.InterruptGrace))
	p("- Sessions end after %s without calls, on `close`, and at shutdown; a default session also when its connection closes. An ended handle is refused (start a new session without `session`); at most %d sessions run at once, and at that limit your least recently used idle handle is closed to make room.\n", m.IdleTimeout, m.MaxSessions)
	p("- Output: up to %s of stdout and of stderr per call are returned; beyond that the middle is cut and the result states how much.\n", size(int64(m.OutputLimit)))
	if m.ResultLimit > 0 {
		p("- A whole result stays within %d characters: long output keeps its start and end, and the full output is linked as a file (resources/read).\n", m.ResultLimit)
	}
	p("\n")

	p("## Sandbox\n")
	p("- Backend: %s — %s.\n", m.Backend.Backend, m.Backend.Engine)
	p("- Limits per session: memory %s, %d processes/threads", size(m.MemoryBytes), m.PIDs)
	if m.CPUs > 0 {
		p(", %g CPU", m.CPUs)
	}
	p("; writable `/tmp` (%s) and `/workspace` (%s, the working directory), both noexec; everything else is read-only.", size(m.TmpBytes), size(m.WorkspaceBytes))
	if len(m.Egress) == 0 {
		p(" No network.\n")
	} else {
		p("\n- Network: only HTTP(S), through codemode's proxy (HTTP_PROXY and HTTPS_PROXY are set, so urllib, requests, pip and curl use it), to these hosts: %s. Other hosts get HTTP 403.\n", strings.Join(m.Egress, ", "))
	}
	if m.DataDir != "" {
		p("- `/workspace/data`: a host directory, mounted %s.\n", m.DataDir)
	}
	if m.Packages != "" {
		p("- Python packages installed: %s.\n", m.Packages)
	}
	if len(m.Preload) > 0 {
		p("- Already imported in a new session (when installed), so importing them costs nothing: %s.\n", strings.Join(m.Preload, ", "))
	}
	p("- Files written under `/workspace/out` (or passed to `publish(path)`) come back to the client as resource links.\n")
	for _, pr := range m.Backend.Protections {
		state := "enforced"
		if !pr.Enforced {
			state = "NOT enforced"
		}
		p("- %s: %s (%s)\n", pr.Name, state, pr.How)
	}
	for _, n := range m.Backend.Notes {
		p("- note: %s\n", n)
	}
	if m.Policy != "" {
		p("- Tool calls from code pass a policy (%s): a denied call raises MCPError with kind \"denied\", an exceeded limit kind \"limit\"; some calls wait for a human's approval.\n", m.Policy)
	}
	p("\n## Helpers\n")
	p("`runtime` (the module `mcp.runtime`) and `mcp` are predefined in every session.\n")
	for _, h := range m.Helpers {
		p("- `%s`: %s\n", h.Signature, h.Doc)
	}
	p("\nResource URI: %s\n", CapabilitiesURI)
	return b.String()
}

func secs(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second)) }

func size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
