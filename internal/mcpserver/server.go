// Package mcpserver is codemode's MCP surface on the official Go SDK: the
// run_python tool, the capabilities resource, who owns a session (the
// principal, or one connection for its default session), session handles
// for sessionless clients, and request ids. It turns tool calls into executor requests and
// executor results into MCP results (via render).
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/codemode/codemode/internal/artifacts"
	"github.com/codemode/codemode/internal/executor"
	"github.com/codemode/codemode/internal/obs"
	"github.com/codemode/codemode/internal/peer"
	"github.com/codemode/codemode/internal/render"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Server.
type Options struct {
	Executor       *executor.Manager
	Version        string
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	OutputMode     func() string // read per call, like the reference's MCP_BRIDGE_OUTPUT_MODE
	TOON           render.TOONEncoder
	Manual         func() string // the capabilities document as it stands now
	// Artifacts serves the files sessions publish (nil: none).
	Artifacts *artifacts.Store
	// MaxClientCalls bounds the concurrent calls of one client (token); 0 = none.
	MaxClientCalls int
	// InputWait is how long a call that asked its client a question (in
	// its result) keeps its outcome for the client to come back (default 3m).
	InputWait time.Duration
	// Observer traces and measures run_python calls (nil: none).
	Observer Observer
	// Egress: sandboxes reach allow-listed hosts (the tool description
	// must not say "no network").
	Egress bool
	Logger *slog.Logger
}

// Server is the MCP server.
type Server struct {
	opts Options
	log  *slog.Logger
	mcp  *mcp.Server

	mu     sync.Mutex
	owners map[*mcp.ServerSession]string // connections with a default session
	nextID atomic.Uint64
	calls  *clientLimits

	pending pendingRuns
}

// New builds the server and registers its tool and resource.
func New(opts Options) *Server {
	s := &Server{opts: opts, log: opts.Logger, owners: map[*mcp.ServerSession]string{},
		calls: &clientLimits{max: opts.MaxClientCalls, active: map[string]int{}}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.opts.InputWait <= 0 {
		s.opts.InputWait = 3 * time.Minute
	}
	if s.opts.Manual == nil {
		s.opts.Manual = func() string { return "" }
	}
	if s.opts.OutputMode == nil {
		s.opts.OutputMode = func() string { return "compact" }
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "codemode", Title: "codemode", Version: opts.Version}, &mcp.ServerOptions{
		// The SDK narrates every connection at info level; keep that for debugging.
		Logger: sdkLogger(s.log),
		// No logging capability (the SDK's default): codemode logs to stderr.
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: false},
			Resources: &mcp.ResourceCapabilities{ListChanged: false, Subscribe: false},
		},
	})
	s.mcp.AddReceivingMiddleware(s.requestIDs)
	s.mcp.AddTool(&mcp.Tool{
		Name:        ToolName,
		Description: description(opts.Egress),
		InputSchema: json.RawMessage(inputSchema(int(opts.DefaultTimeout/time.Second), int(opts.MaxTimeout/time.Second))),
	}, s.observed(s.runPython))
	s.mcp.AddResource(&mcp.Resource{
		URI:         CapabilitiesURI,
		Name:        capabilitiesName,
		Title:       "Code Execution Sandbox Helpers",
		Description: "Capability overview, helper reference, and sandbox usage notes (call runtime.capability_summary() inside the sandbox for this text).",
		MIMEType:    capabilitiesMIME,
	}, s.readCapabilities)
	if opts.Artifacts != nil {
		s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
			URITemplate: artifacts.URIPrefix + "{session}/files/{+name}",
			Name:        "session-file",
			Title:       "Files published by run_python code",
			Description: "Files code wrote to /workspace/out or passed to publish(), and full copies of cut output; readable while the session lives.",
		}, s.readSessionFile)
	}
	return s
}

func (s *Server) readSessionFile(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	// The file is the principal's (a named session or handle) or the
	// connection's (its default session).
	f, data, err := s.opts.Artifacts.Read(principalOwner(principal(req.Extra)), req.Params.URI)
	if errors.Is(err, artifacts.ErrNotFound) && !connectionless(req.Session, req.Extra) {
		f, data, err = s.opts.Artifacts.Read(s.connOwner(req.Session), req.Params.URI)
	}
	if err != nil {
		if errors.Is(err, artifacts.ErrNotFound) {
			return nil, mcp.ResourceNotFoundError(req.Params.URI)
		}
		return nil, err
	}
	c := &mcp.ResourceContents{URI: f.URI, MIMEType: f.MIMEType}
	if strings.HasPrefix(f.MIMEType, "text/") || strings.HasSuffix(f.MIMEType, "json") || utf8.Valid(data) && !strings.HasPrefix(f.MIMEType, "image/") {
		c.Text = string(data)
	} else {
		c.Blob = data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// MCP returns the underlying SDK server (for transports).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// RunStdio serves one client on stdin/stdout until it disconnects or ctx ends.
func (s *Server) RunStdio(ctx context.Context) error {
	err := s.mcp.Run(ctx, &mcp.StdioTransport{})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// requestIDs tags every request's context with an id that log records carry.
func (s *Server) requestIDs(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx, _ = obs.WithRequestID(ctx)
		start := time.Now()
		res, err := next(ctx, method, req)
		s.log.DebugContext(ctx, "request", "method", method, "duration", time.Since(start), "error", err)
		return res, err
	}
}

func (s *Server) runPython(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params != nil && req.Params.RequestState != "" {
		// The client answers a running call's questions.
		return s.resumePending(ctx, principal(req.Extra), req.Params)
	}
	var raw jsontext.Value
	if req.Params != nil {
		raw = jsontext.Value(req.Params.Arguments)
	}
	maxSecs := int(s.opts.MaxTimeout / time.Second)
	a, err := parseArgs(raw, maxSecs)
	if err == nil && a.Close && a.Session == "" && strings.TrimSpace(a.Code) == "" && connectionless(req.Session, req.Extra) {
		// A sessionless request has no default session: without a name or
		// handle there is nothing to close.
		err = validationError("'close' needs 'session': the name or handle of the session to close")
	}
	var res *executor.Result
	if err != nil {
		res = &executor.Result{Status: executor.StatusValidationError, Error: err.Error()}
	} else {
		start := time.Now()
		client := principal(req.Extra)
		if !s.calls.acquire(client) {
			res = &executor.Result{Status: executor.StatusError, Error: fmt.Sprintf("too many concurrent calls for client %s (limit %d); retry when one finishes", client, s.opts.MaxClientCalls)}
			return s.toolResult(res), nil
		}
		defer s.calls.release(client)
		who := peer.FromSession(req.Session, client)
		if req.Extra != nil && req.Extra.TokenInfo != nil {
			who.Claims, _ = req.Extra.TokenInfo.Extra["claims"].(map[string]any)
		}
		execute := func(ctx context.Context, elicit func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)) *executor.Result {
			if elicit != nil {
				who.Elicit = elicit
			}
			report := progressReporter(ctx, req)
			var finished atomic.Bool
			if report != nil {
				// Nested calls' progress counts as the code's own, until
				// the run has its result.
				who.Progress = func(progress, total float64, message string) {
					if !finished.Load() {
						report(executor.ProgressUpdate{Progress: progress, Total: total, Message: message, FromCode: true, Relayed: true})
					}
				}
			}
			ctx = peer.With(ctx, who)
			defer finished.Store(true)
			t := s.target(req, a.Session, client)
			res := s.opts.Executor.Run(ctx, executor.Request{
				Owner: t.owner, Session: t.name, Existing: t.existing, Evictable: t.minted, Lasting: t.lasting(), Close: a.Close, Code: a.Code,
				Timeout: a.Timeout, Reset: a.Reset, Servers: a.Servers, Files: a.Files,
				Principal: client, Progress: report,
			})
			s.settleMinted(ctx, t, res)
			return res
		}
		if canAsk, inResult := peer.Asking(req.Session); canAsk && inResult {
			// Questions travel in results: the call may return before the
			// code ends, and the client comes back with the answers.
			var final *executor.Result
			out, err := s.startPending(ctx, client, func(ctx context.Context, elicit func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)) *mcp.CallToolResult {
				final = execute(ctx, elicit)
				s.logRun(ctx, client, a.Code, final, start)
				return s.toolResult(final)
			})
			return out, err
		}
		res = execute(ctx, nil)
		s.logRun(ctx, client, a.Code, res, start)
	}
	return s.toolResult(res), nil
}

func (s *Server) logRun(ctx context.Context, client, code string, res *executor.Result, start time.Time) {
	s.log.InfoContext(ctx, "run_python", "client", client, "session", res.Session, "status", res.Status,
		"code_bytes", len(code), "stdout_bytes", res.Stdout.Total, "stderr_bytes", res.Stderr.Total,
		"tool_calls", res.ToolCalls, "duration", time.Since(start))
}

func (s *Server) toolResult(res *executor.Result) *mcp.CallToolResult {
	res.Finish()
	content := []mcp.Content{&mcp.TextContent{Text: render.Text(res, s.opts.OutputMode(), s.opts.TOON)}}
	for _, img := range res.Images {
		content = append(content, &mcp.ImageContent{MIMEType: img.MIMEType, Data: img.Data})
	}
	for _, f := range res.Files {
		content = append(content, &mcp.ResourceLink{URI: f.URI, Name: f.Name, MIMEType: f.MIMEType, Size: &f.Size, Description: f.Description})
	}
	return &mcp.CallToolResult{
		Content:           content,
		StructuredContent: render.ToStructured(res),
		IsError:           res.Status != executor.StatusSuccess,
	}
}

// progressReporter sends notifications/progress when the client asked for
// them (it sent a progress token). Progress values must increase: elapsed
// seconds are reported until the code reports its own progress, whose values
// are passed on only when they grow; a nested call's relayed report counts
// one step.
func progressReporter(ctx context.Context, req *mcp.CallToolRequest) func(executor.ProgressUpdate) {
	if req.Params == nil || req.Session == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	var mu sync.Mutex
	var last float64
	fromCode := false
	return func(u executor.ProgressUpdate) {
		mu.Lock()
		defer mu.Unlock()
		if u.FromCode {
			fromCode = true
		} else if fromCode {
			return // the elapsed-time ticker yields to the code's own reports
		}
		if u.Relayed {
			// One step of the run per report: progress must increase.
			u.Progress, u.Total = last+1, 0
		}
		if u.Progress <= last {
			return
		}
		last = u.Progress
		req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: u.Progress, Total: u.Total, Message: u.Message})
	}
}

func (s *Server) readCapabilities(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if req.Params.URI != CapabilitiesURI {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: CapabilitiesURI, MIMEType: capabilitiesMIME, Text: s.opts.Manual(),
	}}}, nil
}

func sdkLogger(l *slog.Logger) *slog.Logger {
	l = l.With("component", "mcp")
	if l.Enabled(context.Background(), slog.LevelDebug) {
		return l
	}
	return obs.AtLeast(l, slog.LevelWarn)
}
