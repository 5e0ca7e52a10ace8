// Package downstream is the pool of clients for the user's MCP servers (the
// "downstream" servers sandboxed code calls). Each configured server gets one
// persistent session, started lazily on first use (single-flight: concurrent
// first uses start one process), with timeouts on start, initialize,
// tools/list and every call. A server that crashes fails the calls in flight
// and is restarted, with backoff, on the next use. Tool lists are cached and
// refreshed on notifications/tools/list_changed. Children get a minimal
// environment plus their configured env, their stderr goes to the log, and
// shutdown closes stdin, then sends SIGTERM, then SIGKILL to the process
// group, each step bounded.
package downstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/codemode/codemode/internal/signin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Pool.
type Options struct {
	Servers []serverconfig.Server
	// StartTimeout bounds process start, initialize and the first
	// tools/list of a server (default 30s; a server's own startup timeout wins).
	StartTimeout time.Duration
	// CallTimeout bounds one tool call (default 120s; a server's own tool
	// timeout wins).
	CallTimeout time.Duration
	// ShutdownStep bounds each step of stopping a child (default 2s).
	ShutdownStep time.Duration
	// BaseEnv is the environment every child starts from (see ChildEnv).
	BaseEnv []string
	// AllowSelf keeps servers whose serverInfo says they are codemode (or the
	// reference bridge), which are dropped by default to prevent recursion.
	AllowSelf bool
	// MaxMessageBytes bounds one JSON-RPC message from a stdio server
	// (default 64 MiB).
	MaxMessageBytes int
	// SignIn keeps the OAuth tokens of remote servers (codemode auth
	// login); nil sends no tokens.
	SignIn *signin.Store
	// Login, if set, signs in to a server, showing the user the
	// authorization URL with open; a call that needs sign-in uses it when
	// its client can open URLs (URL-mode elicitation).
	Login func(ctx context.Context, server serverconfig.Server, open func(ctx context.Context, url string) error) error
	// ClientName is reported to the servers in initialize.
	ClientName, ClientVersion string
	// Ended, if set, learns of a server that ended unexpectedly (it
	// restarts on next use).
	Ended  func(server string)
	Logger *slog.Logger
}

// Errors callers branch on.
var (
	ErrUnknownServer = errors.New("unknown MCP server")
	ErrSelfServer    = errors.New("server is codemode itself")
	ErrClosed        = errors.New("downstream pool is closed")
)

// Error is a failure of one server or call, safe to show to sandboxed code.
type Error struct {
	Server, Tool string
	Kind         string // "unknown_server", "start", "timeout", "crashed", "transport", "self", "closed", "auth_required"
	Err          error
}

func (e *Error) Error() string {
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Pool holds one client per configured server.
type Pool struct {
	opts    Options
	log     *slog.Logger
	mu      sync.Mutex
	servers map[string]*server
	closed  bool

	watchMu  sync.RWMutex
	watchers []func(server string, tools []*mcp.Tool)
}

// WatchTools registers f to receive every server's tool list whenever it is
// loaded or reloaded. f runs before the start or refresh that loaded the
// list returns to its callers, so whoever f informs is current by then; it
// must not call back into the pool.
func (p *Pool) WatchTools(f func(server string, tools []*mcp.Tool)) {
	p.watchMu.Lock()
	p.watchers = append(p.watchers, f)
	p.watchMu.Unlock()
}

func (p *Pool) toolsLoaded(server string, tools []*mcp.Tool) {
	p.watchMu.RLock()
	defer p.watchMu.RUnlock()
	for _, f := range p.watchers {
		f(server, tools)
	}
}

// New returns a pool for the configured servers. Nothing starts yet.
func New(opts Options) *Pool {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 120 * time.Second
	}
	if opts.ShutdownStep <= 0 {
		opts.ShutdownStep = 2 * time.Second
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = 64 << 20
	}
	if opts.ClientName == "" {
		opts.ClientName = "codemode"
	}
	p := &Pool{opts: opts, log: opts.Logger, servers: map[string]*server{}}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	for _, cfg := range opts.Servers {
		p.servers[cfg.Name] = p.newServer(cfg)
	}
	return p
}

// Add registers a server while the pool runs (one added from a catalog);
// it starts on first use like the others. A name already taken is an error.
func (p *Pool) Add(cfg serverconfig.Server) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return &Error{Server: cfg.Name, Kind: "closed", Err: ErrClosed}
	}
	if _, dup := p.servers[cfg.Name]; dup {
		return fmt.Errorf("downstream: add %s: a server of that name exists", cfg.Name)
	}
	p.servers[cfg.Name] = p.newServer(cfg)
	return nil
}

func (p *Pool) newServer(cfg serverconfig.Server) *server {
	log := p.log.With("server", cfg.Name)
	return &server{pool: p, cfg: cfg, log: log, relay: &relay{server: cfg.Name, log: log}}
}

// Remove stops a server and forgets it (an added server that failed to
// start).
func (p *Pool) Remove(name string) {
	p.mu.Lock()
	s := p.servers[name]
	delete(p.servers, name)
	p.mu.Unlock()
	if s != nil {
		s.stop()
	}
}

// Names returns the configured server names, sorted.
func (p *Pool) Names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.servers))
	for n := range p.servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Config returns a server's configuration.
func (p *Pool) Config(name string) (serverconfig.Server, bool) {
	s := p.lookup(name)
	if s == nil {
		return serverconfig.Server{}, false
	}
	return s.cfg, true
}

func (p *Pool) lookup(name string) *server {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.servers[name]
}

func (p *Pool) get(name string) (*server, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, &Error{Server: name, Kind: "closed", Err: ErrClosed}
	}
	s := p.servers[name]
	if s == nil {
		return nil, &Error{Server: name, Kind: "unknown_server", Err: fmt.Errorf("%w: %s", ErrUnknownServer, name)}
	}
	return s, nil
}

// Start makes sure a server is running and its tools are known.
func (p *Pool) Start(ctx context.Context, name string) error {
	s, err := p.get(name)
	if err != nil {
		return err
	}
	_, err = s.session(ctx)
	return err
}

// Tools returns a server's tools, starting it if needed. The list is cached
// until the server announces a change or restarts.
func (p *Pool) Tools(ctx context.Context, name string) ([]*mcp.Tool, error) {
	s, err := p.get(name)
	if err != nil {
		return nil, err
	}
	return s.toolList(ctx, false)
}

// RefreshTools lists a server's tools live (tools/list), updating the cache.
func (p *Pool) RefreshTools(ctx context.Context, name string) ([]*mcp.Tool, error) {
	s, err := p.get(name)
	if err != nil {
		return nil, err
	}
	return s.toolList(ctx, true)
}

// CallTool calls a tool. A tool that reports isError is not an error here;
// the result carries it.
func (p *Pool) CallTool(ctx context.Context, name, tool string, args any) (Result, error) {
	s, err := p.get(name)
	if err != nil {
		return Result{}, err
	}
	return s.call(ctx, tool, args)
}

// About returns what a server said of itself when it last started (its
// instructions, else its name and version); "" if it never started.
func (p *Pool) About(name string) string {
	s := p.lookup(name)
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.about
}

// Running reports the servers with a live session, sorted.
func (p *Pool) Running() []string {
	p.mu.Lock()
	list := make([]*server, 0, len(p.servers))
	for _, s := range p.servers {
		list = append(list, s)
	}
	p.mu.Unlock()
	var names []string
	for _, s := range list {
		if s.running() {
			names = append(names, s.cfg.Name)
		}
	}
	sort.Strings(names)
	return names
}

// State describes a server for `codemode servers`: "stopped", "starting",
// "running (N tools)", "crashed: ...", "failed: ...", "dropped: ...".
func (p *Pool) State(name string) string {
	s := p.lookup(name)
	if s == nil {
		return "unknown"
	}
	return s.state()
}

// Close stops every server, each bounded by the shutdown steps.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	list := make([]*server, 0, len(p.servers))
	for _, s := range p.servers {
		list = append(list, s)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stop()
		}()
	}
	wg.Wait()
}

// ChildEnv returns the environment for a child: the variables a program
// needs to run (taken from base), never codemode's own settings or secrets,
// then the server's configured env.
func ChildEnv(base []string, extra map[string]string) []string {
	keep := map[string]bool{"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
		"TERM": true, "LANG": true, "LC_ALL": true, "LC_CTYPE": true, "TMPDIR": true, "TZ": true,
		"XDG_RUNTIME_DIR": true, "XDG_CONFIG_HOME": true, "XDG_DATA_HOME": true, "XDG_CACHE_HOME": true,
		"SYSTEMROOT": true, "APPDATA": true, "LOCALAPPDATA": true, "USERPROFILE": true}
	var env []string
	for _, kv := range base {
		k, _, ok := strings.Cut(kv, "=")
		if ok && keep[k] {
			if _, override := extra[k]; !override {
				env = append(env, kv)
			}
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env
}
