//go:build !linux

package linuxns

import (
	"context"
	"fmt"
	"os"
	"runtime"

	"github.com/codemode/codemode/internal/sandbox"
)

// Backend is the native backend on a system without Linux namespaces: it
// cannot start sandboxes.
type Backend struct{}

var _ sandbox.Backend = (*Backend)(nil)

// New returns the native backend; Options are ignored outside Linux.
func New(*Options) *Backend { return &Backend{} }

// Name implements sandbox.Backend.
func (b *Backend) Name() string { return "native" }

// Probe implements sandbox.Backend: the backend never runs here.
func (b *Backend) Probe(context.Context) (sandbox.Capabilities, error) {
	return sandbox.Capabilities{Backend: b.Name(), Engine: "linux namespaces"}, errNotLinux()
}

// Start implements sandbox.Backend: the backend never runs here.
func (b *Backend) Start(context.Context, sandbox.Spec) (sandbox.Session, error) {
	return nil, errNotLinux()
}

func errNotLinux() error {
	return fmt.Errorf("%w: the native backend needs Linux namespaces and this is %s; use podman (podman machine) or docker",
		sandbox.ErrUnsupported, runtime.GOOS)
}

// InitMain is reached only when something starts codemode as the sandbox
// init (InitArg0) on a system that has none; it says so and fails.
func InitMain() int {
	fmt.Fprintf(os.Stderr, "%s: %v\n", InitArg0, errNotLinux())
	return 1
}
