// Package app wires codemode together from its settings: the sandbox
// backend, the executor, the MCP server, and what each command needs (doctor's
// targets, the attack suite's settings, server probes, image builds). The
// table of sandbox backends (Backends) lives here, and everything that
// knows backend names reads it: selection, the backend setting's choices,
// doctor, the attack suite and the help text. cli only parses flags and
// prints; App is shared by it and the end-to-end tests.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/codemode/codemode/internal/activity"
	"github.com/codemode/codemode/internal/artifacts"
	"github.com/codemode/codemode/internal/catalog"
	"github.com/codemode/codemode/internal/downstream"
	"github.com/codemode/codemode/internal/egress"
	"github.com/codemode/codemode/internal/executor"
	"github.com/codemode/codemode/internal/gate"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/mcpserver"
	"github.com/codemode/codemode/internal/proxy"
	"github.com/codemode/codemode/internal/pyruntime"
	"github.com/codemode/codemode/internal/render"
	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/codemode/codemode/internal/settings"
	"github.com/codemode/codemode/internal/statestore"
	"github.com/codemode/codemode/internal/telemetry"
	"github.com/codemode/codemode/internal/tooldocs"
	"github.com/codemode/codemode/internal/toon"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// App is a configured codemode.
type App struct {
	Settings     settings.Settings
	Backend      sandbox.Backend
	Capabilities sandbox.Capabilities
	Servers      *serverconfig.Result
	Pool         *downstream.Pool
	Executor     *executor.Manager
	Server       *mcpserver.Server
	Manual       func() string // the capabilities document as it stands now
	Log          *slog.Logger
	Telemetry    *telemetry.Telemetry
	sessionsDir  string
	guard        *guard
	packages     *packageList       // the importable packages, probed once Serve starts
	recorder     *activity.Recorder // nil when no console is served
	stderr       io.Writer
	egress       *egress.Proxy // nil: sandboxes have no network
}

// Inputs is what App takes from the process besides settings.
type Inputs struct {
	Environ     []string // os.Environ()
	Home, Cwd   string
	ConfigFiles []string  // --config, in order
	Self        []string  // paths of this executable, for the self-reference guard
	Stderr      io.Writer // where the console's login URL is printed (nil: the log)
}

// LoadServers discovers the configured MCP servers.
func LoadServers(ctx context.Context, in Inputs) (*serverconfig.Result, error) {
	return serverconfig.Load(ctx, serverconfig.Env{
		Vars: serverconfig.VarsFromEnviron(in.Environ), Home: in.Home, Cwd: in.Cwd, Self: in.Self,
	}, serverconfig.Options{Explicit: in.ConfigFiles})
}

// Version is set at build time with -ldflags "-X ...app.Version=...".
var Version = "dev"

// Commit is the source revision, set at build time like Version for
// builds without Go's VCS stamping (vcs.revision wins when present).
var Commit = ""

// New builds an App: it selects and probes the backend and refuses to start
// when the backend cannot enforce what the settings ask for (unless the
// settings allow a weaker sandbox).
func New(ctx context.Context, s settings.Settings, in Inputs, log *slog.Logger) (*App, error) {
	servers, err := LoadServers(ctx, in)
	if err != nil {
		return nil, err
	}
	for _, w := range servers.Warnings {
		log.Warn("MCP server configuration", "warning", w.String())
	}
	for _, sk := range servers.Skipped {
		log.Info("MCP server skipped", "server", sk.Name, "reason", sk.String(), "source", sk.Source)
	}
	backend, caps, err := selectBackend(ctx, s, in.Environ, log)
	if err != nil {
		return nil, err
	}
	log.Info("sandbox backend selected", "backend", backend.Name(), "protections", caps.Summary())
	if missing := caps.Missing(required(s)); len(missing) > 0 {
		msg := fmt.Sprintf("sandbox backend %s cannot enforce: %s", backend.Name(), strings.Join(missing, ", "))
		if !s.AllowWeaker {
			return nil, errors.New(msg + " (set --allow-weaker-sandbox or CODEMODE_ALLOW_WEAKER_SANDBOX=1 to run anyway)")
		}
		log.Warn(msg + "; running anyway because a weaker sandbox is allowed")
	}
	tel, err := telemetry.New(ctx, telemetry.Options{Backend: backend.Name(), Version: Version, OTLPEndpoint: s.OTLPEndpoint,
		Environ: in.Environ, TraceContent: s.TraceContent, Logger: log.With("component", "telemetry")})
	if err != nil {
		return nil, err
	}
	limits := sandboxLimits(s)
	docs := tooldocs.NewCatalog(nil)
	tokens := SignInStore(s, in.Environ)
	pool := downstream.New(downstream.Options{
		Servers: servers.Servers, StartTimeout: s.ServerStart, CallTimeout: s.ToolTimeout,
		BaseEnv: in.Environ, AllowSelf: servers.AllowSelf, ClientName: "codemode", ClientVersion: Version,
		SignIn: tokens, Login: clientLogin(s, tokens),
		Logger: log.With("component", "downstream"), Ended: tel.ServerEnded,
	})
	pool.WatchTools(tel.ToolsLoaded)
	var recorder *activity.Recorder
	if s.HTTP != "" || s.Console != "" {
		recorder = activity.New(activity.Options{})
	}
	guard, err := newGuard(ctx, s, log, tel, recorder)
	if err != nil {
		return nil, err
	}
	var visibility proxy.Visibility
	policyLine := ""
	if guard != nil {
		visibility, policyLine = guard, guard.Summary()
	}
	entries, err := LoadCatalog(ctx, s, log)
	if err != nil {
		guard.Close()
		return nil, err
	}
	px := proxy.New(proxy.Options{Servers: servers.Servers, Pool: pool, Catalog: docs, CacheDir: s.StateDir, Visibility: visibility, Logger: log.With("component", "proxy")})
	pool.WatchTools(px.ToolsChanged)
	log.Info("MCP servers configured", "count", len(servers.Servers))
	helpers, err := pyruntime.Helpers()
	if err != nil {
		return nil, err
	}
	info := mcpserver.ManualInfo{
		Backend: caps, DefaultTimeout: s.Timeout, MaxTimeout: s.MaxTimeout, InterruptGrace: s.InterruptGrace,
		IdleTimeout: s.IdleTimeout, MaxSessions: s.MaxSessions, OutputLimit: s.OutputLimit, ResultLimit: s.ResultLimit,
		MemoryBytes: s.MemoryBytes, PIDs: s.PIDs, CPUs: s.CPUs, TmpBytes: s.TmpBytes, WorkspaceBytes: s.WorkspaceBytes,
		Helpers: helpers, DataDir: dataDirMode(s), Policy: policyLine,
	}
	if s.Spares > 0 {
		info.Preload = s.Preload // only spares preload
	}
	var egressProxy *egress.Proxy // set below; nil: no network
	// Filled by Serve: a one-off run has no use for the list.
	packages := &packageList{}
	// The manual as it stands: the policy in force and, once known, the
	// importable packages.
	manual := func() string {
		info := info
		if guard != nil {
			info.Policy = guard.Summary()
		}
		info.Packages = packages.get()
		if egressProxy != nil {
			info.Egress = egressProxy.Patterns()
		}
		return mcpserver.Manual(info)
	}
	// Each new interpreter learns the servers, the policy and the manual as
	// they are when it starts, so a reloaded policy reaches new sessions.
	bootConfig := func() jsontext.Value {
		boot, err := json.Marshal(map[string]any{"manual": manual(), "servers": px.Briefs(), "image_max_pixels": s.ImageMaxPixels, "pids": s.PIDs})
		if err != nil {
			log.Error("encoding the runtime's boot configuration", "error", err)
		}
		return boot
	}
	// Named by pid and start time: directories of dead codemodes are swept.
	sessionsDir := filepath.Join(s.StateDir, "sessions", sandbox.OwnerID(os.Getpid()))
	artifacts.SweepSiblings(sessionsDir, sandbox.OwnerAlive)
	files, err := artifacts.New(artifacts.Options{Dir: sessionsDir})
	if err != nil {
		return nil, err
	}
	var mounts []sandbox.Mount
	if s.DataDir != "" {
		if why := MountBlocker(backend); why != "" {
			return nil, fmt.Errorf("data-dir: the %s backend cannot mount it: %s", backend.Name(), why)
		}
		if err := readableByOthers(s.DataDir); err != nil {
			return nil, fmt.Errorf("data-dir: %w", err)
		}
		mounts = append(mounts, sandbox.Mount{Source: s.DataDir, Target: "/workspace/data", Writable: s.DataWritable})
	}
	egressProxy, err = newEgress(s, in.Environ, backend, guard, log)
	if err != nil {
		guard.Close()
		return nil, err
	}
	var sandboxNet executor.Network
	if egressProxy != nil {
		sandboxNet = network{egressProxy}
	}
	mux := hostrpc.NewMux()
	exec := executor.New(executor.Options{
		Backend: backend, Limits: limits, Python: s.Python,
		DefaultTimeout: s.Timeout, MaxTimeout: s.MaxTimeout, InterruptGrace: s.InterruptGrace,
		IdleTimeout: s.IdleTimeout, MaxSessions: s.MaxSessions, OutputLimit: s.OutputLimit,
		MaxClientSessions: s.MaxClientSessions, Spares: s.Spares, PreloadModules: s.Preload,
		BootConfig: bootConfig, Logger: log,
		Router:      mux,
		CallContext: gate.WithRun,
		SessionEnded: func(principal, owner, session string, closed bool) {
			if guard != nil {
				guard.SessionEnded(principal, owner, session)
			}
			if recorder != nil && closed {
				recorder.SessionClosed(owner, session)
			}
		},
		Watcher:   watcher(recorder),
		Preload:   px.Preload,
		Loaded:    px.Loaded,
		Artifacts: files, SpoolLimit: s.OutputSpool, Mounts: mounts,
		Fit:      func(r *executor.Result) bool { return render.Fit(r, s.ResultLimit, s.OutputMode, encodeTOON) },
		Images:   artifacts.Budget{MaxPixels: s.ImageMaxPixels, MaxBytes: s.ImageMaxBytes},
		Observer: tel,
		Network:  sandboxNet,
	})
	tel.CountSessions(func() int { return len(exec.Sessions()) })
	mws := []hostrpc.ToolMiddleware{tel.ToolMiddleware}
	if recorder != nil {
		mws = append(mws, recorder.Middleware) // before the gate: it sees what the policy refuses
	}
	if guard != nil {
		mws = append(mws, guard.Middleware)
	}
	catalogs := catalog.ServiceOptions{Catalog: entries, Servers: px, Logger: log.With("component", "catalog"),
		Launch: CatalogLaunch(s, in.Environ), ConfigDir: catalog.ConfigDir(lookupIn(in.Environ), in.Home)}
	if guard != nil {
		catalogs.Decider = guard
	}
	route(mux, px, exec, statestore.New(statestore.Options{Dir: s.StateDir}), catalog.NewService(catalogs), mws...)
	mode := s.OutputMode
	srv := mcpserver.New(mcpserver.Options{
		Executor: exec, Version: Version, DefaultTimeout: s.Timeout, MaxTimeout: s.MaxTimeout,
		OutputMode: func() string { return mode }, Manual: manual, Logger: log, Artifacts: files,
		MaxClientCalls: s.MaxClientCalls, InputWait: s.ApprovalTimeout + time.Minute, TOON: encodeTOON, Observer: tel,
		Egress: egressProxy != nil,
	})
	return &App{Settings: s, Backend: backend, Capabilities: caps, Servers: servers, Pool: pool,
		Executor: exec, Server: srv, Manual: manual, Log: log, Telemetry: tel, sessionsDir: sessionsDir, guard: guard,
		packages: packages, recorder: recorder, stderr: in.Stderr, egress: egressProxy}, nil
}

// lookupIn reads a variable of environ, the last of its name winning.
func lookupIn(environ []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := "", false
		for _, kv := range environ {
			if k, val, found := strings.Cut(kv, "="); found && k == name {
				v, ok = val, true
			}
		}
		return v, ok
	}
}

func encodeTOON(jsonData []byte) (string, error) { return toon.EncodeJSON(jsonData, nil) }

// route fills mux with every handler for what sandboxed code asks of the
// host. mws wrap each nested tool call after the proxy resolved it.
func route(mux *hostrpc.Mux, px *proxy.Proxy, exec *executor.Manager, state *statestore.Store, catalogs *catalog.Service, mws ...hostrpc.ToolMiddleware) {
	px.Register(mux, mws...)
	catalogs.Register(mux)
	exec.Register(mux)
	state.Register(mux)
	mux.Handle(hostrpc.ToTOON, func(_ context.Context, req *hostrpc.Request) (any, error) {
		var p struct {
			Value jsontext.Value `json:"value"`
		}
		if err := hostrpc.Decode(req, &p); err != nil {
			return nil, err
		}
		return encodeTOON(p.Value)
	})
}

func dataDirMode(s settings.Settings) string {
	switch {
	case s.DataDir == "":
		return ""
	case s.DataWritable:
		return "read-write"
	}
	return "read-only"
}

// readableByOthers checks that an unprivileged uid (the sandbox's) can
// reach and list dir: x for others on every parent, r and x on dir.
func readableByOthers(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if fi.Mode().Perm()&0o005 != 0o005 {
		return fmt.Errorf("%s must be readable by other users (chmod o+rx): the sandbox runs as an unprivileged uid", abs)
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		if pi, err := os.Stat(p); err == nil && pi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s is not reachable by other users: %s lacks o+x", abs, p)
		}
		if p == "/" {
			return nil
		}
	}
}

// Close ends every session and stops the downstream servers.
func (a *App) Close() {
	a.Executor.Close()
	// A backend that keeps things of its own (the native backend's
	// zygotes; the kubernetes backend's janitor and API connections) lets
	// them go once no session needs them.
	if c, ok := a.Backend.(io.Closer); ok {
		if err := c.Close(); err != nil {
			a.Log.Warn("closing the sandbox backend", "error", err)
		}
	}
	a.Pool.Close()
	a.guard.Close()
	if a.egress != nil {
		a.egress.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Telemetry.Close(ctx); err != nil {
		a.Log.Warn("flushing traces", "error", err)
	}
	os.RemoveAll(a.sessionsDir)
}

// sandboxLimits returns the sandbox limits the settings ask for.
func sandboxLimits(s settings.Settings) sandbox.Limits {
	return sandbox.Limits{MemoryBytes: s.MemoryBytes, PIDs: s.PIDs, CPUs: s.CPUs, NoFile: s.NoFile,
		TmpBytes: s.TmpBytes, WorkspaceBytes: s.WorkspaceBytes}
}

// required lists the protections the settings ask for.
func required(s settings.Settings) []string {
	req := []string{
		sandbox.ProtUser, sandbox.ProtNoCaps, sandbox.ProtNoNewPrivs, sandbox.ProtReadOnlyFS,
		sandbox.ProtNoNetwork, sandbox.ProtMemoryLimit, sandbox.ProtPIDsLimit, sandbox.ProtHostHidden,
	}
	if s.CPUs > 0 {
		req = append(req, sandbox.ProtCPULimit)
	}
	return req
}
