package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// HTTPOptions configure the streamable HTTP transport.
type HTTPOptions struct {
	Addr string // listen address, e.g. 127.0.0.1:8765
	Path string // MCP endpoint, e.g. /mcp
	// Tokens authenticate clients; nil or empty means no authentication,
	// which is refused beyond loopback unless AllowUnauthenticated.
	Tokens *Tokens
	// Verifier, if set, receives the verifier of the endpoint's bearer
	// tokens (static tokens and OAuth JWTs), so other pages (the console)
	// log people in exactly as the endpoint does.
	Verifier func(auth.TokenVerifier)
	// OAuth, if set, also accepts JWT access tokens of an authorization
	// server.
	OAuth                *OAuth
	AllowUnauthenticated bool
	// PublicURL is the MCP endpoint's URL as clients reach it (behind a
	// proxy, say): the default OAuth audience and the resource named in the
	// protected resource metadata. Default: http://ADDR/PATH.
	PublicURL string
	// HTTPClient fetches the authorization server's metadata and keys.
	HTTPClient *http.Client
	// AllowedOrigins are browser origins trusted besides same-origin ones.
	AllowedOrigins  []string
	MaxRequestBytes int64
	// SessionTimeout closes stateful MCP sessions (and their default
	// run_python sessions) idle this long.
	SessionTimeout time.Duration
	// Ready reports whether the backend can start a sandbox (/readyz).
	Ready func(context.Context) error
	// ShutdownTimeout bounds the wait for running calls at shutdown.
	ShutdownTimeout time.Duration
	// Handlers are served besides MCP, by pattern, doing their own
	// authentication (the web console at /console/).
	Handlers map[string]http.Handler
	// Listening, if set, is called with the bound address (for tests and logs).
	Listening func(addr string)
	// Metrics, if set, is served at /metrics behind the same authentication.
	Metrics http.Handler
}

// CheckHTTPOptions refuses configurations that would expose code execution
// to the network without authentication.
func CheckHTTPOptions(o HTTPOptions) error {
	if !IsLoopback(o.Addr) && !o.authenticated() && !o.AllowUnauthenticated {
		return fmt.Errorf("%w %s: configure --tokens-file, CODEMODE_TOKENS or --oauth-issuer (or --allow-unauthenticated)", errNeedTokens, o.Addr)
	}
	if o.OAuth != nil && o.OAuth.Issuer == "" {
		return errors.New("oauth: an issuer is required")
	}
	if !strings.HasPrefix(o.Path, "/") {
		return fmt.Errorf("http-path %q must start with /", o.Path)
	}
	return nil
}

func (o HTTPOptions) authenticated() bool {
	return (o.Tokens != nil && o.Tokens.Len() > 0) || o.OAuth != nil
}

// ServeHTTP serves MCP over streamable HTTP until ctx ends, then shuts down
// gracefully: running calls get ShutdownTimeout to finish before the
// listener's connections are closed.
func (s *Server) ServeHTTP(ctx context.Context, o HTTPOptions) error {
	if err := CheckHTTPOptions(o); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.Addr, err)
	}
	addr := ln.Addr().String()
	handler, err := s.httpHandler(ctx, o, addr)
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	s.log.Info("serving MCP over streamable HTTP", "url", "http://"+addr+o.Path, "tokens", o.Tokens != nil && o.Tokens.Len() > 0, "oauth", o.OAuth != nil)
	if !o.authenticated() {
		s.log.Warn("HTTP clients are not authenticated", "address", addr)
	}
	if o.Listening != nil {
		o.Listening(addr)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	timeout := o.ShutdownTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	s.log.Info("shutting down: waiting for running calls", "timeout", timeout)
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn("shutdown timed out; closing connections", "error", err)
		srv.Close()
	}
	return nil
}

// httpHandler is the whole HTTP surface: the MCP endpoint behind
// authentication and cross-origin protection, health, and the OAuth
// protected resource metadata.
func (s *Server) httpHandler(ctx context.Context, o HTTPOptions, addr string) (http.Handler, error) {
	cop := http.NewCrossOriginProtection()
	for _, origin := range o.AllowedOrigins {
		if err := cop.AddTrustedOrigin(origin); err != nil {
			return nil, fmt.Errorf("allowed origin %q: %w", origin, err)
		}
	}
	// Keep recent stream events so a client whose connection drops can
	// resume (Last-Event-ID) instead of losing a call's result.
	events := mcp.NewMemoryEventStore(nil)
	events.SetMaxBytes(32 << 20)
	server := func(*http.Request) *mcp.Server { return s.mcp }
	stateful := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{
		SessionTimeout:      o.SessionTimeout,
		MaxRequestBodyBytes: o.MaxRequestBytes,
		EventStore:          events,
		Logger:              sdkLogger(s.log),
	})
	// Revision 2026-07-28 has no protocol sessions and the SDK serves it
	// only statelessly; older clients need Mcp-Session-Id. One endpoint
	// serves both, chosen by the version the client asks for, so every
	// client keeps one URL and gets the newest revision it speaks.
	stateless := mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		MaxRequestBodyBytes: o.MaxRequestBytes,
		// The POST is the whole call: a client that hangs up cancels it
		// (and a handle it never received is closed).
		PropagateRequestCancellation: true,
		Logger:                       sdkLogger(s.log),
	})
	var handler http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sessionless(r.Header.Get("Mcp-Protocol-Version")) {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
	// Refuse cross-site browser requests (a web page must not drive a
	// local codemode); non-browser clients send no Origin and pass.
	handler = cop.Handler(handler)
	mux := http.NewServeMux()
	protect := func(h http.Handler) http.Handler { return h }
	if o.authenticated() {
		publicURL := o.PublicURL
		if publicURL == "" {
			publicURL = "http://" + addr + o.Path
		}
		var oauth *oauthVerifier
		bearer := &auth.RequireBearerTokenOptions{}
		if o.OAuth != nil {
			cfg := *o.OAuth
			if cfg.Audience == "" {
				cfg.Audience = publicURL
			}
			client := o.HTTPClient
			if client == nil {
				client = &http.Client{Timeout: 30 * time.Second}
			}
			v, err := newOAuthVerifier(ctx, cfg, client)
			if err != nil {
				return nil, err
			}
			oauth = v
			bearer.Scopes = cfg.Scopes
			u, err := url.Parse(publicURL)
			if err != nil {
				return nil, fmt.Errorf("public URL %q: %w", publicURL, err)
			}
			metaPath := resourceMetadataPath(u.Path)
			bearer.ResourceMetadataURL = u.Scheme + "://" + u.Host + metaPath
			meta := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
				Resource: publicURL, AuthorizationServers: []string{cfg.Issuer}, ScopesSupported: cfg.Scopes,
				BearerMethodsSupported: []string{"header"}, ResourceName: "codemode",
			})
			mux.Handle(metaPath, meta)
			if metaPath != resourceMetadataPath("") {
				mux.Handle(resourceMetadataPath(""), meta)
			}
		}
		verify := bearerVerifier(o.Tokens, oauth)
		if o.Verifier != nil {
			o.Verifier(verify)
		}
		protect = auth.RequireBearerToken(verify, bearer)
		handler = challenge(protect(handler))
	}
	if o.Metrics != nil {
		mux.Handle("GET /metrics", protect(o.Metrics))
	}
	mux.Handle(o.Path, s.logRequests(handler))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeHealth(w, http.StatusOK, "ok", "")
	})
	mux.HandleFunc("GET /readyz", s.readyHandler(o.Ready))
	for pattern, h := range o.Handlers {
		mux.Handle(pattern, h)
	}
	return mux, nil
}

// logRequests logs each HTTP request with the client's token name.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		client := ""
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			client = ti.UserID
		}
		if rec.status >= 400 {
			s.log.Warn("http request refused", "method", r.Method, "status", rec.status, "client", client, "remote", r.RemoteAddr)
			return
		}
		s.log.Debug("http request", "method", r.Method, "status", rec.status, "client", client, "duration", time.Since(start))
	})
}

// challenge makes every 401 name the scheme (RFC 6750 section 3): the SDK
// adds WWW-Authenticate only when it has OAuth parameters to put in it.
func challenge(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&challenger{ResponseWriter: w}, r)
	})
}

type challenger struct{ http.ResponseWriter }

func (c *challenger) WriteHeader(code int) {
	if code == http.StatusUnauthorized && c.Header().Get("WWW-Authenticate") == "" {
		c.Header().Set("WWW-Authenticate", `Bearer realm="codemode"`)
	}
	c.ResponseWriter.WriteHeader(code)
}

// Flush passes through, so server-sent events stream.
func (c *challenger) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Flush passes through, so server-sent events stream.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// readyHandler answers /readyz: the backend can start a sandbox.
func (s *Server) readyHandler(ready func(context.Context) error) http.HandlerFunc {
	if ready == nil {
		return func(w http.ResponseWriter, r *http.Request) { writeHealth(w, http.StatusOK, "ready", "") }
	}
	rd := &readiness{check: ready}
	return func(w http.ResponseWriter, r *http.Request) {
		if err := rd.result(r.Context()); err != nil {
			writeHealth(w, http.StatusServiceUnavailable, "not ready", err.Error())
			return
		}
		writeHealth(w, http.StatusOK, "ready", "")
	}
}

// How long a readiness result is reused: probes must not start sandboxes
// in a loop, and a failure should be retried sooner than a success.
const (
	readyFor    = 30 * time.Second
	notReadyFor = 5 * time.Second
	readyCheck  = 60 * time.Second // bound of one check
)

// readiness runs a check at most once per period, in the background: a
// check may take longer than a probe waits (a Kubernetes backend starts a
// Pod), and one cancelled with its probe would never succeed. A probe gets
// the last result while a newer one is being made, and waits for the very
// first.
type readiness struct {
	check func(context.Context) error

	mu      sync.Mutex
	checked time.Time // zero until the first check ends
	last    error
	running chan struct{} // closed when the running check ends; nil when none runs
}

func (rd *readiness) result(ctx context.Context) error {
	rd.mu.Lock()
	ttl := readyFor
	if rd.last != nil {
		ttl = notReadyFor
	}
	if !rd.checked.IsZero() && time.Since(rd.checked) < ttl {
		defer rd.mu.Unlock()
		return rd.last
	}
	if rd.running == nil {
		done := make(chan struct{})
		rd.running = done
		go func() {
			cctx, cancel := context.WithTimeout(context.Background(), readyCheck)
			err := rd.check(cctx)
			cancel()
			rd.mu.Lock()
			rd.last, rd.checked, rd.running = err, time.Now(), nil
			rd.mu.Unlock()
			close(done)
		}()
	}
	running, first, last := rd.running, rd.checked.IsZero(), rd.last
	rd.mu.Unlock()
	if !first {
		return last
	}
	select {
	case <-running:
		rd.mu.Lock()
		defer rd.mu.Unlock()
		return rd.last
	case <-ctx.Done():
		return errors.New("the first check that a sandbox starts is still running")
	}
}

func writeHealth(w http.ResponseWriter, code int, status, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	body := map[string]string{"status": status}
	if detail != "" {
		body["error"] = detail
	}
	json.NewEncoder(w).Encode(body)
}

// clientLimits bounds concurrent calls per client (token name).
type clientLimits struct {
	max    int
	mu     sync.Mutex
	active map[string]int
}

func (l *clientLimits) acquire(client string) bool {
	if l == nil || l.max <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active[client] >= l.max {
		return false
	}
	l.active[client]++
	return true
}

func (l *clientLimits) release(client string) {
	if l == nil || l.max <= 0 {
		return
	}
	l.mu.Lock()
	l.active[client]--
	l.mu.Unlock()
}

// sessionlessVersion is the first MCP revision without protocol sessions.
const sessionlessVersion = "2026-07-28"

// sessionless reports whether a request's MCP-Protocol-Version header asks
// for a revision without protocol sessions (versions are dates, so they
// order as strings). Requests without the header (initialize, older
// clients) are served statefully.
func sessionless(version string) bool { return version >= sessionlessVersion }

// principal names the client of a request: its token's name (or OAuth
// subject) over authenticated HTTP, "default" otherwise (the one local user
// over stdio, everyone on an unauthenticated endpoint).
func principal(extra *mcp.RequestExtra) string {
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		return extra.TokenInfo.UserID
	}
	return "default"
}
