package app

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/codemode/codemode/internal/settings"
	"github.com/codemode/codemode/internal/signin"
)

// SignInStore is where the OAuth tokens of remote servers are kept: one
// file per server, mode 0600, under the state directory, with the tokens
// in the OS keyring where there is one. environ is the process environment.
func SignInStore(s settings.Settings, environ []string) *signin.Store {
	return signin.NewStore(filepath.Join(s.StateDir, "oauth"), signin.OSKeyring(environ))
}

// RemoteServers are the configured servers codemode reaches over HTTP,
// which may require sign-in.
func RemoteServers(res *serverconfig.Result) []serverconfig.Server {
	var out []serverconfig.Server
	for _, s := range res.Servers {
		if s.Transport == serverconfig.TransportHTTP || s.Transport == serverconfig.TransportSSE {
			out = append(out, s)
		}
	}
	return out
}

// SignIn runs `codemode auth login` for the named server of res: it opens
// the authorization URL with open (printing it to out too; paste, if set,
// may bring the address the browser ended on) and saves the token in store.
func SignIn(ctx context.Context, s settings.Settings, store *signin.Store, res *serverconfig.Result, name string, open func(context.Context, string) error, paste io.Reader, out io.Writer) (*signin.Record, error) {
	i := slices.IndexFunc(res.Servers, func(s serverconfig.Server) bool { return s.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("sign in: no configured server is named %q (see codemode servers)", name)
	}
	return signInTo(ctx, s, store, res.Servers[i], open, paste, out)
}

func signInTo(ctx context.Context, s settings.Settings, store *signin.Store, srv serverconfig.Server, open func(context.Context, string) error, paste io.Reader, out io.Writer) (*signin.Record, error) {
	if srv.Transport != serverconfig.TransportHTTP && srv.Transport != serverconfig.TransportSSE {
		return nil, fmt.Errorf("sign in: server %s uses the %s transport; OAuth sign-in is for remote (HTTP or SSE) servers", srv.Name, srv.Transport)
	}
	return signin.Login(ctx, signin.LoginOptions{Server: srv.Name, URL: srv.URL, SSE: srv.Transport == serverconfig.TransportSSE, OAuth: srv.OAuth, Store: store,
		ClientMetadataURL: s.ClientMetadataURL, Open: open, Paste: paste, Out: out, ClientName: "codemode", Version: Version})
}

// clientLogin lets a call that needs sign-in have the user sign in through
// the MCP client (URL-mode elicitation). Only over stdio: the browser must
// come back to a loopback listener on this machine, which a client of
// codemode served over HTTP may not be on.
func clientLogin(s settings.Settings, store *signin.Store) func(context.Context, serverconfig.Server, func(context.Context, string) error) error {
	if s.HTTP != "" {
		return nil
	}
	return func(ctx context.Context, srv serverconfig.Server, open func(context.Context, string) error) error {
		_, err := signInTo(ctx, s, store, srv, open, nil, nil)
		return err
	}
}
