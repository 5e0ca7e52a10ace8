// Package console is codemode's web console: a page under /console/ that
// shows, live, the sessions a principal may see, each run_python cell with
// its nested tool calls, and the approvals waiting for a human, with actions
// to reset or close a session and to answer an approval.
//
// Everything it shows was written by a model or a tool, so the page builds
// its DOM with textContent only, under a Content-Security-Policy that allows
// no inline script; the token of a login URL is traded for an HttpOnly,
// SameSite=Strict cookie at once, and every action carries a CSRF token.
package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/codemode/codemode/internal/activity"
	"github.com/codemode/codemode/internal/approval"
	"github.com/codemode/codemode/internal/executor"
	"github.com/prometheus/client_golang/prometheus"
)

//go:embed static
var static embed.FS

// Prefix is where the console is served.
const Prefix = "/console/"

// Sessions is the executor's control over live sessions (an
// *executor.Manager).
type Sessions interface {
	Sessions() []executor.SessionInfo
	ResetSession(owner, name, why string) bool
	CloseSession(owner, name string) bool
}

// Servers are the downstream MCP servers (a *downstream.Pool).
type Servers interface {
	Names() []string
	State(name string) string // "running (N tools)", "crashed: ...", ...
}

// Identity is who logged in.
type Identity struct {
	Principal string
	Admin     bool // sees and acts on every principal's sessions
}

// Options configure the console.
type Options struct {
	Recorder *activity.Recorder // required
	Sessions Sessions           // nil: sessions cannot be reset or closed
	Servers  Servers            // nil: no downstream servers shown
	Audit    *AuditLog          // nil: no audit log
	Backend  string             // the sandbox backend's name, shown with the sessions
	// Metrics are the process's metrics: admins see headline numbers, and
	// every login the servers' restarts (nil: none).
	Metrics prometheus.Gatherer
	// Login checks a token and says whose it is.
	Login func(token string) (Identity, bool)
	// LoginTTL bounds a login (default 12 hours).
	LoginTTL time.Duration
	// Stop ends every event stream when closed: the server's graceful
	// shutdown would otherwise wait for them.
	Stop   <-chan struct{}
	Logger *slog.Logger
}

// Console is the console's HTTP handler.
type Console struct {
	opts Options
	mux  *http.ServeMux
	log  *slog.Logger

	mu     sync.Mutex
	logins map[string]*login // by cookie value
}

type login struct {
	Identity
	csrf    string
	expires time.Time
}

const cookieName = "codemode_console"

// csp allows only the console's own files: no inline script or style, no
// frames, no other origin.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// New returns the console.
func New(opts Options) *Console {
	if opts.LoginTTL <= 0 {
		opts.LoginTTL = 12 * time.Hour
	}
	c := &Console{opts: opts, mux: http.NewServeMux(), log: opts.Logger, logins: map[string]*login{}}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	c.mux.HandleFunc("GET "+Prefix+"{$}", c.index)
	c.mux.Handle("GET "+Prefix+"static/", http.StripPrefix(Prefix+"static/", http.FileServerFS(files)))
	c.mux.HandleFunc("POST "+Prefix+"login", c.login)
	c.mux.HandleFunc("POST "+Prefix+"logout", c.action(c.logout))
	c.mux.HandleFunc("GET "+Prefix+"api/state", c.authed(c.state))
	c.mux.HandleFunc("GET "+Prefix+"api/events", c.authed(c.events))
	c.mux.HandleFunc("GET "+Prefix+"api/audit", c.authed(c.auditLog))
	c.mux.HandleFunc("POST "+Prefix+"api/sessions/{id}/{op}", c.action(c.session))
	c.mux.HandleFunc("POST "+Prefix+"api/approvals/{id}", c.action(c.answer))
	return c
}

// ServeHTTP serves the console under Prefix, refusing cross-site requests.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	http.NewCrossOriginProtection().Handler(c.mux).ServeHTTP(w, r)
}

// index serves the page; a ?token= logs in and redirects to the URL
// without it.
func (c *Console) index(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("token") {
		c.startLogin(w, r, r.URL.Query().Get("token"))
		return
	}
	http.ServeFileFS(w, r, static, "static/index.html")
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	c.startLogin(w, r, r.PostFormValue("token"))
}

// startLogin trades a token for a session cookie. It always redirects to
// the bare page, which shows the login form again when the token was wrong.
func (c *Console) startLogin(w http.ResponseWriter, r *http.Request, token string) {
	id, ok := Identity{}, false
	if token != "" && c.opts.Login != nil {
		id, ok = c.opts.Login(token)
	}
	if !ok {
		c.log.Warn("console login refused", "remote", r.RemoteAddr)
		http.Redirect(w, r, Prefix+"?login=failed", http.StatusSeeOther)
		return
	}
	value, csrf := randomHex(), randomHex()
	c.mu.Lock()
	now := time.Now()
	for k, l := range c.logins {
		if now.After(l.expires) {
			delete(c.logins, k)
		}
	}
	c.logins[value] = &login{Identity: id, csrf: csrf, expires: now.Add(c.opts.LoginTTL)}
	c.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: Prefix, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(c.opts.LoginTTL.Seconds())})
	c.log.Info("console login", "principal", id.Principal, "admin", id.Admin, "remote", r.RemoteAddr)
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// current is the request's login, or nil.
func (c *Console) current(r *http.Request) (*login, string) {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return nil, ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.logins[ck.Value]
	if l == nil || time.Now().After(l.expires) {
		return nil, ""
	}
	return l, ck.Value
}

func (c *Console) authed(h func(http.ResponseWriter, *http.Request, *login)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		l, _ := c.current(r)
		if l == nil {
			http.Error(w, "log in first", http.StatusUnauthorized)
			return
		}
		h(w, r, l)
	}
}

// action guards a state-changing request: a login, and its CSRF token in
// the X-CSRF-Token header.
func (c *Console) action(h func(http.ResponseWriter, *http.Request, *login)) http.HandlerFunc {
	return c.authed(func(w http.ResponseWriter, r *http.Request, l *login) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-CSRF-Token")), []byte(l.csrf)) != 1 {
			http.Error(w, "missing or wrong CSRF token", http.StatusForbidden)
			return
		}
		h(w, r, l)
	})
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, _ *login) {
	if _, value := c.current(r); value != "" {
		c.mu.Lock()
		delete(c.logins, value)
		c.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
}

// sees is the visibility rule: a principal sees its own sessions, an admin
// every session.
func (l *login) sees(principal string) bool { return l.Admin || principal == l.Principal }

// SessionView is a session with its live state.
type SessionView struct {
	*activity.Session
	State   string `json:"state"` // "running", "idle", "closed"
	Sandbox string `json:"sandbox,omitempty"`
	IdleMS  int64  `json:"idle_ms"`
	// MemoryBytes is the sandbox's memory use now; -1 when unknown (closed,
	// or a backend that does not measure it).
	MemoryBytes int64 `json:"memory_bytes"`
}

// State is what the page shows.
type State struct {
	Principal string               `json:"principal"`
	Admin     bool                 `json:"admin"`
	CSRF      string               `json:"csrf"`
	Backend   string               `json:"backend"`
	Version   uint64               `json:"version"`
	Sessions  []SessionView        `json:"sessions"`
	Approvals []*activity.Approval `json:"approvals"`
	Servers   []ServerView         `json:"servers"`
	Headlines []Headline           `json:"headlines"` // admins only
}

// ServerView is a downstream server with what the login's sessions saw of
// it: calls made and the latest errors.
type ServerView struct {
	Name     string   `json:"name"`
	State    string   `json:"state"`
	Calls    int      `json:"calls"`
	Restarts float64  `json:"restarts"`
	Errors   []string `json:"errors"`
}

// recentErrors is how many of a server's latest errors are shown.
const recentErrors = 3

func (c *Console) snapshot(l *login) State {
	v := c.opts.Recorder.View(l.sees)
	live := map[[2]string]executor.SessionInfo{}
	if c.opts.Sessions != nil {
		for _, s := range c.opts.Sessions.Sessions() {
			live[[2]string{s.Owner, s.Name}] = s
		}
	}
	st := State{Principal: l.Principal, Admin: l.Admin, CSRF: l.csrf, Backend: c.opts.Backend, Version: v.Version, Sessions: []SessionView{}, Approvals: v.Approvals}
	for _, s := range v.Sessions {
		sv := SessionView{Session: s, State: "closed", IdleMS: time.Since(s.LastActive).Milliseconds(), MemoryBytes: -1}
		// An ended timeline is closed even when a new session took its name.
		if info, ok := live[[2]string{s.Owner(), s.Name}]; ok && s.Ended.IsZero() {
			sv.State, sv.Sandbox, sv.IdleMS, sv.MemoryBytes = "idle", info.Sandbox, info.Idle.Milliseconds(), info.MemoryBytes
		}
		if n := len(s.Cells); n > 0 && s.Cells[n-1].Status == "running" {
			sv.State, sv.IdleMS = "running", 0
		}
		st.Sessions = append(st.Sessions, sv)
	}
	var restarts map[string]float64
	if c.opts.Metrics != nil {
		heads, r, err := metricsView(c.opts.Metrics)
		if err != nil {
			c.log.Warn("console: gathering metrics", "error", err)
		}
		if l.Admin {
			st.Headlines = heads
		}
		restarts = r
	}
	st.Servers = c.servers(v.Sessions, restarts)
	return st
}

// servers lists the downstream servers with the calls of sessions (those
// the login sees) to each.
func (c *Console) servers(sessions []*activity.Session, restarts map[string]float64) []ServerView {
	out := []ServerView{}
	if c.opts.Servers == nil {
		return out
	}
	type seen struct {
		calls  int
		errors []*activity.Call
	}
	by := map[string]*seen{}
	for _, s := range sessions {
		for _, cell := range s.Cells {
			for _, call := range cell.Calls {
				x := by[call.Server]
				if x == nil {
					x = &seen{}
					by[call.Server] = x
				}
				x.calls++
				if call.Outcome == "error" {
					x.errors = append(x.errors, call)
				}
			}
		}
	}
	for _, name := range c.opts.Servers.Names() {
		sv := ServerView{Name: name, State: c.opts.Servers.State(name), Restarts: restarts[name], Errors: []string{}}
		if x := by[name]; x != nil {
			sv.Calls = x.calls
			slices.SortFunc(x.errors, func(a, b *activity.Call) int { return b.Started.Compare(a.Started) })
			for _, e := range x.errors[:min(len(x.errors), recentErrors)] {
				sv.Errors = append(sv.Errors, e.Tool+": "+e.Error)
			}
		}
		out = append(out, sv)
	}
	return out
}

func (c *Console) state(w http.ResponseWriter, r *http.Request, l *login) {
	writeJSON(w, c.snapshot(l))
}

// events streams "change" events (server-sent events); the page fetches
// the state after each. Changes closer than 100ms are sent as one.
func (c *Console) events(w http.ResponseWriter, r *http.Request, l *login) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	keepalive := time.NewTicker(20 * time.Second)
	defer keepalive.Stop()
	for {
		changed, version := c.opts.Recorder.Changed()
		if _, err := fmt.Fprintf(w, "event: change\ndata: %d\n\n", version); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	wait:
		for {
			select {
			case <-r.Context().Done():
				return
			case <-c.opts.Stop:
				return
			case <-keepalive.C:
				if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
					return
				}
				rc.Flush()
			case <-changed:
				break wait
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Console) session(w http.ResponseWriter, r *http.Request, l *login) {
	owner, name, err := c.opts.Recorder.Session(r.PathValue("id"), l.sees)
	if err != nil || c.opts.Sessions == nil {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	ok := false
	switch r.PathValue("op") {
	case "reset":
		ok = c.opts.Sessions.ResetSession(owner, name, "the session was reset from the web console by "+l.Principal)
	case "close":
		ok = c.opts.Sessions.CloseSession(owner, name)
	default:
		http.Error(w, "unknown action", http.StatusNotFound)
		return
	}
	if !ok {
		http.Error(w, "the session is not running", http.StatusConflict)
		return
	}
	c.log.Info("console session action", "action", r.PathValue("op"), "session", name, "by", l.Principal)
	w.WriteHeader(http.StatusNoContent)
}

func (c *Console) answer(w http.ResponseWriter, r *http.Request, l *login) {
	var body struct {
		Allow    bool `json:"allow"`
		Remember bool `json:"remember"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&body); err != nil {
		http.Error(w, "want {\"allow\": bool, \"remember\": bool}", http.StatusBadRequest)
		return
	}
	err := c.opts.Recorder.Answer(r.PathValue("id"), l.sees, approval.Reply{Allowed: body.Allow, Remember: body.Remember, Approver: "console:" + l.Principal})
	if errors.Is(err, activity.ErrNotFound) {
		http.Error(w, "no such approval (answered already?)", http.StatusNotFound)
		return
	}
	c.log.Info("console approval", "approval", r.PathValue("id"), "allow", body.Allow, "remember", body.Remember, "by", l.Principal)
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func randomHex() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// OneTimeLogin returns a token that logs id in once, and a Login that
// accepts it besides what next accepts (nil: nothing else). It is the
// login URL printed at start, as Jupyter does.
func OneTimeLogin(id Identity, next func(string) (Identity, bool)) (string, func(string) (Identity, bool)) {
	token := randomHex()
	var mu sync.Mutex
	used := false
	return token, func(t string) (Identity, bool) {
		mu.Lock()
		fresh := !used && subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1
		if fresh {
			used = true
		}
		mu.Unlock()
		if fresh {
			return id, true
		}
		if next != nil {
			return next(t)
		}
		return Identity{}, false
	}
}

// Serve serves the console alone on addr until ctx ends (stdio mode),
// calling listening with the bound address.
func Serve(ctx context.Context, addr string, h http.Handler, listening func(addr string)) error {
	mux := http.NewServeMux()
	mux.Handle(Prefix, h)
	mux.Handle("GET /{$}", http.RedirectHandler(Prefix, http.StatusSeeOther))
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("console: listen %s: %w", addr, err)
	}
	if listening != nil {
		listening(ln.Addr().String())
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close() // event streams end only with their connections
		}
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("console: %w", err)
	}
	return nil
}
