package signin

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/codemode/codemode/internal/signin/signintest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callWith connects to url with h as the OAuth handler and calls tool.
func callWith(t *testing.T, url string, h *Handler, tool string) (string, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, OAuthHandler: h}, nil)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool})
	if err != nil {
		return "", err
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

func login(t *testing.T, store *Store, url string, oauth *serverconfig.OAuth) *Record {
	t.Helper()
	rec, err := Login(t.Context(), LoginOptions{Server: "remote", URL: url, OAuth: oauth, Store: store, Open: signintest.Browser, Out: io.Discard, ClientName: "codemode"})
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	return rec
}

func wantRequired(t *testing.T, err error, reason string) {
	t.Helper()
	var re *RequiredError
	if !errors.As(err, &re) || !strings.Contains(re.Reason, reason) || !strings.Contains(err.Error(), "codemode auth login remote") {
		t.Fatalf("error = %v, want sign-in required (%s)", err, reason)
	}
}

// TestSignInFlow goes through a user's life with a server behind OAuth:
// refused before sign-in, signed in through the browser with dynamic
// registration, PKCE and the resource parameter, a tool needing more scope
// (step-up), refresh before expiry, and sign-out.
func TestSignInFlow(t *testing.T) {
	as := signintest.NewAuthServer(t)
	url := signintest.ProtectedServer(t, as)
	store := NewStore(filepath.Join(t.TempDir(), "oauth"), nil)
	h := NewHandler("remote", store, nil)

	_, err := callWith(t, url, h, "whoami")
	wantRequired(t, err, "not signed in")

	rec := login(t, store, url, nil)
	if rec.ClientID != "dyn-1" || rec.Resource != url || rec.Token.RefreshToken == "" {
		t.Fatalf("record: %+v", rec)
	}
	if got := as.Events(); !slices.Equal(got, []string{"register", "authorize offline_access read", "token code"}) {
		t.Fatalf("authorization server saw %q", got)
	}
	fi, err := os.Stat(filepath.Join(store.Dir(), "remote.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi.Mode(), err)
	}
	if di, _ := os.Stat(store.Dir()); di.Mode().Perm() != 0o700 {
		t.Fatalf("store dir mode %v", di.Mode())
	}
	if got, err := callWith(t, url, h, "whoami"); err != nil || got != "whoami ok" {
		t.Fatalf("after sign-in: %q %v", got, err)
	}

	// Step-up: the server wants "write" for admin.
	_, err = callWith(t, url, h, "admin")
	wantRequired(t, err, "it asks for more access: scope read write")
	if r, _ := store.Load("remote"); !slices.Equal(r.NeedScopes, []string{"write"}) {
		t.Fatalf("need scopes: %v", r.NeedScopes)
	}
	st, _ := store.Describe([]string{"remote"})
	if !strings.Contains(st[0].String(), "the server asked for write: sign in again") {
		t.Fatalf("status: %s", st[0])
	}
	rec = login(t, store, url, nil)
	if !slices.Contains(rec.Scopes, "write") || len(rec.NeedScopes) != 0 {
		t.Fatalf("step-up sign-in scopes: %v need %v", rec.Scopes, rec.NeedScopes)
	}
	if got, err := callWith(t, url, h, "admin"); err != nil || got != "admin ok" {
		t.Fatalf("after step-up: %q %v", got, err)
	}

	// Tokens close to expiry are refreshed (with the resource) and saved.
	as.ExpiresIn = 30
	rec = login(t, store, url, nil)
	n := len(as.Events())
	if got, err := callWith(t, url, NewHandler("remote", store, nil), "whoami"); err != nil || got != "whoami ok" {
		t.Fatalf("refreshed call: %q %v", got, err)
	}
	if got := as.Events()[n:]; len(got) == 0 || got[0] != "token refresh" {
		t.Fatalf("after expiry the authorization server saw %q", got)
	}
	if saved, _ := store.Load("remote"); saved.Token.AccessToken == rec.Token.AccessToken {
		t.Fatal("the refreshed token was not saved")
	}

	if ok, err := store.Delete("remote"); !ok || err != nil {
		t.Fatalf("logout: %v %v", ok, err)
	}
	_, err = callWith(t, url, h, "whoami")
	wantRequired(t, err, "not signed in")
}

// TestPreregisteredClient: configured credentials are used (no
// registration) and authenticate at the token endpoint the way the server
// supports; configured scopes replace the discovered ones.
func TestPreregisteredClient(t *testing.T) {
	as := signintest.NewAuthServer(t)
	as.Clients["cm"] = "s3cret"
	as.AuthMethods = []string{"client_secret_basic"}
	url := signintest.ProtectedServer(t, as)
	store := NewStore(t.TempDir(), nil)
	rec := login(t, store, url, &serverconfig.OAuth{ClientID: "cm", ClientSecret: "s3cret", Scopes: []string{"read", "write"}})
	if rec.ClientID != "cm" {
		t.Fatalf("client %q", rec.ClientID)
	}
	if got := as.Events(); !slices.Equal(got, []string{"authorize offline_access read write", "token code"}) {
		t.Fatalf("authorization server saw %q", got)
	}
	if got, err := callWith(t, url, NewHandler("remote", store, nil), "admin"); err != nil || got != "admin ok" {
		t.Fatalf("call: %q %v", got, err)
	}
}

// TestClientMetadataDocument: where the authorization server supports
// them, codemode's Client ID Metadata Document URL is its client id, and
// nothing is registered.
func TestClientMetadataDocument(t *testing.T) {
	as := signintest.NewAuthServer(t)
	as.MetadataDocuments = true
	url := signintest.ProtectedServer(t, as)
	const doc = "https://codemode.example/client.json"
	rec, err := Login(t.Context(), LoginOptions{Server: "remote", URL: url, Store: NewStore(t.TempDir(), nil), ClientMetadataURL: doc,
		Open: signintest.Browser, ClientName: "codemode"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.ClientID != doc || slices.Contains(as.Events(), "register") {
		t.Fatalf("client %q, authorization server saw %q", rec.ClientID, as.Events())
	}
}

func TestLoginNotRequired(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "open"}, nil)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	_, err := Login(t.Context(), LoginOptions{Server: "open", URL: ts.URL, Store: NewStore(t.TempDir(), nil), Open: signintest.Browser, ClientName: "codemode"})
	if !errors.Is(err, ErrNotRequired) {
		t.Fatalf("err = %v", err)
	}
}

func TestStoreNames(t *testing.T) {
	s := NewStore(t.TempDir(), nil)
	for _, name := range []string{"../x", "a/b", "..", "ok-name_1.2"} {
		if err := s.Save(name, &Record{ClientID: name}); err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(s.path(name)) != s.Dir() {
			t.Fatalf("%q escapes the store: %s", name, s.path(name))
		}
		r, err := s.Load(name)
		if err != nil || r.ClientID != name {
			t.Fatalf("load %q: %+v %v", name, r, err)
		}
	}
}

// TestPastedRedirect: with the browser on another machine, the address it
// ended on, pasted, completes the sign-in.
func TestPastedRedirect(t *testing.T) {
	as := signintest.NewAuthServer(t)
	url := signintest.ProtectedServer(t, as)
	pr, pw := io.Pipe()
	defer pw.Close()
	remote := func(_ context.Context, u string) error {
		// A browser elsewhere: it gets the redirect but cannot follow it.
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		go func() {
			resp, err := c.Get(u)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			io.WriteString(pw, "not an address\n"+resp.Header.Get("Location")+"\n")
		}()
		return nil
	}
	rec, err := Login(t.Context(), LoginOptions{Server: "remote", URL: url, Store: NewStore(t.TempDir(), nil), Open: remote, Paste: pr, ClientName: "codemode"})
	if err != nil || rec.Token.AccessToken == "" {
		t.Fatalf("login: %v", err)
	}
}

// TestSSE: a server on the SSE transport, which has no OAuth handler in
// the SDK, is signed in to and called through Transport.
func TestSSE(t *testing.T) {
	as := signintest.NewAuthServer(t)
	url := signintest.ProtectedSSEServer(t, as)
	store := NewStore(t.TempDir(), nil)
	call := func() (string, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
		hc := &http.Client{Transport: &Transport{Handler: NewHandler("remote", store, nil)}}
		cs, err := c.Connect(t.Context(), &mcp.SSEClientTransport{Endpoint: url, HTTPClient: hc}, nil)
		if err != nil {
			return "", err
		}
		defer cs.Close()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "whoami"})
		if err != nil {
			return "", err
		}
		return res.Content[0].(*mcp.TextContent).Text, nil
	}
	_, err := call()
	wantRequired(t, err, "not signed in")
	rec, err := Login(t.Context(), LoginOptions{Server: "remote", URL: url, SSE: true, Store: store, Open: signintest.Browser, ClientName: "codemode"})
	if err != nil || rec.Resource != url {
		t.Fatalf("login: %+v %v", rec, err)
	}
	if got, err := call(); err != nil || got != "whoami ok" {
		t.Fatalf("after sign-in: %q %v", got, err)
	}
}
