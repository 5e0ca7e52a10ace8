//go:build !linux

package linuxns

import (
	"context"
	"errors"
	"testing"

	"github.com/codemode/codemode/internal/sandbox"
)

// Outside Linux the backend must fail with ErrUnsupported, which makes
// automatic selection move on to a container engine.
func TestUnsupportedOutsideLinux(t *testing.T) {
	b := New(nil)
	if _, err := b.Probe(context.Background()); !errors.Is(err, sandbox.ErrUnsupported) {
		t.Errorf("Probe: %v, want ErrUnsupported", err)
	}
	if _, err := b.Start(context.Background(), sandbox.Spec{ID: "x", Command: []string{"true"}}); !errors.Is(err, sandbox.ErrUnsupported) {
		t.Errorf("Start: %v, want ErrUnsupported", err)
	}
}
