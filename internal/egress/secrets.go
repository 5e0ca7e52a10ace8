package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// A Secret is a value sandboxed code may use but never see: the sandbox's
// environment holds a random placeholder under Name, and the proxy puts
// Value in its place in requests to hosts that Hosts allows.
type Secret struct {
	Name  string
	Hosts Pattern
	Value string
}

// ParseSecret reads NAME=PATTERN and takes the value of NAME from lookup
// (a secrets file, then codemode's own environment).
func ParseSecret(s string, lookup func(string) (string, bool)) (Secret, error) {
	name, pat, ok := strings.Cut(s, "=")
	if !ok || name == "" || pat == "" {
		return Secret{}, fmt.Errorf("egress secret %q: want NAME=HOST_PATTERN", s)
	}
	if !isEnvName(name) {
		return Secret{}, fmt.Errorf("egress secret %q: %q is not an environment variable name", s, name)
	}
	p, err := ParsePattern(pat)
	if err != nil {
		return Secret{}, fmt.Errorf("egress secret %s: %w", name, err)
	}
	v, ok := lookup(name)
	if !ok || v == "" {
		return Secret{}, fmt.Errorf("egress secret %s: neither the secrets file nor codemode's environment has a value for %s", name, name)
	}
	// Answers are scrubbed of the value wherever it appears: a short one
	// would match ordinary bytes and mangle them.
	if len(v) < minSecretLen {
		return Secret{}, fmt.Errorf("egress secret %s: the value has %d bytes; a secret needs at least %d", name, len(v), minSecretLen)
	}
	return Secret{Name: name, Hosts: p, Value: v}, nil
}

// ParseSecretsFile reads a secrets file: NAME=VALUE lines, blank lines and
// # comments skipped, the value taken verbatim to the end of the line (no
// quoting, no expansion). A name given twice is an error.
func ParseSecretsFile(data []byte) (map[string]string, error) {
	out := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || !isEnvName(name) {
			return nil, fmt.Errorf("secrets file line %d: want NAME=VALUE", i+1)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("secrets file line %d: %s is given twice", i+1, name)
		}
		out[name] = value
	}
	return out, nil
}

func isEnvName(s string) bool {
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

const minSecretLen = 8

type boundSecret struct {
	Secret
	placeholder string
	hosts       *List
}

// secretSet is the secrets of one proxy with their placeholders, made at
// start: every sandbox of this codemode sees the same ones.
type secretSet struct{ list []boundSecret }

func newSecretSet(secrets []Secret) (*secretSet, error) {
	s := &secretSet{}
	seen := map[string]bool{}
	for _, sec := range secrets {
		if seen[sec.Name] {
			return nil, fmt.Errorf("egress secret %s given twice", sec.Name)
		}
		seen[sec.Name] = true
		s.list = append(s.list, boundSecret{Secret: sec, placeholder: "codemode-secret-" + randomHex(16),
			hosts: &List{patterns: []Pattern{sec.Hosts}}})
	}
	return s, nil
}

func (s *secretSet) env() []string {
	var out []string
	for _, b := range s.list {
		out = append(out, b.Name+"="+b.placeholder)
	}
	return out
}

// bound reports whether some secret is for t (its TLS is intercepted).
func (s *secretSet) bound(t Target) bool {
	for _, b := range s.list {
		if b.hosts.Allows(t) {
			return true
		}
	}
	return false
}

// swap replaces the placeholders of the secrets bound to t in r's headers
// (inside Basic credentials too) and query. Placeholders of other secrets,
// and everything sent to other hosts, go out unchanged.
func (s *secretSet) swap(r *http.Request, t Target) {
	for _, b := range s.list {
		if !b.hosts.Allows(t) {
			continue
		}
		for k, vs := range r.Header {
			for i, v := range vs {
				vs[i] = strings.ReplaceAll(v, b.placeholder, b.Value)
				if k == "Authorization" && strings.HasPrefix(v, "Basic ") {
					if raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(v, "Basic ")); err == nil && strings.Contains(string(raw), b.placeholder) {
						vs[i] = "Basic " + base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(string(raw), b.placeholder, b.Value)))
					}
				}
			}
		}
		if strings.Contains(r.URL.RawQuery, b.placeholder) {
			r.URL.RawQuery = strings.ReplaceAll(r.URL.RawQuery, b.placeholder, b.Value)
		}
	}
}

// authority is the per-instance CA that signs certificates for intercepted
// hosts. Its key lives in this process's memory only.
type authority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	leafKey *ecdsa.PrivateKey

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("leaf key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "codemode egress CA " + randomHex(4)},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(5 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, leafKey: leafKey, leaves: map[string]*tls.Certificate{},
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// leaf returns a certificate for t's host, signed by the authority.
func (a *authority) leaf(t Target) (*tls.Certificate, error) {
	host := t.Host()
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.leaves[host]; c != nil {
		return c, nil
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if t.Name != "" {
		tmpl.DNSNames = []string{host}
	} else {
		tmpl.IPAddresses = []net.IP{t.Addr.AsSlice()}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &a.leafKey.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("certificate for %s: %w", host, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: a.leafKey}
	a.leaves[host] = c
	return c, nil
}

// intercept answers a CONNECT to a host with bound secrets: it terminates
// the sandbox's TLS with a certificate of codemode's CA and serves the
// requests inside one by one, each admitted and forwarded (re-encrypted,
// the upstream verified) on its own.
func (l *Link) intercept(w http.ResponseWriter, t Target) error {
	cert, err := l.p.ca.leaf(t)
	if err != nil {
		refuseHTTP(w, err)
		return err
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		err := errors.New("connection cannot be taken over")
		refuseHTTP(w, err)
		return err
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return err
	}
	if !l.track(conn) {
		conn.Close()
		return nil
	}
	defer l.untrack(conn)
	if _, err := rw.WriteString("HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		conn.Close()
		return err
	}
	if err := rw.Flush(); err != nil {
		conn.Close()
		return err
	}
	tc := tls.Server(&bufferedConn{Conn: conn, r: rw.Reader}, &tls.Config{
		Certificates: []tls.Certificate{*cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	closed := make(chan struct{})
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.forward(w, r, &t) }),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          l.srv.ErrorLog,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed || s == http.StateHijacked {
				close(closed)
			}
		},
	}
	srv.Serve(&oneConn{c: tc, done: closed})
	return nil
}

// bufferedConn reads first what the HTTP server had buffered.
type bufferedConn struct {
	net.Conn
	r interface{ Read([]byte) (int, error) }
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// oneConn is a listener of one connection: Accept hands it out once, then
// waits for it to close.
type oneConn struct {
	c    net.Conn
	once sync.Once
	done chan struct{}
}

func (o *oneConn) Accept() (net.Conn, error) {
	var c net.Conn
	o.once.Do(func() { c = o.c })
	if c != nil {
		return c, nil
	}
	<-o.done
	return nil, net.ErrClosed
}

func (o *oneConn) Close() error   { return nil }
func (o *oneConn) Addr() net.Addr { return o.c.LocalAddr() }
