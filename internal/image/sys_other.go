//go:build !linux

package image

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
)

// Building a rootfs (debootstrap, chroot, mounts) is Linux-only; these
// stubs keep the package compiling elsewhere.

var errUnsupported = errors.New("building a rootfs is only supported on Linux")

func lock(context.Context, string, *slog.Logger) (func(), error) { return nil, errUnsupported }
func unmountUnder(string) error                                  { return nil }
func exchange(a, b string) error {
	return &os.LinkError{Op: "exchange", Old: a, New: b, Err: errUnsupported}
}
func syncFS(string) error         { return nil }
func setProcessGroup(*exec.Cmd)   {}
func signalGroup(int, bool) error { return nil }
