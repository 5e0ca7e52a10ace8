package downstream

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/codemode/codemode/internal/peer"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// relay passes what a server sends during a nested call (elicitation,
// progress) to the client of the run_python call that made it. Only the
// user answers: sandboxed code never sees the question.
type relay struct {
	server string
	log    *slog.Logger

	mu    sync.Mutex
	next  uint64
	calls map[string]*flight    // progress token -> call in flight
	ended []endedFlight         // calls that returned, oldest first, forgotten after progressGrace
	urls  map[string]*peer.Peer // URL-mode elicitation id -> the client asked
}

type endedFlight struct {
	token string
	at    time.Time
}

// flight is one nested call in flight.
type flight struct {
	who   *peer.Peer
	tool  string
	ended bool // the call has returned; its last progress may still come
}

// progressGrace is how long a call's progress token stays known at least
// after the call returns: the SDK hands notifications to their handler
// concurrently, so the last one may arrive after the result.
const progressGrace = time.Second

// begin registers a call made for who and returns its progress token and
// the function that ends it. Calls that ended more than progressGrace ago
// are forgotten here rather than by a timer each: a timer and a goroutine
// per tool call cost more than the call's own work.
func (r *relay) begin(who *peer.Peer, tool string) (token string, end func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]*flight{}
	}
	now := time.Now()
	for len(r.ended) > 0 && now.Sub(r.ended[0].at) > progressGrace {
		delete(r.calls, r.ended[0].token)
		r.ended = r.ended[1:]
	}
	r.next++
	token = "codemode-" + strconv.FormatUint(r.next, 10)
	f := &flight{who: who, tool: tool}
	r.calls[token] = f
	return token, func() {
		r.mu.Lock()
		f.ended = true
		r.ended = append(r.ended, endedFlight{token: token, at: time.Now()})
		r.mu.Unlock()
	}
}

// asker returns the client to ask for a request that arrived with ctx. On
// protocol 2026-07-28 the question travels in the call's own result, so ctx
// is the call's; otherwise it arrives on the shared session and belongs to
// the call in flight, which must be unambiguous.
func (r *relay) asker(ctx context.Context) (*peer.Peer, error) {
	if p := peer.From(ctx); p != nil {
		return p, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var found *peer.Peer
	for _, f := range r.calls {
		switch {
		case f.who == nil || f.ended:
		case found == nil:
			found = f.who
		case found != f.who:
			return nil, fmt.Errorf("server %s asked a question while calls of several clients were in flight; codemode cannot tell whose user to ask", r.server)
		}
	}
	if found == nil {
		return nil, fmt.Errorf("server %s asked a question outside of any call from a client", r.server)
	}
	return found, nil
}

// elicit is the downstream client's elicitation handler.
func (r *relay) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	who, err := r.asker(ctx)
	if err != nil {
		return nil, declined(err.Error())
	}
	url := req.Params.Mode == "url"
	switch {
	case who.Elicit == nil:
		return nil, declined(fmt.Sprintf("server %s asked the user a question, but codemode's client (%s) does not support elicitation", r.server, clientName(who)))
	case url && !who.ElicitURL:
		return nil, declined(fmt.Sprintf("server %s asked the user to open a URL, but codemode's client (%s) does not support URL elicitation", r.server, clientName(who)))
	}
	params := *req.Params
	if !url {
		// The user should know which server asks.
		params.Message = fmt.Sprintf("[%s] %s", r.server, params.Message)
	}
	r.log.InfoContext(ctx, "relaying elicitation to the client", "mode", req.Params.Mode, "client", who.ClientName)
	res, err := who.Elicit(ctx, &params)
	if err != nil {
		return nil, fmt.Errorf("relaying elicitation of server %s: %w", r.server, err)
	}
	if url && res.Action == "accept" && params.ElicitationID != "" && who.ElicitComplete != nil {
		// The server will say when the interaction behind the URL is done.
		r.mu.Lock()
		if r.urls == nil {
			r.urls = map[string]*peer.Peer{}
		}
		r.urls[params.ElicitationID] = who
		r.mu.Unlock()
	}
	return res, nil
}

// complete passes a server's notifications/elicitation/complete to the
// client that was asked.
func (r *relay) complete(ctx context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
	id := req.Params.ElicitationID
	r.mu.Lock()
	who := r.urls[id]
	delete(r.urls, id)
	r.mu.Unlock()
	if who != nil {
		who.ElicitComplete(ctx, id)
	}
}

func declined(reason string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: reason}
}

func clientName(p *peer.Peer) string {
	if p.ClientName == "" {
		return "unnamed"
	}
	return p.ClientName
}

// progress is the downstream client's progress handler.
func (r *relay) progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	tok, _ := req.Params.ProgressToken.(string)
	r.mu.Lock()
	f := r.calls[tok]
	r.mu.Unlock()
	if f == nil || f.who == nil || f.who.Progress == nil {
		return
	}
	msg := fmt.Sprintf("%s.%s: %g", r.server, f.tool, req.Params.Progress)
	if req.Params.Total > 0 {
		msg += fmt.Sprintf("/%g", req.Params.Total)
	}
	if req.Params.Message != "" {
		msg += " " + req.Params.Message
	}
	f.who.Progress(req.Params.Progress, req.Params.Total, msg)
}

// logMessage sends a server's notifications/message to codemode's log.
func (r *relay) logMessage(ctx context.Context, req *mcp.LoggingMessageRequest) {
	level := slog.LevelInfo
	switch req.Params.Level {
	case "debug":
		level = slog.LevelDebug
	case "warning":
		level = slog.LevelWarn
	case "error", "critical", "alert", "emergency":
		level = slog.LevelError
	}
	r.log.Log(ctx, level, "server log", "level", req.Params.Level, "logger", req.Params.Logger, "data", req.Params.Data)
}
