package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"github.com/codemode/codemode/internal/app"
	"github.com/codemode/codemode/internal/doctor"
	"github.com/codemode/codemode/internal/obs"
	"github.com/codemode/codemode/internal/pyruntime"
	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/sandbox/posture"
)

// doctorCmd examines every backend; the exit code is 1 when the backend the
// settings select cannot run.
func doctorCmd(ctx context.Context, args []string, sio IO) (int, error) {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(sio.Stderr)
	setFlags := settingsFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return 2, usageError{err}
	}
	s, _, err := loadSettings(setFlags(), sio)
	if err != nil {
		return 1, err
	}
	log := obs.AtLeast(obs.NewLogger(sio.Stderr, s.LogLevel), slog.LevelWarn)
	template := sandbox.Spec{Limits: app.Limits(s), Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/workspace"}}
	var targets []doctor.Target
	for _, name := range []string{"native", "podman", "docker", "gvisor"} {
		exp := posture.Expect{ImageRoot: name != "native"}
		if name == "gvisor" {
			exp.NoLoopback, exp.PtraceAllowed = true, true
		}
		targets = append(targets, doctor.Target{Backend: app.NewBackend(name, s, sio.Environ, log), Template: template, Expect: exp})
	}
	rep := doctor.Examine(ctx, targets, app.Candidates(s), app.Required(s))
	rep.Version = versionString()
	if b, err := pyruntime.Load(); err == nil {
		rep.Runtime = b.Hash
	}
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
