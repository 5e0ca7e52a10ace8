package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/codemode/codemode/internal/connect"
	"github.com/codemode/codemode/internal/serverconfig"
)

// connectCmd is `codemode connect CLIENT [--move-servers]` and
// `codemode connect --list`.
func connectCmd(ctx context.Context, args []string, sio IO) (int, error) {
	fs := flag.NewFlagSet("connect", flag.ContinueOnError)
	fs.SetOutput(sio.Stderr)
	var names []string
	for _, c := range connect.Clients() {
		names = append(names, c.Name)
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: codemode connect CLIENT [--move-servers] [--command PATH]
       codemode connect --list

Adds codemode to CLIENT's MCP configuration (a copy of the file as it was is
kept next to it, as FILE.before-codemode). With --move-servers the client's
other servers move into codemode's own configuration: code still reaches them,
and the model's prompt no longer carries their tools. CLIENT is one of
%s.

`, strings.Join(names, ", "))
		fs.PrintDefaults()
	}
	list := fs.Bool("list", false, "show each client, its config file and whether codemode is in it")
	move := fs.Bool("move-servers", false, "move the client's other servers into codemode's own config")
	command := fs.String("command", "", "the codemode binary to register (default: this one)")
	// Flags may follow the client's name.
	var client string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		client, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return 2, usageError{err}
	}
	if client == "" && fs.NArg() > 0 {
		client = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return 2, usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	env := serverconfig.Env{Vars: serverconfig.VarsFromEnviron(sio.Environ), Home: sio.Home, Cwd: sio.Cwd, GOOS: runtime.GOOS}
	if *list {
		if client != "" {
			return 2, usageError{errors.New("--list takes no client")}
		}
		writeClients(sio, connect.List(ctx, env))
		return 0, nil
	}
	if client == "" {
		return 2, usageError{fmt.Errorf("name a client (%s), or --list", strings.Join(names, ", "))}
	}
	bin := *command
	if bin == "" && len(sio.Self) > 0 {
		bin = sio.Self[0]
	}
	if bin == "" {
		return 1, errors.New("cannot tell where this codemode binary is; pass --command PATH")
	}
	if !filepath.IsAbs(bin) {
		bin = filepath.Join(sio.Cwd, bin)
	}
	res, err := connect.Connect(ctx, client, connect.Options{Env: env, Command: bin, MoveServers: *move})
	if err != nil {
		return 1, err
	}
	switch {
	case res.Changed:
		fmt.Fprintf(sio.Stdout, "added codemode (%s) to %s\n", bin, res.Path)
	default:
		fmt.Fprintf(sio.Stdout, "codemode (%s) was already in %s\n", bin, res.Path)
	}
	if res.Backup != "" {
		fmt.Fprintf(sio.Stdout, "the file as it was: %s\n", res.Backup)
	}
	if len(res.Moved) > 0 {
		fmt.Fprintf(sio.Stdout, "moved %s to %s: reach them from code; children get a minimal environment, so give each the variables it needs in its \"env\"\n",
			strings.Join(res.Moved, ", "), res.MovedTo)
	}
	fmt.Fprintln(sio.Stdout, "restart the client to pick the change up")
	return 0, nil
}

func writeClients(sio IO, states []connect.State) {
	tw := tabwriter.NewWriter(sio.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT\tSTATE\tFILE")
	for _, st := range states {
		var state string
		switch {
		case st.Path == "":
			state = "unavailable: " + st.Note
		case st.Note != "":
			state = "unreadable: " + st.Note
		case !st.Exists:
			state = "no config file"
		case st.Connected:
			state = "connected"
		default:
			state = "not connected"
		}
		if n := len(st.Servers); n > 0 {
			state += fmt.Sprintf(", %d other server(s)", n)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", st.Client.Name, state, st.Path)
	}
	tw.Flush()
}
