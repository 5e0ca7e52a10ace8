// Package signintest runs, on loopback, an OAuth authorization server that
// approves at once and an MCP server protected by it, for tests of
// signing in (package signin, the e2e tests of codemode auth login).
package signintest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AuthServer is an OAuth authorization server on loopback that approves
// every request at once, checking what the MCP authorization specification
// requires of the client: PKCE S256, the resource parameter, registered
// redirect URIs, the client's authentication.
type AuthServer struct {
	srv *httptest.Server
	// Clients are the pre-registered clients: id -> secret ("" for a
	// public client).
	Clients map[string]string
	// AuthMethods are the token endpoint's client authentication methods.
	AuthMethods []string
	// ExpiresIn is the lifetime of new tokens in seconds; 0 for no expiry.
	ExpiresIn int
	// MetadataDocuments advertises Client ID Metadata Documents: an HTTPS
	// URL is then a client id (the document is not fetched).
	MetadataDocuments bool

	mu        sync.Mutex
	redirects map[string][]string // client id -> registered redirect URIs
	codes     map[string]grant
	tokens    map[string]grant // access token -> what it grants
	refreshes map[string]grant
	log       []string // what happened, in order: "register", "authorize read", "token code", "token refresh"
}

type grant struct {
	client, challenge, resource, scope string
}

// NewAuthServer starts the authorization server until t ends.
func NewAuthServer(t testing.TB) *AuthServer {
	a := &AuthServer{Clients: map[string]string{}, AuthMethods: []string{"none"}, ExpiresIn: 3600,
		redirects: map[string][]string{}, codes: map[string]grant{}, tokens: map[string]grant{}, refreshes: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", a.metadata)
	mux.HandleFunc("POST /register", a.register)
	mux.HandleFunc("GET /authorize", a.authorize)
	mux.HandleFunc("POST /token", a.token)
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

func (a *AuthServer) note(format string, args ...any) {
	a.mu.Lock()
	a.log = append(a.log, fmt.Sprintf(format, args...))
	a.mu.Unlock()
}

// Events is what the server did, in order: "register", "authorize
// SCOPES" (sorted), "token code", "token refresh".
func (a *AuthServer) Events() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.log)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (a *AuthServer) metadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, map[string]any{
		"issuer": a.srv.URL, "authorization_endpoint": a.srv.URL + "/authorize", "token_endpoint": a.srv.URL + "/token",
		"registration_endpoint": a.srv.URL + "/register", "response_types_supported": []string{"code"},
		"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": a.AuthMethods,
		"scopes_supported": []string{"read", "write", "offline_access"}, "client_id_metadata_document_supported": a.MetadataDocuments,
	})
}

func (a *AuthServer) register(w http.ResponseWriter, r *http.Request) {
	var md struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	json.NewDecoder(r.Body).Decode(&md)
	a.mu.Lock()
	id := fmt.Sprintf("dyn-%d", len(a.redirects)+1)
	a.redirects[id] = md.RedirectURIs
	a.mu.Unlock()
	a.note("register")
	writeJSON(w, 201, map[string]any{"client_id": id, "redirect_uris": md.RedirectURIs, "token_endpoint_auth_method": "none"})
}

func (a *AuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	client, redirect := q.Get("client_id"), q.Get("redirect_uri")
	a.mu.Lock()
	_, pre := a.Clients[client]
	ok := pre || slices.Contains(a.redirects[client], redirect) || (a.MetadataDocuments && strings.HasPrefix(client, "https://"))
	a.mu.Unlock()
	switch {
	case !ok:
		http.Error(w, "unknown client or redirect_uri", 400)
		return
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		http.Error(w, "PKCE S256 required", 400)
		return
	case q.Get("resource") == "":
		http.Error(w, "resource required", 400)
		return
	}
	code := fmt.Sprintf("code-%d", time.Now().UnixNano())
	a.mu.Lock()
	a.codes[code] = grant{client: client, challenge: q.Get("code_challenge"), resource: q.Get("resource"), scope: q.Get("scope")}
	a.mu.Unlock()
	scopes := strings.Fields(q.Get("scope"))
	slices.Sort(scopes) // the client's order is not significant
	a.note("authorize %s", strings.Join(scopes, " "))
	http.Redirect(w, r, redirect+"?"+url.Values{"code": {code}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
}

func (a *AuthServer) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	client := r.Form.Get("client_id")
	if id, secret, ok := r.BasicAuth(); ok {
		client = id
		a.mu.Lock()
		want, known := a.Clients[id]
		a.mu.Unlock()
		if !known || want != secret {
			writeJSON(w, 401, map[string]any{"error": "invalid_client"})
			return
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var g grant
	switch r.Form.Get("grant_type") {
	case "authorization_code":
		c, ok := a.codes[r.Form.Get("code")]
		delete(a.codes, r.Form.Get("code"))
		sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
		if !ok || c.client != client || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge || r.Form.Get("resource") != c.resource {
			writeJSON(w, 400, map[string]any{"error": "invalid_grant"})
			return
		}
		g = c
		a.log = append(a.log, "token code")
	case "refresh_token":
		c, ok := a.refreshes[r.Form.Get("refresh_token")]
		if !ok || r.Form.Get("resource") != c.resource {
			writeJSON(w, 400, map[string]any{"error": "invalid_grant"})
			return
		}
		g = c
		a.log = append(a.log, "token refresh")
	default:
		writeJSON(w, 400, map[string]any{"error": "unsupported_grant_type"})
		return
	}
	n := len(a.tokens) + 1
	at, rt := fmt.Sprintf("at-%d", n), fmt.Sprintf("rt-%d", n)
	a.tokens[at], a.refreshes[rt] = g, g
	res := map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt, "scope": g.scope}
	if a.ExpiresIn > 0 {
		res["expires_in"] = a.ExpiresIn
	}
	writeJSON(w, 200, res)
}

// ProtectedServer starts an MCP server behind a, until t ends, and returns
// its URL: every request needs one of a's tokens for this resource; its
// tools "whoami" and "admin" answer "NAME ok", and "admin" needs scope
// "write".
func ProtectedServer(t testing.TB, a *AuthServer) string {
	return protected(t, a, func(srv *mcp.Server) http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	})
}

// ProtectedSSEServer is ProtectedServer over the SSE transport.
func ProtectedSSEServer(t testing.TB, a *AuthServer) string {
	return protected(t, a, func(srv *mcp.Server) http.Handler {
		return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	})
}

func protected(t testing.TB, a *AuthServer, transport func(*mcp.Server) http.Handler) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected"}, nil)
	for _, name := range []string{"whoami", "admin"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ok"}}}, nil
		})
	}
	mcpHandler := transport(srv)
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": base + "/mcp", "authorization_servers": []string{a.srv.URL}, "scopes_supported": []string{"read", "write"}})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		challenge := fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, base)
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		a.mu.Lock()
		g, ok := a.tokens[tok]
		a.mu.Unlock()
		if !ok || g.resource != base+"/mcp" {
			w.Header().Set("WWW-Authenticate", challenge+`, scope="read"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"admin"`)) && !slices.Contains(strings.Fields(g.scope), "write") {
			w.Header().Set("WWW-Authenticate", challenge+`, error="insufficient_scope", scope="read write"`)
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	base = ts.URL
	return ts.URL + "/mcp"
}

// Browser follows the authorization URL as a browser whose user approves.
func Browser(_ context.Context, u string) error {
	go func() {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
		}
	}()
	return nil
}
