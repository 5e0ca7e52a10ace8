package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/codemode/codemode/internal/app"
	"github.com/codemode/codemode/internal/signin"
)

// authCmd is `codemode auth login|status|logout`: signing in to remote MCP
// servers that require OAuth.
func authCmd(ctx context.Context, args []string, sio IO) (int, error) {
	const help = "usage: codemode auth login SERVER [--no-browser] | status [--json] | logout SERVER"
	if len(args) == 0 {
		return 2, usageError{errors.New(help)}
	}
	fs := flag.NewFlagSet("auth "+args[0], flag.ContinueOnError)
	fs.SetOutput(sio.Stderr)
	var files configFiles
	fs.Var(&files, "config", "an mcpServers config file (JSON or TOML); repeatable")
	noBrowser := fs.Bool("no-browser", false, "login: only print the URL to open, and read the address the browser ends on from stdin (for a browser on another machine)")
	wait := fs.Duration("timeout", 5*time.Minute, "login: how long to wait for the browser to come back")
	asJSON := fs.Bool("json", false, "status: print JSON")
	// Flags may come after the server's name.
	var names []string
	for rest := args[1:]; ; {
		if err := fs.Parse(rest); err != nil {
			return 2, usageError{err}
		}
		if fs.NArg() == 0 {
			break
		}
		names, rest = append(names, fs.Arg(0)), fs.Args()[1:]
	}
	s, _, err := loadSettings(nil, sio)
	if err != nil {
		return 1, err
	}
	store := app.SignInStore(s, sio.Environ)
	switch cmd := args[0]; {
	case cmd == "status" && len(names) == 0:
		res, err := app.LoadServers(ctx, sio.inputs(files))
		if err != nil {
			return 1, err
		}
		var remote []string
		for _, srv := range app.RemoteServers(res) {
			remote = append(remote, srv.Name)
		}
		states, err := store.Describe(remote)
		if err != nil {
			return 1, err
		}
		if *asJSON {
			return 0, writeJSON(sio.Stdout, states)
		}
		if len(states) == 0 {
			fmt.Fprintln(sio.Stdout, "no remote (HTTP) MCP servers are configured")
		}
		for _, st := range states {
			fmt.Fprintln(sio.Stdout, st)
		}
		return 0, nil
	case cmd == "login" && len(names) == 1:
		res, err := app.LoadServers(ctx, sio.inputs(files))
		if err != nil {
			return 1, err
		}
		open := signin.OpenBrowser
		var paste io.Reader
		if *noBrowser {
			open, paste = nil, sio.Stdin
		}
		ctx, cancel := context.WithTimeout(ctx, *wait)
		defer cancel()
		_, err = app.SignIn(ctx, s, store, res, names[0], open, paste, sio.Stderr)
		if errors.Is(err, signin.ErrNotRequired) {
			fmt.Fprintf(sio.Stdout, "%s does not require sign-in\n", names[0])
			return 0, nil
		}
		if err != nil {
			return 1, err
		}
		st, _ := store.Describe([]string{names[0]})
		fmt.Fprintln(sio.Stdout, st[0])
		return 0, nil
	case cmd == "logout" && len(names) == 1:
		had, err := store.Delete(names[0])
		if err != nil {
			return 1, err
		}
		if had {
			fmt.Fprintf(sio.Stdout, "signed out of %s\n", names[0])
		} else {
			fmt.Fprintf(sio.Stdout, "%s: not signed in\n", names[0])
		}
		return 0, nil
	}
	return 2, usageError{errors.New(help)}
}
