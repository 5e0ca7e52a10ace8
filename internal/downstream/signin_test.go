package downstream

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/codemode/codemode/internal/peer"
	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/codemode/codemode/internal/signin"
	"github.com/codemode/codemode/internal/signin/signintest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSignInThroughClient: a call to a server that needs sign-in shows
// its user the authorization URL (URL-mode elicitation) and goes through
// once they approve; concurrent calls ask once; a user who declines, or a
// client that cannot show URLs, gets auth_required.
func TestSignInThroughClient(t *testing.T) {
	tests := []struct {
		name     string
		action   string // the user's answer
		url      bool   // the client supports URL elicitation
		calls    int
		wantKind string // of the calls' error; "" for success
		wantAsks int32
	}{
		{name: "approved", action: "accept", url: true, calls: 3, wantAsks: 1},
		{name: "declined", action: "decline", url: true, calls: 1, wantKind: "auth_required", wantAsks: 1},
		{name: "client without URL elicitation", action: "accept", calls: 1, wantKind: "auth_required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as := signintest.NewAuthServer(t)
			url := signintest.ProtectedServer(t, as)
			store := signin.NewStore(t.TempDir(), nil)
			login := func(ctx context.Context, cfg serverconfig.Server, open func(context.Context, string) error) error {
				_, err := signin.Login(ctx, signin.LoginOptions{Server: cfg.Name, URL: cfg.URL, Store: store, Open: open, ClientName: "codemode"})
				return err
			}
			p := newPool(t, Options{SignIn: store, Login: login,
				Servers: []serverconfig.Server{{Name: "remote", Transport: serverconfig.TransportHTTP, URL: url}}})
			var asks atomic.Int32
			who := &peer.Peer{ClientName: "claude", ElicitURL: tc.url, Elicit: func(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
				asks.Add(1)
				if params.Mode != "url" || params.URL == "" {
					t.Errorf("asked %+v, want a URL", params)
				}
				if tc.action == "accept" {
					signintest.Browser(ctx, params.URL)
				}
				return &mcp.ElicitResult{Action: tc.action}, nil
			}}
			ctx := peer.With(t.Context(), who)
			var wg sync.WaitGroup
			for range tc.calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := p.CallTool(ctx, "remote", "whoami", nil)
					var e *Error
					switch {
					case tc.wantKind == "" && (err != nil || textOf(res) != "whoami ok"):
						t.Errorf("call: %v", err)
					case tc.wantKind != "" && (!errors.As(err, &e) || e.Kind != tc.wantKind):
						t.Errorf("call: %v, want kind %s", err, tc.wantKind)
					}
				}()
			}
			wg.Wait()
			if got := asks.Load(); got != tc.wantAsks {
				t.Errorf("the user was asked %d times, want %d", got, tc.wantAsks)
			}
		})
	}
}
