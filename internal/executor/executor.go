// Package executor runs run_python calls: it owns the sessions (one
// persistent interpreter each, keyed by owner and session name; the caller
// decides what an owner is: a principal, or one MCP connection),
// their cap and idle expiry, the order of calls within a session, timeouts
// that really stop code, and output limits. It returns Results.
package executor

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode/codemode/internal/artifacts"
	"github.com/codemode/codemode/internal/interpreter"
	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/wire"
	"github.com/go-json-experiment/json/jsontext"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Manager.
type Options struct {
	Backend        sandbox.Backend
	Limits         sandbox.Limits
	Mounts         []sandbox.Mount
	Python         string
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	InterruptGrace time.Duration
	IdleTimeout    time.Duration
	MaxSessions    int
	// MaxClientSessions bounds the sessions of one principal (0 = MaxSessions).
	MaxClientSessions int
	OutputLimit       int
	// BootConfig gives every new interpreter's runtime its configuration,
	// read at each start (it follows the policy in force).
	BootConfig func() jsontext.Value
	// Router answers requests from a session's code (nil: none).
	Router Router
	// SessionEnded, if set, learns that a session was reset (closed false:
	// the name lives on with a fresh interpreter) or ended (closed true).
	SessionEnded func(principal, owner, session string, closed bool)
	// CallContext, if set, prepares the context of each call, whose values
	// the code's requests see (e.g. a per-call budget of tool calls).
	CallContext func(ctx context.Context) context.Context
	// Watcher, if set, watches every call (the web console's recorder).
	Watcher CallWatcher
	// Preload starts the MCP servers a call names in `servers`.
	Preload func(ctx context.Context, servers []string) error
	// Loaded lists the MCP servers currently running (LOADED_MCP_SERVERS).
	Loaded func() []string
	// Artifacts stores published files and spilled output (nil: disabled).
	Artifacts *artifacts.Store
	// SpoolLimit is how much of a cut stream is kept as a session file.
	SpoolLimit int
	// Fit cuts a finished result's streams further to what the client can
	// afford and reports whether it did (the MCP server's character budget
	// for the whole result); streams it cut are kept as session files like
	// those cut at OutputLimit. nil: OutputLimit alone applies.
	Fit func(*Result) bool
	// Images bounds images returned by code.
	Images artifacts.Budget
	// Spares is how many interpreters are kept started ahead of need.
	Spares int
	// Preload are modules a spare imports before it is handed out. An
	// interpreter started for a waiting call skips them: the call would
	// wait for the imports.
	PreloadModules []string
	// Observer learns of sandbox starts and exits (nil: none).
	Observer Observer
	// Network, if set, links each sandbox to the egress proxy (nil: the
	// sandbox has no network at all).
	Network Network
	Logger  *slog.Logger
}

// CallWatcher learns each call as it starts and ends. CallStarted returns the
// call's context, whose values the code's requests see (so nested tool
// calls can be filed under their call).
type CallWatcher interface {
	CallStarted(ctx context.Context, c CallInfo) context.Context
	CallEnded(ctx context.Context, res *Result)
}

// CallInfo describes a call as it starts.
type CallInfo struct {
	Principal, Owner, Session, Code string
	Reset                           bool
}

// Observer learns of the sandboxes' lifecycle (metrics).
type Observer interface {
	SandboxStarted(spare bool, d time.Duration)
	SandboxExited(cause string)
}

// Why a session's sandbox ended (Observer.SandboxExited).
const (
	ExitReset       = "reset"        // the call asked for a fresh interpreter
	ExitIdle        = "idle"         // the session expired
	ExitTimeoutKill = "timeout-kill" // the code ignored the interrupt at its timeout
	ExitOOM         = "oom"          // killed at the memory limit
	ExitCrash       = "crash"        // it died on its own
	ExitDisconnect  = "disconnect"   // the client's connection ended
	ExitShutdown    = "shutdown"     // codemode is shutting down
	ExitClosed      = "closed"       // closed by its client or from the web console
	ExitEvicted     = "evicted"      // an idle handle made room for a new session
)

// Request is one run_python call.
type Request struct {
	// Owner is the namespace the session lives in, private to it: a
	// principal's (named sessions, handles) or one MCP connection's (its
	// default session, closed with CloseOwner).
	Owner   string
	Session string // session name within the owner ("" = "default")
	// Existing requires the session to be live already (a handle the
	// caller minted earlier): a missing one is an error, not a fresh start.
	Existing bool
	// Evictable lets a new session of the principal that meets a session
	// cap end this one (created by this request) when it is the least
	// recently used idle one: a handle its client may have dropped.
	Evictable bool
	// Lasting: the session belongs to a principal rather than to one
	// connection, so where the backend's sandboxes outlive this process
	// (sandbox.Reattacher) it does too: any replica reattaches to it, and
	// shutting down leaves it running.
	Lasting bool
	// Close ends the session after the call; with no code, the call only
	// closes it.
	Close   bool
	Code    string
	Timeout time.Duration // 0 = default; clamped to MaxTimeout by the caller
	Reset   bool
	Servers []string
	// Output, if set, receives output as it arrives (besides the result).
	Output interpreter.OutputFunc
	// Principal names whose memory and saved tools the session uses
	// (default "default"); fixed when the session is created.
	Principal string
	// Files are written into /workspace before the code runs.
	Files map[string][]byte
	// Progress, if set, receives progress while the call runs: the code's
	// own runtime.progress() reports, and the latest output each second.
	Progress func(ProgressUpdate)
}

// ProgressUpdate is one progress report of a running call.
type ProgressUpdate struct {
	Progress, Total float64 // Total is 0 when unknown
	Message         string
	FromCode        bool // reported by runtime.progress(), not the elapsed-time ticker
	// Relayed is a downstream server's progress of a nested call: its
	// values count that call's steps, not the run's, so only its message
	// carries them.
	Relayed bool
}

// DefaultSession is the session name used when a call names none.
const DefaultSession = "default"

// ErrClosed is returned after Close.
var ErrClosed = errors.New("executor is shut down")

// ErrNoSession is returned for a Request.Existing session that is not live.
var ErrNoSession = errors.New("no such session")

type key struct{ owner, name string }

// session is one named session. Its lock (a 1-slot channel so waiting can be
// cancelled) orders calls; in is nil until the first call and after the
// interpreter ended.
type session struct {
	key       key
	principal string
	evictable bool // see Request.Evictable
	lasting   bool // see Request.Lasting
	// reattach: look for the session's sandbox in the backend before
	// starting one (a session new to this process, or one another process
	// took over). Guarded by lock.
	reattach bool
	lock     chan struct{}
	lastUsed time.Time // guarded by Manager.mu
	ended    string    // why the previous interpreter ended, reported once; guarded by lock
	calls    int       // calls that spilled output, for file names; guarded by lock
	call     atomic.Pointer[callState]

	mu sync.Mutex // guards in, which killAll reads while a call holds lock
	in *interpreter.Interpreter
}

func (s *session) interp() *interpreter.Interpreter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.in
}

func (s *session) currentCall() *callState { return s.call.Load() }

func (s *session) setInterp(in *interpreter.Interpreter) {
	s.mu.Lock()
	s.in = in
	s.mu.Unlock()
}

// Manager owns all sessions.
type Manager struct {
	opts Options
	log  *slog.Logger

	mu             sync.Mutex
	sessions       map[key]*session
	closed         bool
	spares         chan spare
	sparesStarting int // guarded by mu
	// killing counts killAll runs in progress (sessions already out of the
	// map, their sandboxes not yet gone); Close waits for them.
	killing  int // guarded by mu
	killDone *sync.Cond

	stop chan struct{}
	wg   sync.WaitGroup
}

// New returns a Manager and starts its idle reaper.
func New(opts Options) *Manager {
	if opts.OutputLimit <= 0 {
		opts.OutputLimit = 64 << 10
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 16
	}
	if opts.InterruptGrace <= 0 {
		opts.InterruptGrace = 3 * time.Second
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = 30 * time.Second
	}
	if opts.MaxTimeout < opts.DefaultTimeout {
		opts.MaxTimeout = opts.DefaultTimeout
	}
	m := &Manager{opts: opts, log: opts.Logger, sessions: map[key]*session{}, stop: make(chan struct{}),
		spares: make(chan spare, max(opts.Spares, 0))}
	m.killDone = sync.NewCond(&m.mu)
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.refillSpares()
	if opts.IdleTimeout > 0 {
		m.wg.Add(1)
		go m.reapIdle()
	}
	return m
}

// Run executes one call and returns its result. Errors about the request
// itself come back as results too; Run never returns a nil result.
func (m *Manager) Run(ctx context.Context, req Request) *Result {
	if m.opts.CallContext != nil {
		ctx = m.opts.CallContext(ctx)
	}
	name := req.Session
	if name == "" {
		name = DefaultSession
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = m.opts.DefaultTimeout
	}
	timeout = min(timeout, m.opts.MaxTimeout)
	res := &Result{Session: name, Servers: req.Servers, TimeoutSeconds: 0}
	principal := req.Principal
	if principal == "" {
		principal = "default"
	}
	if req.Close && strings.TrimSpace(req.Code) == "" {
		// Closing runs nothing: it is not a call the console records.
		if m.CloseSession(req.Owner, name) || m.closeElsewhere(ctx, key{req.Owner, name}, principal, req) {
			res.Status, res.Notes = StatusSuccess, []string{"session " + name + " closed"}
		} else {
			res.Status, res.Error = StatusError, fmt.Sprintf("%v %q to close (it had ended already)", ErrNoSession, name)
		}
		return res
	}
	if o := m.opts.Watcher; o != nil {
		ctx = o.CallStarted(ctx, CallInfo{Principal: principal, Owner: req.Owner, Session: name, Code: req.Code, Reset: req.Reset})
		defer func() { o.CallEnded(ctx, res) }()
	}
	actx, span := tracer(ctx).Start(ctx, "session acquire", trace.WithAttributes(attrSession.String(name)))
	s, err := m.acquire(actx, key{req.Owner, name}, principal, req)
	endSpan(span, err)
	if err != nil {
		res.Status, res.Error = StatusError, err.Error()
		return res
	}
	defer m.release(s)
	if req.Close {
		// Before release, so no other call gets in between.
		defer func() {
			m.closeHeld(s)
			res.Notes = append(res.Notes, "session "+name+" closed")
		}()
	}
	if req.Reset {
		m.endInterpreter(s, "", ExitReset)
		m.sessionEnded(s, false)
	}
	if s.ended != "" {
		res.Notes = append(res.Notes, s.ended)
		s.ended = ""
	}
	if len(req.Servers) > 0 && m.opts.Preload != nil {
		if err := m.opts.Preload(ctx, req.Servers); err != nil {
			res.Status, res.Error = StatusError, err.Error()
			return res
		}
	}
	in := s.interp()
	if in != nil && s.lasting && m.reattacher() {
		// Another replica may have taken the session over since this one's
		// last call, and the news may not have arrived yet: a round trip
		// settles it, so the code is not sent down a connection that is
		// already gone (it would not run, and the call would fail).
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		in.Ping(pctx)
		cancel()
	}
	if in != nil {
		select {
		case <-in.Dead():
			if in.Exit().Detached {
				// Another replica took the session over; take it back.
				s.setInterp(nil)
				s.reattach = true
				in = nil
				break
			}
			// It died between calls (killed from outside, OOM in a
			// background thread): the code has not run, so run it afresh.
			m.exited(exitCause(in.Exit(), false))
			m.endInterpreter(s, "", "")
			res.Notes = append(res.Notes, "the session's state was lost (its sandbox "+in.Exit().String()+" between calls); this call ran in a fresh interpreter")
			res.StateLost = true
			in = nil
		default:
		}
	}
	if in == nil && s.reattach {
		s.reattach = false
		var err error
		if in, err = m.reattach(ctx, s); err != nil {
			res.Status, res.Error = StatusError, err.Error()
			return res
		}
		if in == nil && req.Existing {
			m.closeHeld(s)
			res.Status, res.Error = StatusError, noSession(name).Error()
			return res
		}
		s.setInterp(in)
	}
	for attempt := 0; ; attempt++ {
		if in == nil {
			var err error
			in, err = m.startInterpreter(ctx, s)
			if err != nil {
				res.Status, res.Error = StatusError, "starting sandbox: "+err.Error()
				return res
			}
			s.setInterp(in)
		}
		cctx, span := tracer(ctx).Start(ctx, "cell execute", trace.WithAttributes(attrSandbox.String(in.ID())))
		ran := m.exec(cctx, s, in, req, timeout, res)
		span.SetAttributes(attrStatus.String(res.Status))
		if res.Status != StatusSuccess {
			span.SetStatus(codes.Error, res.Status)
		}
		span.End()
		if ran || attempt > 0 {
			return res
		}
		// The interpreter died just before the code could be sent; the code
		// did not run, so it is safe to run it in a fresh one.
		in = nil
		res.StateLost = true
		res.Notes = append(res.Notes, "the session's state was lost (its sandbox ended just before this call); this call ran in a fresh interpreter")
	}
}

// exec runs one call in in. It returns false when the code could not even be
// sent (the interpreter had died), leaving res untouched.
func (m *Manager) exec(ctx context.Context, s *session, in *interpreter.Interpreter, req Request, timeout time.Duration, res *Result) bool {
	stdout, stderr := newCapture(m.opts.OutputLimit, m.opts.SpoolLimit), newCapture(m.opts.OutputLimit, m.opts.SpoolLimit)
	var outMu sync.Mutex
	var lastLine []byte
	var loaded []string
	if m.opts.Loaded != nil {
		loaded = append(req.Servers, m.opts.Loaded()...)
	}
	call := &callState{values: ctx, progress: req.Progress}
	s.call.Store(call)
	defer s.call.Store(nil)
	cell, err := in.Exec(interpreter.ExecRequest{Code: req.Code, Loaded: dedupe(loaded), Files: req.Files, Output: func(stream interpreter.Stream, data []byte) {
		outMu.Lock()
		if stream == interpreter.Stderr {
			stderr.write(data)
		} else {
			stdout.write(data)
		}
		if line := lastNonEmptyLine(data); line != nil {
			lastLine = append(lastLine[:0], line...)
		}
		outMu.Unlock()
		if req.Output != nil {
			req.Output(stream, data)
		}
	}})
	if err != nil {
		m.endInterpreter(s, "", ExitCrash)
		return false
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var tick <-chan time.Time
	if req.Progress != nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	start := time.Now()
	timedOut, killed := false, false
wait:
	for {
		select {
		case <-cell.Done():
			break wait
		case now := <-timer.C:
			// Time spent waiting for a human (an approval) is not the code's.
			paused, waiting := s.currentCall().pausedFor(now)
			if waiting {
				timer.Reset(time.Second)
				continue
			}
			if left := timeout + paused - now.Sub(start); left > 0 {
				timer.Reset(left)
				continue
			}
			timedOut = true
			break wait
		case <-ctx.Done():
			break wait
		case <-tick:
			outMu.Lock()
			msg := fmt.Sprintf("running for %ds", int(time.Since(start).Seconds()))
			if len(lastLine) > 0 {
				msg += ": " + string(lastLine)
			}
			outMu.Unlock()
			req.Progress(ProgressUpdate{Progress: time.Since(start).Seconds(), Message: msg})
		}
	}
	if timedOut || ctx.Err() != nil {
		// Interrupt first so the session survives; kill if Python ignores it.
		cell.Interrupt()
		grace := time.NewTimer(m.opts.InterruptGrace)
		select {
		case <-cell.Done():
		case <-grace.C:
			m.log.WarnContext(ctx, "cell ignored the interrupt; killing its sandbox", "session", in.ID(), "grace", m.opts.InterruptGrace)
			in.Kill(context.Background())
			killed = true
			<-cell.Done()
		}
		grace.Stop()
	}
	outMu.Lock()
	res.Stdout, res.Stderr = stdout.output(), stderr.output()
	outMu.Unlock()
	call.mu.Lock()
	res.Images, res.Files = call.images, call.files
	call.mu.Unlock()
	res.ToolCalls = call.toolCalls.Load()
	r := cell.Result()
	switch {
	case timedOut:
		secs := int((timeout + time.Second - 1) / time.Second)
		res.Status, res.TimeoutSeconds = StatusTimeout, secs
		res.Error = fmt.Sprintf("Execution timed out after %ds", secs)
	case ctx.Err() != nil:
		res.Status, res.Error = StatusError, "call cancelled"
	case r.Died:
	case r.Status == wire.StatusOK:
		res.Status, res.ExitCode = StatusSuccess, Intp(0)
	case r.Status == wire.StatusExit:
		res.Status, res.ExitCode = StatusError, Intp(r.ExitCode)
		res.Error = fmt.Sprintf("Sandbox exited with code %d", r.ExitCode)
	default: // error, or an interrupt that was not ours
		res.Status, res.ExitCode, res.Error = StatusError, Intp(r.ExitCode), r.Error
	}
	if r.Died && r.Exit.Detached {
		// Another replica took the session over while this call ran; the
		// sandbox and its state live on there.
		s.setInterp(nil)
		s.reattach = true
		res.Status, res.Error = StatusError, "another request took this session over while the call ran; its code may still be running there"
	} else if r.Died {
		exit := r.Exit
		m.exited(exitCause(exit, killed))
		s.setInterp(nil)
		res.StateLost = true
		why := "the sandbox " + exit.String()
		if exit.OOMKilled {
			why = fmt.Sprintf("the sandbox was killed at its memory limit (%d MiB)", m.opts.Limits.MemoryBytes>>20)
		}
		if !timedOut && ctx.Err() == nil {
			res.Status, res.ExitCode = StatusError, Intp(exit.Code)
			res.Error = why
		}
		res.Notes = append(res.Notes, "the session's state was lost ("+why+"); the next call starts a fresh interpreter")
	}
	m.fit(s, in.ID(), stdout, stderr, res)
	if r.Died {
		m.dropArtifacts(in.ID())
	}
	return true
}

// fit applies the caller's budget to a finished result and keeps every
// stream the result had to cut as a session file. The links add to the
// result, so it is fitted again after them.
func (m *Manager) fit(s *session, sandboxID string, stdout, stderr *capture, res *Result) {
	if m.opts.Fit != nil {
		m.opts.Fit(res)
	}
	n := len(res.Files)
	m.spill(s, sandboxID, "stdout", stdout, res.Stdout, res)
	m.spill(s, sandboxID, "stderr", stderr, res.Stderr, res)
	if m.opts.Fit != nil && len(res.Files) > n {
		m.opts.Fit(res)
	}
}

// spill keeps a stream the result had to cut as a session file, and links it.
func (m *Manager) spill(s *session, sandboxID, stream string, c *capture, kept Output, res *Result) {
	if kept.Omitted() <= 0 || m.opts.Artifacts == nil {
		return
	}
	data, partial := c.spilled()
	if data == nil {
		return
	}
	s.calls++
	name := fmt.Sprintf("output/%s-%d.txt", stream, s.calls)
	f, err := m.opts.Artifacts.Put(sandboxID, s.key.owner, name, data)
	if err != nil {
		res.Notes = append(res.Notes, "the full "+stream+" could not be kept: "+err.Error())
		return
	}
	desc := fmt.Sprintf("the full %s of this call (%d bytes)", stream, len(data))
	if partial {
		desc = fmt.Sprintf("the first %d of %d bytes of %s", len(data), c.total, stream)
	}
	res.Files = append(res.Files, File{URI: f.URI, Name: name, MIMEType: f.MIMEType, Size: f.Size, Description: desc})
}

func (m *Manager) dropArtifacts(sandboxID string) {
	if m.opts.Artifacts != nil {
		m.opts.Artifacts.Drop(sandboxID)
	}
}

func lastNonEmptyLine(data []byte) []byte {
	for len(data) > 0 {
		i := bytes.LastIndexByte(data[:len(data)-1], '\n')
		line := bytes.TrimSpace(data[i+1:])
		if len(line) > 0 {
			if len(line) > 200 {
				line = line[:200]
			}
			return line
		}
		if i < 0 {
			return nil
		}
		data = data[:i+1]
	}
	return nil
}

// acquire returns the session for k, creating it if the caps allow (or an
// evictable session of the principal makes room, and existing does not
// forbid it), and takes its lock.
func (m *Manager) acquire(ctx context.Context, k key, principal string, req Request) (*session, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	s := m.sessions[k]
	// A lasting session may live in a sandbox another replica started.
	reattach := s == nil && req.Lasting && m.reattacher()
	if s == nil && req.Existing && !reattach {
		m.mu.Unlock()
		return nil, noSession(k.name)
	}
	var evicted *session
	if s == nil {
		if err := m.roomFor(principal); err != nil {
			// A handle the client dropped must not hold a place forever:
			// the principal's least recently used idle one makes room.
			if evicted = m.evictable(principal); evicted == nil {
				m.mu.Unlock()
				return nil, err
			}
			delete(m.sessions, evicted.key)
			<-evicted.lock // evictable took it: the session is idle
		}
		s = &session{key: k, principal: principal, evictable: req.Evictable, lasting: req.Lasting, reattach: reattach,
			lock: make(chan struct{}, 1), lastUsed: time.Now()}
		m.sessions[k] = s
	}
	m.mu.Unlock()
	if evicted != nil {
		m.log.Info("session evicted to make room", "session", evicted.key.name, "principal", principal)
		m.killAll([]*session{evicted}, ExitEvicted)
	}
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// The session may have been removed (owner closed) while we waited.
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions[k] != s {
		<-s.lock
		if m.closed {
			return nil, ErrClosed
		}
		return nil, errors.New("session was closed")
	}
	return s, nil
}

func noSession(name string) error {
	return fmt.Errorf("%w %q: it was closed, expired or evicted unused, or is not this client's; call without `session` to start a new one", ErrNoSession, name)
}

// reattacher reports whether the backend's sandboxes outlive this process.
func (m *Manager) reattacher() bool {
	_, ok := m.opts.Backend.(sandbox.Reattacher)
	return ok
}

// labels are what a session's sandbox carries, so any replica can find it
// (sandbox.Reattacher). Backends make the values fit their label syntax.
func (s *session) labels() map[string]string {
	return map[string]string{
		"codemode.session-owner": s.key.owner,
		"codemode.session":       s.key.name,
		sandbox.LabelLasting:     strconv.FormatBool(s.lasting),
	}
}

// reattach connects s to its sandbox if one is running (started by another
// replica, or by this process before another took it over), or returns
// nil.
func (m *Manager) reattach(ctx context.Context, s *session) (*interpreter.Interpreter, error) {
	ctx, span := tracer(ctx).Start(ctx, "sandbox reattach", trace.WithAttributes(attrBackend.String(m.opts.Backend.Name())))
	defer span.End()
	bound := new(atomic.Pointer[session])
	bound.Store(s)
	// The sandbox's id is known once connected, and requests may come
	// right away (from a call the previous replica started).
	var sandboxID atomic.Pointer[string]
	rpc := func(ctx context.Context, method string, params jsontext.Value) (jsontext.Value, *wire.RPCError) {
		id := ""
		if p := sandboxID.Load(); p != nil {
			id = *p
		}
		return m.route(bound, id)(ctx, method, params)
	}
	start := time.Now()
	in, err := interpreter.Reattach(ctx, interpreter.Options{Backend: m.opts.Backend, Python: m.opts.Python,
		RPC: rpc, Logger: m.log}, s.labels())
	if errors.Is(err, sandbox.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		endSpan(span, err)
		return nil, fmt.Errorf("reattaching to the session's sandbox: %w", err)
	}
	id := in.ID()
	sandboxID.Store(&id)
	m.log.InfoContext(ctx, "session reattached", "session", s.key.name, "sandbox", in.ID(), "duration", time.Since(start))
	return in, nil
}

// roomFor says why principal may not start another session, or nil.
// Preconditions: m.mu is held.
func (m *Manager) roomFor(principal string) error {
	if len(m.sessions) >= m.opts.MaxSessions {
		return fmt.Errorf("session limit reached (%d sessions in use); reuse a session, reset one, or wait for idle sessions to expire", m.opts.MaxSessions)
	}
	if limit := m.opts.MaxClientSessions; limit > 0 {
		n := 0
		for _, other := range m.sessions {
			if other.principal == principal {
				n++
			}
		}
		if n >= limit {
			return fmt.Errorf("session limit of client %s reached (%d sessions); reuse a session, reset one, or wait for idle sessions to expire", principal, limit)
		}
	}
	return nil
}

// evictable returns principal's least recently used evictable session that
// is idle, with its lock taken, or nil. Preconditions: m.mu is held.
func (m *Manager) evictable(principal string) *session {
	var idle []*session
	for _, s := range m.sessions {
		if s.evictable && s.principal == principal {
			idle = append(idle, s)
		}
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].lastUsed.Before(idle[j].lastUsed) })
	for _, s := range idle {
		select {
		case s.lock <- struct{}{}: // not running a call
			return s
		default:
		}
	}
	return nil
}

func (m *Manager) release(s *session) {
	m.mu.Lock()
	s.lastUsed = time.Now()
	m.mu.Unlock()
	<-s.lock
}

func (m *Manager) startInterpreter(ctx context.Context, s *session) (*interpreter.Interpreter, error) {
	ctx, span := tracer(ctx).Start(ctx, "sandbox acquire", trace.WithAttributes(attrBackend.String(m.opts.Backend.Name())))
	defer span.End()
	if in := m.claimSpare(s); in != nil {
		if err := in.Relabel(ctx, s.labels()); err != nil {
			in.Kill(context.Background())
			return nil, fmt.Errorf("labelling a spare sandbox for the session: %w", err)
		}
		span.SetAttributes(attrSource.String("spare"), attrSandbox.String(in.ID()))
		m.log.InfoContext(ctx, "session started from a spare", "session", s.key.name, "sandbox", in.ID())
		return in, nil
	}
	span.SetAttributes(attrSource.String("cold"))
	start := time.Now()
	sctx, sspan := tracer(ctx).Start(ctx, "sandbox start")
	in, bound, err := m.newInterpreter(sctx, s.labels(), nil)
	endSpan(sspan, err)
	if err != nil {
		span.SetStatus(codes.Error, "sandbox start failed")
		return nil, err
	}
	if m.opts.Observer != nil {
		m.opts.Observer.SandboxStarted(false, time.Since(start))
	}
	bound.Store(s)
	m.log.InfoContext(ctx, "session started", "session", s.key.name, "sandbox", in.ID(), "python", in.PythonVersion(), "duration", time.Since(start))
	return in, nil
}

// newInterpreter starts a sandboxed interpreter; RPCs of its code go to
// whatever session bound points at.
func (m *Manager) newInterpreter(ctx context.Context, labels map[string]string, preload []string) (*interpreter.Interpreter, *atomic.Pointer[session], error) {
	id := newID()
	bound := new(atomic.Pointer[session])
	mounts := m.opts.Mounts
	var env []string
	var link NetworkLink
	if m.opts.Network != nil {
		var err error
		if link, err = m.opts.Network.Attach(ctx, id, m.whose(bound, id)); err != nil {
			return nil, nil, fmt.Errorf("linking the sandbox to the egress proxy: %w", err)
		}
		mounts = append(slices.Clip(mounts), link.Mounts()...)
		env = link.Env()
	}
	in, err := interpreter.Start(ctx, interpreter.Options{
		Backend: m.opts.Backend,
		Spec: sandbox.Spec{
			ID:     id,
			Limits: m.opts.Limits,
			Mounts: mounts,
			Labels: labels,
		},
		Python:  m.opts.Python,
		Env:     env,
		Config:  m.bootConfig(),
		Preload: preload,
		RPC:     m.route(bound, id),
		Logger:  m.log,
	})
	if link != nil {
		if err != nil {
			link.Close()
		} else {
			go func() {
				<-in.Dead()
				link.Close()
			}()
		}
	}
	return in, bound, err
}

func (m *Manager) bootConfig() jsontext.Value {
	if m.opts.BootConfig == nil {
		return nil
	}
	return m.opts.BootConfig()
}

// spare is an interpreter started ahead of need, so a new session does not
// wait for a sandbox to start.
type spare struct {
	in    *interpreter.Interpreter
	bound *atomic.Pointer[session]
}

// claimSpare hands a ready spare to s (and starts its replacement), or
// returns nil when none is ready.
func (m *Manager) claimSpare(s *session) *interpreter.Interpreter {
	for {
		select {
		case sp := <-m.spares:
			select {
			case <-sp.in.Dead():
				m.dropArtifacts(sp.in.ID())
				continue
			default:
			}
			sp.bound.Store(s)
			m.refillSpares()
			return sp.in
		default:
			m.refillSpares()
			return nil
		}
	}
}

// refillSpares starts spares until Spares are ready or starting.
func (m *Manager) refillSpares() {
	m.mu.Lock()
	need := m.opts.Spares - len(m.spares) - m.sparesStarting
	if m.closed || need <= 0 {
		m.mu.Unlock()
		return
	}
	m.sparesStarting += need
	m.wg.Add(need) // under mu, so Close cannot be waiting already
	m.mu.Unlock()
	for range need {
		go func() {
			defer m.wg.Done()
			start := time.Now()
			in, bound, err := m.newInterpreter(context.Background(), map[string]string{"codemode.session": "spare"}, m.opts.PreloadModules)
			if err == nil && m.opts.Observer != nil {
				m.opts.Observer.SandboxStarted(true, time.Since(start))
			}
			m.mu.Lock()
			m.sparesStarting--
			closed := m.closed
			m.mu.Unlock()
			if err != nil {
				m.log.Warn("starting a spare interpreter", "error", err)
				return
			}
			if !closed {
				select {
				case m.spares <- spare{in: in, bound: bound}:
					return
				default:
				}
			}
			in.Kill(context.Background())
		}()
	}
}

// endInterpreter kills s's interpreter, counting its exit under cause ("":
// counted already). Preconditions: s's lock is held (or s is no longer
// reachable).
func (m *Manager) endInterpreter(s *session, why, cause string) {
	s.mu.Lock()
	in := s.in
	s.in = nil
	s.mu.Unlock()
	if in == nil {
		return
	}
	s.ended = why
	if m.leaves(s, in, cause) {
		if err := in.Detach(context.Background()); err != nil {
			m.log.Warn("leaving a lasting sandbox", "sandbox", in.ID(), "error", err)
		}
		m.dropArtifacts(in.ID())
		return
	}
	m.exited(cause)
	if err := in.Kill(context.Background()); err != nil {
		m.log.Warn("killing sandbox", "sandbox", in.ID(), "error", err)
	}
	m.dropArtifacts(in.ID())
}

// leaves reports whether ending s's interpreter for cause only lets go of
// it: a lasting session outlives this process's shutdown where its sandbox
// can, for another replica to reattach.
func (m *Manager) leaves(s *session, in *interpreter.Interpreter, cause string) bool {
	return cause == ExitShutdown && s.lasting && in.Lasting()
}

// closeHeld ends s, whose lock the caller holds, and forgets it.
func (m *Manager) closeHeld(s *session) {
	m.mu.Lock()
	if m.sessions[s.key] == s {
		delete(m.sessions, s.key)
	}
	m.mu.Unlock()
	m.sessionEnded(s, true)
	m.endInterpreter(s, "", ExitClosed)
}

// CloseOwner ends every session of an owner that went away (an MCP
// connection's default session).
func (m *Manager) CloseOwner(owner string) {
	m.mu.Lock()
	var victims []*session
	for k, s := range m.sessions {
		if k.owner == owner {
			victims = append(victims, s)
			delete(m.sessions, k)
		}
	}
	m.mu.Unlock()
	m.killAll(victims, ExitDisconnect)
}

func (m *Manager) sessionEnded(s *session, closed bool) {
	if m.opts.SessionEnded != nil {
		m.opts.SessionEnded(s.principal, s.key.owner, s.key.name, closed)
	}
}

// killAll kills the interpreters of sessions no longer in the map, waiting
// for running calls to notice.
func (m *Manager) killAll(victims []*session, cause string) {
	m.mu.Lock()
	m.killing++
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.killing--
		m.killDone.Broadcast()
		m.mu.Unlock()
	}()
	var wg sync.WaitGroup
	for _, s := range victims {
		m.sessionEnded(s, true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A running call holds the lock; killing its interpreter ends the
			// call, which then releases the lock.
			select {
			case s.lock <- struct{}{}:
				m.endInterpreter(s, "", cause)
				<-s.lock
			default:
				if in := s.interp(); in != nil {
					if m.leaves(s, in, cause) {
						in.Detach(context.Background())
					} else {
						in.Kill(context.Background())
					}
				}
				s.lock <- struct{}{}
				m.endInterpreter(s, "", cause)
				<-s.lock
			}
		}()
	}
	wg.Wait()
}

// reapIdle ends sessions unused for longer than the idle timeout.
func (m *Manager) reapIdle() {
	defer m.wg.Done()
	tick := time.NewTicker(max(m.opts.IdleTimeout/10, 100*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		m.mu.Lock()
		var victims []*session
		for k, s := range m.sessions {
			if now.Sub(s.lastUsed) < m.opts.IdleTimeout {
				continue
			}
			select {
			case s.lock <- struct{}{}: // idle: not running a call
				delete(m.sessions, k)
				victims = append(victims, s)
				<-s.lock
			default:
			}
		}
		m.mu.Unlock()
		for _, s := range victims {
			m.log.Info("session expired after idle timeout", "session", s.key.name, "idle", m.opts.IdleTimeout)
		}
		m.killAll(victims, ExitIdle)
	}
}

// closeElsewhere closes a lasting session this process does not hold, in
// the sandbox another replica started; false if there is none.
func (m *Manager) closeElsewhere(ctx context.Context, k key, principal string, req Request) bool {
	if !req.Lasting || !m.reattacher() {
		return false
	}
	s, err := m.acquire(ctx, k, principal, req)
	if err != nil {
		return false
	}
	defer m.release(s)
	in := s.interp()
	if in == nil && s.reattach {
		s.reattach = false
		if in, err = m.reattach(ctx, s); err != nil {
			m.log.WarnContext(ctx, "closing a session of another replica", "session", k.name, "error", err)
		}
		s.setInterp(in)
	}
	m.closeHeld(s)
	return in != nil
}

// CloseSession ends one session (its running call fails); false if there
// is no such session.
func (m *Manager) CloseSession(owner, name string) bool {
	m.mu.Lock()
	s := m.sessions[key{owner, name}]
	delete(m.sessions, key{owner, name})
	m.mu.Unlock()
	if s == nil {
		return false
	}
	m.killAll([]*session{s}, ExitClosed)
	return true
}

// Live reports whether a session exists (its interpreter may be between
// starts).
func (m *Manager) Live(owner, name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[key{owner, name}] != nil
}

// ResetSession ends one session's interpreter but keeps the session: its
// next call starts afresh and is told why. False if there is no such
// session.
func (m *Manager) ResetSession(owner, name, why string) bool {
	m.mu.Lock()
	s := m.sessions[key{owner, name}]
	m.mu.Unlock()
	if s == nil {
		return false
	}
	m.sessionEnded(s, false)
	if in := s.interp(); in != nil {
		in.Kill(context.Background()) // ends a running call, which releases the lock
	}
	s.lock <- struct{}{}
	m.endInterpreter(s, why, ExitReset)
	<-s.lock
	return true
}

// SessionInfo describes a live session.
type SessionInfo struct {
	Owner, Name, Sandbox string
	Principal            string
	Idle                 time.Duration
	MemoryBytes          int64 // -1 when the backend does not measure it
}

// Sessions lists live sessions, sorted.
func (m *Manager) Sessions() []SessionInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []SessionInfo
	for k, s := range m.sessions {
		info := SessionInfo{Owner: k.owner, Name: k.name, Principal: s.principal, Idle: time.Since(s.lastUsed), MemoryBytes: -1}
		if in := s.interp(); in != nil {
			info.Sandbox = in.ID()
			if n, ok := in.MemoryBytes(); ok {
				info.MemoryBytes = n
			}
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Owner != out[j].Owner {
			return out[i].Owner < out[j].Owner
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Close ends every session and stops the reaper. Running calls end with an
// error result.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	victims := make([]*session, 0, len(m.sessions))
	for k, s := range m.sessions {
		victims = append(victims, s)
		delete(m.sessions, k)
	}
	m.mu.Unlock()
	close(m.stop)
	m.killAll(victims, ExitShutdown)
	// Sessions a closing connection took out of the map just before are
	// still being killed: shutdown is done when they are gone too.
	m.mu.Lock()
	for m.killing > 0 {
		m.killDone.Wait()
	}
	m.mu.Unlock()
	m.wg.Wait() // spares being started are killed by their goroutine
	for {
		select {
		case sp := <-m.spares:
			sp.in.Kill(context.Background())
			continue
		default:
		}
		break
	}
}

func newID() string {
	var b [6]byte
	rand.Read(b[:])
	return "s" + hex.EncodeToString(b[:])
}

func dedupe(names []string) []string {
	seen := map[string]bool{}
	out := names[:0:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
