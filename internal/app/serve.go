package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codemode/codemode/internal/console"
	"github.com/codemode/codemode/internal/downstream"
	"github.com/codemode/codemode/internal/executor"
	"github.com/codemode/codemode/internal/interpreter"
	"github.com/codemode/codemode/internal/mcpserver"
	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/codemode/codemode/internal/settings"
	"github.com/codemode/codemode/internal/signin"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// CheckHTTP refuses an unsafe HTTP configuration (code execution exposed
// without authentication, say) before anything starts; over stdio, it
// checks the console's address.
func CheckHTTP(s settings.Settings) error {
	if s.HTTP == "" {
		return checkConsole(s)
	}
	opts, err := httpOptions(s)
	if err != nil {
		return err
	}
	return mcpserver.CheckHTTPOptions(opts)
}

// Serve serves MCP until ctx ends: over streamable HTTP when the settings
// name an address, else over stdio.
func (a *App) Serve(ctx context.Context) error {
	// The probe's sandbox must be gone before codemode exits (a quick
	// shutdown would leave its cgroup behind), so Serve waits for it.
	probeCtx, stopProbe := context.WithCancel(context.WithoutCancel(ctx))
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		if err := a.packages.probe(probeCtx, a.Backend, a.Settings); err != nil && probeCtx.Err() == nil {
			a.Log.Warn("the manual will not list Python packages", "error", err)
		}
	}()
	defer func() {
		stopProbe()
		<-probed
	}()
	if a.Settings.Metrics != "" {
		if err := a.Telemetry.ServeMetrics(ctx, a.Settings.Metrics, nil); err != nil {
			return err
		}
	}
	if a.Settings.HTTP == "" {
		if a.Settings.Console != "" {
			go func() {
				if err := a.serveConsole(ctx); err != nil {
					a.Log.Error("web console", "error", err)
				}
			}()
		}
		a.Log.Info("serving MCP over stdio", "version", Version)
		return a.Server.RunStdio(ctx)
	}
	opts, err := httpOptions(a.Settings)
	if err != nil {
		return err
	}
	opts.Ready = a.Ready
	listening := opts.Listening
	var h http.Handler
	var verify auth.TokenVerifier
	opts.Verifier = func(v auth.TokenVerifier) { verify = v }
	opts.Handlers = map[string]http.Handler{console.Prefix: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) })}
	opts.Listening = func(addr string) {
		h = a.consoleHandler(ctx, opts.Tokens, verify, addr)
		if listening != nil {
			listening(addr)
		}
	}
	opts.Metrics = a.Telemetry.Handler()
	return a.Server.ServeHTTP(ctx, opts)
}

// Run runs code in a session of its own at the settings' timeout,
// streaming what it prints to stdout and stderr as it comes.
func (a *App) Run(ctx context.Context, code string, stdout, stderr io.Writer) *executor.Result {
	return a.Executor.Run(ctx, executor.Request{
		Owner: "cli", Code: code, Timeout: a.Settings.Timeout,
		Output: func(stream interpreter.Stream, data []byte) {
			if stream == interpreter.Stderr {
				stderr.Write(data)
			} else {
				stdout.Write(data)
			}
		},
	})
}

// ProbeServers starts every server of res at once, each within timeout,
// stops them all, and returns each one's state by name.
// Remote servers use the tokens of store (nil for none).
func ProbeServers(ctx context.Context, res *serverconfig.Result, environ []string, timeout time.Duration, store *signin.Store) map[string]string {
	pool := downstream.New(downstream.Options{Servers: res.Servers, StartTimeout: timeout, BaseEnv: environ,
		AllowSelf: res.AllowSelf, ClientName: "codemode", ClientVersion: Version, SignIn: store})
	defer pool.Close()
	var wg sync.WaitGroup
	for _, s := range res.Servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool.Tools(ctx, s.Name)
		}()
	}
	wg.Wait()
	states := make(map[string]string, len(res.Servers))
	for _, s := range res.Servers {
		states[s.Name] = pool.State(s.Name)
	}
	if store == nil {
		return states
	}
	for _, s := range RemoteServers(res) {
		if st, err := store.Describe([]string{s.Name}); err == nil && st[0].SignedIn {
			states[s.Name] += "; " + strings.TrimPrefix(st[0].String(), s.Name+": ")
		}
	}
	return states
}

// Ready starts a throw-away sandbox to show the backend can run one
// (for /readyz).
func (a *App) Ready(ctx context.Context) error {
	sb, err := a.Backend.Start(ctx, sandbox.Spec{ID: "ready-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		Command: []string{a.Settings.Python, "-c", "pass"}, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, Limits: sandboxLimits(a.Settings)})
	if err != nil {
		return err
	}
	defer sb.Kill(context.Background())
	sb.Stdin().Close()
	go io.Copy(io.Discard, sb.Stdout())
	go io.Copy(io.Discard, sb.Stderr())
	exit, err := sb.Wait(ctx)
	if err != nil {
		return err
	}
	if exit.Code != 0 {
		return fmt.Errorf("test sandbox %s", exit)
	}
	return nil
}

// httpOptions builds the HTTP transport's options from the settings.
func httpOptions(s settings.Settings) (mcpserver.HTTPOptions, error) {
	tokens, err := mcpserver.LoadTokens(s.TokensFile, s.Tokens)
	if err != nil {
		return mcpserver.HTTPOptions{}, err
	}
	origins := splitList(s.AllowedOrigins)
	return mcpserver.HTTPOptions{Addr: s.HTTP, Path: s.HTTPPath, Tokens: tokens, OAuth: oauthOptions(s), AllowUnauthenticated: s.AllowUnauth,
		PublicURL: s.PublicURL, AllowedOrigins: origins, MaxRequestBytes: s.MaxRequestBytes, SessionTimeout: s.HTTPSessionTimeout}, nil
}

// oauthOptions is the OAuth resource-server configuration, nil without an
// issuer.
func oauthOptions(s settings.Settings) *mcpserver.OAuth {
	if s.OAuthIssuer == "" {
		return nil
	}
	return &mcpserver.OAuth{Issuer: s.OAuthIssuer, Audience: s.OAuthAudience, Scopes: splitList(s.OAuthScopes)}
}

func splitList(v string) []string {
	var out []string
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
