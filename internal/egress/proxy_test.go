package egress

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/codemode/codemode/internal/hostrpc"
)

// echo answers with what upstream saw: the Host, the headers that matter
// and the query (with ?header=1, Authorization in X-Echo too).
func echo(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("header") != "" {
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
	}
	if r.URL.Query().Get("gzip") != "" && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		defer zw.Close()
		fmt.Fprintf(zw, "host=%s auth=%q", r.Host, r.Header.Get("Authorization"))
		return
	}
	fmt.Fprintf(w, "host=%s auth=%q proxy-auth=%q query=%s", r.Host, r.Header.Get("Authorization"), r.Header.Get("Proxy-Authorization"), r.URL.RawQuery)
}

// fakeDNS resolves names from a table, as an attacker's DNS server would.
type fakeDNS map[string][]netip.Addr

func (f fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// recorder keeps what the TLS server last received, as the test's own
// view of upstream (the sandbox's answers are scrubbed).
type recorder struct {
	mu   sync.Mutex
	seen string
	body []byte
}

func (r *recorder) wrap(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.seen, r.body = req.Header.Get("Authorization")+" "+req.URL.RawQuery, body
		r.mu.Unlock()
		h(w, req)
	}
}

func (r *recorder) lastBody() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body
}

func (r *recorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen
}

type env struct {
	saw    *recorder
	p      *Proxy
	link   *Link
	plain  *httptest.Server
	tls    *httptest.Server
	client *http.Client // the sandbox: every request through the link
}

func port(t *testing.T, s *httptest.Server) string {
	t.Helper()
	u, _ := url.Parse(s.URL)
	return u.Port()
}

// setup starts a plain and a TLS loopback server and a proxy whose
// allow-list is made by allow from their ports.
func setup(t *testing.T, allow func(plain, tls string) []string, mod func(o *Options, plain, tls string)) *env {
	t.Helper()
	saw := &recorder{}
	e := &env{saw: saw, plain: httptest.NewServer(http.HandlerFunc(echo)), tls: httptest.NewTLSServer(saw.wrap(echo))}
	t.Cleanup(e.plain.Close)
	t.Cleanup(e.tls.Close)
	list, err := ParseList(allow(port(t, e.plain), port(t, e.tls)))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(e.tls.Certificate())
	opts := Options{Allow: list, UpstreamRoots: roots, Dir: t.TempDir(), SystemRoots: []byte{},
		Resolver: fakeDNS{"rebind.test": {netip.MustParseAddr("127.0.0.1")}, "localhost": {netip.MustParseAddr("127.0.0.1")}}}
	if mod != nil {
		mod(&opts, port(t, e.plain), port(t, e.tls))
	}
	if e.p, err = New(opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.p.Close() })
	whose := func() (context.Context, hostrpc.Caller, bool) {
		return context.Background(), hostrpc.Caller{Principal: "p", Session: "s"}, true
	}
	if e.link, err = e.p.Attach(t.Context(), "sb", whose); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.link.Close() })
	sandboxRoots := x509.NewCertPool()
	sandboxRoots.AddCert(e.tls.Certificate())
	if b, err := os.ReadFile(filepath.Join(e.link.dir, caBundleName)); err == nil {
		sandboxRoots.AppendCertsFromPEM(b)
	}
	sock := filepath.Join(e.link.dir, socketName)
	e.client = &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: RelayAddr}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
		TLSClientConfig:   &tls.Config{RootCAs: sandboxRoots},
		DisableKeepAlives: true,
	}}
	return e
}

func (e *env) get(t *testing.T, rawURL string, header http.Header) (int, string) {
	t.Helper()
	status, body, _ := e.getWithHeader(t, rawURL, header)
	return status, body
}

func (e *env) getWithHeader(t *testing.T, rawURL string, header http.Header) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := e.client.Do(req)
	if err != nil {
		// A refused CONNECT surfaces as the transport's error.
		return 0, err.Error(), nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestProxy(t *testing.T) {
	e := setup(t, func(plain, tls string) []string {
		return []string{"127.0.0.1:" + plain, "127.0.0.1:" + tls, "rebind.test:*", "*.wild.test:*"}
	}, nil)
	plain, tlsPort := port(t, e.plain), port(t, e.tls)
	tests := []struct {
		name   string
		url    string
		header http.Header
		status int
		want   []string
	}{
		{"allowed http", "http://127.0.0.1:" + plain + "/x?q=1", nil, 200, []string{"host=127.0.0.1:" + plain, "query=q=1"}},
		{"https passthrough", "https://127.0.0.1:" + tlsPort + "/", nil, 200, []string{"host=127.0.0.1:" + tlsPort}},
		{"host not listed", "http://localhost:" + plain + "/", nil, 403, []string{"localhost:" + plain + " is not on the egress allow-list", "--egress-allow localhost:" + plain}},
		{"name resolving to loopback (DNS rebinding)", "http://rebind.test:1/", nil, 403, []string{"rebind.test resolves to 127.0.0.1, a non-public address", "--egress-allow 127.0.0.1:1"}},
		{"name resolving to a listed address", "http://rebind.test:" + plain + "/", nil, 200, []string{"host=rebind.test:" + plain}},
		{"decimal IP", "http://2130706433:" + plain + "/", nil, 403, []string{"non-standard form"}},
		{"octal IP", "http://0177.0.0.1:" + plain + "/", nil, 403, []string{"non-standard form"}},
		{"hex IP", "http://0x7f.1:" + plain + "/", nil, 403, []string{"non-standard form"}},
		{"IPv6 loopback not listed", "http://[::1]:" + plain + "/", nil, 403, []string{"[::1]:" + plain + " is not on the egress allow-list"}},
		{"IPv4-mapped IPv6 is the IPv4 address", "http://[::ffff:127.0.0.1]:" + plain + "/", nil, 200, []string{"host=127.0.0.1:" + plain}},
		{"CONNECT to a port not listed", "https://127.0.0.1:" + plain + "1/", nil, 0, []string{"Forbidden"}},
		{"wildcard name still needs a public address", "http://a.wild.test:" + plain + "/", nil, 502, []string{"no such host"}},
		{"Host header is not the target", "http://127.0.0.1:" + plain + "/", http.Header{"Host": {"evil.test"}}, 200, []string{"host=127.0.0.1:" + plain}},
		{"Proxy-Authorization is never forwarded", "http://127.0.0.1:" + plain + "/", http.Header{"Proxy-Authorization": {"Basic c2VjcmV0"}, "Connection": {"Proxy-Authorization"}}, 200, []string{`proxy-auth=""`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.get(t, tc.url, tc.header)
			if status != tc.status {
				t.Errorf("status %d, want %d (body %q)", status, tc.status, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("body %q lacks %q", body, w)
				}
			}
		})
	}
}

// rawRequest writes a request by hand to the link's socket and returns the
// response's first line and body: what clients would never send.
func rawRequest(t *testing.T, e *env, raw string) string {
	t.Helper()
	c, err := net.Dial("unix", filepath.Join(e.link.dir, socketName))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, raw)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Status + " " + string(b)
}

func TestProxyRawRequests(t *testing.T) {
	e := setup(t, func(plain, _ string) []string { return []string{"127.0.0.1:" + plain} }, nil)
	plain := port(t, e.plain)
	tests := []struct{ name, raw, want string }{
		{"origin form with a Host header", "GET / HTTP/1.1\r\nHost: 127.0.0.1:" + plain + "\r\n\r\n", "403 Forbidden codemode egress: send plain HTTP requests in absolute form"},
		{"absolute form wins over a smuggled Host", "GET http://127.0.0.1:" + plain + "/ HTTP/1.1\r\nHost: metadata.google.internal\r\nConnection: close\r\n\r\n", "200 OK host=127.0.0.1:" + plain},
		{"CONNECT without a port", "CONNECT 127.0.0.1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "403 Forbidden codemode egress: CONNECT needs host:port"},
		{"CONNECT to the metadata address", "CONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: 169.254.169.254:80\r\n\r\n", "403 Forbidden codemode egress: 169.254.169.254:80 is not on the egress allow-list"},
		{"IPv6 zone", "GET http://[fe80::1%25lo]:" + plain + "/ HTTP/1.1\r\nHost: x\r\n\r\n", "403 Forbidden"},
		{"ftp scheme", "GET ftp://127.0.0.1:" + plain + "/ HTTP/1.1\r\nHost: x\r\n\r\n", "403 Forbidden codemode egress: send plain HTTP requests in absolute form"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := rawRequest(t, e, tc.raw); !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %q, want prefix %q", got, tc.want)
			}
		})
	}
}

func TestProxyLimits(t *testing.T) {
	t.Run("requests", func(t *testing.T) {
		e := setup(t, func(plain, _ string) []string { return []string{"127.0.0.1:" + plain} }, func(o *Options, _, _ string) { o.Limits.Requests = 1 })
		u := "http://127.0.0.1:" + port(t, e.plain) + "/"
		if status, body := e.get(t, u, nil); status != 200 {
			t.Fatalf("first request: %d %s", status, body)
		}
		if status, body := e.get(t, u, nil); status != 403 || !strings.Contains(body, "egress request limit") {
			t.Fatalf("second request: %d %s", status, body)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		e := setup(t, func(plain, _ string) []string { return []string{"127.0.0.1:" + plain} }, func(o *Options, _, _ string) { o.Limits.Bytes = 10 })
		u := "http://127.0.0.1:" + port(t, e.plain) + "/"
		_, body := e.get(t, u, nil)
		if len(body) > 10 {
			t.Fatalf("read %d bytes past a 10-byte limit: %q", len(body), body)
		}
		if status, body := e.get(t, u, nil); status != 403 || !strings.Contains(body, "egress byte limit") {
			t.Fatalf("after the limit: %d %s", status, body)
		}
	})
}

func TestProxyDetached(t *testing.T) {
	e := setup(t, func(plain, _ string) []string { return []string{"127.0.0.1:" + plain} }, nil)
	l, err := e.p.Attach(t.Context(), "spare", func() (context.Context, hostrpc.Caller, bool) {
		return context.Background(), hostrpc.Caller{}, false
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e.link = l
	got := rawRequest(t, e, "GET http://127.0.0.1:"+port(t, e.plain)+"/ HTTP/1.1\r\nHost: x\r\n\r\n")
	if !strings.Contains(got, "serves no session") {
		t.Fatalf("a sandbox serving no session got %q", got)
	}
}

func TestSecrets(t *testing.T) {
	const real = "real-token-6f1c"
	var placeholder string
	e := setup(t, func(plain, tls string) []string {
		return []string{"127.0.0.1:" + plain, "127.0.0.1:" + tls}
	}, func(o *Options, _, tls string) {
		sec, err := ParseSecret("API_TOKEN=127.0.0.1:"+tls, func(n string) (string, bool) { return real, n == "API_TOKEN" })
		if err != nil {
			t.Fatal(err)
		}
		o.Secrets = []Secret{sec}
	})
	tlsPort, plain := port(t, e.tls), port(t, e.plain)
	for _, kv := range e.link.Env() {
		if v, ok := strings.CutPrefix(kv, "API_TOKEN="); ok {
			placeholder = v
		}
		if strings.Contains(kv, real) {
			t.Fatalf("the sandbox's environment holds the secret: %s", kv)
		}
	}
	if placeholder == "" {
		t.Fatal("no placeholder in the sandbox's environment")
	}
	tests := []struct {
		name, url string
		header    http.Header
		want      []string
		not       []string
		upstream  string // what the TLS server received, if set
	}{
		// The echo comes back with the placeholder again: the real value
		// reached upstream (see the recorder) but not the sandbox.
		{"bound host gets the secret", "https://127.0.0.1:" + tlsPort + "/?key=" + placeholder, http.Header{"Authorization": {"Bearer " + placeholder}},
			[]string{`auth="Bearer ` + placeholder + `"`, "query=key=" + placeholder}, []string{real}, "Bearer " + real + " key=" + real},
		{"basic credentials too", "https://u:" + placeholder + "@127.0.0.1:" + tlsPort + "/", nil,
			nil, nil, "Basic dTpyZWFsLXRva2VuLTZmMWM= "},
		{"the value in the answer's headers is scrubbed", "https://127.0.0.1:" + tlsPort + "/?header=1", http.Header{"Authorization": {"Bearer " + placeholder}},
			[]string{"X-Echo: Bearer " + placeholder}, []string{real}, "Bearer " + real + " header=1"},
		// The sandbox asks for gzip; the proxy lets its transport ask and
		// decode, so the answer is scanned (and arrives decoded).
		{"a compressed answer is scrubbed", "https://127.0.0.1:" + tlsPort + "/?gzip=1", http.Header{"Authorization": {"Bearer " + placeholder}, "Accept-Encoding": {"gzip"}},
			[]string{`auth="Bearer ` + placeholder + `"`}, []string{real, "Content-Encoding"}, "Bearer " + real + " gzip=1"},
		{"other host gets the placeholder", "http://127.0.0.1:" + plain + "/", http.Header{"Authorization": {"Bearer " + placeholder}},
			[]string{`auth="Bearer ` + placeholder + `"`}, []string{real}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, hdr := e.getWithHeader(t, tc.url, tc.header)
			for k, vs := range hdr { // what the sandbox got: the answer's body and headers
				body += "\n" + k + ": " + strings.Join(vs, ",")
			}
			if tc.upstream != "" && e.saw.last() != tc.upstream {
				t.Errorf("upstream saw %q, want %q", e.saw.last(), tc.upstream)
			}
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("body %q lacks %q", body, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(body, w) {
					t.Errorf("body %q has %q", body, w)
				}
			}
		})
	}
	t.Run("intercepted Host must be the tunnel's", func(t *testing.T) {
		req, _ := http.NewRequest("GET", "https://127.0.0.1:"+tlsPort+"/", nil)
		req.Host = "127.0.0.1:" + plain
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 403 || !strings.Contains(string(b), "does not match the tunnel's target") {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	})
	t.Run("the CA key is nowhere in the link", func(t *testing.T) {
		filepath.Walk(e.link.dir, func(path string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				b, _ := os.ReadFile(path)
				if strings.Contains(string(b), "PRIVATE KEY") {
					t.Errorf("%s holds a private key", path)
				}
			}
			return nil
		})
	})
}

// TestSecretsInBodies: with SwapBody, the placeholder in a request body to
// the secret's host becomes the value (small bodies keep their length,
// large ones stream, a placeholder across read boundaries included);
// without it, bodies go out as written.
func TestSecretsInBodies(t *testing.T) {
	const real = "real-token-in-body"
	for _, swap := range []bool{false, true} {
		var placeholder string
		e := setup(t, func(_, tls string) []string { return []string{"127.0.0.1:" + tls} }, func(o *Options, _, tls string) {
			sec, _ := ParseSecret("API_TOKEN=127.0.0.1:"+tls, func(string) (string, bool) { return real, true })
			o.Secrets, o.SwapBody = []Secret{sec}, swap
		})
		for _, kv := range e.link.Env() {
			if v, ok := strings.CutPrefix(kv, "API_TOKEN="); ok {
				placeholder = v
			}
		}
		for _, size := range []int{10, 3 << 20} {
			pad := strings.Repeat("x", size)
			sent := "token=" + placeholder + "&pad=" + pad + "&again=" + placeholder
			want := sent
			if swap {
				want = "token=" + real + "&pad=" + pad + "&again=" + real
			}
			resp, err := e.client.Post(e.tls.URL+"/", "application/x-www-form-urlencoded", strings.NewReader(sent))
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || strings.Contains(string(answer), real) {
				t.Fatalf("swap=%v size=%d: %d %q", swap, size, resp.StatusCode, answer)
			}
			if got := string(e.saw.lastBody()); got != want {
				t.Errorf("swap=%v size=%d: upstream got a body of %d bytes, want %d (prefix %.60q)", swap, size, len(got), len(want), got)
			}
		}
	}
}

// TestCloseEndsTunnels: a sandbox that ends leaves no tunnel open on the
// host (the read below returns only because Close ended it).
func TestCloseEndsTunnels(t *testing.T) {
	e := setup(t, func(_, tls string) []string { return []string{"127.0.0.1:" + tls} }, nil)
	c, err := net.Dial("unix", filepath.Join(e.link.dir, socketName))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	target := "127.0.0.1:" + port(t, e.tls)
	io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, "200") {
		t.Fatalf("CONNECT answered %q, %v", line, err)
	}
	br.ReadString('\n') // the blank line ending the answer
	e.link.Close()
	if n, err := io.Copy(io.Discard, br); err != nil || n != 0 {
		t.Fatalf("after Close the tunnel gave %d bytes, %v", n, err)
	}
}
