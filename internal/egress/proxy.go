package egress

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/sandbox"
)

// Where the link appears inside a sandbox, and where its relay listens in
// the sandbox's own network namespace.
const (
	SandboxDir    = "/run/codemode/egress"
	SandboxSocket = SandboxDir + "/proxy.sock"
	SandboxCA     = SandboxDir + "/ca-bundle.pem"
	RelayAddr     = "127.0.0.1:3128"
	socketName    = "proxy.sock"
	caBundleName  = "ca-bundle.pem"
)

// Resolver looks names up (net.DefaultResolver; tests give their own).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Request is one request the sandbox makes, as the Governor sees it.
type Request struct {
	Caller hostrpc.Caller
	Host   string // normalized name or IP address
	Port   int
	Method string // CONNECT for a tunnel
	Path   string // "" for a tunnel
	Entry  string // the allow-list entry that allowed the request, as written
	// Refusal, when set, is why the proxy refused the request already (not
	// on the allow-list, a limit, a malformed request): the Governor only
	// records it.
	Refusal string
}

// Outcome is how an allowed request ended.
type Outcome struct {
	Status   int   // HTTP status from upstream; 0 for a tunnel or a failure
	BytesIn  int64 // from upstream to the sandbox
	BytesOut int64 // from the sandbox to upstream
	Err      error
}

// A Governor decides each request by policy (maybe asking a human) and
// records it. A nil error lets the request go, and done is called once when
// it has ended; an error refuses it, with a message for the code.
type Governor interface {
	Govern(ctx context.Context, r Request) (done func(Outcome), err error)
}

// Limits bound one session's traffic; zero is unlimited.
type Limits struct {
	Requests int64 // requests and tunnels
	Bytes    int64 // bytes in and out together
}

// Options configure a Proxy.
type Options struct {
	Allow *List // the settings' allow-list
	// PolicyAllow, if set, gives the policy file's allow-list in force
	// ([egress] allow), which follows the file as it is reloaded.
	PolicyAllow func() *List
	Secrets     []Secret
	// SwapBody puts secrets into request bodies too (headers and the query
	// always get them).
	SwapBody bool
	Limits   Limits
	Governor Governor // nil: the allow-list alone decides, nothing is recorded
	Resolver Resolver // nil: net.DefaultResolver
	// UpstreamRoots verifies upstream servers when TLS is intercepted
	// (nil: the host's trust store).
	UpstreamRoots *x509.CertPool
	// SystemRoots is the PEM bundle sandboxes trust besides codemode's CA
	// (default: the first of the usual host bundle paths that exists).
	SystemRoots []byte
	// Dir holds the per-sandbox socket directories (default os.TempDir()).
	Dir    string
	Logger *slog.Logger
}

// Proxy is codemode's egress proxy: sandboxes reach it through a Unix
// socket each, which tells it which session a request comes from.
type Proxy struct {
	opts      Options
	log       *slog.Logger
	dir       string
	dialer    net.Dialer
	transport *http.Transport
	ca        *authority // nil when no secret is bound: nothing is intercepted
	bundle    []byte     // what sandboxes trust: system roots + ca
	secrets   *secretSet
}

// New returns a Proxy; Close removes its directory.
func New(opts Options) (*Proxy, error) {
	p := &Proxy{opts: opts, log: opts.Logger}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.opts.Resolver == nil {
		p.opts.Resolver = net.DefaultResolver
	}
	base := opts.Dir
	if base == "" {
		base = os.TempDir()
	}
	var err error
	if p.secrets, err = newSecretSet(opts.Secrets); err != nil {
		return nil, err
	}
	if len(opts.Secrets) > 0 {
		if p.ca, err = newAuthority(); err != nil {
			return nil, fmt.Errorf("egress proxy: %w", err)
		}
		sys := opts.SystemRoots
		if sys == nil {
			sys = systemBundle()
		}
		p.bundle = append(append(append([]byte(nil), sys...), '\n'), p.ca.certPEM...)
	}
	if p.dir, err = os.MkdirTemp(base, "codemode-egress-"); err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	// Sandboxes may run as other host users (a uid per session): they must
	// traverse this directory, and no one may list it.
	if err := os.Chmod(p.dir, 0o711); err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	p.transport = &http.Transport{
		Proxy:               nil, // never codemode's own proxy settings
		DialContext:         p.dial,
		TLSClientConfig:     &tls.Config{RootCAs: opts.UpstreamRoots},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
	}
	return p, nil
}

// Close removes the proxy's directory; links must be closed first.
func (p *Proxy) Close() error {
	p.transport.CloseIdleConnections()
	return os.RemoveAll(p.dir)
}

// Patterns are the allow-lists' entries in force, the settings' then the
// policy's (for logs and the manual).
func (p *Proxy) Patterns() []string {
	out := p.opts.Allow.Patterns()
	if p.opts.PolicyAllow != nil {
		out = append(out, p.opts.PolicyAllow().Patterns()...)
	}
	return out
}

// match returns the entry of the settings' list or the policy's that
// allows t.
func (p *Proxy) match(t Target) (string, bool) {
	if e, ok := p.opts.Allow.Match(t); ok {
		return e, true
	}
	if p.opts.PolicyAllow != nil {
		return p.opts.PolicyAllow().Match(t)
	}
	return "", false
}

func (p *Proxy) allows(t Target) bool {
	_, ok := p.match(t)
	return ok
}

// addrAllowed reports whether either list lets a connection go to a.
func (p *Proxy) addrAllowed(a netip.Addr, port int) bool {
	return p.opts.Allow.AddrAllowed(a, port) || (p.opts.PolicyAllow != nil && p.opts.PolicyAllow().AddrAllowed(a, port))
}

// Link is one sandbox's way to the proxy: a socket directory to mount and
// the environment that points clients at the relay.
type Link struct {
	p      *Proxy
	dir    string
	ln     net.Listener
	srv    *http.Server
	whose  func() (context.Context, hostrpc.Caller, bool)
	env    []string
	reqs   atomic.Int64
	bytes  atomic.Int64
	closed sync.Once

	mu      sync.Mutex
	tunnels map[net.Conn]bool // taken over from the server: Close ends them
	done    bool
}

// track registers a connection the HTTP server no longer owns; false when
// the link is closed already (the caller closes c).
func (l *Link) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return false
	}
	if l.tunnels == nil {
		l.tunnels = map[net.Conn]bool{}
	}
	l.tunnels[c] = true
	return true
}

func (l *Link) untrack(c net.Conn) {
	l.mu.Lock()
	delete(l.tunnels, c)
	l.mu.Unlock()
}

// Attach makes a link for a sandbox about to start. whose tells, at each
// request, the session the sandbox serves and the context of its running
// call (ok false while it serves none: the request is refused).
func (p *Proxy) Attach(ctx context.Context, sandboxID string, whose func() (context.Context, hostrpc.Caller, bool)) (*Link, error) {
	dir, err := os.MkdirTemp(p.dir, "s-")
	if err != nil {
		return nil, fmt.Errorf("egress link: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("egress link: %w", err)
	}
	if p.bundle != nil {
		if err := os.WriteFile(filepath.Join(dir, caBundleName), p.bundle, 0o644); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("egress link: %w", err)
		}
	}
	sock := filepath.Join(dir, socketName)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("egress link: %w", err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		ln.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("egress link: %w", err)
	}
	l := &Link{p: p, dir: dir, ln: ln, whose: whose}
	l.srv = &http.Server{Handler: l, ReadHeaderTimeout: 30 * time.Second,
		ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)}
	l.env = p.sandboxEnv()
	go l.srv.Serve(ln)
	p.log.DebugContext(ctx, "egress link ready", "sandbox", sandboxID, "socket", sock)
	return l, nil
}

func (p *Proxy) sandboxEnv() []string {
	proxy := "http://" + RelayAddr
	env := []string{"CODEMODE_EGRESS_SOCKET=" + SandboxSocket, "CODEMODE_EGRESS_LISTEN=" + RelayAddr, "NO_PROXY=", "no_proxy="}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
		env = append(env, k+"="+proxy, strings.ToLower(k)+"="+proxy)
	}
	if p.bundle != nil {
		for _, k := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT", "NODE_EXTRA_CA_CERTS"} {
			env = append(env, k+"="+SandboxCA)
		}
	}
	return append(env, p.secrets.env()...)
}

// Mounts implements executor.NetworkLink: the link's directory, read-only.
func (l *Link) Mounts() []sandbox.Mount {
	return []sandbox.Mount{{Source: l.dir, Target: SandboxDir, Sockets: true}}
}

// Env implements executor.NetworkLink.
func (l *Link) Env() []string { return l.env }

// Close stops serving the sandbox and removes its socket.
func (l *Link) Close() error {
	l.closed.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := l.srv.Shutdown(ctx); err != nil {
			l.srv.Close()
		}
		l.mu.Lock()
		l.done = true
		for c := range l.tunnels {
			c.Close()
		}
		l.mu.Unlock()
		os.RemoveAll(l.dir)
	})
	return nil
}

// RefusedError is a request the proxy or the policy refused; its message
// is what the sandbox reads.
type RefusedError struct{ Message string }

func (e *RefusedError) Error() string { return e.Message }

func refusedf(format string, args ...any) *RefusedError {
	return &RefusedError{Message: fmt.Sprintf(format, args...)}
}

func notAllowed(t Target) *RefusedError {
	return refusedf("codemode egress: %s is not on the egress allow-list; to allow it, start codemode with --egress-allow %s (or add it to CODEMODE_EGRESS_ALLOW)",
		t.HostPort(), suggestPattern(t))
}

func suggestPattern(t Target) string {
	if t.Port == 80 || t.Port == 443 {
		if t.Addr.Is6() {
			return "[" + t.Addr.String() + "]"
		}
		return t.Host()
	}
	return t.HostPort()
}

// ServeHTTP implements http.Handler: CONNECT opens a tunnel (or an
// intercepted TLS session, for hosts with secrets); anything else is a
// plain HTTP request in absolute form.
func (l *Link) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		l.connect(w, r)
		return
	}
	l.forward(w, r, nil)
}

// admit checks a request against the allow-list, the limits and the
// Governor. It returns the target, the context to serve in and done.
func (l *Link) admit(ctx context.Context, host string, port int, method, path string) (Target, func(Outcome), error) {
	callCtx, caller, attached := l.whose()
	req := Request{Caller: caller, Host: strings.ToLower(host), Port: port, Method: method, Path: path}
	refuse := func(e *RefusedError) (Target, func(Outcome), error) {
		req.Refusal = e.Message
		if l.p.opts.Governor != nil {
			l.p.opts.Governor.Govern(callCtx, req)
		}
		return Target{}, nil, e
	}
	if !attached {
		return refuse(refusedf("codemode egress: this sandbox serves no session yet"))
	}
	t, err := ParseTarget(host, port)
	if err != nil {
		return refuse(refusedf("codemode egress: refused %q: %v", host, err))
	}
	req.Host = t.Host()
	entry, ok := l.p.match(t)
	if !ok {
		return refuse(notAllowed(t))
	}
	req.Entry = entry
	if lim := l.p.opts.Limits.Requests; lim > 0 && l.reqs.Add(1) > lim {
		return refuse(refusedf("codemode egress: this session has made its %d requests (egress request limit; reset the session or raise --egress-max-requests)", lim))
	}
	if lim := l.p.opts.Limits.Bytes; lim > 0 && l.bytes.Load() >= lim {
		return refuse(refusedf("codemode egress: this session has moved its %d bytes (egress byte limit; reset the session or raise --egress-max-bytes)", lim))
	}
	done := func(Outcome) {}
	if l.p.opts.Governor != nil {
		d, err := l.p.opts.Governor.Govern(callCtx, req)
		if err != nil {
			return Target{}, nil, &RefusedError{Message: "codemode egress: " + err.Error()}
		}
		done = d
	}
	return t, done, nil
}

// budget is what the session may still move, or -1 for no limit.
func (l *Link) budget() int64 {
	lim := l.p.opts.Limits.Bytes
	if lim <= 0 {
		return -1
	}
	return max(lim-l.bytes.Load(), 0)
}

func refuseHTTP(w http.ResponseWriter, err error) {
	status, msg := http.StatusForbidden, err.Error()
	var re *RefusedError
	if !errors.As(err, &re) {
		status, msg = http.StatusBadGateway, "codemode egress: "+err.Error()
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(status)
	io.WriteString(w, msg+"\n")
}

// hopHeaders are the connection's own, never forwarded; Proxy-Authorization
// above all: whatever the sandbox puts there is not for upstream.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func stripHop(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// forward sends a plain HTTP request upstream. tunnel is set for requests
// read from an intercepted TLS session: their host must be the tunnel's.
func (l *Link) forward(w http.ResponseWriter, r *http.Request, tunnel *Target) {
	ctx := r.Context()
	scheme := "http"
	var host string
	var port int
	if tunnel != nil {
		scheme = "https"
		h, p, err := splitHostPort(r.Host, 443)
		if err != nil {
			refuseHTTP(w, refusedf("codemode egress: Host %q: %v", r.Host, err))
			return
		}
		if t, err := ParseTarget(h, p); err != nil || t != *tunnel {
			refuseHTTP(w, refusedf("codemode egress: Host %q does not match the tunnel's target %s", r.Host, tunnel.HostPort()))
			return
		}
		host, port = tunnel.Host(), tunnel.Port
	} else {
		if r.URL.Scheme != "http" || r.URL.Host == "" {
			refuseHTTP(w, refusedf("codemode egress: send plain HTTP requests in absolute form (http://host/path) and HTTPS through CONNECT"))
			return
		}
		var err error
		if host, port, err = splitHostPort(r.URL.Host, 80); err != nil {
			refuseHTTP(w, refusedf("codemode egress: %q: %v", r.URL.Host, err))
			return
		}
	}
	t, done, err := l.admit(ctx, host, port, r.Method, r.URL.Path)
	if err != nil {
		refuseHTTP(w, err)
		return
	}
	var out Outcome
	defer func() { done(out) }()
	out.Status, out.BytesIn, out.BytesOut, out.Err = l.roundTrip(w, r, scheme, t)
}

func (l *Link) roundTrip(w http.ResponseWriter, r *http.Request, scheme string, t Target) (int, int64, int64, error) {
	up := r.Clone(r.Context())
	up.RequestURI = ""
	up.URL.Scheme, up.URL.Host = scheme, t.HostPort()
	if (scheme == "http" && t.Port == 80) || (scheme == "https" && t.Port == 443) {
		up.URL.Host = t.Host()
		if t.Addr.Is6() {
			up.URL.Host = "[" + t.Host() + "]"
		}
	}
	up.Host = "" // the checked target, never a header the sandbox wrote
	stripHop(up.Header)
	l.p.secrets.swap(up, t)
	scrub := l.p.secrets.scrubber(t)
	if scrub != nil {
		// The transport then asks for gzip and decodes it: the answer is
		// scanned for the secret in clear.
		up.Header.Del("Accept-Encoding")
	}
	body := &counter{r: r.Body, limit: l.budget()}
	if r.Body != nil && r.Body != http.NoBody {
		up.Body = body
		if err := l.p.swapBody(up, t, body); err != nil {
			refuseHTTP(w, fmt.Errorf("reading the request body: %w", err))
			return 0, 0, body.n, err
		}
	}
	resp, err := l.p.transport.RoundTrip(up)
	l.bytes.Add(body.n)
	if err != nil {
		var re *RefusedError
		if errors.As(err, &re) {
			refuseHTTP(w, re)
		} else {
			refuseHTTP(w, fmt.Errorf("%s: %w", t.HostPort(), err))
		}
		return 0, 0, body.n, err
	}
	defer resp.Body.Close()
	stripHop(resp.Header)
	in := &counter{r: resp.Body, limit: l.budget()}
	var answer io.Reader = in
	if scrub != nil {
		if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
			err := fmt.Errorf("%s answered in Content-Encoding %q, which the proxy cannot scan for secrets", t.HostPort(), ce)
			refuseHTTP(w, err)
			return resp.StatusCode, 0, body.n, err
		}
		for _, vs := range resp.Header {
			for i, v := range vs {
				vs[i] = scrub.String(v)
			}
		}
		resp.Header.Del("Content-Length") // placeholders and values differ in length
		answer = scrub.Reader(in)
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, err = io.Copy(w, answer)
	l.bytes.Add(in.n)
	return resp.StatusCode, in.n, body.n, err
}

// maxSwappedBody is the largest request body whose placeholders are swapped
// in memory, keeping a Content-Length; a larger one is streamed chunked.
const maxSwappedBody = 1 << 20

// swapBody puts the values of t's secrets into up's body, when the proxy
// is configured to and the body is not encoded.
func (p *Proxy) swapBody(up *http.Request, t Target, body io.Reader) error {
	sw := p.secrets.swapper(t)
	if !p.opts.SwapBody || sw == nil || up.Header.Get("Content-Encoding") != "" {
		return nil
	}
	if up.ContentLength < 0 || up.ContentLength > maxSwappedBody {
		up.Body, up.ContentLength = io.NopCloser(sw.Reader(body)), -1
		up.Header.Del("Content-Length")
		return nil
	}
	data, err := io.ReadAll(sw.Reader(body))
	if err != nil {
		return err
	}
	up.Body, up.ContentLength = io.NopCloser(bytes.NewReader(data)), int64(len(data))
	return nil
}

// connect serves a CONNECT: a tunnel to the checked address, or for a host
// with bound secrets an intercepted TLS session.
func (l *Link) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := splitHostPort(r.Host, 0)
	if err != nil || port == 0 {
		refuseHTTP(w, refusedf("codemode egress: CONNECT needs host:port, got %q", r.Host))
		return
	}
	// A host with bound secrets is intercepted: each request inside is
	// admitted on its own, so the tunnel itself is only checked against
	// the allow-list.
	if t, err := ParseTarget(host, port); err == nil && l.p.ca != nil && l.p.secrets.bound(t) && l.p.allows(t) {
		if _, _, attached := l.whose(); attached {
			if err := l.intercept(w, t); err != nil {
				l.p.log.Debug("intercepted tunnel", "host", t.HostPort(), "error", err)
			}
			return
		}
	}
	t, done, err := l.admit(r.Context(), host, port, http.MethodConnect, "")
	if err != nil {
		refuseHTTP(w, err)
		return
	}
	var out Outcome
	defer func() { done(out) }()
	up, err := l.p.dial(r.Context(), "tcp", t.HostPort())
	if err != nil {
		out.Err = err
		refuseHTTP(w, err)
		return
	}
	defer up.Close()
	hj, ok := w.(http.Hijacker)
	if !ok {
		out.Err = errors.New("connection cannot be taken over")
		refuseHTTP(w, out.Err)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		out.Err = err
		return
	}
	defer conn.Close()
	if !l.track(conn) || !l.track(up) {
		return
	}
	defer l.untrack(conn)
	defer l.untrack(up)
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		out.Err = err
		return
	}
	out.BytesOut, out.BytesIn = l.splice(conn, rw.Reader, up)
}

// splice copies both ways until either side ends or the byte budget is
// spent, and returns the bytes sent upstream and received.
func (l *Link) splice(client net.Conn, buffered io.Reader, up net.Conn) (sent, recv int64) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := &counter{r: buffered, limit: l.budget()}
		io.Copy(up, c)
		l.bytes.Add(c.n)
		sent = c.n
		if tc, ok := up.(*net.TCPConn); ok {
			tc.CloseWrite()
		} else {
			up.Close()
		}
	}()
	c := &counter{r: up, limit: l.budget()}
	io.Copy(client, c)
	l.bytes.Add(c.n)
	recv = c.n
	client.Close()
	up.Close()
	wg.Wait()
	return sent, recv
}

// counter counts what is read through it and fails past limit (-1: none).
type counter struct {
	r     io.Reader
	n     int64
	limit int64
}

var errBudget = errors.New("codemode egress: the session's byte limit is reached")

func (c *counter) Read(b []byte) (int, error) {
	if c.r == nil {
		return 0, io.EOF
	}
	if c.limit >= 0 {
		if c.n >= c.limit {
			return 0, errBudget
		}
		if rest := c.limit - c.n; int64(len(b)) > rest {
			b = b[:rest]
		}
	}
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}

func (c *counter) Close() error {
	if cl, ok := c.r.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// dial resolves the target on this host, checks every address, and
// connects to a checked one: the address is never looked up again, so a
// name that changes its answer (DNS rebinding) cannot lead elsewhere.
func (p *Proxy) dial(ctx context.Context, network, hostport string) (net.Conn, error) {
	host, port, err := splitHostPort(hostport, 0)
	if err != nil {
		return nil, err
	}
	t, err := ParseTarget(host, port)
	if err != nil {
		return nil, &RefusedError{Message: "codemode egress: " + err.Error()}
	}
	addrs := []netip.Addr{t.Addr}
	if t.Name != "" {
		if addrs, err = p.opts.Resolver.LookupNetIP(ctx, "ip", t.Name); err != nil {
			return nil, fmt.Errorf("resolving %s: %w", t.Name, err)
		}
	}
	var errs []error
	for _, a := range addrs {
		a = a.Unmap()
		if !p.addrAllowed(a, t.Port) {
			errs = append(errs, refusedf("codemode egress: %s resolves to %s, a non-public address; only an IP or CIDR entry of the allow-list (e.g. --egress-allow %s) lets requests reach it",
				t.Host(), a, suggestPattern(Target{Addr: a, Port: t.Port})))
			continue
		}
		c, err := p.dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(t.Port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("%s has no address", t.Name)
	}
	// A refusal explains itself better than a connection error.
	for _, e := range errs {
		var re *RefusedError
		if errors.As(e, &re) {
			return nil, re
		}
	}
	return nil, errors.Join(errs...)
}

// splitHostPort splits host[:port], with def when the port is missing.
func splitHostPort(s string, def int) (string, int, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) && strings.Contains(ae.Err, "missing port") && def > 0 {
			return s, def, nil
		}
		return "", 0, err
	}
	n, err := parsePort(port)
	if err != nil {
		return "", 0, err
	}
	return host, n, nil
}

// systemBundle reads the host's CA bundle, for the sandbox's trust file.
func systemBundle() []byte {
	for _, f := range []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
		"/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem", "/usr/local/etc/openssl/cert.pem"} {
		if b, err := os.ReadFile(f); err == nil {
			return b
		}
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
