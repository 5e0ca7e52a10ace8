package executor

import (
	"context"
	"sync/atomic"

	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/sandbox"
)

// Network gives each sandbox its way out to the hosts codemode allows (the
// egress proxy). Attach runs before the sandbox starts; whose tells, at
// each request, the session the sandbox serves and its running call's
// context (ok false while it serves none, as a spare).
type Network interface {
	Attach(ctx context.Context, sandboxID string, whose func() (context.Context, hostrpc.Caller, bool)) (NetworkLink, error)
}

// NetworkLink is one sandbox's attachment: what to mount and set in its
// environment, released when the sandbox has ended.
type NetworkLink interface {
	Mounts() []sandbox.Mount
	Env() []string
	Close() error
}

// whose reports the session bound to a sandbox for its network requests.
func (m *Manager) whose(bound *atomic.Pointer[session], sandboxID string) func() (context.Context, hostrpc.Caller, bool) {
	return func() (context.Context, hostrpc.Caller, bool) {
		s := bound.Load()
		if s == nil {
			return context.Background(), hostrpc.Caller{Sandbox: sandboxID}, false
		}
		ctx := context.Background()
		if call := s.currentCall(); call != nil {
			if call.values != nil {
				ctx = call.values
			}
			ctx = hostrpc.WithPauser(ctx, call.pause)
		}
		return ctx, hostrpc.Caller{Principal: s.principal, Owner: s.key.owner, Session: s.key.name, Sandbox: sandboxID}, true
	}
}
