package downstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codemode/codemode/internal/peer"
	"github.com/codemode/codemode/internal/pipe"
	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/codemode/codemode/internal/signin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// selfNames are serverInfo names of codemode and of the reference bridge.
var selfNames = map[string]bool{"codemode": true, "mcp-server-code-execution-mode": true}

// server is one configured server and its (re)started session.
type server struct {
	pool *Pool
	cfg  serverconfig.Server
	log  *slog.Logger
	// relay passes the server's questions and progress to the client of
	// the run_python call that made the nested call.
	relay *relay

	mu       sync.Mutex
	conn     *connection   // nil when not running
	starting chan struct{} // non-nil while a start is in flight
	lastErr  error
	failures int // consecutive failed starts or crashes
	retryAt  time.Time
	tools    []*mcp.Tool
	toolsOK  bool
	dropped  string // why the server may not be used at all
	stopped  bool
	about    string // what the server said of itself at its last start
	signIns  int    // sign-ins completed through a client

	signInMu sync.Mutex // one sign-in through a client at a time
}

// connection is one live session with its process (stdio servers).
type connection struct {
	cs     *mcp.ClientSession
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has been reaped
	stderr *stderrLog
	// lane carries tool calls beside the SDK (stdio servers whose protocol
	// it can speak; see stdioConn); nil sends them through the SDK.
	lane *stdioConn
}

// laneProtocol is the first protocol whose requests carry per-request
// _meta (SEP-2575) and whose results may ask for input (multi-round-trip).
const laneProtocol = "2026-07-28"

// useLane decides, once the session is up, whether tool calls take the
// lane: on older protocols always, on newer ones once the SDK has shown
// the per-request _meta to send.
func (c *connection) useLane(conn *stdioConn) {
	if conn == nil {
		return
	}
	if c.cs.InitializeResult().ProtocolVersion < laneProtocol || conn.knowsMeta() {
		c.lane = conn
	}
}

func backoff(failures int) time.Duration {
	if failures <= 1 {
		return 0 // the first restart is immediate
	}
	d := 500 * time.Millisecond << min(failures-2, 6)
	return min(d, 30*time.Second)
}

// session returns the live session, starting the server if needed.
func (s *server) session(ctx context.Context) (*connection, error) {
	for {
		s.mu.Lock()
		switch {
		case s.dropped != "":
			err := s.selfError()
			s.mu.Unlock()
			return nil, err
		case s.stopped:
			s.mu.Unlock()
			return nil, &Error{Server: s.cfg.Name, Kind: "closed", Err: ErrClosed}
		case s.conn != nil:
			c := s.conn
			s.mu.Unlock()
			return c, nil
		case s.starting != nil:
			ch := s.starting
			s.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, &Error{Server: s.cfg.Name, Kind: "cancelled", Err: fmt.Errorf("waiting for server %s to start: %w", s.cfg.Name, ctx.Err())}
			}
			s.mu.Lock()
			c, err := s.conn, s.lastErr
			s.mu.Unlock()
			if c == nil && err != nil {
				// The start we waited for failed: report why, not the backoff.
				var e *Error
				if errors.As(err, &e) {
					return nil, e
				}
				return nil, &Error{Server: s.cfg.Name, Kind: "start", Err: err}
			}
			continue
		case time.Now().Before(s.retryAt):
			err := &Error{Server: s.cfg.Name, Kind: "start", Err: fmt.Errorf("server %s is unavailable (%v); next start attempt in %s",
				s.cfg.Name, s.lastErr, time.Until(s.retryAt).Round(100*time.Millisecond))}
			s.mu.Unlock()
			return nil, err
		}
		ch := make(chan struct{})
		s.starting = ch
		s.mu.Unlock()
		// The start belongs to the server, not to the caller that happened
		// to trigger it: other callers may be waiting for it too.
		go s.start(ch)
	}
}

// selfError reports a server dropped by the self-reference guard.
// Preconditions: s.mu is held.
func (s *server) selfError() *Error {
	return &Error{Server: s.cfg.Name, Kind: "self", Err: fmt.Errorf("%w: server %s: %s", ErrSelfServer, s.cfg.Name, s.dropped)}
}

func (s *server) start(done chan struct{}) {
	timeout := s.pool.opts.StartTimeout
	if s.cfg.StartupTimeout > 0 {
		timeout = s.cfg.StartupTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	t0 := time.Now()
	c, tools, err := s.connect(ctx)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("server %s did not start within %s: %w", s.cfg.Name, timeout, err)
	}
	if err == nil {
		s.pool.toolsLoaded(s.cfg.Name, tools) // before the waiters wake
	}
	s.mu.Lock()
	defer func() {
		s.starting = nil
		close(done)
		s.mu.Unlock()
	}()
	if err == nil && s.stopped {
		err = ErrClosed
	}
	var need *signin.RequiredError
	if errors.As(err, &need) {
		// Not a failure of the server: it starts as soon as the user signs in.
		s.lastErr = &Error{Server: s.cfg.Name, Kind: "auth_required", Err: need}
		s.log.Info("MCP server requires sign-in", "reason", need.Reason)
		return
	}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || e.Kind != "self" {
			s.failures++
			s.retryAt = time.Now().Add(backoff(s.failures + 1))
		}
		s.lastErr = err
		s.log.Warn("MCP server failed to start", "error", err, "failures", s.failures)
		return
	}
	s.conn, s.failures, s.lastErr = c, 0, nil
	s.tools, s.toolsOK = tools, true
	s.log.Info("MCP server started", "tools", len(tools), "duration", time.Since(t0),
		"server_info", c.cs.InitializeResult().ServerInfo.Name)
	go s.watch(c)
}

// connect starts the process (for stdio), initializes and lists tools.
func (s *server) connect(ctx context.Context) (_ *connection, _ []*mcp.Tool, err error) {
	c := &connection{}
	var transport mcp.Transport
	var stdio *stdioConn
	switch s.cfg.Transport {
	case serverconfig.TransportStdio, "":
		conn, err := s.startProcess(c)
		if err != nil {
			return nil, nil, err
		}
		stdio, transport = conn, stdioTransport{conn}
	case serverconfig.TransportHTTP:
		t := &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient()}
		if s.pool.opts.SignIn != nil {
			t.OAuthHandler = signin.NewHandler(s.cfg.Name, s.pool.opts.SignIn, nil)
		}
		transport = t
	case serverconfig.TransportSSE:
		client := s.httpClient()
		if s.pool.opts.SignIn != nil {
			var base http.RoundTripper
			if client != nil {
				base = client.Transport
			}
			client = &http.Client{Transport: &signin.Transport{Base: base, Handler: signin.NewHandler(s.cfg.Name, s.pool.opts.SignIn, nil)}}
		}
		transport = outliving{&mcp.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: client}}
	default:
		return nil, nil, fmt.Errorf("server %s: unsupported transport %q", s.cfg.Name, s.cfg.Transport)
	}
	defer func() {
		if err != nil {
			if c.stderr != nil {
				if tail := c.stderr.tail(); tail != "" {
					err = fmt.Errorf("%w (stderr: %s)", err, tail)
				}
			}
			s.closeConnection(c)
		}
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: s.pool.opts.ClientName, Version: s.pool.opts.ClientVersion}, &mcp.ClientOptions{
		Logger:                 slog.New(slog.DiscardHandler),
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { go s.refreshAfterChange() },
		Capabilities: &mcp.ClientCapabilities{
			// The SDK's default, kept: setting Capabilities would drop it.
			//lint:ignore SA1019 servers of older protocols still read roots
			RootsV2:     &mcp.RootCapabilities{ListChanged: true},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		},
		ElicitationHandler:          s.relay.elicit,
		ElicitationCompleteHandler:  s.relay.complete,
		ProgressNotificationHandler: s.relay.progress,
		//lint:ignore SA1019 servers of older protocols still log this way
		LoggingMessageHandler: s.relay.logMessage,
	})
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("server %s: initialize: %w", s.cfg.Name, err)
	}
	c.cs = cs
	about := describeSelf(cs.InitializeResult())
	s.mu.Lock()
	s.about = about
	s.mu.Unlock()
	if info := cs.InitializeResult().ServerInfo; info != nil && selfNames[strings.ToLower(info.Name)] && !s.pool.opts.AllowSelf {
		s.mu.Lock()
		s.dropped = fmt.Sprintf("its serverInfo is %q: codemode must not call itself (set MCP_BRIDGE_ALLOW_SELF_SERVER=1 to allow)", info.Name)
		err := s.selfError()
		s.mu.Unlock()
		return nil, nil, err
	}
	tools, err := listTools(ctx, cs)
	if err != nil {
		return nil, nil, fmt.Errorf("server %s: tools/list: %w", s.cfg.Name, err)
	}
	c.useLane(stdio) // after tools/list, which shows the SDK's _meta
	return c, s.filter(tools), nil
}

func (s *server) startProcess(c *connection) (*stdioConn, error) {
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Env = ChildEnv(s.pool.opts.BaseEnv, s.cfg.Env)
	cmd.Dir = s.cfg.Cwd
	// A group of its own, so shutdown reaches what the server starts (npx
	// runs node as a grandchild).
	cmd.SysProcAttr = childProcAttr()
	c.stderr = &stderrLog{log: s.log}
	cmd.Stderr = c.stderr
	// The server's stdin and stdout carry every call (package pipe); its
	// stdout is read through the poller, whose deadlines stop a lane call's
	// read when its call ends (stdioConn).
	stdinR, stdinW, err := pipe.New()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return nil, err
	}
	stdin, stdout, err := pipe.Ends(stdinW, stdoutR)
	if err != nil {
		stdinR.Close()
		stdoutW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = stdinR, stdoutW
	err = cmd.Start()
	stdinR.Close() // the server's copies are its own now
	stdoutW.Close()
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, fmt.Errorf("server %s: starting %s: %w", s.cfg.Name, s.cfg.Command, err)
	}
	c.cmd = cmd
	c.exited = make(chan struct{})
	go func() {
		cmd.Wait()
		close(c.exited)
	}()
	return newStdioConn(stdin, stdout, s.pool.opts.MaxMessageBytes), nil
}

func (s *server) httpClient() *http.Client {
	return &http.Client{Transport: traceTransport{headerTransport{base: http.DefaultTransport, headers: s.cfg.Headers}}}
}

// outliving connects its transport with a context that ends with the
// start only while connecting: the SSE transport's event stream lives as
// long as the context its Connect was given, and the start's ends when the
// start does.
type outliving struct{ mcp.Transport }

func (o outliving) Connect(ctx context.Context) (mcp.Connection, error) {
	live, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	conn, err := o.Transport.Connect(live)
	if !stop() || err != nil {
		cancel()
		if err == nil {
			conn.Close()
			err = ctx.Err()
		}
		return nil, err
	}
	return conn, nil
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// filter applies the server's include/exclude tool lists.
func (s *server) filter(tools []*mcp.Tool) []*mcp.Tool {
	if len(s.cfg.IncludeTools) == 0 && len(s.cfg.ExcludeTools) == 0 {
		return tools
	}
	in := map[string]bool{}
	for _, n := range s.cfg.IncludeTools {
		in[n] = true
	}
	out := tools[:0:0]
	for _, t := range tools {
		if (len(in) > 0 && !in[t.Name]) || contains(s.cfg.ExcludeTools, t.Name) {
			continue
		}
		out = append(out, t)
	}
	return out
}

func (s *server) allowed(tool string) bool {
	if contains(s.cfg.ExcludeTools, tool) {
		return false
	}
	return len(s.cfg.IncludeTools) == 0 || contains(s.cfg.IncludeTools, tool)
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var all []*mcp.Tool
	params := &mcp.ListToolsParams{}
	for page := 0; page < 1000; page++ {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		all = append(all, res.Tools...)
		if res.NextCursor == "" {
			return all, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	return nil, errors.New("tools/list did not end after 1000 pages")
}

// watch notices the end of a session (crash, exit, closed connection).
func (s *server) watch(c *connection) {
	err := c.cs.Wait()
	s.mu.Lock()
	current := s.conn == c
	if current {
		s.conn = nil
		s.failures++
		s.retryAt = time.Now().Add(backoff(s.failures))
		s.lastErr = fmt.Errorf("server %s exited", s.cfg.Name)
		if tail := c.stderr.tail(); tail != "" {
			s.lastErr = fmt.Errorf("server %s exited (stderr: %s)", s.cfg.Name, tail)
		}
	}
	stopped, failures := s.stopped, s.failures
	s.mu.Unlock()
	if current && !stopped {
		s.log.Warn("MCP server ended; it restarts on next use", "error", err, "failures", failures)
		if s.pool.opts.Ended != nil {
			s.pool.opts.Ended(s.cfg.Name)
		}
	}
	s.closeConnection(c)
}

// closeConnection ends a session and its process: close the session (and
// with it the child's stdin), then SIGTERM, then SIGKILL to the process
// group, each step bounded.
func (s *server) closeConnection(c *connection) {
	step := s.pool.opts.ShutdownStep
	if c.cs != nil {
		closed := make(chan struct{})
		go func() { c.cs.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(step):
		}
	}
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	pgid := c.cmd.Process.Pid
	for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
		if sig != 0 {
			syscall.Kill(-pgid, sig)
		}
		select {
		case <-c.exited:
			// The leader is gone; make sure nothing of its group lingers.
			syscall.Kill(-pgid, syscall.SIGKILL)
			return
		case <-time.After(step):
		}
	}
}

func (s *server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil
}

func (s *server) state() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.dropped != "":
		return "dropped: " + s.dropped
	case s.starting != nil:
		return "starting"
	case s.conn != nil:
		return fmt.Sprintf("running (%d tools)", len(s.tools))
	case s.lastErr != nil:
		var need *signin.RequiredError
		if errors.As(s.lastErr, &need) {
			return "sign-in required: " + need.Error()
		}
		return "failed: " + s.lastErr.Error()
	}
	return "stopped"
}

func (s *server) toolList(ctx context.Context, live bool) ([]*mcp.Tool, error) {
	if !live {
		s.mu.Lock()
		if s.toolsOK {
			tools := s.tools
			s.mu.Unlock()
			return tools, nil
		}
		s.mu.Unlock()
	}
	c, err := s.session(ctx)
	if needsSignIn(err) && s.signInThroughClient(ctx) {
		c, err = s.session(ctx)
	}
	if err != nil {
		return nil, err
	}
	if !live {
		s.mu.Lock()
		tools := s.tools
		s.mu.Unlock()
		return tools, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.pool.opts.StartTimeout)
	defer cancel()
	tools, err := listTools(ctx, c.cs)
	if err != nil {
		return nil, s.callError("", ctx, err)
	}
	tools = s.filter(tools)
	s.setTools(tools)
	return tools, nil
}

func (s *server) setTools(tools []*mcp.Tool) {
	s.mu.Lock()
	s.tools, s.toolsOK = tools, true
	s.mu.Unlock()
	s.pool.toolsLoaded(s.cfg.Name, tools)
}

func (s *server) refreshAfterChange() {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.pool.opts.StartTimeout)
	defer cancel()
	tools, err := listTools(ctx, c.cs)
	if err != nil {
		s.log.Warn("refreshing tools after list_changed", "error", err)
		return
	}
	s.log.Info("tool list changed", "tools", len(tools))
	s.setTools(s.filter(tools))
}

func (s *server) call(ctx context.Context, tool string, args any) (Result, error) {
	if !s.allowed(tool) {
		return Result{}, &Error{Server: s.cfg.Name, Tool: tool, Kind: "unknown_tool",
			Err: fmt.Errorf("tool %s of server %s is excluded by the configuration", tool, s.cfg.Name)}
	}
	res, err := s.callOnce(ctx, tool, args)
	if needsSignIn(err) && s.signInThroughClient(ctx) {
		res, err = s.callOnce(ctx, tool, args)
	}
	return res, err
}

func (s *server) callOnce(ctx context.Context, tool string, args any) (Result, error) {
	c, err := s.session(ctx)
	if err != nil {
		return Result{}, err
	}
	timeout := s.pool.opts.CallTimeout
	if s.cfg.ToolTimeout > 0 {
		timeout = s.cfg.ToolTimeout
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	meta := traceMeta(ctx)
	who := peer.From(ctx)
	token, end := s.relay.begin(who, tool)
	defer end()
	if who != nil && who.Progress != nil {
		if meta == nil {
			meta = map[string]string{}
		}
		meta["progressToken"] = token
	}
	res, err := s.send(callCtx, c, tool, args, meta)
	if err != nil {
		e := s.callError(tool, callCtx, err)
		if e.Kind == "timeout" {
			e.Err = fmt.Errorf("tool %s of server %s did not answer within %s", tool, s.cfg.Name, timeout)
		}
		return Result{}, e
	}
	return res, nil
}

// send makes the call on the lane where the connection has one, else
// through the SDK. A lane result that asks for input (multi-round-trip,
// protocol 2026-07-28) is the SDK's to handle: the call goes again through
// it, which the protocol allows (the server has done nothing yet).
func (s *server) send(ctx context.Context, c *connection, tool string, args any, meta map[string]string) (Result, error) {
	if c.lane != nil {
		res, err := c.lane.callTool(ctx, tool, args, meta)
		if err != nil || !res.needsInput() {
			return res, err
		}
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if len(meta) > 0 {
		params.Meta = mcp.Meta{}
		for k, v := range meta {
			params.Meta[k] = v
		}
	}
	res, err := c.cs.CallTool(ctx, params)
	if err != nil {
		return Result{}, err
	}
	return fromSDK(res)
}

// callError classifies a failed request.
func (s *server) callError(tool string, ctx context.Context, err error) *Error {
	e := &Error{Server: s.cfg.Name, Tool: tool, Kind: "transport", Err: err}
	var need *signin.RequiredError
	switch {
	case errors.As(err, &need):
		e.Kind, e.Err = "auth_required", need
	case errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) || !s.isCurrent(err):
		e.Kind = "crashed"
		e.Err = fmt.Errorf("server %s closed the connection during the call", s.cfg.Name)
	case ctx.Err() == context.DeadlineExceeded:
		e.Kind = "timeout"
	case ctx.Err() != nil:
		e.Kind = "cancelled"
	}
	return e
}

// isCurrent reports whether the server still has a live session; a call
// that failed while its server went away failed because of that.
func (s *server) isCurrent(error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil
}

func (s *server) stop() {
	s.mu.Lock()
	s.stopped = true
	c := s.conn
	s.conn = nil
	ch := s.starting
	s.mu.Unlock()
	if ch != nil {
		<-ch
		s.mu.Lock()
		c = s.conn
		s.conn = nil
		s.mu.Unlock()
	}
	if c != nil {
		s.closeConnection(c)
	}
}

// stderrLog sends a child's stderr to the log line by line and keeps the
// last lines for error messages.
type stderrLog struct {
	log  *slog.Logger
	mu   sync.Mutex
	buf  []byte
	last []string
}

func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) > 4096 {
				w.emit(string(w.buf))
				w.buf = w.buf[:0]
			}
			return len(p), nil
		}
		w.emit(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

func (w *stderrLog) emit(line string) {
	line = strings.TrimRight(line, "\r")
	if len(line) > 2048 {
		line = line[:2048] + "…"
	}
	if line == "" {
		return
	}
	w.log.Info("server stderr", "line", line)
	w.last = append(w.last, line)
	if len(w.last) > 3 {
		w.last = w.last[1:]
	}
}

func (w *stderrLog) tail() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.last, " | ")
}

// describeSelf is a server's own short description: the first paragraph of
// its instructions, else its title or name and version.
func describeSelf(res *mcp.InitializeResult) string {
	if res == nil {
		return ""
	}
	if text := strings.TrimSpace(res.Instructions); text != "" {
		text, _, _ = strings.Cut(text, "\n\n")
		text = strings.Join(strings.Fields(text), " ")
		if r := []rune(text); len(r) > 300 {
			text = string(r[:299]) + "…"
		}
		return text
	}
	info := res.ServerInfo
	if info == nil {
		return ""
	}
	name := info.Title
	if name == "" {
		name = info.Name
	}
	return strings.TrimSpace(name + " " + info.Version)
}
