//go:build !linux

package pipe

import (
	"syscall"

	"golang.org/x/sys/unix"
)

func blockingPipe() ([2]int, error) {
	var fds [2]int
	// The fork lock keeps a child started meanwhile from inheriting the
	// descriptors before they are close-on-exec.
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := unix.Pipe(fds[:]); err != nil {
		return fds, err
	}
	unix.CloseOnExec(fds[0])
	unix.CloseOnExec(fds[1])
	return fds, nil
}
