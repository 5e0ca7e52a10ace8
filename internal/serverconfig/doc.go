// Package serverconfig discovers and parses the MCP server configuration
// files that users already have (Claude Code, Claude Desktop, Cursor,
// VS Code, Windsurf, Gemini CLI, Codex, and the reference bridge's own
// ~/MCPs/*.json), and decides which servers codemode may call.
//
// # Sources and precedence
//
// Load reads three tiers, highest precedence first:
//
//  1. explicit: the --config files in the order given (Options.Explicit),
//     then the files in CODEMODE_CONFIG (a list separated like PATH), then
//     the file in MCP_SERVERS_CONFIG;
//  2. project: files found from the working directory (Env.Cwd);
//  3. user: files in the home directory (Env.Home).
//
// Within the project and user tiers the order is that of the embedded table
// (locations.json, see Locations): codemode's own directories first, then
// Claude Code (its local, per-project entries in ~/.claude.json before
// .mcp.json, as Claude Code itself does; the project key must equal the
// working directory), Claude Desktop, Cursor, VS Code, Windsurf, Gemini CLI
// and Codex. A glob reads its files in name order, never
// in directory order. The first definition of a name wins, whatever its
// state: every later definition of the same name is reported as skipped,
// "shadowed by" the winning file, and a disabled or invalid first definition
// is not replaced by a later one. The same file reached twice (for example
// MCP_SERVERS_CONFIG pointing at ~/.cursor/mcp.json, or the working directory
// being the home directory) is read once, at its highest position.
//
// This departs from the reference on purpose: there, files in ~/MCPs tie by
// directory order and MCP_SERVERS_CONFIG can only add names.
//
// # File format
//
// Servers live under "mcpServers" (most clients), "servers" (VS Code),
// "mcp_servers" (Codex, TOML) or projects.<cwd>.mcpServers (Claude Code's
// local scope). A file given explicitly may use any of the three top-level
// keys; a name ending in ".toml" is read as TOML, anything else as JSON, in
// which comments and trailing commas are accepted. A top-level "description"
// is the default description of the file's servers.
//
// An entry is a stdio server (command, args, env, cwd, envFile) or a remote
// one (url, or Windsurf's serverUrl, or Gemini CLI's httpUrl; headers).
// "type" ("stdio", "http", "sse") selects the transport; without it a
// command means stdio and a URL means streamable HTTP, or SSE when its path
// ends in /sse (in Gemini CLI files url means SSE and httpUrl streamable
// HTTP). "disabled": true or "enabled": false skips an entry. Codex's
// bearer_token_env_var, http_headers, env_http_headers, env_vars and
// timeouts, Gemini CLI's timeout and tool filters are understood too.
//
// In command, args, env values, cwd, url and header values, ${VAR},
// ${VAR:-default} and ${env:VAR} are replaced from the environment (an unset
// variable becomes "" with a warning), VS Code's ${userHome},
// ${workspaceFolder}, ${workspaceFolderBasename}, ${pathSeparator} and ${/}
// are supported, and a leading ~/ in command, cwd and arguments is the home
// directory. An entry that needs ${input:...} (a VS Code prompt) is skipped.
//
// # Self-reference
//
// An entry that would start codemode or the reference bridge is skipped,
// unless MCP_BRIDGE_ALLOW_SELF_SERVER is 1, true or yes (any case). The
// checks, all case-insensitive, are the reference's (its names
// mcp-server-code-execution-mode and mcp_server_code_execution_mode as the
// entry name, the command's base name, or an argument or its base name, and
// *mcp_server_code_execution_mode.py) plus codemode's: the name "codemode",
// a command whose base name is codemode, an argument "codemode[@version]" or
// ".../cmd/codemode[@version]", and the paths in Env.Self. Package versions
// such as "@latest" or "==0.2.0" are ignored when comparing arguments.
//
// # Errors
//
// A file that cannot be read or parsed produces a Warning naming the file and
// the reason; every other file still loads. Result lists every server, every
// skipped entry with its reason and every place looked at, so that
// "codemode servers" (WriteReport, or JSON of Redacted) can explain itself.
//
// This package reads files but never the process environment: Env carries
// the variables, home and working directory. It must not import the MCP SDK.
// Its behaviour is tested with fixture trees under testdata/ (one per
// source), a golden report, and the fuzz targets FuzzParseJSONConfig,
// FuzzStripJSONC and FuzzParseTOMLConfig.
package serverconfig
