// Package settings owns codemode's settings: every knob is declared once in a
// registry with its flag, its environment variables (CODEMODE_* and, for
// compatibility with the reference project, MCP_BRIDGE_*), its default and
// its parser, so `codemode config` can show each effective value and where it
// came from. Precedence: command-line flag > CODEMODE_* > MCP_BRIDGE_* >
// default.
//
// This package and serverconfig are the only ones that look at environment
// variables; both take them injected (Env) so tests never read the real
// environment.
package settings

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Env is the process environment as seen by configuration.
type Env struct {
	Vars map[string]string
	Home string
}

// EnvFromList builds an Env from os.Environ-style entries.
func EnvFromList(list []string, home string) Env {
	vars := make(map[string]string, len(list))
	for _, kv := range list {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	return Env{Vars: vars, Home: home}
}

// Settings are the effective settings.
type Settings struct {
	Backend            string // "auto" or one of the backends the Registry was given
	Runtime            string // container engine command or path (MCP_BRIDGE_RUNTIME)
	OCIRuntime         string // OCI runtime for container engines (runc, crun, runsc)
	Image              string
	Rootfs             string
	Python             string
	Timeout            time.Duration
	MaxTimeout         time.Duration
	InterruptGrace     time.Duration
	IdleTimeout        time.Duration
	MaxSessions        int
	Spares             int
	Preload            []string // modules a spare interpreter imports before it is handed out
	MemoryBytes        int64
	PIDs               int
	CPUs               float64
	NoFile             int
	TmpBytes           int64
	WorkspaceBytes     int64
	ContainerUser      string
	Kubeconfig         string   // kubernetes backend: kubeconfig file ("" = in-cluster, then KUBECONFIG rules)
	KubeNamespace      string   // kubernetes backend: namespace of the sandbox Pods
	RuntimeClass       string   // kubernetes backend: RuntimeClass of the sandbox Pods (e.g. gvisor)
	NodeSelector       []string // kubernetes backend: k=v node labels the sandbox Pods need
	KubeSeccomp        string   // kubernetes backend: Localhost seccomp profile instead of RuntimeDefault
	OutputLimit        int
	OutputMode         string // compact | toon
	ResultLimit        int    // characters of a whole run_python result (0 = no limit)
	LogLevel           slog.Level
	StateDir           string
	AllowWeaker        bool // start even if the backend cannot enforce a protection the settings ask for
	DisableLandlock    bool
	Zygote             bool
	Pull               bool          // container backends may pull a missing image (before the first session)
	ImageMaxPixels     int           // images are downscaled above this many pixels
	ImageMaxBytes      int           // ... and above this PNG size
	OutputSpool        int           // how much of cut output is kept as a session file
	DataDir            string        // host directory mounted at /workspace/data
	DataWritable       bool          // mount DataDir read-write
	HTTP               string        // listen address for streamable HTTP; "" = stdio
	HTTPPath           string        // the MCP endpoint's path
	TokensFile         string        // bearer tokens, "name token" per line
	Tokens             string        // bearer tokens, "name:token,name:token"
	OAuthIssuer        string        // accept JWT access tokens of this authorization server
	ClientMetadataURL  string        // codemode's OAuth Client ID Metadata Document, for signing in to servers
	OAuthAudience      string        // the "aud" they must carry (default: PublicURL)
	OAuthScopes        string        // scopes they must grant, comma-separated
	PublicURL          string        // the MCP endpoint's URL as clients reach it
	AllowUnauth        bool          // serve a non-loopback address without tokens
	AllowedOrigins     string        // extra browser origins trusted (comma-separated)
	MaxClientSessions  int           // per client (token); 0 = max-sessions
	MaxClientCalls     int           // concurrent calls per client (token)
	MaxRequestBytes    int64         // HTTP request body cap
	HTTPSessionTimeout time.Duration // idle MCP sessions over HTTP are closed
	ServerStart        time.Duration // bound on starting a downstream MCP server
	ToolTimeout        time.Duration // bound on one downstream tool call
	Policy             string        // policy file over nested tool calls ("" = allow everything)
	AuditLog           string        // hash-chained audit log of decisions and calls ("" = none)
	AuditMaxBytes      int64         // rotate the audit log past this size
	ApprovalTimeout    time.Duration // how long an "ask" waits for the user's answer
	Console            string        // stdio mode: serve the web console on this address ("" = off)
	ConsoleAdmins      string        // token names that see every session in the console (comma-separated)
	Metrics            string        // address serving Prometheus /metrics ("" = none)
	OTLPEndpoint       string        // OTLP endpoint traces go to ("" = the OTEL_EXPORTER_OTLP_* variables)
	TraceContent       bool          // record code and tool arguments in spans
	Catalogs           []string      // MCP server catalogs (files or registry URLs) code may add servers from
	NPMPrefix          string        // a directory whose node_modules holds npm packages to run instead of npx
	EgressAllow        []string      // hosts sandboxes may reach through codemode's proxy (none: no network)
	EgressSecrets      []string      // NAME=HOST_PATTERN: secrets swapped in by the proxy
	EgressSecretsFile  string        // NAME=VALUE lines: the secrets' values, before the environment's
	EgressSecretBody   bool          // swap placeholders in request bodies too
	EgressMaxRequests  int           // per session (0 = unlimited)
	EgressMaxBytes     int64         // per session, in and out (0 = unlimited)
}

// Source tells where an effective value came from.
type Source struct {
	Name  string // setting name
	Value string // as given
	From  string // "flag --x", "env X" or "default"
}

type kind int

const (
	kString kind = iota
	kDuration
	kBytes
	kInt
	kFloat
	kBool
	kLevel
	kPath
)

// Group says which commands offer a setting as a flag: serve and config
// offer every group, run only GroupGeneral, GroupSandbox and GroupCall.
type Group int

// The groups, in the order help lists them.
const (
	GroupGeneral  Group = iota // logging and state, for every command
	GroupSandbox               // how a sandbox is built and confined
	GroupCall                  // one run_python call: time, output, nested tool calls
	GroupSessions              // a long-running server's sessions
	GroupHTTP                  // the streamable HTTP transport
)

type setting struct {
	name  string // also the flag name
	group Group
	env   []string // in precedence order
	def   string
	kind  kind
	enum  []Choice // the accepted values of a kString setting; nil = any
	doc   string
	list  bool // a comma-separated list whose flag may be repeated
	apply func(s *Settings, v any)
}

// Choice is one value a setting accepts, and what it means.
type Choice struct {
	Name    string
	Summary string // one line for help text; "" = self-explanatory
}

// Registry is every setting codemode has. The backend setting's choices
// come from whoever knows the backends (app, which imports this package).
type Registry struct {
	settings []setting
}

// NewRegistry declares every setting. backends are the values the backend
// setting accepts, in the order help lists them; its default, "auto", must
// be among them.
func NewRegistry(backends []Choice) Registry {
	return Registry{settings: declare(backends)}
}

// declare lists every setting. The MCP_BRIDGE_* names are the reference
// project's; keep them working.
func declare(backends []Choice) []setting {
	return []setting{
		{name: "backend", group: GroupSandbox, env: []string{"CODEMODE_BACKEND"}, def: "auto", kind: kString,
			enum: append([]Choice{}, backends...), // never nil: no backend is accepted unchecked
			doc:  "sandbox backend", apply: func(s *Settings, v any) { s.Backend = v.(string) }},
		{name: "runtime", group: GroupSandbox, env: []string{"CODEMODE_RUNTIME", "MCP_BRIDGE_RUNTIME"}, kind: kString,
			doc: "container engine (podman, docker or a path); selects that backend when backend is auto", apply: func(s *Settings, v any) { s.Runtime = v.(string) }},
		{name: "oci-runtime", group: GroupSandbox, env: []string{"CODEMODE_OCI_RUNTIME"}, kind: kString,
			doc: "OCI runtime for podman/docker (runc, crun, runsc); empty = detect", apply: func(s *Settings, v any) { s.OCIRuntime = v.(string) }},
		{name: "image", group: GroupSandbox, env: []string{"CODEMODE_IMAGE", "MCP_BRIDGE_IMAGE"}, def: "python:3.12-slim", kind: kString,
			doc: "container image for podman/docker/gvisor", apply: func(s *Settings, v any) { s.Image = v.(string) }},
		{name: "kubeconfig", group: GroupSandbox, env: []string{"CODEMODE_KUBECONFIG"}, kind: kPath,
			doc: "kubeconfig for the kubernetes backend (default: the in-cluster config in a Pod, else $KUBECONFIG or ~/.kube/config)", apply: func(s *Settings, v any) { s.Kubeconfig = v.(string) }},
		{name: "namespace", group: GroupSandbox, env: []string{"CODEMODE_NAMESPACE"}, kind: kString,
			doc: "namespace of the kubernetes backend's sandbox Pods (default: the kubeconfig's, or codemode's own in a Pod)", apply: func(s *Settings, v any) { s.KubeNamespace = v.(string) }},
		{name: "runtime-class", group: GroupSandbox, env: []string{"CODEMODE_RUNTIME_CLASS"}, kind: kString,
			doc: "RuntimeClass of the kubernetes backend's sandbox Pods, e.g. gvisor (default: the cluster's)", apply: func(s *Settings, v any) { s.RuntimeClass = v.(string) }},
		{name: "node-selector", group: GroupSandbox, env: []string{"CODEMODE_NODE_SELECTOR"}, kind: kString, list: true,
			doc: "node labels (k=v, comma-separated or the flag repeated) the kubernetes backend's sandbox Pods must run on", apply: func(s *Settings, v any) { s.NodeSelector = splitList(v.(string)) }},
		{name: "kube-seccomp-profile", group: GroupSandbox, env: []string{"CODEMODE_KUBE_SECCOMP_PROFILE"}, kind: kString,
			doc: "Localhost seccomp profile (relative to the kubelet's seccomp directory) for the kubernetes backend's Pods instead of RuntimeDefault", apply: func(s *Settings, v any) { s.KubeSeccomp = v.(string) }},
		{name: "pull", group: GroupSandbox, env: []string{"CODEMODE_PULL"}, def: "false", kind: kBool,
			doc: "let podman/docker pull a missing image (once, before the first session)", apply: func(s *Settings, v any) { s.Pull = v.(bool) }},
		{name: "rootfs", group: GroupSandbox, env: []string{"CODEMODE_ROOTFS"}, kind: kPath,
			doc: "root filesystem directory for the native backend (default: the host's /usr)", apply: func(s *Settings, v any) { s.Rootfs = v.(string) }},
		{name: "python", group: GroupSandbox, env: []string{"CODEMODE_PYTHON"}, def: "python3", kind: kString,
			doc: "python command inside the sandbox", apply: func(s *Settings, v any) { s.Python = v.(string) }},
		{name: "timeout", group: GroupCall, env: []string{"CODEMODE_TIMEOUT", "MCP_BRIDGE_TIMEOUT"}, def: "30s", kind: kDuration,
			doc: "default run_python timeout", apply: func(s *Settings, v any) { s.Timeout = v.(time.Duration) }},
		{name: "max-timeout", group: GroupCall, env: []string{"CODEMODE_MAX_TIMEOUT", "MCP_BRIDGE_MAX_TIMEOUT"}, def: "120s", kind: kDuration,
			doc: "largest timeout a call may ask for", apply: func(s *Settings, v any) { s.MaxTimeout = v.(time.Duration) }},
		{name: "interrupt-grace", group: GroupCall, env: []string{"CODEMODE_INTERRUPT_GRACE"}, def: "3s", kind: kDuration,
			doc: "after a timeout, how long Python may take to stop before the sandbox is killed", apply: func(s *Settings, v any) { s.InterruptGrace = v.(time.Duration) }},
		{name: "idle-timeout", group: GroupSessions, env: []string{"CODEMODE_IDLE_TIMEOUT"}, def: "10m", kind: kDuration,
			doc: "end a session (named, handle or default) after this long without calls", apply: func(s *Settings, v any) { s.IdleTimeout = v.(time.Duration) }},
		{name: "max-sessions", group: GroupSessions, env: []string{"CODEMODE_MAX_SESSIONS"}, def: "16", kind: kInt,
			doc: "concurrent sessions (sandboxes) allowed", apply: func(s *Settings, v any) { s.MaxSessions = v.(int) }},
		{name: "spares", group: GroupSessions, env: []string{"CODEMODE_SPARES"}, def: "1", kind: kInt,
			doc: "interpreters kept started ahead of need, so a new session starts at once", apply: func(s *Settings, v any) { s.Spares = v.(int) }},
		{name: "preload", group: GroupSessions, env: []string{"CODEMODE_PRELOAD"}, def: "numpy,pandas,matplotlib.pyplot", kind: kString,
			doc: "modules a spare interpreter imports before a session gets it, comma-separated; those not installed are skipped (none = no preload)", apply: func(s *Settings, v any) { s.Preload = preloadList(v.(string)) }},
		{name: "memory", group: GroupSandbox, env: []string{"CODEMODE_MEMORY", "MCP_BRIDGE_MEMORY"}, def: "512m", kind: kBytes,
			doc: "memory limit per session", apply: func(s *Settings, v any) { s.MemoryBytes = v.(int64) }},
		{name: "pids", group: GroupSandbox, env: []string{"CODEMODE_PIDS", "MCP_BRIDGE_PIDS"}, def: "128", kind: kInt,
			doc: "process/thread limit per session", apply: func(s *Settings, v any) { s.PIDs = v.(int) }},
		{name: "cpus", group: GroupSandbox, env: []string{"CODEMODE_CPUS", "MCP_BRIDGE_CPUS"}, def: "1", kind: kFloat,
			doc: "CPU limit per session (0 = none)", apply: func(s *Settings, v any) { s.CPUs = v.(float64) }},
		{name: "nofile", group: GroupSandbox, env: []string{"CODEMODE_NOFILE"}, def: "1024", kind: kInt,
			doc: "open files per process", apply: func(s *Settings, v any) { s.NoFile = v.(int) }},
		{name: "tmp-size", group: GroupSandbox, env: []string{"CODEMODE_TMP_SIZE"}, def: "64m", kind: kBytes,
			doc: "size of /tmp in the sandbox", apply: func(s *Settings, v any) { s.TmpBytes = v.(int64) }},
		{name: "workspace-size", group: GroupSandbox, env: []string{"CODEMODE_WORKSPACE_SIZE"}, def: "128m", kind: kBytes,
			doc: "size of /workspace in the sandbox", apply: func(s *Settings, v any) { s.WorkspaceBytes = v.(int64) }},
		{name: "container-user", group: GroupSandbox, env: []string{"CODEMODE_CONTAINER_USER", "MCP_BRIDGE_CONTAINER_USER"}, def: "65534:65534", kind: kString,
			doc: "user:group inside container sandboxes", apply: func(s *Settings, v any) { s.ContainerUser = v.(string) }},
		{name: "output-limit", group: GroupCall, env: []string{"CODEMODE_OUTPUT_LIMIT"}, def: "64k", kind: kBytes,
			doc: "bytes of stdout and of stderr returned per call", apply: func(s *Settings, v any) { s.OutputLimit = int(v.(int64)) }},
		{name: "result-limit", group: GroupCall, env: []string{"CODEMODE_RESULT_LIMIT"}, def: "24000", kind: kInt,
			doc: "characters of a whole run_python result (text, links and structuredContent; 0 = no limit); the middle of long output is cut and the full output linked", apply: func(s *Settings, v any) { s.ResultLimit = v.(int) }},
		{name: "output-mode", group: GroupCall, env: []string{"CODEMODE_OUTPUT_MODE", "MCP_BRIDGE_OUTPUT_MODE"}, def: "compact", kind: kString,
			enum: []Choice{{Name: "compact"}, {Name: "toon"}},
			doc:  "result text format", apply: func(s *Settings, v any) { s.OutputMode = v.(string) }},
		{name: "image-max-pixels", group: GroupCall, env: []string{"CODEMODE_IMAGE_MAX_PIXELS"}, def: "1000000", kind: kInt,
			doc: "images returned by code are downscaled above this many pixels", apply: func(s *Settings, v any) { s.ImageMaxPixels = v.(int) }},
		{name: "image-max-bytes", group: GroupCall, env: []string{"CODEMODE_IMAGE_MAX_BYTES"}, def: "1m", kind: kBytes,
			doc: "... and until their PNG fits this size", apply: func(s *Settings, v any) { s.ImageMaxBytes = int(v.(int64)) }},
		{name: "output-spool", group: GroupCall, env: []string{"CODEMODE_OUTPUT_SPOOL"}, def: "16m", kind: kBytes,
			doc: "output beyond output-limit is kept, up to this size per stream, as a session file", apply: func(s *Settings, v any) { s.OutputSpool = int(v.(int64)) }},
		{name: "data-dir", group: GroupSandbox, env: []string{"CODEMODE_DATA_DIR"}, kind: kPath,
			doc: "host directory mounted read-only at /workspace/data", apply: func(s *Settings, v any) { s.DataDir = v.(string) }},
		{name: "data-dir-writable", group: GroupSandbox, env: []string{"CODEMODE_DATA_DIR_WRITABLE"}, def: "false", kind: kBool,
			doc: "mount data-dir read-write (it must be writable by the sandbox's host uid)", apply: func(s *Settings, v any) { s.DataWritable = v.(bool) }},
		{name: "http", group: GroupHTTP, env: []string{"CODEMODE_HTTP"}, kind: kString,
			doc: "serve streamable HTTP on this address (e.g. 127.0.0.1:8765) instead of stdio", apply: func(s *Settings, v any) { s.HTTP = v.(string) }},
		{name: "http-path", group: GroupHTTP, env: []string{"CODEMODE_HTTP_PATH"}, def: "/mcp", kind: kString,
			doc: "path of the MCP endpoint", apply: func(s *Settings, v any) { s.HTTPPath = v.(string) }},
		{name: "tokens-file", group: GroupHTTP, env: []string{"CODEMODE_TOKENS_FILE"}, kind: kPath,
			doc: "bearer tokens for HTTP clients, one \"name token\" per line", apply: func(s *Settings, v any) { s.TokensFile = v.(string) }},
		{name: "tokens", group: GroupHTTP, env: []string{"CODEMODE_TOKENS"}, kind: kString,
			doc: "bearer tokens for HTTP clients as name:token,name:token", apply: func(s *Settings, v any) { s.Tokens = v.(string) }},
		{name: "oauth-client-metadata-url", group: GroupGeneral, env: []string{"CODEMODE_OAUTH_CLIENT_METADATA_URL"}, kind: kString,
			doc: "HTTPS URL of a Client ID Metadata Document naming codemode, used as its client id when signing in to an authorization server that supports them", apply: func(s *Settings, v any) { s.ClientMetadataURL = v.(string) }},
		{name: "oauth-issuer", group: GroupHTTP, env: []string{"CODEMODE_OAUTH_ISSUER"}, kind: kString,
			doc: "also accept JWT access tokens issued by this OAuth authorization server (its RFC 8414 or OpenID metadata names the keys)", apply: func(s *Settings, v any) { s.OAuthIssuer = v.(string) }},
		{name: "oauth-audience", group: GroupHTTP, env: []string{"CODEMODE_OAUTH_AUDIENCE"}, kind: kString,
			doc: "the audience (aud) OAuth access tokens must carry; default: public-url", apply: func(s *Settings, v any) { s.OAuthAudience = v.(string) }},
		{name: "oauth-scopes", group: GroupHTTP, env: []string{"CODEMODE_OAUTH_SCOPES"}, kind: kString,
			doc: "scopes an OAuth access token must grant, comma-separated", apply: func(s *Settings, v any) { s.OAuthScopes = v.(string) }},
		{name: "public-url", group: GroupHTTP, env: []string{"CODEMODE_PUBLIC_URL"}, kind: kString,
			doc: "the MCP endpoint's URL as clients reach it (default http://ADDR/PATH)", apply: func(s *Settings, v any) { s.PublicURL = v.(string) }},
		{name: "allow-unauthenticated", group: GroupHTTP, env: []string{"CODEMODE_ALLOW_UNAUTHENTICATED"}, def: "false", kind: kBool,
			doc: "serve HTTP beyond loopback without tokens (dangerous)", apply: func(s *Settings, v any) { s.AllowUnauth = v.(bool) }},
		{name: "allowed-origins", group: GroupHTTP, env: []string{"CODEMODE_ALLOWED_ORIGINS"}, kind: kString,
			doc: "browser origins allowed to call the HTTP endpoint, comma-separated", apply: func(s *Settings, v any) { s.AllowedOrigins = v.(string) }},
		{name: "max-client-sessions", group: GroupHTTP, env: []string{"CODEMODE_MAX_CLIENT_SESSIONS"}, def: "0", kind: kInt,
			doc: "sessions one principal (token or OAuth subject) may hold over all its connections (0 = max-sessions)", apply: func(s *Settings, v any) { s.MaxClientSessions = v.(int) }},
		{name: "max-client-calls", group: GroupHTTP, env: []string{"CODEMODE_MAX_CLIENT_CALLS"}, def: "8", kind: kInt,
			doc: "concurrent run_python calls of one HTTP client (token)", apply: func(s *Settings, v any) { s.MaxClientCalls = v.(int) }},
		{name: "max-request-bytes", group: GroupHTTP, env: []string{"CODEMODE_MAX_REQUEST_BYTES"}, def: "16m", kind: kBytes,
			doc: "largest HTTP request body", apply: func(s *Settings, v any) { s.MaxRequestBytes = v.(int64) }},
		{name: "http-session-timeout", group: GroupHTTP, env: []string{"CODEMODE_HTTP_SESSION_TIMEOUT"}, def: "10m", kind: kDuration,
			doc: "close a stateful HTTP client's MCP session (and its default run_python session) after this long without requests", apply: func(s *Settings, v any) { s.HTTPSessionTimeout = v.(time.Duration) }},
		{name: "log-level", group: GroupGeneral, env: []string{"CODEMODE_LOG_LEVEL", "MCP_BRIDGE_LOG_LEVEL"}, def: "info", kind: kLevel,
			doc: "debug, info, warn or error", apply: func(s *Settings, v any) { s.LogLevel = v.(slog.Level) }},
		{name: "state-dir", group: GroupGeneral, env: []string{"CODEMODE_STATE_DIR", "MCP_BRIDGE_STATE_DIR"}, kind: kPath,
			doc: "where codemode keeps saved tools, memory and sign-in tokens (default $XDG_STATE_HOME/codemode)", apply: func(s *Settings, v any) { s.StateDir = v.(string) }},
		{name: "allow-weaker-sandbox", group: GroupSandbox, env: []string{"CODEMODE_ALLOW_WEAKER_SANDBOX"}, def: "false", kind: kBool,
			doc: "start even when the backend cannot enforce every default protection", apply: func(s *Settings, v any) { s.AllowWeaker = v.(bool) }},
		{name: "server-start-timeout", group: GroupCall, env: []string{"CODEMODE_SERVER_START_TIMEOUT"}, def: "30s", kind: kDuration,
			doc: "how long a downstream MCP server may take to start, initialize and list its tools", apply: func(s *Settings, v any) { s.ServerStart = v.(time.Duration) }},
		{name: "tool-timeout", group: GroupCall, env: []string{"CODEMODE_TOOL_TIMEOUT"}, def: "120s", kind: kDuration,
			doc: "how long one downstream tool call may take (a server's own setting wins)", apply: func(s *Settings, v any) { s.ToolTimeout = v.(time.Duration) }},
		{name: "policy", group: GroupCall, env: []string{"CODEMODE_POLICY"}, kind: kPath,
			doc: "policy file (TOML, JSON or YAML) deciding every tool call made from code; reloaded on change and SIGHUP", apply: func(s *Settings, v any) { s.Policy = v.(string) }},
		{name: "audit-log", group: GroupCall, env: []string{"CODEMODE_AUDIT_LOG"}, kind: kPath,
			doc: "append a hash-chained JSON line per policy decision and per completed tool call (check with `codemode audit verify`)", apply: func(s *Settings, v any) { s.AuditLog = v.(string) }},
		{name: "audit-max-bytes", group: GroupCall, env: []string{"CODEMODE_AUDIT_MAX_BYTES"}, def: "100m", kind: kBytes,
			doc: "rotate the audit log past this size (the chain continues in the new file)", apply: func(s *Settings, v any) { s.AuditMaxBytes = v.(int64) }},
		{name: "approval-timeout", group: GroupCall, env: []string{"CODEMODE_APPROVAL_TIMEOUT"}, def: "2m", kind: kDuration,
			doc: "how long a call the policy marks \"ask\" waits for the user's answer before it is denied", apply: func(s *Settings, v any) { s.ApprovalTimeout = v.(time.Duration) }},
		{name: "console", group: GroupHTTP, env: []string{"CODEMODE_CONSOLE"}, kind: kString,
			doc: "in stdio mode, serve the web console on this address (loopback unless tokens are set); HTTP mode serves it at /console/", apply: func(s *Settings, v any) { s.Console = v.(string) }},
		{name: "console-admins", group: GroupHTTP, env: []string{"CODEMODE_CONSOLE_ADMINS"}, kind: kString,
			doc: "token names that see and act on every client's sessions in the web console, comma-separated", apply: func(s *Settings, v any) { s.ConsoleAdmins = v.(string) }},
		{name: "catalog", group: GroupCall, env: []string{"CODEMODE_CATALOG"}, kind: kString,
			doc: "MCP server catalogs code may add servers from: files of server.json documents or registry base URLs, comma-separated", apply: func(s *Settings, v any) { s.Catalogs = splitList(v.(string)) }},
		{name: "npm-prefix", group: GroupCall, env: []string{"CODEMODE_NPM_PREFIX"}, kind: kPath,
			doc: "a directory whose node_modules holds npm packages: catalog entries found there run from it instead of through npx", apply: func(s *Settings, v any) { s.NPMPrefix = v.(string) }},
		{name: "metrics", group: GroupGeneral, env: []string{"CODEMODE_METRICS"}, kind: kString,
			doc: "serve Prometheus metrics at http://ADDR/metrics (in HTTP mode they are also at /metrics on the main listener)", apply: func(s *Settings, v any) { s.Metrics = v.(string) }},
		{name: "otlp-endpoint", group: GroupGeneral, env: []string{"CODEMODE_OTLP_ENDPOINT"}, kind: kString,
			doc: "export traces over OTLP to this URL (http://host:4318, or host:4317 with OTEL_EXPORTER_OTLP_PROTOCOL=grpc); the standard OTEL_EXPORTER_OTLP_* variables work too", apply: func(s *Settings, v any) { s.OTLPEndpoint = v.(string) }},
		{name: "trace-content", group: GroupGeneral, env: []string{"CODEMODE_TRACE_CONTENT"}, def: "false", kind: kBool,
			doc: "record the code and tool arguments in spans (they may hold secrets)", apply: func(s *Settings, v any) { s.TraceContent = v.(bool) }},
		{name: "egress-allow", group: GroupSandbox, env: []string{"CODEMODE_EGRESS_ALLOW"}, kind: kString, list: true,
			doc: "hosts sandboxed code may reach through codemode's HTTP(S) proxy: host, host:port, host:*, *.example.com, IP or CIDR, comma-separated or the flag repeated; a port-less entry means 80 and 443, and loopback or private addresses need an IP or CIDR entry (none: no network)", apply: func(s *Settings, v any) { s.EgressAllow = splitList(v.(string)) }},
		{name: "egress-secret", group: GroupSandbox, env: []string{"CODEMODE_EGRESS_SECRET"}, kind: kString, list: true,
			doc: "NAME=HOST_PATTERN: the sandbox sees NAME as a placeholder, and the proxy puts the value of NAME from codemode's environment in its place in requests to matching hosts (HTTPS to them is intercepted with a CA only sandboxes trust); comma-separated or the flag repeated", apply: func(s *Settings, v any) { s.EgressSecrets = splitList(v.(string)) }},
		{name: "egress-secrets-file", group: GroupSandbox, env: []string{"CODEMODE_EGRESS_SECRETS_FILE"}, kind: kPath,
			doc: "a file of NAME=VALUE lines giving the values of --egress-secret names (looked up there first, then in codemode's environment)", apply: func(s *Settings, v any) { s.EgressSecretsFile = v.(string) }},
		{name: "egress-secret-body", group: GroupSandbox, env: []string{"CODEMODE_EGRESS_SECRET_BODY"}, def: "false", kind: kBool,
			doc: "swap secrets' placeholders in request bodies to their hosts too, not only in headers and the query", apply: func(s *Settings, v any) { s.EgressSecretBody = v.(bool) }},
		{name: "egress-max-requests", group: GroupSandbox, env: []string{"CODEMODE_EGRESS_MAX_REQUESTS"}, def: "0", kind: kInt,
			doc: "network requests one session may make through the proxy (0 = unlimited)", apply: func(s *Settings, v any) { s.EgressMaxRequests = v.(int) }},
		{name: "egress-max-bytes", group: GroupSandbox, env: []string{"CODEMODE_EGRESS_MAX_BYTES"}, def: "0", kind: kBytes,
			doc: "bytes one session may move through the proxy, in and out together (0 = unlimited)", apply: func(s *Settings, v any) { s.EgressMaxBytes = v.(int64) }},
		{name: "disable-landlock", group: GroupSandbox, env: []string{"CODEMODE_DISABLE_LANDLOCK"}, def: "false", kind: kBool,
			doc: "do not apply Landlock in the native backend", apply: func(s *Settings, v any) { s.DisableLandlock = v.(bool) }},
		{name: "zygote", group: GroupSandbox, env: []string{"CODEMODE_ZYGOTE"}, def: "true", kind: kBool,
			doc: "native backend, as root: fork sessions from a template interpreter that imported the preload modules, each child entering its own sandbox", apply: func(s *Settings, v any) { s.Zygote = v.(bool) }},
	}
}

// Names lists every setting name (the flag names) in declaration order.
func (r Registry) Names() []string {
	out := make([]string, len(r.settings))
	for i, s := range r.settings {
		out[i] = s.name
	}
	return out
}

// lookup finds a setting by name.
func (r Registry) lookup(name string) (setting, bool) {
	i := slices.IndexFunc(r.settings, func(s setting) bool { return s.name == name })
	if i < 0 {
		return setting{}, false
	}
	return r.settings[i], true
}

// Doc returns the one-line description of a setting, with its variables.
func (r Registry) Doc(name string) string {
	s, ok := r.lookup(name)
	if !ok {
		return ""
	}
	d := s.doc
	if len(s.env) > 0 {
		d += " [" + strings.Join(s.env, ", ") + "]"
	}
	return d
}

// Group returns the group a setting belongs to.
func (r Registry) Group(name string) Group {
	s, _ := r.lookup(name)
	return s.group
}

// IsList reports whether a setting is a comma-separated list whose flag
// may be given several times (the values are joined).
func (r Registry) IsList(name string) bool {
	s, _ := r.lookup(name)
	return s.list
}

// IsBool reports whether a setting is on/off, so its flag takes no value
// ("--x" means true, "--x=false" false).
func (r Registry) IsBool(name string) bool {
	s, _ := r.lookup(name)
	return s.kind == kBool
}

// Default returns a setting's default as text.
func (r Registry) Default(name string) string {
	s, _ := r.lookup(name)
	return s.def
}

// Choices lists the values a setting accepts; nil when it takes any value
// of its kind.
func (r Registry) Choices(name string) []Choice {
	s, _ := r.lookup(name)
	return slices.Clone(s.enum)
}

// Load resolves every setting from flags (only those the user set, keyed by
// name), then the environment, then defaults. Invalid values stop loading
// with an error naming the flag or variable and the accepted form.
func (r Registry) Load(flags map[string]string, env Env) (Settings, []Source, error) {
	var s Settings
	var sources []Source
	var errs []error
	for _, st := range r.settings {
		raw, from := st.def, "default"
		if v, ok := flags[st.name]; ok {
			raw, from = v, "flag --"+st.name
		} else {
			for _, name := range st.env {
				if v, ok := env.Vars[name]; ok && strings.TrimSpace(v) != "" {
					raw, from = v, "env "+name
					break
				}
			}
		}
		v, err := st.parse(strings.TrimSpace(raw), env)
		if err != nil {
			errs = append(errs, fmt.Errorf("invalid value %q for %s: %w", raw, strings.TrimPrefix(from, "env "), err))
			continue
		}
		st.apply(&s, v)
		sources = append(sources, Source{Name: st.name, Value: raw, From: from})
	}
	for name := range flags {
		if _, ok := r.lookup(name); !ok {
			errs = append(errs, fmt.Errorf("unknown setting %q", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Settings{}, nil, err
	}
	if s.StateDir == "" {
		s.StateDir = defaultStateDir(env)
	}
	if err := s.validate(); err != nil {
		return Settings{}, nil, err
	}
	return s, sources, nil
}

// splitList reads a comma-separated list, dropping empty items.
// preloadList reads the preload setting: "none" turns it off (an empty
// variable means unset, as everywhere).
func preloadList(s string) []string {
	if strings.EqualFold(strings.TrimSpace(s), "none") {
		return nil
	}
	return splitList(s)
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func defaultStateDir(env Env) string {
	if x := env.Vars["XDG_STATE_HOME"]; x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "codemode")
	}
	return filepath.Join(env.Home, ".local", "state", "codemode")
}

func (s Settings) validate() error {
	var errs []error
	if s.Timeout < time.Second {
		errs = append(errs, errors.New("timeout must be at least 1s"))
	}
	if s.MaxTimeout < s.Timeout {
		errs = append(errs, fmt.Errorf("max-timeout (%s) must not be below timeout (%s)", s.MaxTimeout, s.Timeout))
	}
	if s.MaxSessions < 1 {
		errs = append(errs, errors.New("max-sessions must be at least 1"))
	}
	if s.MemoryBytes < 32<<20 {
		errs = append(errs, errors.New("memory must be at least 32m"))
	}
	if s.PIDs < 8 {
		errs = append(errs, errors.New("pids must be at least 8"))
	}
	if s.OutputLimit < 1024 {
		errs = append(errs, errors.New("output-limit must be at least 1k"))
	}
	return errors.Join(errs...)
}

func (st setting) parse(raw string, env Env) (any, error) {
	switch st.kind {
	case kString:
		if st.enum != nil {
			v := strings.ToLower(raw)
			names := make([]string, len(st.enum))
			for i, e := range st.enum {
				if v == e.Name {
					return v, nil
				}
				names[i] = e.Name
			}
			return nil, fmt.Errorf("want one of %s", strings.Join(names, ", "))
		}
		return raw, nil
	case kPath:
		if raw == "" {
			return "", nil
		}
		if raw == "~" || strings.HasPrefix(raw, "~/") {
			raw = filepath.Join(env.Home, strings.TrimPrefix(raw, "~"))
		}
		return filepath.Clean(raw), nil
	case kDuration:
		return ParseDuration(raw)
	case kBytes:
		return ParseBytes(raw)
	case kInt:
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 {
			return nil, errors.New("want a non-negative integer such as 128")
		}
		return n, nil
	case kFloat:
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, errors.New("want a non-negative number such as 1 or 1.5")
		}
		return f, nil
	case kBool:
		switch strings.ToLower(raw) {
		case "1", "true", "yes", "on":
			return true, nil
		case "0", "false", "no", "off", "":
			return false, nil
		}
		return nil, errors.New("want true or false")
	case kLevel:
		var l slog.Level
		if err := l.UnmarshalText([]byte(strings.ToUpper(raw))); err != nil {
			return nil, errors.New("want debug, info, warn or error")
		}
		return l, nil
	}
	return nil, fmt.Errorf("unknown kind %d", st.kind)
}

// ParseDuration accepts whole seconds ("30") or a Go duration ("30s", "2m").
func ParseDuration(raw string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(raw, 64); err == nil && n >= 0 && n < 1e9 {
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 {
		return 0, errors.New("want a duration such as 30 or 30s or 2m")
	}
	return d, nil
}

// ParseBytes accepts a byte count with an optional binary suffix: 1048576,
// 512k, 512m, 1g, 64KiB, 2MB (k/m/g are powers of 1024, as for podman).
func ParseBytes(raw string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(raw))
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(s, suf.s) {
			s, mult = strings.TrimSuffix(s, suf.s), suf.m
			break
		}
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(n) || n < 0 || n*float64(mult) > math.MaxInt64/2 {
		return 0, errors.New("want a size such as 512m, 1g or 65536")
	}
	return int64(n * float64(mult)), nil
}

// SortedSources returns sources sorted by name (for stable output).
func SortedSources(src []Source) []Source {
	out := append([]Source(nil), src...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
