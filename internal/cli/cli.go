// Package cli is codemode's command line: serve (the default), run,
// version and config. Results go to stdout, everything informational to
// stderr; in serve mode stdout carries only the MCP protocol.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/codemode/codemode/internal/app"
	"github.com/codemode/codemode/internal/executor"
	"github.com/codemode/codemode/internal/obs"
	"github.com/codemode/codemode/internal/settings"
)

// IO is the process's standard streams and environment.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Environ        []string
	Home, Cwd      string
	Self           []string // paths of this executable
}

// configFiles is the repeatable --config flag.
type configFiles []string

func (c *configFiles) String() string     { return strings.Join(*c, ",") }
func (c *configFiles) Set(v string) error { *c = append(*c, v); return nil }

func (sio IO) inputs(files configFiles) app.Inputs {
	return app.Inputs{Environ: sio.Environ, Home: sio.Home, Cwd: sio.Cwd, ConfigFiles: files, Self: sio.Self}
}

// Run executes the command line and returns the exit code.
func Run(ctx context.Context, args []string, sio IO) int {
	cmd, rest := "serve", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, rest = args[0], args[1:]
	}
	var err error
	code := 0
	switch cmd {
	case "serve":
		err = serve(ctx, rest, sio)
	case "run":
		code, err = runCode(ctx, rest, sio)
	case "version":
		fmt.Fprintln(sio.Stdout, versionString())
	case "config":
		err = showConfig(rest, sio)
	case "servers":
		err = listServers(ctx, rest, sio)
	case "image":
		err = imageCmd(ctx, rest, sio)
	case "doctor":
		code, err = doctorCmd(ctx, rest, sio)
	case "attacks":
		code, err = attacksCmd(ctx, rest, sio)
	case "audit":
		code, err = auditCmd(ctx, rest, sio)
	case "policy":
		code, err = policyCmd(ctx, rest, sio)
	case "auth":
		code, err = authCmd(ctx, rest, sio)
	case "help", "-h", "--help":
		usage(sio.Stdout)
	default:
		fmt.Fprintf(sio.Stderr, "codemode: unknown command %q\n\n", cmd)
		usage(sio.Stderr)
		return 2
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(sio.Stderr, "codemode %s: %v\n", cmd, err)
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return code
}

type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

func usage(w io.Writer) {
	fmt.Fprint(w, `codemode: an MCP server with one tool, run_python, that runs Python in a sandbox.

Usage:
  codemode [serve] [flags]          serve MCP over stdio (the default), or --http ADDR for streamable HTTP
  codemode run [flags] -c CODE      run Python in a fresh sandbox
  codemode run [flags] FILE | -     run a file (or stdin) in a fresh sandbox
  codemode servers [--json] [--probe]  list the MCP servers found in config files (--probe starts each)
  codemode auth login SERVER        sign in to a remote MCP server that requires OAuth (opens $BROWSER; --no-browser prints the URL)
  codemode auth status | logout SERVER  show each remote server's sign-in and token expiry; forget a server's tokens
  codemode doctor [--json]          check every sandbox backend on this host and say how to fix what fails
  codemode config [--json]          show the effective settings and their sources
  codemode attacks [--backends LIST]  run the adversarial suite; prints attack × backend (exit 1 on any escape)
  codemode image build [flags]      build a Python rootfs with debootstrap; import it into podman/docker (no registry)
  codemode policy init [FILE]       write a commented starter policy (asks before destructive tools)
  codemode policy check FILE        report syntax and condition errors with their line
  codemode policy explain FILE --server S --tool T [--args JSON]  print the decision and the rule
  codemode audit verify FILE        check an audit log's hash chain (exit 1 naming the first bad line)
  codemode version

Run "codemode serve -h" for the settings (each also has a CODEMODE_* variable).

Sandbox backends (--backend):
`)
	for _, c := range app.BackendChoices() {
		fmt.Fprintf(w, "  %-8s %s\n", c.Name, c.Summary)
	}
}

func versionString() string {
	v := app.Version
	if info, ok := debug.ReadBuildInfo(); ok && v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		return fmt.Sprintf("codemode %s (%s)", v, info.GoVersion)
	}
	return "codemode " + v
}

// settingsFlags registers one flag per setting and returns a function that
// reports the flags the user set.
func settingsFlags(fs *flag.FlagSet) func() map[string]string {
	reg := app.SettingsRegistry()
	for _, name := range reg.Names() {
		usage := reg.Doc(name) + " (default " + quoteDefault(reg.Default(name)) + ")"
		for _, c := range reg.Choices(name) {
			if c.Summary != "" {
				usage += fmt.Sprintf("\n%-8s %s", c.Name, c.Summary)
			}
		}
		fs.String(name, "", usage)
	}
	return func() map[string]string {
		set := map[string]string{}
		fs.Visit(func(f *flag.Flag) {
			if _, ok := set[f.Name]; !ok && slices.Contains(reg.Names(), f.Name) {
				set[f.Name] = f.Value.String()
			}
		})
		return set
	}
}

func quoteDefault(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

func loadSettings(flags map[string]string, sio IO) (settings.Settings, []settings.Source, error) {
	return app.SettingsRegistry().Load(flags, settings.EnvFromList(sio.Environ, sio.Home))
}

func serve(ctx context.Context, args []string, sio IO) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(sio.Stderr)
	setFlags := settingsFlags(fs)
	var files configFiles
	fs.Var(&files, "config", "an mcpServers config file (JSON or TOML); repeatable; highest precedence")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	s, _, err := loadSettings(setFlags(), sio)
	if err != nil {
		return err
	}
	// Refuse an unsafe configuration before starting anything.
	if err := app.CheckHTTP(s); err != nil {
		return err
	}
	log := obs.NewLogger(sio.Stderr, s.LogLevel)
	a, err := app.New(ctx, s, sio.inputs(files), log)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Serve(ctx)
}

func runCode(ctx context.Context, args []string, sio IO) (int, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(sio.Stderr)
	setFlags := settingsFlags(fs)
	var files configFiles
	fs.Var(&files, "config", "an mcpServers config file (JSON or TOML); repeatable")
	code := fs.String("c", "", "Python code to run")
	if err := fs.Parse(args); err != nil {
		return 2, usageError{err}
	}
	src := *code
	switch {
	case src != "" && fs.NArg() > 0:
		return 2, usageError{errors.New("give either -c CODE or a file, not both")}
	case src == "" && fs.NArg() == 0:
		return 2, usageError{errors.New("nothing to run: give -c CODE, a FILE, or - for stdin")}
	case src == "" && fs.Arg(0) == "-":
		data, err := io.ReadAll(sio.Stdin)
		if err != nil {
			return 1, err
		}
		src = string(data)
	case src == "":
		data, err := os.ReadFile(fs.Arg(0))
		if err != nil {
			return 1, err
		}
		src = string(data)
	}
	flags := setFlags()
	s, _, err := loadSettings(flags, sio)
	if err != nil {
		return 1, err
	}
	if _, ok := flags["timeout"]; ok {
		// An explicit --timeout may exceed the server's per-call maximum.
		s.MaxTimeout = max(s.MaxTimeout, s.Timeout)
	}
	s.Spares = 0 // one run, one interpreter
	log := obs.NewLogger(sio.Stderr, max(s.LogLevel, slogWarn))
	a, err := app.New(ctx, s, sio.inputs(files), log)
	if err != nil {
		return 1, err
	}
	defer a.Close()
	res := a.Run(ctx, src, sio.Stdout, sio.Stderr)
	for _, img := range res.Images {
		fmt.Fprintf(sio.Stderr, "codemode run: the code returned a %dx%d image (shown to MCP clients, not in a terminal)\n", img.Width, img.Height)
	}
	for _, f := range res.Files {
		fmt.Fprintf(sio.Stderr, "codemode run: the code published %s (%d bytes; MCP clients can read it while the session lives)\n", f.Name, f.Size)
	}
	switch res.Status {
	case executor.StatusSuccess:
		return 0, nil
	case executor.StatusTimeout:
		fmt.Fprintf(sio.Stderr, "codemode run: %s\n", res.Error)
		return 124, nil
	}
	if res.ExitCode != nil && *res.ExitCode != 0 {
		if res.StateLost {
			fmt.Fprintf(sio.Stderr, "codemode run: %s\n", res.Error)
		}
		return *res.ExitCode, nil
	}
	fmt.Fprintf(sio.Stderr, "codemode run: %s\n", res.Error)
	return 1, nil
}

func showConfig(args []string, sio IO) error {
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	fs.SetOutput(sio.Stderr)
	setFlags := settingsFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	_, sources, err := loadSettings(setFlags(), sio)
	if err != nil {
		return err
	}
	sources = settings.SortedSources(sources)
	if *asJSON {
		return writeJSON(sio.Stdout, sources)
	}
	tw := tabwriter.NewWriter(sio.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tVALUE\tFROM")
	for _, src := range sources {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", src.Name, src.Value, src.From)
	}
	return tw.Flush()
}

func listServers(ctx context.Context, args []string, sio IO) error {
	fs := flag.NewFlagSet("servers", flag.ContinueOnError)
	fs.SetOutput(sio.Stderr)
	var files configFiles
	fs.Var(&files, "config", "an mcpServers config file (JSON or TOML); repeatable")
	asJSON := fs.Bool("json", false, "print JSON (env and header values redacted)")
	probe := fs.Bool("probe", false, "start every server and report its state and tool count")
	timeout := fs.Duration("timeout", 30*time.Second, "with --probe: how long each server may take to start")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	res, err := app.LoadServers(ctx, sio.inputs(files))
	if err != nil {
		return err
	}
	var state func(string) string
	if *probe {
		s, _, err := loadSettings(nil, sio)
		if err != nil {
			return err
		}
		states := app.ProbeServers(ctx, res, sio.Environ, *timeout, app.SignInStore(s, sio.Environ))
		state = func(name string) string { return states[name] }
	}
	if *asJSON {
		out := res.Redacted()
		if state == nil {
			return writeJSON(sio.Stdout, out)
		}
		states := map[string]string{}
		for _, s := range res.Servers {
			states[s.Name] = state(s.Name)
		}
		return writeJSON(sio.Stdout, map[string]any{"config": out, "state": states})
	}
	return res.WriteReport(sio.Stdout, state)
}
