// Package cli is codemode's command line: serve (the default), run,
// version and config. Results go to stdout, everything informational to
// stderr; in serve mode stdout carries only the MCP protocol.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/codemode/codemode/internal/app"
	"github.com/codemode/codemode/internal/artifacts"
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
	// Interactive is true when stdin is a terminal: a person, not an MCP
	// client, started the server.
	Interactive bool
}

// configFiles is the repeatable --config flag.
type configFiles []string

func (c *configFiles) String() string     { return strings.Join(*c, ",") }
func (c *configFiles) Set(v string) error { *c = append(*c, v); return nil }

func (sio IO) inputs(files configFiles) app.Inputs {
	return app.Inputs{Environ: sio.Environ, Home: sio.Home, Cwd: sio.Cwd, ConfigFiles: files, Self: sio.Self, Stderr: sio.Stderr}
}

// command is one row of the subcommand table, which both dispatch and
// help use.
type command struct {
	name  string
	usage [][2]string // synopsis (after "codemode") and what it does
	run   func(ctx context.Context, args []string, sio IO) (int, error)
}

// commands lists every subcommand in the order help shows them.
func commands() []command {
	noCode := func(f func(context.Context, []string, IO) error) func(context.Context, []string, IO) (int, error) {
		return func(ctx context.Context, args []string, sio IO) (int, error) { return 0, f(ctx, args, sio) }
	}
	return []command{
		{"serve", [][2]string{{"[serve] [flags]", "serve MCP over stdio (the default), or --http ADDR for streamable HTTP"}}, noCode(serve)},
		{"run", [][2]string{
			{"run [flags] -c CODE [ARG...]", "run Python in a fresh sandbox (sys.argv is ['-c', ARG...])"},
			{"run [flags] FILE|- [ARG...]", "run a file (or stdin) in a fresh sandbox (sys.argv is [FILE, ARG...])"},
		}, runCode},
		{"connect", [][2]string{
			{"connect CLIENT [--move-servers]", "add codemode to a client's config (backup kept); --move-servers moves its other servers behind codemode"},
			{"connect --list", "show each client, its config file and whether codemode is in it"},
		}, connectCmd},
		{"servers", [][2]string{{"servers [--json] [--probe]", "list the MCP servers found in config files (--probe starts each)"}}, noCode(listServers)},
		{"doctor", [][2]string{{"doctor [--json]", "check every sandbox backend on this host and say how to fix what fails"}}, doctorCmd},
		{"config", [][2]string{{"config [--json]", "show the effective settings and their sources"}}, noCode(showConfig)},
		{"attacks", [][2]string{{"attacks [--backends LIST]", "run the adversarial suite; prints attack × backend (exit 1 on any escape)"}}, attacksCmd},
		{"image", [][2]string{{"image build [flags]", "build a Python rootfs with debootstrap; import it into podman/docker (no registry)"}}, noCode(imageCmd)},
		{"policy", [][2]string{
			{"policy init [FILE]", "write a commented starter policy (asks before destructive tools)"},
			{"policy check FILE", "report syntax and condition errors with their line"},
			{"policy explain FILE --server S --tool T [--args JSON]", "print the decision and the rule"},
		}, policyCmd},
		{"auth", [][2]string{
			{"auth login SERVER [--no-browser]", "sign in to a remote MCP server that requires OAuth (opens $BROWSER; --no-browser prints the URL and reads where the browser ended)"},
			{"auth status [--json] | logout SERVER", "show each remote server's sign-in and token expiry; forget a server's tokens"},
		}, authCmd},
		{"catalog", [][2]string{{"catalog search QUERY | show NAME | add NAME [--write]", "find servers in --catalog, add one to codemode's config"}}, noCode(catalogCmd)},
		{"audit", [][2]string{{"audit verify FILE", "check an audit log's hash chain (exit 1 naming the first bad line)"}}, auditCmd},
		{"version", [][2]string{{"version", "print the release, the commit and the Go version"}}, func(_ context.Context, _ []string, sio IO) (int, error) {
			fmt.Fprintln(sio.Stdout, versionString())
			return 0, nil
		}},
		{"help", [][2]string{{"help", "this text"}}, func(_ context.Context, _ []string, sio IO) (int, error) {
			usage(sio.Stdout)
			return 0, nil
		}},
	}
}

// Run executes the command line and returns the exit code.
func Run(ctx context.Context, args []string, sio IO) int {
	name, rest := "serve", args
	switch {
	case len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help"):
		name, rest = "help", nil
	case len(args) > 0 && !strings.HasPrefix(args[0], "-"):
		name, rest = args[0], args[1:]
	}
	cmds := commands()
	i := slices.IndexFunc(cmds, func(c command) bool { return c.name == name })
	if i < 0 {
		fmt.Fprintf(sio.Stderr, "codemode: unknown command %q\n\n", name)
		usage(sio.Stderr)
		return 2
	}
	code, err := cmds[i].run(ctx, rest, sio)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(sio.Stderr, "codemode %s: %v\n", name, err)
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return max(code, 1)
	}
	return code
}

type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

func usage(w io.Writer) {
	fmt.Fprint(w, "codemode: an MCP server with one tool, run_python, that runs Python in a sandbox.\n\nUsage:\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range commands() {
		for _, u := range c.usage {
			fmt.Fprintf(tw, "  codemode %s\t%s\n", u[0], u[1])
		}
	}
	tw.Flush()
	fmt.Fprint(w, `
Run "codemode COMMAND -h" for a command's flags; each setting also has a
CODEMODE_* variable ("codemode serve -h" lists them all).

Sandbox backends (--backend):
`)
	for _, c := range app.BackendChoices() {
		fmt.Fprintf(w, "  %-8s %s\n", c.Name, c.Summary)
	}
}

// versionString names the release (stamped with -ldflags -X, else the
// module version go install recorded), the commit and the Go version.
func versionString() string {
	v := app.Version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "codemode " + v
	}
	if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	rev, modified := app.Commit, ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev == "" {
		return fmt.Sprintf("codemode %s (commit unknown, %s)", v, info.GoVersion)
	}
	return fmt.Sprintf("codemode %s (commit %s%s, %s)", v, rev[:min(len(rev), 12)], modified, info.GoVersion)
}

// boolFlag is an on/off setting's flag: "--x" sets it, "--x=false"
// clears it. It keeps the text so Load parses (and reports) it like any
// other value.
type boolFlag struct{ v string }

func (b *boolFlag) String() string {
	if b == nil {
		return ""
	}
	return b.v
}
func (b *boolFlag) Set(v string) error { b.v = v; return nil }
func (b *boolFlag) IsBoolFlag() bool   { return true }

// listFlag collects a repeatable flag; the setting reads the values joined
// by commas, as its environment variable gives them.
type listFlag struct{ items []string }

func (l *listFlag) String() string     { return strings.Join(l.items, ",") }
func (l *listFlag) Set(v string) error { l.items = append(l.items, v); return nil }

// settingsFlags registers one flag per setting of groups and returns a
// function that reports the flags the user set.
func settingsFlags(fs *flag.FlagSet, groups []settings.Group) func() map[string]string {
	reg := app.SettingsRegistry()
	for _, name := range reg.Names() {
		if !slices.Contains(groups, reg.Group(name)) {
			continue
		}
		usage := reg.Doc(name) + " (default " + quoteDefault(reg.Default(name)) + ")"
		for _, c := range reg.Choices(name) {
			if c.Summary != "" {
				usage += fmt.Sprintf("\n%-8s %s", c.Name, c.Summary)
			}
		}
		if reg.IsBool(name) {
			fs.Var(&boolFlag{}, name, usage)
			continue
		}
		if reg.IsList(name) {
			fs.Var(&listFlag{}, name, usage+" (repeatable)")
			continue
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
	setFlags := settingsFlags(fs, []settings.Group{settings.GroupGeneral, settings.GroupSandbox, settings.GroupCall, settings.GroupSessions, settings.GroupHTTP})
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
	if s.HTTP == "" && sio.Interactive {
		fmt.Fprintln(sio.Stderr, `codemode: serving MCP over stdio, waiting for an MCP client to speak on stdin.
Register this command in your client ("codemode connect --list"), try code with "codemode run -c CODE",
or see "codemode --help". Ctrl-C stops.`)
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
	setFlags := settingsFlags(fs, []settings.Group{settings.GroupGeneral, settings.GroupSandbox, settings.GroupCall})
	var files configFiles
	fs.Var(&files, "config", "an mcpServers config file (JSON or TOML); repeatable")
	code := fs.String("c", "", "Python code to run; arguments after it become sys.argv[1:]")
	saveImages := fs.String("save-images", "", "write the images the code shows (returns or displays) into this directory")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: codemode run [flags] -c CODE [ARG...]
       codemode run [flags] FILE|- [ARG...]

Runs Python in a fresh sandbox, streaming its output; the exit status is the
code's (124 on timeout). sys.argv is ['-c', ARG...] or [FILE, ARG...].

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2, usageError{err}
	}
	src, argv := *code, fs.Args()
	switch {
	case src != "":
		if len(argv) > 0 {
			argv = append([]string{"-c"}, argv...)
		}
	case fs.NArg() == 0:
		return 2, usageError{errors.New("nothing to run: give -c CODE, a FILE, or - for stdin")}
	case fs.Arg(0) == "-":
		data, err := io.ReadAll(sio.Stdin)
		if err != nil {
			return 1, err
		}
		src = string(data)
	default:
		data, err := os.ReadFile(fs.Arg(0))
		if err != nil {
			return 1, err
		}
		src = string(data)
	}
	flags := setFlags()
	if _, ok := flags["max-timeout"]; !ok {
		if t, ok := flags["timeout"]; ok {
			// One run, one call: an explicit --timeout is its own maximum.
			flags["max-timeout"] = t
		}
	}
	s, _, err := loadSettings(flags, sio)
	if err != nil {
		return 1, err
	}
	s.Spares = 0 // one run, one interpreter
	log := obs.NewLogger(sio.Stderr, max(s.LogLevel, slogWarn))
	a, err := app.New(ctx, s, sio.inputs(files), log)
	if err != nil {
		return 1, err
	}
	defer a.Close()
	if len(argv) > 0 {
		// A call of its own sets sys.argv, so the code's line numbers stay
		// its own; the session (and sys) carries over to the next call.
		list, err := json.Marshal(argv)
		if err != nil {
			return 1, fmt.Errorf("run: arguments: %w", err)
		}
		if res := a.Run(ctx, "__import__('sys').argv = "+string(list), io.Discard, sio.Stderr); res.Status != executor.StatusSuccess {
			return 1, fmt.Errorf("run: setting sys.argv: %s", res.Error)
		}
	}
	res := a.Run(ctx, src, sio.Stdout, sio.Stderr)
	for i, img := range res.Images {
		if *saveImages == "" {
			fmt.Fprintf(sio.Stderr, "codemode run: the code returned a %dx%d image (shown to MCP clients; --save-images DIR writes it)\n", img.Width, img.Height)
			continue
		}
		path, err := saveImage(*saveImages, i, img)
		if err != nil {
			return 1, err
		}
		fmt.Fprintf(sio.Stderr, "codemode run: saved a %dx%d image as %s\n", img.Width, img.Height, path)
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

// saveImage writes the i-th image of a run into dir, under its own name
// when it has one, and returns the path.
func saveImage(dir string, i int, img artifacts.Image) (string, error) {
	ext := "." + strings.TrimPrefix(img.MIMEType, "image/")
	if ext == ".jpeg" {
		ext = ".jpg"
	}
	name := fmt.Sprintf("image-%d%s", i+1, ext)
	if base := filepath.Base(img.Name); img.Name != "" && base != "." && base != ".." && base != string(filepath.Separator) {
		name = base
		if filepath.Ext(name) == "" {
			name += ext
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("run: save images: %w", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, img.Data, 0o644); err != nil {
		return "", fmt.Errorf("run: save images: %w", err)
	}
	return path, nil
}

func showConfig(_ context.Context, args []string, sio IO) error {
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	fs.SetOutput(sio.Stderr)
	setFlags := settingsFlags(fs, []settings.Group{settings.GroupGeneral, settings.GroupSandbox, settings.GroupCall, settings.GroupSessions, settings.GroupHTTP})
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
