package downstream

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/downstream/downstreamtest"
	"github.com/codemode/codemode/internal/peer"
	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/codemode/codemode/internal/signin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
)

// askingServer serves downstreamtest's ask tool over HTTP.
func askingServer(t *testing.T) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "asker"}, nil)
	downstreamtest.AddAskTool(srv)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// completions records relayed completions of URL interactions.
type completions struct{ ch chan string }

func (c *completions) add(_ context.Context, id string) { c.ch <- id }

// progressLog records relayed progress.
type progressLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *progressLog) add(progress, total float64, message string) {
	l.mu.Lock()
	l.msgs = append(l.msgs, message)
	l.mu.Unlock()
}

func (l *progressLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.msgs, "|")
}

// Questions and progress reach the user, from a server over HTTP and from
// one over stdio, whose calls take the lane (and, where the question comes
// in the result, the SDK's multi-round-trip after it).
func TestRelayElicitationAndProgress(t *testing.T) {
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			cfg := testServer(t, "asker", "asker")
			if transport == "http" {
				cfg = serverconfig.Server{Name: "asker", Transport: serverconfig.TransportHTTP, URL: askingServer(t)}
			}
			testRelay(t, newPool(t, Options{Servers: []serverconfig.Server{cfg}}))
		})
	}
}

func testRelay(t *testing.T, p *Pool) {
	var asked []*mcp.ElicitParams
	completed := &completions{ch: make(chan string, 1)}
	answer := func(_ context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked = append(asked, params)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}
	tests := []struct {
		name     string
		who      *peer.Peer
		args     map[string]any
		want     string // result text, or the error's text
		wantAsk  string // the message the user saw
		progress bool
	}{
		{name: "form relayed", who: &peer.Peer{ClientName: "claude", Elicit: answer}, want: "accept Ada", wantAsk: "[asker] Your name?"},
		{name: "url relayed", who: &peer.Peer{ClientName: "claude", Elicit: answer, ElicitURL: true, ElicitComplete: completed.add}, args: map[string]any{"url": true}, want: "accept ", wantAsk: "Sign in"},
		{name: "url unsupported", who: &peer.Peer{ClientName: "claude", Elicit: answer}, args: map[string]any{"url": true}, want: "does not support URL elicitation"},
		{name: "client cannot ask", who: &peer.Peer{ClientName: "plain"}, want: "codemode's client (plain) does not support elicitation"},
		{name: "no client", want: "outside of any call from a client"},
		{name: "progress", who: &peer.Peer{Elicit: answer}, want: "accept Ada", wantAsk: "[asker] Your name?", progress: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			asked = nil
			var prog progressLog
			ctx := t.Context()
			if tc.who != nil {
				if tc.progress {
					tc.who.Progress = prog.add
				}
				ctx = peer.With(ctx, tc.who)
			}
			res, err := p.CallTool(ctx, "asker", "ask", tc.args)
			got := ""
			switch {
			case err != nil:
				got = err.Error()
			default:
				got = textOf(res)
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("result = %q, want %q", got, tc.want)
			}
			switch {
			case tc.wantAsk == "" && len(asked) != 0:
				t.Fatalf("user was asked %q", asked[0].Message)
			case tc.wantAsk != "" && (len(asked) != 1 || asked[0].Message != tc.wantAsk):
				t.Fatalf("asked = %v, want %q", asked, tc.wantAsk)
			}
			if tc.name == "url relayed" {
				select {
				case id := <-completed.ch:
					if id != "e1" {
						t.Fatalf("completed %q", id)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the completion of the URL interaction was not relayed")
				}
			}
			if tc.progress {
				// The SDK hands notifications to their handler concurrently:
				// the last may come after the result.
				want := "asker.ask: 1/2 step|asker.ask: 2/2 step"
				for deadline := time.Now().Add(5 * time.Second); prog.String() != want && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
				if got := prog.String(); got != want {
					t.Fatalf("progress = %q, want %q", got, want)
				}
			}
		})
	}
}

// TestSignInRequired: a remote server answering 401 fails calls with kind
// auth_required naming the command; once a token is stored (by "codemode
// auth login" in another process) the next call goes through.
func TestSignInRequired(t *testing.T) {
	for _, transport := range []serverconfig.Transport{serverconfig.TransportHTTP, serverconfig.TransportSSE} {
		t.Run(string(transport), func(t *testing.T) { signInRequired(t, transport) })
	}
}

func signInRequired(t *testing.T, transport serverconfig.Transport) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "signed in"}}}, nil
	})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	if transport == serverconfig.TransportSSE {
		h = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.Header().Set("WWW-Authenticate", `Bearer scope="read"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	store := signin.NewStore(t.TempDir(), nil)
	p := newPool(t, Options{SignIn: store, Servers: []serverconfig.Server{{Name: "remote", Transport: transport, URL: ts.URL}}})

	_, err := p.CallTool(t.Context(), "remote", "whoami", nil)
	var e *Error
	if !errors.As(err, &e) || e.Kind != "auth_required" || !strings.Contains(e.Error(), "run `codemode auth login remote`") {
		t.Fatalf("before sign-in: %v", err)
	}
	if st := p.State("remote"); !strings.HasPrefix(st, "sign-in required: ") {
		t.Fatalf("state = %q", st)
	}
	if err := store.Save("remote", &signin.Record{URL: ts.URL, Token: &oauth2.Token{AccessToken: "good", TokenType: "Bearer"}}); err != nil {
		t.Fatal(err)
	}
	res, err := p.CallTool(t.Context(), "remote", "whoami", nil)
	if err != nil || textOf(res) != "signed in" {
		t.Fatalf("after sign-in: %v", err)
	}
}
