//go:build linux && !amd64 && !arm64

package seccomp

import (
	"fmt"
	"runtime"
)

// native reports that the policy has no syscall table for this
// architecture: the native backend cannot install its filter here.
func native() (table, error) {
	return table{}, fmt.Errorf("seccomp: architecture %s not supported (amd64 and arm64 are)", runtime.GOARCH)
}
