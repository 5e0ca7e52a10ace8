package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/codemode/codemode/internal/egress"
	"github.com/codemode/codemode/internal/executor"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/settings"
)

// newEgress builds the egress proxy the settings and the policy file ask
// for; nil when neither allows anything at start (sandboxes keep no network
// at all, and a reload cannot give them one). The policy's list follows the
// file as it is reloaded. Secrets take their values from the secrets file,
// then codemode's own environment.
func newEgress(s settings.Settings, environ []string, backend sandbox.Backend, g *guard, log *slog.Logger) (*egress.Proxy, error) {
	var policyAllow func() *egress.List
	if g != nil && g.store != nil {
		policyAllow = func() *egress.List { return g.store.Current().EgressAllow() }
	}
	if len(s.EgressAllow) == 0 && (policyAllow == nil || policyAllow().Empty()) {
		if len(s.EgressSecrets) > 0 {
			return nil, fmt.Errorf("egress-secret: no host is on the egress allow-list (--egress-allow or [egress] allow in the policy file), so no secret could be used")
		}
		return nil, nil
	}
	if eb, ok := backend.(egressBlocker); ok {
		if why := eb.EgressBlocker(); why != "" {
			return nil, fmt.Errorf("egress-allow: the %s backend cannot carry egress: %s; use the native, podman or docker backend, or gVisor under podman", backend.Name(), why)
		}
	}
	allow, err := egress.ParseList(s.EgressAllow)
	if err != nil {
		return nil, fmt.Errorf("egress-allow: %w", err)
	}
	lookup := lookupIn(environ)
	if s.EgressSecretsFile != "" {
		data, err := os.ReadFile(s.EgressSecretsFile)
		if err != nil {
			return nil, fmt.Errorf("egress-secrets-file: %w", err)
		}
		values, err := egress.ParseSecretsFile(data)
		if err != nil {
			return nil, fmt.Errorf("egress-secrets-file %s: %w", s.EgressSecretsFile, err)
		}
		env := lookup
		lookup = func(name string) (string, bool) {
			if v, ok := values[name]; ok {
				return v, true
			}
			return env(name)
		}
	}
	var secrets []egress.Secret
	for _, item := range s.EgressSecrets {
		sec, err := egress.ParseSecret(item, lookup)
		if err != nil {
			return nil, err
		}
		secrets = append(secrets, sec)
	}
	opts := egress.Options{Allow: allow, PolicyAllow: policyAllow, Secrets: secrets, SwapBody: s.EgressSecretBody, Logger: log.With("component", "egress"),
		Limits: egress.Limits{Requests: int64(s.EgressMaxRequests), Bytes: s.EgressMaxBytes}}
	if g != nil {
		opts.Governor = g.Gate
	}
	p, err := egress.New(opts)
	if err != nil {
		return nil, err
	}
	log.Info("egress allowed", "hosts", p.Patterns(), "secrets", len(secrets))
	return p, nil
}

// egressBlocker is a backend whose sandboxes may be unable to reach the
// proxy (container.Backend: gVisor under docker).
type egressBlocker interface{ EgressBlocker() string }

// EgressBlocker says why the backend the settings name cannot carry egress,
// or "" when it can (or names no backend of the table).
func EgressBlocker(s settings.Settings, environ []string) string {
	b, err := NewBackend(s.Backend, s, environ, slog.New(slog.DiscardHandler))
	if err != nil {
		return ""
	}
	if eb, ok := b.(egressBlocker); ok {
		return eb.EgressBlocker()
	}
	return ""
}

// mountBlocker is a backend whose sandboxes cannot see host directories
// (kubernetes: a Pod runs on a node, not on codemode's host).
type mountBlocker interface{ MountBlocker() string }

// MountBlocker says why backend cannot mount host directories (--data-dir),
// or "" when it can.
func MountBlocker(backend sandbox.Backend) string {
	if mb, ok := backend.(mountBlocker); ok {
		return mb.MountBlocker()
	}
	return ""
}

// network adapts the proxy to the executor's Network.
type network struct{ p *egress.Proxy }

func (n network) Attach(ctx context.Context, sandboxID string, whose func() (context.Context, hostrpc.Caller, bool)) (executor.NetworkLink, error) {
	return n.p.Attach(ctx, sandboxID, whose)
}
