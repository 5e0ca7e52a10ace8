package signin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// RequiredError is a server that needs the user to sign in (again).
type RequiredError struct {
	Server string
	Reason string // why: not signed in, refused, more scopes needed
}

func (e *RequiredError) Error() string {
	return fmt.Sprintf("server %s requires sign-in (%s): run `codemode auth login %s`, then call again", e.Server, e.Reason, e.Server)
}

// refreshEarly is how long before its expiry a token is refreshed, so that
// no request goes out with a token about to lapse.
const refreshEarly = time.Minute

// Handler is the OAuth handler of a server while codemode serves: it sends
// the stored token (refreshing it when due, reloading it when a sign-in in
// another process replaced it) and never starts a sign-in itself, which
// needs the user: a 401, or a 403 asking for more scope, becomes a
// RequiredError.
type Handler struct {
	server string
	store  *Store
	client *http.Client

	mu     sync.Mutex
	loaded time.Time // the record's modification time when last read
	ts     oauth2.TokenSource
}

var _ auth.OAuthHandler = (*Handler)(nil)

// NewHandler returns the handler for server; client (nil for the default)
// makes the refresh requests.
func NewHandler(server string, store *Store, client *http.Client) *Handler {
	if client == nil {
		client = http.DefaultClient
	}
	return &Handler{server: server, store: store, client: client}
}

// TokenSource returns the stored token's source, or nil before sign-in.
func (h *Handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	mt := h.store.modTime(h.server)
	h.mu.Lock()
	defer h.mu.Unlock()
	if mt.Equal(h.loaded) {
		return h.ts, nil
	}
	rec, err := h.store.Load(h.server)
	if err != nil {
		return nil, err
	}
	h.loaded = mt
	h.ts = nil
	if rec != nil && rec.Token != nil {
		h.ts = tokenSource(h.server, h.store, rec, h.client)
	}
	return h.ts, nil
}

// Authorize explains a refusal: it records scopes the server asks for and
// returns a RequiredError.
func (h *Handler) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	defer io.Copy(io.Discard, resp.Body)
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	code, scopes := bearerChallenge(challenges)
	if resp.StatusCode == http.StatusForbidden && code != "insufficient_scope" {
		return nil // not about sign-in: the retry fails with the server's answer
	}
	rec, err := h.store.Load(h.server)
	if err != nil {
		return err
	}
	reason := "not signed in"
	switch {
	case code == "insufficient_scope":
		reason = "it asks for more access"
		if len(scopes) > 0 {
			reason += ": scope " + strings.Join(scopes, " ")
		}
		if rec != nil {
			for _, s := range scopes {
				if !slices.Contains(rec.NeedScopes, s) && !slices.Contains(rec.Scopes, s) {
					rec.NeedScopes = append(rec.NeedScopes, s)
				}
			}
			if err := h.store.Save(h.server, rec); err != nil {
				return err
			}
		}
	case rec != nil:
		reason = "the server refused the stored sign-in"
	}
	return &RequiredError{Server: h.server, Reason: reason}
}

// bearerChallenge returns the error code and scopes of the Bearer challenge.
func bearerChallenge(cs []oauthex.Challenge) (code string, scopes []string) {
	for _, c := range cs {
		if c.Scheme == "bearer" {
			return c.Params["error"], strings.Fields(c.Params["scope"])
		}
	}
	return "", nil
}

// tokenSource serves rec's token until shortly before it expires, then
// refreshes it (when there is a refresh token) and saves the new one.
func tokenSource(server string, store *Store, rec *Record, client *http.Client) oauth2.TokenSource {
	if rec.Token.RefreshToken == "" {
		return oauth2.StaticTokenSource(rec.Token)
	}
	return oauth2.ReuseTokenSourceWithExpiry(rec.Token, &refresher{server: server, store: store, rec: rec, client: client}, refreshEarly)
}

type refresher struct {
	server string
	store  *Store
	client *http.Client

	mu  sync.Mutex
	rec *Record
}

func (r *refresher) Token() (*oauth2.Token, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	client := &http.Client{Transport: resourceParam{base: transportOf(r.client), tokenURL: r.rec.TokenURL, resource: r.rec.Resource}}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, client)
	tok, err := r.rec.config().TokenSource(ctx, &oauth2.Token{RefreshToken: r.rec.Token.RefreshToken}).Token()
	if err != nil {
		return nil, fmt.Errorf("signin: refresh %s: %w", r.server, err)
	}
	rec := *r.rec
	rec.Token = tok
	if err := r.store.Save(r.server, &rec); err != nil {
		return nil, err
	}
	r.rec = &rec
	return tok, nil
}

func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// resourceParam adds the RFC 8707 resource parameter to refresh requests,
// which golang.org/x/oauth2 sends without it.
type resourceParam struct {
	base               http.RoundTripper
	tokenURL, resource string
}

func (t resourceParam) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.resource == "" || req.Method != http.MethodPost || req.URL.String() != t.tokenURL || req.Body == nil {
		return t.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err == nil && form.Get("grant_type") == "refresh_token" && form.Get("resource") == "" {
		form.Set("resource", t.resource)
		body = []byte(form.Encode())
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	return t.base.RoundTrip(req)
}
