package executor

import (
	"context"
	"encoding/base64"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode/codemode/internal/artifacts"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/interpreter"
	"github.com/codemode/codemode/internal/wire"
	"github.com/go-json-experiment/json/jsontext"
)

// callState collects what one running call produces besides output.
type callState struct {
	// values is the run_python request's context: handlers of the code's
	// requests see its values (request id, the client) but not its
	// cancellation, which the cell's own context carries.
	values context.Context
	mu     sync.Mutex
	// A call waiting for a human has its timeout clock stopped.
	paused      int           // guarded by mu
	pausedSince time.Time     // guarded by mu
	pausedTotal time.Duration // guarded by mu
	images      []artifacts.Image
	files       []File
	progress    func(ProgressUpdate)
	toolCalls   atomic.Int64 // call_tool requests the code made
}

// pause stops the call's timeout clock until the returned func is called.
func (c *callState) pause() func() {
	c.mu.Lock()
	if c.paused == 0 {
		c.pausedSince = time.Now()
	}
	c.paused++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.paused--
			if c.paused == 0 {
				c.pausedTotal += time.Since(c.pausedSince)
			}
		})
	}
}

// pausedFor is how long the clock has been stopped so far, and whether it
// is stopped now.
func (c *callState) pausedFor(now time.Time) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused > 0 {
		return c.pausedTotal + now.Sub(c.pausedSince), true
	}
	return c.pausedTotal, false
}

func (c *callState) addImage(img artifacts.Image) {
	c.mu.Lock()
	c.images = append(c.images, img)
	c.mu.Unlock()
}

func (c *callState) addFile(f File) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, old := range c.files {
		if old.URI == f.URI {
			c.files[i] = f // written twice in one call: report it once
			return
		}
	}
	c.files = append(c.files, f)
}

// Router answers what a session's code asks of the host (a *hostrpc.Mux,
// filled by app).
type Router interface {
	Serve(ctx context.Context, req *hostrpc.Request) (jsontext.Value, *wire.RPCError)
}

// scopeKey carries the session a request came from to the executor's own
// handlers, which need its running call.
type scopeKey struct{}

type scope struct {
	s         *session
	sandboxID string
}

// route sends the code's requests to the router, naming the caller. The
// session is looked up per request: a spare interpreter is bound to its
// session only when a session claims it.
func (m *Manager) route(bound *atomic.Pointer[session], sandboxID string) interpreter.RPCHandler {
	return func(ctx context.Context, method string, params jsontext.Value) (jsontext.Value, *wire.RPCError) {
		s := bound.Load()
		if s == nil {
			return nil, &wire.RPCError{Kind: hostrpc.KindUnavailable, Message: "the interpreter is not attached to a session yet"}
		}
		if m.opts.Router == nil {
			return nil, &wire.RPCError{Kind: hostrpc.KindUnavailable, Message: "this codemode answers no requests from code"}
		}
		if call := s.currentCall(); call != nil {
			if method == hostrpc.CallTool {
				call.toolCalls.Add(1)
			}
			if call.values != nil {
				ctx = withValues(ctx, call.values)
			}
			ctx = hostrpc.WithPauser(ctx, call.pause)
		}
		ctx = context.WithValue(ctx, scopeKey{}, scope{s: s, sandboxID: sandboxID})
		return m.opts.Router.Serve(ctx, &hostrpc.Request{Method: method, Params: params, Caller: hostrpc.Caller{
			Principal: s.principal, Owner: s.key.owner, Session: s.key.name, Sandbox: sandboxID,
		}})
	}
}

// valuesCtx is ctx (deadline, cancellation) with the values of values first.
type valuesCtx struct {
	context.Context
	values context.Context
}

func (c valuesCtx) Value(k any) any {
	if v := c.values.Value(k); v != nil {
		return v
	}
	return c.Context.Value(k)
}

// withValues gives ctx the values of values. values loses its cancellation
// first: the context package finds a parent's cancellation through Value,
// and values' would hide ctx's, so each context derived from the result (a
// tool call's timeout) would be watched by a goroutine of its own instead
// of joining ctx's (a goroutine started and woken per tool call).
func withValues(ctx, values context.Context) context.Context {
	return valuesCtx{Context: ctx, values: context.WithoutCancel(values)}
}

// Register adds the handlers for what code returns to the running call:
// images and files (artifact) and progress.
func (m *Manager) Register(mux *hostrpc.Mux) {
	mux.Handle(hostrpc.Artifact, m.artifact)
	mux.Handle(hostrpc.Progress, m.progress)
}

type artifactParams struct {
	Kind string `json:"kind"`
	MIME string `json:"mime"`
	Name string `json:"name"`
	Data string `json:"data"`
}

func (m *Manager) artifact(ctx context.Context, req *hostrpc.Request) (any, error) {
	var p artifactParams
	if err := hostrpc.Decode(req, &p); err != nil {
		return nil, err
	}
	sc, _ := ctx.Value(scopeKey{}).(scope)
	var call *callState
	if sc.s != nil {
		call = sc.s.currentCall()
	}
	if call == nil {
		return nil, hostrpc.Errorf(hostrpc.KindInvalid, "images and files can only be returned while a call runs")
	}
	data, err := base64.StdEncoding.DecodeString(p.Data)
	if err != nil {
		return nil, hostrpc.Errorf(hostrpc.KindInvalid, "artifact data is not base64")
	}
	switch p.Kind {
	case "image":
		img, err := artifacts.FitImage(data, m.opts.Images)
		if err != nil {
			return nil, hostrpc.Errorf(hostrpc.KindInvalid, "show_image: %v", err)
		}
		img.Name = p.Name
		call.addImage(img)
		return map[string]any{"width": img.Width, "height": img.Height}, nil
	case "file":
		if m.opts.Artifacts == nil {
			return nil, hostrpc.Errorf(hostrpc.KindInvalid, "returning files is disabled")
		}
		f, err := m.opts.Artifacts.Put(sc.sandboxID, sc.s.key.owner, "out/"+p.Name, data)
		if err != nil {
			return nil, hostrpc.Errorf(hostrpc.KindInvalid, "publish: %v", err)
		}
		call.addFile(File{URI: f.URI, Name: p.Name, MIMEType: f.MIMEType, Size: f.Size})
		return map[string]any{"uri": f.URI}, nil
	}
	return nil, hostrpc.Errorf(hostrpc.KindInvalid, "unknown artifact kind %q", p.Kind)
}

type progressParams struct {
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total"`
	Message  string   `json:"message"`
}

func (m *Manager) progress(ctx context.Context, req *hostrpc.Request) (any, error) {
	var p progressParams
	if err := hostrpc.Decode(req, &p); err != nil {
		return nil, err
	}
	sc, _ := ctx.Value(scopeKey{}).(scope)
	if sc.s == nil {
		return nil, nil
	}
	if call := sc.s.currentCall(); call != nil && call.progress != nil {
		total := 0.0
		if p.Total != nil {
			total = *p.Total
		}
		call.progress(ProgressUpdate{Progress: p.Progress, Total: total, Message: p.Message, FromCode: true})
	}
	return nil, nil
}
