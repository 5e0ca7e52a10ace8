package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/codemode/codemode/internal/activity"
	"github.com/codemode/codemode/internal/approval"
	"github.com/codemode/codemode/internal/audit"
	"github.com/codemode/codemode/internal/gate"
	"github.com/codemode/codemode/internal/policy"
	"github.com/codemode/codemode/internal/settings"
	"github.com/codemode/codemode/internal/telemetry"
)

// guard is the policy boundary as configured: the policy file (followed as
// it changes, reloaded on SIGHUP), the audit log and the gate over them.
type guard struct {
	*gate.Gate
	store  *policy.Store // nil without a policy file
	audit  *audit.Log
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
}

// fixed is the policy when only an audit log is configured: allow all.
type fixed struct{ p *policy.Policy }

func (f fixed) Current() *policy.Policy { return f.p }

// newGuard builds the boundary; nil when no policy, audit log, catalog or
// egress allow-list is configured (codemode then behaves as it always did). Catalogs need it:
// adds are decided by the policy (without a file, the empty one, which
// asks). rec, if set, is the web console's recorder.
func newGuard(ctx context.Context, s settings.Settings, log *slog.Logger, tel *telemetry.Telemetry, rec *activity.Recorder) (*guard, error) {
	if s.Policy == "" && s.AuditLog == "" && len(s.Catalogs) == 0 && len(s.EgressAllow) == 0 {
		return nil, nil
	}
	log = log.With("component", "policy")
	g := &guard{done: make(chan struct{}), log: log}
	var src gate.Source
	if s.Policy != "" {
		store, err := policy.NewStore(s.Policy, log)
		if err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		g.store, src = store, store
	} else {
		p, err := policy.Parse(nil, "toml")
		if err != nil {
			return nil, fmt.Errorf("policy: the empty policy: %w", err)
		}
		src = fixed{p}
	}
	if s.AuditLog != "" {
		l, err := audit.Open(s.AuditLog, audit.Options{MaxBytes: s.AuditMaxBytes, Logger: log})
		if err != nil {
			if g.store != nil {
				g.store.Close()
			}
			return nil, fmt.Errorf("audit log: %w", err)
		}
		g.audit = l
	}
	opts := gate.Options{Policy: src, Audit: g.audit, Logger: log, Observe: tel.PolicyDecision, EgressObserve: tel.EgressRequest}
	approvals := approval.Options{Timeout: s.ApprovalTimeout}
	if rec != nil { // the console shows decisions and answers asks
		opts.Decided, approvals.Board = rec.Decided, rec
	}
	opts.Approver = approval.New(approvals)
	g.Gate = gate.New(opts)
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	g.cancel = cancel
	if g.store != nil {
		if err := g.store.Watch(wctx); err != nil {
			log.Warn("policy file not watched; it reloads on SIGHUP only", "error", err)
		}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer close(g.done)
		defer signal.Stop(hup)
		for {
			select {
			case <-wctx.Done():
				return
			case <-hup:
				if g.store == nil {
					continue
				}
				if err := g.store.Reload(); err != nil {
					log.Error("policy reload on SIGHUP failed; the previous policy stays", "error", err)
				} else {
					log.Info("policy reloaded on SIGHUP", "policy", g.store.Current().Summary())
				}
			}
		}
	}()
	log.Info("policy in force", "policy", g.Summary(), "file", s.Policy, "audit_log", s.AuditLog)
	return g, nil
}

// Close stops following the policy file and flushes the audit log.
func (g *guard) Close() {
	if g == nil {
		return
	}
	g.cancel()
	<-g.done
	if g.store != nil {
		g.store.Close()
	}
	if err := g.audit.Close(); err != nil {
		g.log.Error("closing the audit log", "error", err)
	}
}
