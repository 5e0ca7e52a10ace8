package app

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/codemode/codemode/internal/activity"
	"github.com/codemode/codemode/internal/console"
	"github.com/codemode/codemode/internal/executor"
	"github.com/codemode/codemode/internal/mcpserver"
	"github.com/codemode/codemode/internal/settings"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// watcher is the executor's view of the recorder; nil (not a nil
// pointer in an interface) when there is none.
func watcher(rec *activity.Recorder) executor.CallWatcher {
	if rec == nil {
		return nil
	}
	return rec
}

// consoleHandler is the web console for tokens (nil or empty: none). It
// also accepts a one-time token for the local user, whose login URL it
// prints, when no token could log in otherwise.
func (a *App) consoleHandler(ctx context.Context, tokens *mcpserver.Tokens, verify auth.TokenVerifier, addr string) http.Handler {
	admins := splitList(a.Settings.ConsoleAdmins)
	var login func(string) (console.Identity, bool)
	if verify != nil {
		// The MCP endpoint's own verifier: its static tokens and, with
		// --oauth-issuer, JWT access tokens (the principal is oauth:<subject>).
		login = func(t string) (console.Identity, bool) {
			ti, err := verify(ctx, t, nil)
			if err != nil || ti == nil || ti.UserID == "" {
				return console.Identity{}, false
			}
			return console.Identity{Principal: ti.UserID, Admin: slices.Contains(admins, ti.UserID)}, true
		}
	} else if tokens != nil && tokens.Len() > 0 {
		login = func(t string) (console.Identity, bool) {
			name := tokens.Lookup(t)
			return console.Identity{Principal: name, Admin: slices.Contains(admins, name)}, name != ""
		}
	} else {
		// Without tokens every client is "default": the local user.
		var token string
		token, login = console.OneTimeLogin(console.Identity{Principal: "default", Admin: true}, nil)
		a.printConsoleURL(fmt.Sprintf("http://%s%s?token=%s", addr, console.Prefix, token))
	}
	var auditLog *console.AuditLog
	if a.Settings.AuditLog != "" && a.guard != nil {
		auditLog = &console.AuditLog{Path: a.Settings.AuditLog, Sync: a.guard.audit.Sync}
	}
	return console.New(console.Options{Recorder: a.recorder, Sessions: a.Executor, Servers: a.Pool, Audit: auditLog, Backend: a.Backend.Name(), Metrics: a.Telemetry.Registry, Login: login, Stop: ctx.Done(), Logger: a.Log.With("component", "console")})
}

func (a *App) printConsoleURL(url string) {
	if a.stderr == nil {
		a.Log.Info("web console: open this URL once to log in", "url", url)
		return
	}
	fmt.Fprintf(a.stderr, "codemode: web console, open this URL once to log in:\n    %s\n", url)
}

// checkConsole refuses a stdio-mode console beyond loopback without
// tokens: it shows code and answers approvals.
func checkConsole(s settings.Settings) error {
	if s.Console == "" {
		return nil
	}
	tokens, err := mcpserver.LoadTokens(s.TokensFile, s.Tokens)
	if err != nil {
		return err
	}
	if !mcpserver.IsLoopback(s.Console) && tokens.Len() == 0 {
		return fmt.Errorf("console: refusing to serve %s beyond loopback without tokens (--tokens-file or CODEMODE_TOKENS)", s.Console)
	}
	return nil
}

// serveConsole serves the console on --console in stdio mode until ctx
// ends.
func (a *App) serveConsole(ctx context.Context) error {
	if err := checkConsole(a.Settings); err != nil {
		return err
	}
	tokens, err := mcpserver.LoadTokens(a.Settings.TokensFile, a.Settings.Tokens)
	if err != nil {
		return err
	}
	var h http.Handler
	return console.Serve(ctx, a.Settings.Console, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }), func(addr string) {
		h = a.consoleHandler(ctx, tokens, nil, addr)
		if tokens.Len() > 0 {
			a.printConsoleURL(fmt.Sprintf("http://%s%s?token=YOUR_TOKEN", addr, console.Prefix))
		}
	})
}
