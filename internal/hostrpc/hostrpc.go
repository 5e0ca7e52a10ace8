// Package hostrpc is the contract for what sandboxed code asks of the host:
// the method names the Python runtime sends, the handler signature, and the
// Mux that routes each request to the package that answers it (the proxy for
// MCP discovery and tool calls, the executor for artifacts and progress, the
// state store for memory and saved tools, app for TOON).
//
// Every nested tool call, however the code made it, ends in one ToolCall that
// passes the ToolMiddleware chain before anything is sent downstream: the
// point where policy, audit and tracing hook in.
//
// It imports only wire (for the error frame) so every handler package can
// depend on it.
package hostrpc

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/codemode/codemode/internal/wire"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Methods the Python runtime (internal/pyruntime/python) sends. A test reads
// the runtime's sources and fails on any method no handler serves.
const (
	// MCP discovery and calls (proxy).
	DiscoveredServers        = "discovered_servers"
	ListServers              = "list_servers"
	DescribeServer           = "describe_server"
	ListLoadedServerMetadata = "list_loaded_server_metadata"
	ListTools                = "list_tools"
	ListToolsCached          = "list_tools_cached"
	QueryToolDocs            = "query_tool_docs"
	SearchToolDocs           = "search_tool_docs"
	CallTool                 = "call_tool"

	// Servers from catalogs (catalog).
	FindServers = "find_servers"
	AddServer   = "add_server"

	// Results of the running call (executor).
	Artifact = "artifact"
	Progress = "progress"

	// Memory and saved tools (statestore).
	MemorySave   = "memory_save"
	MemoryLoad   = "memory_load"
	MemoryList   = "memory_list"
	MemoryDelete = "memory_delete"
	ToolSave     = "tool_save"
	ToolList     = "tool_list"

	// Encoding (app).
	ToTOON = "to_toon"
)

// Caller is who made a request: the session's principal (whose memory and
// policy apply), its owner (the principal's namespace, or the MCP connection
// of a default session) and name, and the sandbox.
type Caller struct {
	Principal string
	Owner     string
	Session   string
	Sandbox   string
}

// Request is one request from sandboxed code.
type Request struct {
	Method string
	Params jsontext.Value
	Caller Caller
}

// Handler answers a request. The result is encoded as JSON for the runtime
// (an Encoded one is sent as it is); an error becomes the exception the
// runtime raises (see Error).
type Handler func(ctx context.Context, req *Request) (any, error)

// Encoded is a result that is JSON already, valid and in UTF-8 (a tool's
// result as its server sent it): encoding it again would only copy it.
type Encoded interface {
	JSON() jsontext.Value
}

// Middleware wraps every handler of a Mux (tracing, logging).
type Middleware func(method string, next Handler) Handler

// Error is a failure meant for the sandboxed code as is: Kind selects the
// Python exception (MCPError.kind), Message is shown to the model.
type Error struct {
	Kind    string
	Message string
	Server  string
	Tool    string
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error of kind with a formatted message.
func Errorf(kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Error kinds shared by several handlers.
const (
	KindInvalid     = "invalid"     // malformed request
	KindUnavailable = "unavailable" // the feature is off or not ready
	KindInternal    = "internal"    // a bug on the host side
	KindError       = "error"       // anything else
)

// Mux routes requests by method. Register handlers before serving.
type Mux struct {
	mu       sync.RWMutex
	handlers map[string]Handler
	wrapped  map[string]Handler
	mws      []Middleware
}

// NewMux returns an empty Mux.
func NewMux() *Mux {
	return &Mux{handlers: map[string]Handler{}, wrapped: map[string]Handler{}}
}

// Handle registers h for method; registering a method twice is a wiring
// bug and panics, as http.ServeMux does.
func (m *Mux) Handle(method string, h Handler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.handlers[method]; dup {
		panic("hostrpc: method registered twice: " + method)
	}
	m.handlers[method] = h
	m.wrapped[method] = m.wrap(method, h)
}

// Use adds middleware around every handler, outermost first.
func (m *Mux) Use(mw Middleware) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mws = append(m.mws, mw)
	for method, h := range m.handlers {
		m.wrapped[method] = m.wrap(method, h)
	}
}

func (m *Mux) wrap(method string, h Handler) Handler {
	for i := len(m.mws) - 1; i >= 0; i-- {
		h = m.mws[i](method, h)
	}
	return h
}

// Methods lists the registered methods, sorted.
func (m *Mux) Methods() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.handlers))
	for k := range m.handlers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Serve answers req: the handler's result as JSON, or the error frame the
// runtime turns into an exception.
func (m *Mux) Serve(ctx context.Context, req *Request) (jsontext.Value, *wire.RPCError) {
	m.mu.RLock()
	h := m.wrapped[req.Method]
	m.mu.RUnlock()
	if h == nil {
		return nil, &wire.RPCError{Kind: KindInvalid, Message: "Unknown RPC type: " + req.Method}
	}
	res, err := h(ctx, req)
	if err != nil {
		return nil, ToWire(err)
	}
	if e, ok := res.(Encoded); ok {
		return e.JSON(), nil
	}
	data, err := jsonv2.Marshal(res, jsonv2.Deterministic(true))
	if err != nil {
		return nil, &wire.RPCError{Kind: KindInternal, Message: "encoding the result of " + req.Method + ": " + err.Error()}
	}
	return data, nil
}

// ToWire turns a handler's error into the frame the runtime reads.
func ToWire(err error) *wire.RPCError {
	var e *Error
	if errors.As(err, &e) {
		return &wire.RPCError{Kind: e.Kind, Message: e.Message, Server: e.Server, Tool: e.Tool}
	}
	return &wire.RPCError{Kind: KindError, Message: err.Error()}
}

// Decode unmarshals a request's parameters into v, rejecting unknown
// members; a malformed request is an Error of kind invalid.
func Decode(req *Request, v any) error {
	if len(req.Params) == 0 {
		return nil
	}
	if err := jsonv2.Unmarshal(req.Params, v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return Errorf(KindInvalid, "invalid parameters for %s: %v", req.Method, err)
	}
	return nil
}

// ToolCall is one nested tool call after resolution: the server's real name,
// the tool's real name (not its alias), the arguments that will be sent
// (positional ones already bound) and the tool's annotations.
type ToolCall struct {
	Caller      Caller
	Server      string
	Tool        string
	Arguments   map[string]jsontext.Value
	Annotations jsontext.Value // the tool's annotations object, if it has one
}

// ToolCaller performs a tool call.
type ToolCaller func(ctx context.Context, call *ToolCall) (any, error)

// ToolMiddleware wraps the tool-call path (policy, audit, tracing).
type ToolMiddleware func(next ToolCaller) ToolCaller

// Chain returns final wrapped by mws, the first outermost.
func Chain(final ToolCaller, mws ...ToolMiddleware) ToolCaller {
	for i := len(mws) - 1; i >= 0; i-- {
		final = mws[i](final)
	}
	return final
}

// pauserKey carries what stops the clock of the call a request belongs to.
type pauserKey struct{}

// WithPauser returns ctx whose requests can stop their call's timeout
// clock while a human is asked (see PauseTimeout).
func WithPauser(ctx context.Context, pause func() (resume func())) context.Context {
	return context.WithValue(ctx, pauserKey{}, pause)
}

// PauseTimeout stops the timeout clock of the run_python call ctx belongs
// to until resume is called: time a human takes to answer is not the code's.
// Without a call in ctx it does nothing.
func PauseTimeout(ctx context.Context) (resume func()) {
	if pause, ok := ctx.Value(pauserKey{}).(func() func()); ok {
		return pause()
	}
	return func() {}
}
