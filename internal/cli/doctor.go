package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"github.com/codemode/codemode/internal/app"
	"github.com/codemode/codemode/internal/obs"
	"github.com/codemode/codemode/internal/settings"
)

// doctorCmd examines every backend; the exit code is 1 when the backend the
// settings select cannot run.
func doctorCmd(ctx context.Context, args []string, sio IO) (int, error) {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(sio.Stderr)
	setFlags := settingsFlags(fs, []settings.Group{settings.GroupGeneral, settings.GroupSandbox})
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return 2, usageError{err}
	}
	s, _, err := loadSettings(setFlags(), sio)
	if err != nil {
		return 1, err
	}
	log := obs.AtLeast(obs.NewLogger(sio.Stderr, s.LogLevel), slog.LevelWarn)
	rep := app.Doctor(ctx, s, sio.Environ, log)
	rep.Version = versionString()
	if *asJSON {
		if err := writeJSON(sio.Stdout, rep); err != nil {
			return 1, err
		}
	} else {
		rep.Write(sio.Stdout)
	}
	if !rep.SelectedUsable() {
		fmt.Fprintf(sio.Stderr, "codemode doctor: no backend among %v can run with the current settings\n", app.Candidates(s))
		return 1, nil
	}
	return 0, nil
}
