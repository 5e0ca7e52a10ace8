package container

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// needsMachine recognises podman's answer when its VM is not running.
func needsMachine(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "podman machine") || strings.Contains(s, "cannot connect to podman") ||
		(strings.Contains(s, "connect") && strings.Contains(s, "connection refused"))
}

// startMachine starts the default podman machine. It never changes the
// machine's settings (no switch to rootful), and codemode stops at Close only
// a machine it started itself.
func (b *Backend) startMachine(ctx context.Context, e *engine) error {
	out, err := e.output(ctx, "machine", "list", "--format", "{{.Name}}\t{{.Running}}")
	if err != nil {
		return fmt.Errorf("podman needs a machine, and listing machines failed: %w", err)
	}
	var name string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		n, running, _ := strings.Cut(line, "\t")
		if n = strings.TrimSuffix(strings.TrimSpace(n), "*"); n == "" {
			continue
		}
		if running == "true" {
			return nil // someone else's running machine: use it, leave it alone
		}
		if name == "" {
			name = n
		}
	}
	if name == "" {
		return fmt.Errorf("podman needs a machine and none exists: run `podman machine init` once (codemode does not create machines)")
	}
	b.log.Info("starting podman machine", "machine", name)
	startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if _, err := e.output(startCtx, "machine", "start", name); err != nil {
		return fmt.Errorf("starting podman machine %s: %w", name, err)
	}
	b.mu.Lock()
	b.machine = name
	b.mu.Unlock()
	return nil
}
