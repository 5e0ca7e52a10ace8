package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/hostrpc"
)

// BenchmarkRequest measures one small GET to a loopback server, directly
// and through the proxy (the link's socket, the allow-list, a new checked
// connection per CONNECT), side by side: the difference is the proxy's
// cost per request, with keep-alive (as sessions of requests or pip have
// it) and with a new connection per request; and, for a host with a bound
// secret, intercepted (TLS terminated, placeholders swapped, the answer
// scrubbed) on a kept-alive connection.
func BenchmarkRequest(b *testing.B) {
	plain := httptest.NewServer(http.HandlerFunc(echo))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(echo))
	defer secure.Close()
	hostport := func(s *httptest.Server) string { u, _ := url.Parse(s.URL); return u.Host }
	allow, _ := ParseList([]string{hostport(plain), hostport(secure)})
	roots := x509.NewCertPool()
	roots.AddCert(secure.Certificate())
	p, err := New(Options{Allow: allow, Dir: b.TempDir(), UpstreamRoots: roots})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	link, err := p.Attach(context.Background(), "bench", func() (context.Context, hostrpc.Caller, bool) {
		return context.Background(), hostrpc.Caller{}, true
	})
	if err != nil {
		b.Fatal(err)
	}
	defer link.Close()
	sock := filepath.Join(link.dir, socketName)
	tlsConf := &tls.Config{RootCAs: roots}
	// A second proxy binds a secret to the TLS server: its HTTPS is
	// intercepted (a second TLS session), the placeholder swapped and the
	// answer scrubbed.
	sec, err := ParseSecret("TOKEN="+hostport(secure), func(string) (string, bool) { return "bench-token", true })
	if err != nil {
		b.Fatal(err)
	}
	ps, err := New(Options{Allow: allow, Dir: b.TempDir(), UpstreamRoots: roots, Secrets: []Secret{sec}, SystemRoots: []byte{}})
	if err != nil {
		b.Fatal(err)
	}
	defer ps.Close()
	slink, err := ps.Attach(context.Background(), "bench-secret", func() (context.Context, hostrpc.Caller, bool) {
		return context.Background(), hostrpc.Caller{}, true
	})
	if err != nil {
		b.Fatal(err)
	}
	defer slink.Close()
	caRoots := x509.NewCertPool()
	caRoots.AppendCertsFromPEM(ps.ca.certPEM)
	intercepted := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: caRoots},
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: RelayAddr}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", filepath.Join(slink.dir, socketName))
		}}}
	direct := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConf}}
	proxied := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConf,
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: RelayAddr}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	// A new connection per request, as curl or a one-off urlopen makes:
	// for HTTPS that is a new CONNECT, resolution, check and handshake.
	directNew := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConf, DisableKeepAlives: true}}
	proxiedNew := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConf, DisableKeepAlives: true,
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: RelayAddr}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	for _, tc := range []struct {
		name   string
		client *http.Client
		url    string
	}{
		{"http/direct", direct, plain.URL}, {"http/proxied", proxied, plain.URL},
		{"https/direct", direct, secure.URL}, {"https/proxied", proxied, secure.URL},
		{"https-secret/intercepted", intercepted, secure.URL},
		{"http-new-conn/direct", directNew, plain.URL}, {"http-new-conn/proxied", proxiedNew, plain.URL},
		{"https-new-conn/direct", directNew, secure.URL}, {"https-new-conn/proxied", proxiedNew, secure.URL},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				resp, err := tc.client.Get(tc.url)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "host=") {
					b.Fatalf("%d %s", resp.StatusCode, body)
				}
			}
		})
	}
}
