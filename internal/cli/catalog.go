package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/codemode/codemode/internal/app"
	"github.com/codemode/codemode/internal/catalog"
	"github.com/codemode/codemode/internal/obs"
	"github.com/codemode/codemode/internal/policy"
	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/codemode/codemode/internal/settings"
)

const catalogUsage = "usage: codemode catalog search QUERY | show NAME | add NAME [--env K=V ...] [--write]  (with --catalog or CODEMODE_CATALOG)"

// catalogCmd is `codemode catalog search|show|add`.
func catalogCmd(ctx context.Context, args []string, sio IO) error {
	if len(args) == 0 {
		return usageError{errors.New(catalogUsage)}
	}
	fs := flag.NewFlagSet("catalog "+args[0], flag.ContinueOnError)
	fs.SetOutput(sio.Stderr)
	setFlags := settingsFlags(fs, []settings.Group{settings.GroupGeneral, settings.GroupSandbox, settings.GroupCall})
	asJSON := fs.Bool("json", false, "print JSON")
	limit := fs.Int("limit", 10, "search: how many entries to show")
	var env configFiles
	fs.Var(&env, "env", "add: a plain variable of the entry, K=V; repeatable (secrets come from the environment)")
	write := fs.Bool("write", false, "add: write the server to codemode's config directory ($XDG_CONFIG_HOME/mcp/servers)")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{err}
	}
	if fs.NArg() == 0 {
		return usageError{errors.New(catalogUsage)}
	}
	s, _, err := loadSettings(setFlags(), sio)
	if err != nil {
		return err
	}
	if len(s.Catalogs) == 0 {
		return usageError{errors.New("no catalog: pass --catalog FILE|URL or set CODEMODE_CATALOG")}
	}
	log := obs.NewLogger(sio.Stderr, s.LogLevel)
	cat, err := app.LoadCatalog(ctx, s, log)
	if err != nil {
		return err
	}
	arg := strings.Join(fs.Args(), " ")
	switch args[0] {
	case "search":
		found := cat.Find(arg, *limit, nil)
		if *asJSON {
			return writeJSON(sio.Stdout, found)
		}
		tw := tabwriter.NewWriter(sio.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tREGISTRY\tDESCRIPTION")
		for _, m := range found {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", m.Name, m.Registry, m.Description)
		}
		return tw.Flush()
	case "show":
		e, ok := cat.Get(arg)
		if !ok {
			return fmt.Errorf("%s is in no catalog", arg)
		}
		return writeJSON(sio.Stdout, e)
	case "add":
		vars := map[string]string{}
		for _, kv := range env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return usageError{fmt.Errorf("--env %q: want K=V", kv)}
			}
			vars[k] = v
		}
		return catalogAdd(ctx, cat, arg, vars, *write, s, sio)
	}
	return usageError{fmt.Errorf("unknown catalog command %q (want search, show or add)", args[0])}
}

// catalogAdd is the runtime's add for people: the policy's add rules
// apply (the person running it answers what would be asked), the server
// is started once to list its tools, and with write its configuration
// goes to codemode's config directory, secrets as ${NAME} references.
func catalogAdd(ctx context.Context, cat *catalog.Catalog, name string, env map[string]string, write bool, s settings.Settings, sio IO) error {
	e, ok := cat.Get(name)
	if !ok {
		return fmt.Errorf("%s is in no catalog", name)
	}
	if s.Policy != "" {
		p, err := policy.Load(s.Policy)
		if err != nil {
			return err
		}
		if d := p.DecideAdd(policy.AddInput{Name: e.Name, Registry: e.Registry(), Source: e.Source, Catalogued: true}); d.Effect == policy.Deny {
			return fmt.Errorf("adding %s is denied by the policy: %s", e.Name, d)
		}
	}
	server := e.Name[strings.LastIndex(e.Name, "/")+1:]
	cfg, err := e.Server(server, env, app.CatalogLaunch(s, sio.Environ))
	if err != nil {
		return err
	}
	states := app.ProbeServers(ctx, &serverconfig.Result{Servers: []serverconfig.Server{cfg}}, sio.Environ, s.ServerStart)
	fmt.Fprintf(sio.Stderr, "%s: %s\n", server, states[server])
	if !write {
		return writeJSON(sio.Stdout, map[string]any{"mcpServers": map[string]any{server: e.ConfigEntry(cfg)}})
	}
	lookup := func(name string) (string, bool) {
		for _, kv := range sio.Environ {
			if v, ok := strings.CutPrefix(kv, name+"="); ok {
				return v, true
			}
		}
		return "", false
	}
	path, err := e.WriteConfig(catalog.ConfigDir(lookup, sio.Home), cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(sio.Stderr, "wrote %s; codemode reads it at its next start\n", path)
	return nil
}
