// Package policy decides which nested MCP tool calls sandboxed code may
// make: it parses the policy file, applies its rules to each call, tells
// discovery which servers and tools to hide, enforces call limits, and
// follows the file as it changes.
//
// # File
//
// A policy is TOML, JSON or YAML, chosen by the file's extension (.toml,
// .json, .yaml, .yml):
//
//	default = "allow"   # allow | deny | ask; allow when omitted
//
//	[[rules]]
//	server = "fs"       # glob over server names; omitted: any server
//	tool = "write_*"    # glob over tool names; omitted: every tool (a server-level rule)
//	when = 'args.path.endsWith("secret.txt")'  # CEL; omitted: always
//	decision = "deny"   # allow | deny | ask
//	reason = "agents may not write here"
//	redact = true       # the audit log keeps the arguments' SHA-256 only
//
//	[egress]            # hosts sandboxes may reach (egress.ParsePattern), besides --egress-allow
//	allow = ["pypi.org", "10.0.0.0/8:5432"]
//
//	[limits]            # 0 or omitted: unlimited
//	max_calls_per_run = 200
//	max_concurrent_calls = 16
//	calls_per_minute = 600
//
// Globs use *, ? and [...] (ranges, ^ to negate, \ to escape) over whole
// names, as path.Match does, except that * and ? also match '/', which MCP
// allows in names. Decisions are spelled exactly allow, deny or ask.
//
// Any mistake fails the whole file, and every mistake is reported with its
// line: syntax errors, unknown keys (a typo must not silently allow), values
// of the wrong type, invalid decisions, patterns and conditions.
//
// # Decisions
//
// Decide tries the rules in file order; the first whose server glob, tool
// glob and condition all match decides, and a call no rule matches gets the
// default. The Decision names the rule (index, "rules[N]" and line), its
// reason and whether to redact.
//
// Conditions are CEL, compiled when the file is loaded, and must be of type
// bool: map values are dyn, so a bare args.force must be written
// args.force == true. They see server, tool, principal and session
// (strings), and args, annotations and claims (maps). annotations holds the
// hints the tool declares and nothing else, so test them with has() or
// annotations.?destructiveHint.orValue(false) == true. CEL's string
// extensions and optional values are available, and ints compare with
// doubles (JSON numbers arrive as doubles).
//
// A condition that fails to evaluate, most often for a missing key
// (args.path when no path was sent), does not match: evaluation goes on
// with the next rule, and the error is reported in Decision.ConditionErrors
// for the audit log and for codemode policy explain. Write deny rules so
// that they cannot fail on the input they mean to catch (has(args.path) &&
// ..., args.?path.orValue("")), or deny by default and allow what is safe.
// If ctx ends while a condition runs, the call is denied.
//
// # Hiding and servers
//
// Hidden, HiddenFor and ServerHidden tell discovery what no call could ever
// use: a tool or server is hidden only when every call to it is denied,
// whatever the caller and arguments (HiddenFor: whatever the arguments). The
// rules are walked in order as Decide walks them; a condition is evaluated
// on what is known (the server and tool names, and the caller for
// HiddenFor), and one that still depends on the rest might go either way,
// so an allow or ask rule that might match keeps the tool visible. An
// unconditional deny reached that way hides; so does a default of deny for
// what no rule might allow. ServerDecision applies the same reasoning to one
// caller and any tool: Deny means the server need not start for it.
//
// # Egress
//
// A sandbox's network request through codemode's egress proxy is decided
// like a tool call to server "net", tool the host, with args {method, path,
// port}. The [egress] table's allow list adds hosts to the proxy's
// allow-list; it follows reloads, but egress must be on at start (the
// setting, or entries here) for sandboxes to have the proxy at all.
//
// # Adding servers from a catalog
//
// Add rules ([[add]]) decide whether code may add a server from a catalog
// (DecideAdd): each matches entries by name glob, registry (npm, pypi, oci,
// ..., or remote) and source (a glob over the catalog's file or URL), and
// the first that matches decides; add_default (ask unless set) decides the
// rest. A name that is in no catalog is always denied.
//
// # Limits
//
// An Enforcer applies the limits, reading them from a LimitSource (the
// Policy, or the Store so that reloads apply) on every call:
// max_calls_per_run counts the calls of one Run (one run_python call);
// max_concurrent_calls bounds a principal's calls in flight, further calls
// waiting for a slot until their context ends; calls_per_minute is a token
// bucket per principal that holds a minute's worth and refills evenly. A
// refused call gets a *LimitError, of kind "limit", naming the limit and its
// value. The Enforcer keeps a few words of state per principal it has seen.
//
// # Reloading
//
// A Store holds the policy in force. Reload (on SIGHUP) and Watch (on
// changes to the file, seen by watching its directory so that editors that
// rename a new file over the old one are followed) replace it atomically; a
// file that fails to load, or is empty, leaves the previous policy in force
// and the reason is logged.
package policy
