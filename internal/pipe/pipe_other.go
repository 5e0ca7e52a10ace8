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

var errAgain = unix.EAGAIN

func setNonblock(fd int) error { return unix.SetNonblock(fd, true) }

// readRaw reads once from a non-blocking descriptor. Only Linux gets raw
// system calls; elsewhere they go through the C library.
func readRaw(fd int, p []byte) (int, error) {
	for {
		n, err := unix.Read(fd, p)
		if err != unix.EINTR {
			return max(n, 0), err
		}
	}
}

// writeAll writes p to a non-blocking descriptor, waiting in poll while
// the pipe is full.
func writeAll(fd int, p []byte) (int, error) {
	written := 0
	for written < len(p) {
		n, err := unix.Write(fd, p[written:])
		switch err {
		case nil:
			written += n
		case unix.EINTR:
		case unix.EAGAIN:
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
			if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
				return written, err
			}
		default:
			return written, err
		}
	}
	return written, nil
}
