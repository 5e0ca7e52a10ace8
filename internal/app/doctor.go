package app

import (
	"context"
	"log/slog"

	"github.com/codemode/codemode/internal/doctor"
	"github.com/codemode/codemode/internal/pyruntime"
	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/settings"
	"github.com/codemode/codemode/internal/telemetry"
)

// Doctor examines every backend of the table on this host with the
// settings s, marking the one codemode would select.
func Doctor(ctx context.Context, s settings.Settings, environ []string, log *slog.Logger) doctor.Report {
	rep := doctor.Examine(ctx, doctorTargets(s, environ, log), Candidates(s), required(s))
	if b, err := pyruntime.Load(); err == nil {
		rep.Runtime = b.Hash
	}
	for _, f := range telemetry.Diagnose(ctx, s.Metrics, s.OTLPEndpoint, environ) {
		rep.Observability = append(rep.Observability, sandbox.Check{Name: f.Name, OK: f.OK, Detail: f.Detail, Fix: f.Fix})
	}
	rep.Host = doctor.Host(ctx, doctor.HaltPollPath)
	return rep
}

// doctorTargets is every backend of the table, in order, with the test
// sandbox a session of the settings would get.
func doctorTargets(s settings.Settings, environ []string, log *slog.Logger) []doctor.Target {
	template := sandbox.Spec{Limits: sandboxLimits(s), Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/workspace"}}
	var targets []doctor.Target
	for _, b := range Backends() {
		targets = append(targets, doctor.Target{Backend: b.New(s, environ, log), Template: template, Expect: b.Expect})
	}
	return targets
}
