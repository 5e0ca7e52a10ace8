package mcpserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// testIssuer is a loopback OAuth authorization server: RFC 8414 metadata
// and a JWKS with one RSA key. It signs whatever tokens a test asks for.
type testIssuer struct {
	srv *httptest.Server
	key *rsa.PrivateKey
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &testIssuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer":                           is.srv.URL,
			"authorization_endpoint":           is.srv.URL + "/authorize",
			"token_endpoint":                   is.srv.URL + "/token",
			"jwks_uri":                         is.srv.URL + "/jwks",
			"response_types_supported":         []string{"code"},
			"code_challenge_methods_supported": []string{"S256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

// sign returns a JWT with claims over the standard ones, signed with key
// (the issuer's own unless another is given).
func (is *testIssuer) sign(t *testing.T, alg jose.SignatureAlgorithm, key any, claims map[string]any) string {
	t.Helper()
	if key == nil {
		key = is.key
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestOAuthResourceServer(t *testing.T) {
	is := newTestIssuer(t)
	const audience = "https://codemode.example/mcp"
	tokens, err := LoadTokens("", "ops:0123456789abcdef0123")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{DefaultTimeout: 30 * time.Second, MaxTimeout: 120 * time.Second})
	h, err := s.httpHandler(t.Context(), HTTPOptions{Path: "/mcp", Tokens: tokens, PublicURL: audience,
		OAuth: &OAuth{Issuer: is.srv.URL, Scopes: []string{"mcp:run"}}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claims := func(over map[string]any) map[string]any {
		c := map[string]any{"iss": is.srv.URL, "sub": "alice", "aud": audience, "exp": now.Add(time.Hour).Unix(),
			"iat": now.Unix(), "scope": "openid mcp:run"}
		for k, v := range over {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	otherRSA, _ := rsa.GenerateKey(rand.Reader, 2048)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tests := []struct {
		name  string
		token string
		want  int
	}{
		{"valid", is.sign(t, jose.RS256, nil, claims(nil)), http.StatusOK},
		{"scp claim", is.sign(t, jose.RS256, nil, claims(map[string]any{"scope": nil, "scp": []string{"mcp:run"}})), http.StatusOK},
		{"static token", "0123456789abcdef0123", http.StatusOK},
		{"no token", "", http.StatusUnauthorized},
		{"unknown opaque token", "not-a-jwt-but-long-enough", http.StatusUnauthorized},
		{"expired", is.sign(t, jose.RS256, nil, claims(map[string]any{"exp": now.Add(-time.Minute).Unix()})), http.StatusUnauthorized},
		{"other audience", is.sign(t, jose.RS256, nil, claims(map[string]any{"aud": "https://elsewhere/mcp"})), http.StatusUnauthorized},
		{"other issuer", is.sign(t, jose.RS256, nil, claims(map[string]any{"iss": "https://evil.example"})), http.StatusUnauthorized},
		{"signed by another key", is.sign(t, jose.RS256, otherRSA, claims(nil)), http.StatusUnauthorized},
		{"signed by an EC key not in the set", is.sign(t, jose.ES256, ec, claims(nil)), http.StatusUnauthorized},
		{"HMAC with the public key as secret", is.sign(t, jose.HS256, []byte("0123456789abcdef0123456789abcdef"), claims(nil)), http.StatusUnauthorized},
		{"alg none", unsigned(claims(nil)), http.StatusUnauthorized},
		{"missing scope", is.sign(t, jose.RS256, nil, claims(map[string]any{"scope": "openid"})), http.StatusForbidden},
		{"no subject", is.sign(t, jose.RS256, nil, claims(map[string]any{"sub": nil})), http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, initializeRequest(t, tt.token))
			if rec.Code != tt.want {
				t.Fatalf("status = %d, want %d; body: %s", rec.Code, tt.want, rec.Body.String())
			}
			if tt.want == http.StatusUnauthorized {
				want := `resource_metadata="https://codemode.example/.well-known/oauth-protected-resource/mcp"`
				if got := rec.Header().Get("WWW-Authenticate"); !strings.Contains(got, want) {
					t.Errorf("WWW-Authenticate = %q, want it to contain %s", got, want)
				}
			}
		})
	}

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/.well-known/oauth-protected-resource/mcp", nil))
	var meta map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &meta); err != nil || rec.Code != 200 {
		t.Fatalf("protected resource metadata: %d %s", rec.Code, rec.Body.String())
	}
	if meta["resource"] != audience || meta["authorization_servers"].([]any)[0] != is.srv.URL {
		t.Errorf("protected resource metadata = %v", meta)
	}
}

func TestOAuthIssuerWithoutMetadataRefusesToStart(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	s := New(Options{DefaultTimeout: 30 * time.Second, MaxTimeout: 120 * time.Second})
	_, err := s.httpHandler(context.Background(), HTTPOptions{Path: "/mcp", OAuth: &OAuth{Issuer: srv.URL}}, "127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "no authorization server metadata") {
		t.Fatalf("httpHandler = %v, want a metadata error", err)
	}
}

func unsigned(claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none", "typ": "at+jwt"}) + "." + enc(claims) + "."
}

func initializeRequest(t *testing.T, token string) *http.Request {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	r := httptest.NewRequest("POST", "/mcp", io.NopCloser(strings.NewReader(body)))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

func TestCheckHTTPOptionsAcceptsOAuthBeyondLoopback(t *testing.T) {
	tests := []struct {
		name string
		o    HTTPOptions
		ok   bool
	}{
		{"no authentication", HTTPOptions{Addr: "0.0.0.0:8765", Path: "/mcp"}, false},
		{"oauth", HTTPOptions{Addr: "0.0.0.0:8765", Path: "/mcp", OAuth: &OAuth{Issuer: "https://auth.example"}}, true},
		{"oauth without issuer", HTTPOptions{Addr: "0.0.0.0:8765", Path: "/mcp", OAuth: &OAuth{}}, false},
		{"explicitly unauthenticated", HTTPOptions{Addr: "0.0.0.0:8765", Path: "/mcp", AllowUnauthenticated: true}, true},
		{"loopback", HTTPOptions{Addr: "127.0.0.1:8765", Path: "/mcp"}, true},
	}
	for _, tt := range tests {
		if err := CheckHTTPOptions(tt.o); (err == nil) != tt.ok {
			t.Errorf("%s: CheckHTTPOptions = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

// TestVerifierIsShared checks that other pages (the console) get the
// endpoint's own verifier: static tokens and the issuer's JWTs, nothing else.
func TestVerifierIsShared(t *testing.T) {
	is := newTestIssuer(t)
	const audience = "https://codemode.example/mcp"
	tokens, err := LoadTokens("", "ops:0123456789abcdef0123")
	if err != nil {
		t.Fatal(err)
	}
	var verify auth.TokenVerifier
	s := New(Options{DefaultTimeout: 30 * time.Second, MaxTimeout: 120 * time.Second})
	if _, err := s.httpHandler(t.Context(), HTTPOptions{Path: "/mcp", Tokens: tokens, PublicURL: audience,
		OAuth: &OAuth{Issuer: is.srv.URL}, Verifier: func(v auth.TokenVerifier) { verify = v }}, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if verify == nil {
		t.Fatal("no verifier handed out")
	}
	now := time.Now()
	jwt := is.sign(t, jose.RS256, nil, map[string]any{"iss": is.srv.URL, "sub": "alice", "aud": audience,
		"exp": now.Add(time.Hour).Unix(), "iat": now.Unix()})
	for _, tc := range []struct{ token, want string }{
		{"0123456789abcdef0123", "ops"},
		{jwt, "oauth:alice"},
		{"not-a-token-at-all-x", ""},
	} {
		ti, err := verify(t.Context(), tc.token, nil)
		got := ""
		if err == nil {
			got = ti.UserID
		}
		if got != tc.want {
			t.Errorf("verify(%.12s...) = %q, %v; want %q", tc.token, got, err, tc.want)
		}
	}
}
