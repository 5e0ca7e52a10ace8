// Package interpreter drives one persistent Python interpreter inside a
// sandbox: it starts the sandbox, boots the embedded runtime over the wire
// protocol, runs cells, streams their output, interrupts them and answers
// the RPCs sandboxed code makes. It knows nothing of MCP or of sessions'
// lifetimes; the executor package decides when to start, reuse and kill.
package interpreter

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode/codemode/internal/pyruntime"
	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/wire"
	"github.com/go-json-experiment/json/jsontext"
)

// Stream identifies an output stream.
type Stream int

const (
	Stdout Stream = 1
	Stderr Stream = 2
)

// RPCHandler answers an RPC made by sandboxed code. It runs on its own
// goroutine, so slow calls (downstream tools) run concurrently. ctx ends
// with the cell that made the call (or with the interpreter, for calls made
// between cells).
type RPCHandler func(ctx context.Context, method string, params jsontext.Value) (jsontext.Value, *wire.RPCError)

// Options configure Start.
type Options struct {
	Backend sandbox.Backend
	// Spec is the sandbox template; Command and Env are filled in.
	Spec sandbox.Spec
	// Python is the interpreter to run inside the sandbox (default "python3").
	Python string
	// Env is added to the interpreter's base environment.
	Env []string
	// Config is passed to the runtime as its boot configuration.
	Config jsontext.Value
	// Preload are modules the runtime imports before it is ready (those not
	// installed are skipped), so the session's first import of them is a
	// dictionary lookup. They lengthen the start by their import time.
	Preload []string
	// MaxFrame bounds frames from the sandbox (default wire.DefaultMaxPayload).
	MaxFrame int
	// BootTimeout bounds the wait for the runtime's ready message.
	BootTimeout time.Duration
	// RPC answers RPCs from sandboxed code; nil refuses them.
	RPC    RPCHandler
	Logger *slog.Logger
}

// ErrDead is returned for work given to an interpreter that has ended.
var ErrDead = errors.New("interpreter has ended")

// Interpreter is a running Python session. Run one cell at a time.
type Interpreter struct {
	id      string
	sb      sandbox.Session
	w       *wire.Writer
	replies *wire.Writer // results of direct RPCs, nil without sandbox.Direct pipes
	log     *slog.Logger
	rpc     RPCHandler
	python  string
	started time.Time

	ctx    context.Context // cancelled when the interpreter ends
	cancel context.CancelFunc

	mu     sync.Mutex
	cell   *Cell
	orphan []byte // output written between cells, given to the next cell
	pings  map[uint64]chan struct{}
	// rpcSlots bounds the RPCs being answered (maxInFlightRPCs).
	rpcSlots chan struct{}
	nextID   atomic.Uint64
	dead     chan struct{}
	deadErr  error
	exit     sandbox.Exit
	// adopted: reattached to a runtime another process booted, whose cells
	// may still report (see connect).
	adopted bool
}

var bundleOnce = sync.OnceValues(pyruntime.Load)

// Start starts a sandbox, boots the runtime and returns once it is ready.
func Start(ctx context.Context, opts Options) (*Interpreter, error) {
	bundle, err := bundleOnce()
	if err != nil {
		return nil, fmt.Errorf("loading python runtime: %w", err)
	}
	python := opts.Python
	if python == "" {
		python = "python3"
	}
	spec := opts.Spec
	spec.Command = []string{python, "-I", "-B", "-c", pyruntime.Bootstrap()}
	spec.Env = append(baseEnv(), opts.Env...)
	sb, err := opts.Backend.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	boot := &wire.Boot{Type: wire.TypeBoot, Modules: bundle.Modules, Package: bundle.Packages,
		Entry: pyruntime.Entry, Config: opts.Config, Preload: opts.Preload}
	return connect(ctx, opts, spec.ID, sb, boot)
}

// Reattach connects to the running interpreter of another codemode
// process's sandbox, found by the labels it carries (sandbox.Reattacher).
// It keeps the state of its code; sandbox.ErrNotFound means there is none.
func Reattach(ctx context.Context, opts Options, labels map[string]string) (*Interpreter, error) {
	r, ok := opts.Backend.(sandbox.Reattacher)
	if !ok {
		return nil, sandbox.ErrNotFound
	}
	sb, err := r.Reattach(ctx, labels)
	if err != nil {
		return nil, err
	}
	return connect(ctx, opts, sb.ID(), sb, nil)
}

// connect runs the client side of a sandbox session: it boots the runtime
// (boot != nil) or adopts one that booted earlier, and waits for its ready
// message.
func connect(ctx context.Context, opts Options, id string, sb sandbox.Session, boot *wire.Boot) (_ *Interpreter, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("session", id)
	in := &Interpreter{
		id: id, sb: sb, w: wire.NewWriter(sb.Stdin()), log: log, rpc: opts.RPC,
		pings: map[uint64]chan struct{}{}, dead: make(chan struct{}), started: time.Now(),
		rpcSlots: make(chan struct{}, maxInFlightRPCs), adopted: boot == nil,
	}
	if in.adopted {
		// Cells the previous process started may still answer: new ids
		// must not be mistaken for theirs.
		var b [8]byte
		rand.Read(b[:])
		in.nextID.Store(binary.BigEndian.Uint64(b[:]) >> 12) // leaves room to count up; exact in a JSON number
	}
	in.ctx, in.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			if in.adopted {
				in.Detach(context.Background())
			} else {
				in.Kill(context.Background())
			}
		}
	}()
	go in.logDiagnostics()
	if d, ok := sb.(sandbox.Direct); ok && boot != nil {
		if requests, replies := d.DirectPipes(); requests != nil {
			in.replies = wire.NewWriter(replies)
			boot.Direct = &wire.DirectFDs{Requests: sandbox.DirectRequestFD, Replies: sandbox.DirectReplyFD}
			go in.directLoop(wire.NewReader(requests, opts.MaxFrame), requests)
		}
	}
	if boot != nil {
		if err := in.w.WriteMessage(*boot); err != nil {
			return nil, fmt.Errorf("sending boot frame: %w", err)
		}
	}
	ready := make(chan *wire.Ready, 1)
	go in.readLoop(wire.NewReader(sb.Stdout(), opts.MaxFrame), ready)
	timeout := opts.BootTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-ready:
		in.python = r.Python
		log.Debug("interpreter ready", "python", r.Python, "boot", time.Since(in.started), "adopted", in.adopted)
		return in, nil
	case <-in.dead:
		return nil, fmt.Errorf("python runtime did not start: %w", in.deadErr)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		return nil, fmt.Errorf("python runtime not ready after %s", timeout)
	}
}

func baseEnv() []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=/workspace",
		"TMPDIR=/tmp",
		"LANG=C.UTF-8",
		"MPLBACKEND=Agg",
	}
}

// ID returns the sandbox session id.
func (in *Interpreter) ID() string { return in.id }

// MemoryBytes is the sandbox's memory use now, when its backend measures it
// (ok false otherwise).
func (in *Interpreter) MemoryBytes() (n int64, ok bool) {
	mr, isReader := in.sb.(sandbox.MemoryReader)
	if !isReader {
		return 0, false
	}
	n, err := mr.MemoryBytes()
	return n, err == nil
}

// PythonVersion is the version the runtime reported.
func (in *Interpreter) PythonVersion() string { return in.python }

// Dead is closed when the interpreter has ended.
func (in *Interpreter) Dead() <-chan struct{} { return in.dead }

// Exit describes how the sandbox ended; valid after Dead is closed.
func (in *Interpreter) Exit() sandbox.Exit { return in.exit }

// OutputFunc receives a cell's output as it arrives, from the interpreter's
// reader goroutine; it must not block for long.
type OutputFunc func(stream Stream, data []byte)

// Cell is one running execution.
type Cell struct {
	id     uint64
	in     *Interpreter
	output OutputFunc
	done   chan struct{}
	result CellResult
	// ctx is given to RPCs the cell makes; it ends with the cell, so an
	// interrupted cell's downstream calls are cancelled too.
	ctx    context.Context
	cancel context.CancelFunc
}

// ExecRequest is one cell to run.
type ExecRequest struct {
	Code     string
	Filename string            // shown in tracebacks; default "<cell-N>"
	Loaded   []string          // MCP servers loaded for this call (LOADED_MCP_SERVERS)
	Files    map[string][]byte // written into /workspace before the cell runs
	Output   OutputFunc        // receives output as it arrives
}

// CellResult is how a cell ended.
type CellResult struct {
	Status   string // wire.Status*, or "" when the interpreter died
	ExitCode int
	Error    string
	Died     bool         // the sandbox ended during the cell
	Exit     sandbox.Exit // when Died
}

// Exec starts a cell. The caller owns the cell's lifetime: wait on Done,
// Interrupt on timeout, Kill the interpreter if the interrupt is ignored.
func (in *Interpreter) Exec(req ExecRequest) (*Cell, error) {
	c := &Cell{id: in.nextID.Add(1), in: in, output: req.Output, done: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(in.ctx)
	in.mu.Lock()
	if in.cell != nil {
		in.mu.Unlock()
		return nil, errors.New("interpreter: a cell is already running")
	}
	select {
	case <-in.dead:
		in.mu.Unlock()
		c.cancel()
		return nil, ErrDead
	default:
	}
	in.cell = c
	orphan := in.orphan
	in.orphan = nil
	in.mu.Unlock()
	if len(orphan) > 0 && req.Output != nil {
		req.Output(Stdout, orphan)
	}
	filename := req.Filename
	if filename == "" {
		filename = "<cell-" + strconv.FormatUint(c.id, 10) + ">"
	}
	var files map[string]string
	if len(req.Files) > 0 {
		files = make(map[string]string, len(req.Files))
		for name, data := range req.Files {
			files[name] = base64.StdEncoding.EncodeToString(data)
		}
	}
	if err := in.send(wire.Exec{Type: wire.TypeExec, ID: c.id, Code: req.Code, Filename: filename, Loaded: req.Loaded, Files: files}); err != nil {
		in.mu.Lock()
		in.cell = nil
		in.mu.Unlock()
		c.cancel()
		return nil, fmt.Errorf("sending cell: %w", err)
	}
	return c, nil
}

// Done is closed when the cell has finished (or the interpreter died).
func (c *Cell) Done() <-chan struct{} { return c.done }

// Result is valid after Done is closed.
func (c *Cell) Result() CellResult { return c.result }

// Interrupt asks the runtime to raise KeyboardInterrupt in the cell.
func (c *Cell) Interrupt() error {
	return c.in.send(wire.Interrupt{Type: wire.TypeInterrupt, ID: c.id})
}

// maxInFlightRPCs bounds the RPCs of one sandbox being answered at once
// (asyncio.gather of many tool calls queues beyond it, in order).
const maxInFlightRPCs = 64

// writeStall bounds how long one frame to the sandbox may take to write. The
// runtime reads its channel on a thread of its own, so only code that stalls
// that thread on purpose (or a wedged interpreter) fills the pipe; without
// the bound, the host's next write would block forever, outside any timeout.
const writeStall = 5 * time.Second

// send writes one frame to the runtime, killing the sandbox if the write
// stalls (which makes the write fail).
func (in *Interpreter) send(msg any) error {
	return in.sendOn(in.w, msg)
}

func (in *Interpreter) sendOn(w *wire.Writer, msg any) error {
	watchdog := time.AfterFunc(writeStall, func() {
		in.log.Warn("sandbox stopped reading its channel; killing it", "stall", writeStall)
		in.abort(context.Background())
	})
	defer watchdog.Stop()
	return w.WriteMessage(msg)
}

// Ping measures one round trip through the runtime's channel thread.
func (in *Interpreter) Ping(ctx context.Context) (time.Duration, error) {
	id := in.nextID.Add(1)
	ch := make(chan struct{})
	in.mu.Lock()
	in.pings[id] = ch
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		delete(in.pings, id)
		in.mu.Unlock()
	}()
	start := time.Now()
	if err := in.send(wire.Ping{Type: wire.TypePing, ID: id}); err != nil {
		return 0, err
	}
	select {
	case <-ch:
		return time.Since(start), nil
	case <-in.dead:
		return 0, ErrDead
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Kill ends the interpreter and its sandbox now. It is idempotent.
func (in *Interpreter) Kill(ctx context.Context) error {
	err := in.abort(ctx)
	<-in.dead
	return err
}

// Lasting reports whether the sandbox can outlive this process
// (sandbox.Lasting): Detach leaves it running for a later Reattach.
func (in *Interpreter) Lasting() bool {
	_, ok := in.sb.(sandbox.Lasting)
	return ok
}

// Relabel gives the sandbox new labels, where its backend keeps them for
// Reattach (a spare handed to a session); elsewhere it does nothing.
func (in *Interpreter) Relabel(ctx context.Context, labels map[string]string) error {
	if l, ok := in.sb.(sandbox.Lasting); ok {
		return l.Relabel(ctx, labels)
	}
	return nil
}

// Detach lets go of a lasting sandbox, leaving its interpreter running for
// another process to reattach; other sandboxes are killed.
func (in *Interpreter) Detach(ctx context.Context) error {
	l, ok := in.sb.(sandbox.Lasting)
	if !ok {
		return in.Kill(ctx)
	}
	in.cancel()
	err := l.Detach(ctx)
	<-in.dead
	return err
}

// abort kills the sandbox without waiting for the read loop to see it end.
func (in *Interpreter) abort(ctx context.Context) error {
	in.cancel() // ends in-flight RPCs, which frees the read loop
	return in.sb.Kill(ctx)
}

// Close asks the runtime to exit by closing its channel, and kills the
// sandbox if it has not ended within grace.
func (in *Interpreter) Close(ctx context.Context, grace time.Duration) error {
	in.sb.Stdin().Close()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-in.dead:
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	return in.Kill(ctx)
}

// readLoop dispatches frames until the channel ends, then marks the
// interpreter dead. A protocol violation kills the sandbox: nothing it sends
// afterwards can be trusted.
func (in *Interpreter) readLoop(r *wire.Reader, ready chan<- *wire.Ready) {
	var loopErr error
	for {
		f, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				loopErr = fmt.Errorf("reading from sandbox: %w", err)
			}
			break
		}
		if err := in.dispatch(f, ready); err != nil {
			loopErr = err
			break
		}
	}
	if loopErr != nil {
		in.log.Warn("sandbox protocol error; killing it", "error", loopErr)
		in.sb.Kill(context.Background())
	}
	exit, werr := in.sb.Wait(context.Background())
	closeReader(in.sb.Stdout()) // drained: release the descriptor now, not at GC
	in.cancel()
	in.mu.Lock()
	in.exit = exit
	in.deadErr = errors.Join(loopErr, werr)
	if in.deadErr == nil {
		in.deadErr = fmt.Errorf("sandbox %s", exit)
	}
	c := in.cell
	in.cell = nil
	close(in.dead)
	in.mu.Unlock()
	if c != nil {
		c.result = CellResult{Died: true, Exit: exit, Error: in.deadErr.Error()}
		c.cancel()
		close(c.done)
	}
	in.log.Debug("interpreter ended", "exit", exit.String(), "error", loopErr)
}

func (in *Interpreter) dispatch(f wire.Frame, ready chan<- *wire.Ready) error {
	switch f.Kind {
	case wire.KindStdout, wire.KindStderr:
		stream := Stdout
		if f.Kind == wire.KindStderr {
			stream = Stderr
		}
		in.mu.Lock()
		c := in.cell
		if c == nil {
			// Background output between cells: keep a bounded amount for the next cell.
			if len(in.orphan) < 64<<10 {
				in.orphan = append(in.orphan, f.Payload[:min(len(f.Payload), 64<<10-len(in.orphan))]...)
			}
		}
		in.mu.Unlock()
		if c != nil && c.output != nil {
			c.output(stream, f.Payload)
		}
		return nil
	}
	msg, err := wire.DecodeSandboxMessage(f.Payload)
	if err != nil {
		return err
	}
	switch m := msg.(type) {
	case *wire.Ready:
		select {
		case ready <- m:
		default:
			return errors.New("sandbox sent a second ready message")
		}
	case *wire.Done:
		in.mu.Lock()
		c := in.cell
		if c == nil || c.id != m.ID {
			in.mu.Unlock()
			if in.adopted {
				// A cell of the process this one took over from.
				in.log.Debug("done for a cell of the previous connection", "cell", m.ID)
				return nil
			}
			return fmt.Errorf("done for unknown cell %d", m.ID)
		}
		in.cell = nil
		in.mu.Unlock()
		c.result = CellResult{Status: m.Status, ExitCode: m.ExitCode, Error: m.Error}
		c.cancel()
		close(c.done)
	case *wire.Pong:
		in.mu.Lock()
		ch := in.pings[m.ID]
		delete(in.pings, m.ID)
		in.mu.Unlock()
		if ch != nil {
			close(ch)
		}
	case *wire.RPC:
		ctx := in.rpcContext()
		// At most maxInFlightRPCs are answered at once; past that the read
		// loop waits, so the sandbox's writes block instead of the host
		// piling up goroutines and replies for a flood of requests.
		select {
		case in.rpcSlots <- struct{}{}:
		case <-in.ctx.Done(): // being killed
			return nil
		}
		go func() {
			defer func() { <-in.rpcSlots }()
			in.answer(ctx, m, in.w)
		}()
	}
	return nil
}

// rpcContext is the context of an RPC arriving now: the running cell's,
// else the interpreter's.
func (in *Interpreter) rpcContext() context.Context {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cell != nil {
		return in.cell.ctx
	}
	return in.ctx
}

// directLoop answers the RPCs of the direct pipes (sandbox.Direct) on this
// goroutine, one after the other: they come from the one runtime thread at
// a time that waits for its answer, so none waits behind another. Anything
// but an RPC there is a protocol violation, which kills the sandbox.
func (in *Interpreter) directLoop(r *wire.Reader, requests io.Reader) {
	defer closeReader(requests)
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return // the sandbox has ended
		}
		var m *wire.RPC
		if err == nil {
			m, err = directRPC(f)
		}
		if err != nil {
			if in.ctx.Err() == nil {
				in.log.Warn("sandbox protocol error on its direct pipe; killing it", "error", err)
				in.abort(context.Background())
			}
			return
		}
		in.answer(in.rpcContext(), m, in.replies)
	}
}

func directRPC(f wire.Frame) (*wire.RPC, error) {
	if f.Kind != wire.KindMessage {
		return nil, fmt.Errorf("frame of kind %q on the direct pipe", f.Kind)
	}
	return wire.DecodeRPC(f.Payload)
}

// answer runs an RPC's handler and writes its result to w.
func (in *Interpreter) answer(ctx context.Context, m *wire.RPC, w *wire.Writer) {
	res := wire.RPCResult{Type: wire.TypeRPCResult, ID: m.ID}
	if in.rpc == nil {
		res.Error = &wire.RPCError{Kind: "unavailable", Message: "no RPC handler for " + m.Method}
	} else {
		var rerr *wire.RPCError
		res.Result, rerr = in.rpc(ctx, m.Method, m.Params)
		res.Error = rerr
	}
	res.OK = res.Error == nil
	if err := in.sendOn(w, res); err != nil {
		in.log.Debug("rpc reply not delivered", "method", m.Method, "error", err)
	}
}

// diagnosticsBudget bounds what one sandbox may write into codemode's log:
// its stderr is reachable by the sandboxed code, which must not be able to
// flood the host's log.
const diagnosticsBudget = 64 << 10

// logDiagnostics forwards the sandbox's own stderr (runtime crashes, setup
// messages) to the log, line by line, up to diagnosticsBudget bytes.
func (in *Interpreter) logDiagnostics() {
	sc := bufio.NewScanner(in.sb.Stderr())
	sc.Buffer(make([]byte, 4096), 64<<10)
	logged, dropped := 0, 0
	for sc.Scan() {
		if logged += len(sc.Bytes()); logged > diagnosticsBudget {
			if dropped == 0 {
				in.log.Warn("sandbox diagnostics over budget; dropping the rest", "budget", diagnosticsBudget)
			}
			dropped += len(sc.Bytes())
			continue
		}
		in.log.Warn("sandbox diagnostics", "line", sc.Text())
	}
	n, _ := io.Copy(io.Discard, in.sb.Stderr()) // a line over the scanner's limit ends the scan early
	if dropped += int(n); dropped > 0 {
		in.log.Warn("sandbox diagnostics dropped", "bytes", dropped)
	}
	closeReader(in.sb.Stderr())
}

func closeReader(r io.Reader) {
	if c, ok := r.(io.Closer); ok {
		c.Close()
	}
}
