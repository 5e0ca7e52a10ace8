package kubernetes

import (
	"encoding/binary"
	"runtime"

	"github.com/codemode/codemode/internal/sandbox/seccomp"
)

// syscallFilter is codemode's seccomp policy as the raw struct sock_filter
// array the keeper installs on the command (see keeper.py), for this
// build's architecture; the Pod is pinned to nodes of that architecture.
// The runtime's RuntimeDefault profile stays in force underneath.
func syscallFilter() (filter []byte, arch string, err error) {
	prog, err := seccomp.Program()
	if err != nil {
		return nil, "", err
	}
	for _, ins := range prog {
		filter = binary.NativeEndian.AppendUint16(filter, ins.Code)
		filter = append(filter, ins.Jt, ins.Jf)
		filter = binary.NativeEndian.AppendUint32(filter, ins.K)
	}
	return filter, runtime.GOARCH, nil
}

func policySummary() string { return seccomp.Summary() }
