package signin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Errors callers branch on.
var (
	// ErrNotRequired is returned by Login when the server let codemode in
	// without signing in.
	ErrNotRequired = errors.New("the server does not require sign-in")
	// ErrDeclined, from LoginOptions.Open, ends the sign-in at once: the
	// user will not open the URL.
	ErrDeclined = errors.New("the user declined to sign in")
)

// LoginOptions configure one sign-in.
type LoginOptions struct {
	Server string
	URL    string              // the server's endpoint
	SSE    bool                // the server speaks the SSE transport, not streamable HTTP
	OAuth  *serverconfig.OAuth // pre-registered client and scopes; nil to register dynamically
	// ClientMetadataURL is codemode's Client ID Metadata Document, its
	// client id where the authorization server supports them (first
	// choice, before the pre-registered client and registration).
	ClientMetadataURL string
	Store             *Store
	// Open shows the authorization URL to the user (OpenBrowser); the URL
	// is printed to Out in any case, for a browser on another machine.
	Open func(ctx context.Context, url string) error
	Out  io.Writer
	// Paste, if set, is read for the address the browser ended on, for a
	// browser on another machine whose redirect cannot reach this one.
	Paste io.Reader
	// HTTPClient makes the discovery, registration and token requests and
	// the MCP requests (nil for the default).
	HTTPClient *http.Client
	ClientName string // reported to the server and in dynamic registration
	Version    string
}

// Login signs codemode in to a server the way its user does it in a
// browser: it connects, and when the server answers 401 the SDK discovers
// the authorization server, registers codemode (or uses the configured
// client), and sends the user to the authorization URL with PKCE and the
// resource parameter; the redirect comes back to a loopback listener. The
// token is saved in the store.
func Login(ctx context.Context, opts LoginOptions) (*Record, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("signin: login %s: loopback listener: %w", opts.Server, err)
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://%s/callback", ln.Addr())
	results := make(chan callback, 1)
	srv := &http.Server{Handler: callbackHandler(results), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	if opts.Paste != nil {
		go readPasted(opts.Paste, results)
	}

	base := opts.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	spy := &resourceSpy{base: transportOf(base)}
	client := &http.Client{Transport: spy, Timeout: base.Timeout}
	prev, err := opts.Store.Load(opts.Server)
	if err != nil {
		return nil, err
	}
	var rec *Record
	var asked atomic.Bool
	cfg := &auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: opts.ClientName, RedirectURIs: []string{redirect}, TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}},
		RedirectURL:         redirect,
		RequestRefreshToken: true,
		Client:              client,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			// The user is asked once: a request the failed connection
			// still sends (closing it) must not ask again.
			if !asked.CompareAndSwap(false, true) {
				return nil, errors.New("sign-in already attempted")
			}
			return fetchCode(ctx, opts, args.URL, results)
		},
		ScopeFilter: func(discovered []string) []string {
			scopes := discovered
			if opts.OAuth != nil && len(opts.OAuth.Scopes) > 0 {
				scopes = slices.Clone(opts.OAuth.Scopes)
			}
			if prev != nil {
				for _, s := range prev.NeedScopes {
					if !slices.Contains(scopes, s) {
						scopes = append(scopes, s)
					}
				}
			}
			return scopes
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			rec = &Record{URL: opts.URL, Resource: spy.resource, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
				AuthURL: c.Endpoint.AuthURL, TokenURL: c.Endpoint.TokenURL, AuthStyle: c.Endpoint.AuthStyle,
				Scopes: c.Scopes, Token: tok, SignedIn: time.Now()}
			return oauth2.StaticTokenSource(tok), nil
		},
	}
	if opts.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: opts.ClientMetadataURL}
	}
	if o := opts.OAuth; o != nil && o.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
		if o.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("signin: login %s: %w", opts.Server, err)
	}
	if opts.SSE {
		err = authorizeSSE(ctx, opts.URL, client, h)
	} else {
		err = connect(ctx, opts, client, h)
	}
	if err != nil {
		return nil, fmt.Errorf("signin: login %s: %w", opts.Server, err)
	}
	if rec == nil {
		return nil, fmt.Errorf("signin: login %s: %w", opts.Server, ErrNotRequired)
	}
	if err := opts.Store.Save(opts.Server, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// connect initializes a session with the server, which signs in when the
// server answers 401.
func connect(ctx context.Context, opts LoginOptions, client *http.Client, h *auth.AuthorizationCodeHandler) error {
	mc := mcp.NewClient(&mcp.Implementation{Name: opts.ClientName, Version: opts.Version}, nil)
	cs, err := mc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: opts.URL, HTTPClient: client, OAuthHandler: h}, nil)
	if err != nil {
		return err
	}
	return cs.Close()
}

// authorizeSSE opens the SSE stream and, when the server refuses it,
// signs in: the SDK's SSE client has no OAuth handler to do it.
func authorizeSSE(ctx context.Context, url string, client *http.Client, h *auth.AuthorizationCodeHandler) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends a stream the server opened without sign-in
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		resp.Body.Close()
		return nil
	}
	return h.Authorize(ctx, req, resp)
}

// callback is what the authorization server's redirect brought back.
type callback struct {
	code, state, iss string
	err              error
}

func callbackHandler(results chan<- callback) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		res := callback{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss")}
		if e := q.Get("error"); e != "" {
			res.err = fmt.Errorf("the authorization server refused: %s %s", e, q.Get("error_description"))
		} else if res.code == "" {
			res.err = errors.New("the redirect carried no authorization code")
		}
		select {
		case results <- res:
		default: // a sign-in completes once
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if res.err != nil {
			fmt.Fprintf(w, "codemode: sign-in failed: %v\n", res.err)
			return
		}
		fmt.Fprintln(w, "codemode: signed in. You may close this window.")
	})
}

// readPasted reads lines until one is a redirect address with a result.
func readPasted(r io.Reader, results chan<- callback) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		u, err := url.Parse(strings.TrimSpace(sc.Text()))
		if err != nil {
			continue
		}
		q := u.Query()
		res := callback{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss")}
		if e := q.Get("error"); e != "" {
			res.err = fmt.Errorf("the authorization server refused: %s %s", e, q.Get("error_description"))
		} else if res.code == "" {
			continue
		}
		select {
		case results <- res:
		default:
		}
		return
	}
}

func fetchCode(ctx context.Context, opts LoginOptions, authURL string, results <-chan callback) (*auth.AuthorizationResult, error) {
	if opts.Out != nil {
		fmt.Fprintf(opts.Out, "To sign in to %s, open this URL in a browser:\n\n  %s\n\n", opts.Server, authURL)
		if opts.Paste != nil {
			fmt.Fprintln(opts.Out, "If that browser is on another machine, paste here the address it ends on (http://127.0.0.1:.../callback?code=...):")
		}
	}
	if opts.Open != nil {
		err := opts.Open(ctx, authURL)
		if errors.Is(err, ErrDeclined) {
			return nil, err
		}
		if err != nil && opts.Out != nil {
			fmt.Fprintf(opts.Out, "(no browser opened: %v)\n", err)
		}
	}
	select {
	case res := <-results:
		if res.err != nil {
			return nil, res.err
		}
		return &auth.AuthorizationResult{Code: res.code, State: res.state, Iss: res.iss}, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the browser to come back: %w", ctx.Err())
	}
}

// resourceSpy notes the resource parameter of the code exchange, which is
// what the refresh requests must name too.
type resourceSpy struct {
	base     http.RoundTripper
	resource string
}

func (s *resourceSpy) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			data, _ := io.ReadAll(io.LimitReader(body, 64<<10))
			body.Close()
			if form, err := url.ParseQuery(string(data)); err == nil && form.Get("grant_type") == "authorization_code" {
				s.resource = form.Get("resource")
			}
		}
	}
	return s.base.RoundTrip(req)
}

// OpenBrowser opens u with $BROWSER (a list separated by colons; %s is the
// URL, else it is the last argument) or the platform's opener.
func OpenBrowser(_ context.Context, u string) error {
	if b := os.Getenv("BROWSER"); b != "" {
		for _, cmdline := range strings.Split(b, ":") {
			args := strings.Fields(cmdline)
			if len(args) == 0 {
				continue
			}
			if i := slices.IndexFunc(args, func(a string) bool { return strings.Contains(a, "%s") }); i >= 0 {
				args[i] = strings.ReplaceAll(args[i], "%s", u)
			} else {
				args = append(args, u)
			}
			if err := start(exec.Command(args[0], args[1:]...)); err == nil {
				return nil
			}
		}
		return errors.New("no command in $BROWSER could be started")
	}
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	path, err := exec.LookPath(opener)
	if err != nil {
		return fmt.Errorf("no $BROWSER and no %s", opener)
	}
	return start(exec.Command(path, u))
}

// start runs a browser opener without waiting for it (it may keep the
// browser's lifetime), reaping it when it ends.
func start(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
