package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/codemode/codemode/internal/app"
	"github.com/codemode/codemode/internal/attacks"
	"github.com/codemode/codemode/internal/settings"
)

// attacksCmd runs the adversarial suite against one or more backends and
// prints the attack × backend table; the exit code is 1 on any escape (or
// any attack the suite could not judge).
func attacksCmd(ctx context.Context, args []string, sio IO) (int, error) {
	fs := flag.NewFlagSet("attacks", flag.ContinueOnError)
	fs.SetOutput(sio.Stderr)
	setFlags := settingsFlags(fs, []settings.Group{settings.GroupGeneral, settings.GroupSandbox, settings.GroupCall})
	backends := fs.String("backends", "", "backends to attack, comma-separated: "+backendNames()+" (default: the one --backend selects; auto = the first it tries)")
	only := fs.String("only", "", "run only these attacks (names, comma-separated)")
	runsc := fs.String("runsc", "runsc", "gVisor's runsc for the gvisor backend (name or path)")
	width := fs.Int("width", 80, "cut each cell's explanation to this many characters (0 = uncut)")
	list := fs.Bool("list", false, "list the attacks and what each expects, then exit")
	if err := fs.Parse(args); err != nil {
		return 2, usageError{err}
	}
	corpus, err := attacks.Corpus()
	if err != nil {
		return 1, err
	}
	if *only != "" {
		names := strings.Split(*only, ",")
		corpus = slices.DeleteFunc(corpus, func(a attacks.Attack) bool { return !slices.Contains(names, a.Name) })
		if len(corpus) == 0 {
			return 2, usageError{fmt.Errorf("no attack named %s (see codemode attacks --list)", *only)}
		}
	}
	if *list {
		for _, a := range corpus {
			fmt.Fprintf(sio.Stdout, "%-24s %-10s %s\n", a.Name, a.Category, a.Expect)
		}
		return 0, nil
	}
	flags := setFlags()
	s, _, err := loadSettings(flags, sio)
	if err != nil {
		return 1, err
	}
	targets, err := app.AttackSettings(s, *backends, *runsc)
	if err != nil {
		return 2, usageError{err}
	}
	var all []attacks.Result
	for _, bs := range targets {
		b := bs.Backend
		fmt.Fprintf(sio.Stderr, "codemode attacks: %d attacks on %s\n", len(corpus), b)
		start := time.Now()
		results, err := attacks.Run(ctx, attacks.Options{Settings: bs, Environ: sio.Environ, Attacks: corpus, Log: io.Discard,
			OnResult: func(r attacks.Result) {
				fmt.Fprintf(sio.Stderr, "  %-24s %-9s %s\n", r.Attack, r.Verdict, attacks.Shorten(r.How, 120))
			}})
		if err != nil {
			return 1, fmt.Errorf("%s: %w", b, err)
		}
		fmt.Fprintf(sio.Stderr, "codemode attacks: %s done in %s\n", b, time.Since(start).Round(time.Second))
		all = append(all, results...)
	}
	attacks.WriteTable(sio.Stdout, all, *width)
	if bad := attacks.Escapes(all); len(bad) > 0 {
		for _, r := range bad {
			fmt.Fprintf(sio.Stderr, "codemode attacks: %s on %s: %s: %s\n", r.Attack, r.Backend, r.Verdict, r.How)
		}
		return 1, nil
	}
	return 0, nil
}
