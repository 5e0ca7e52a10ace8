package pipe

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

func blockingPipe() ([2]int, error) {
	var fds [2]int
	err := unix.Pipe2(fds[:], unix.O_CLOEXEC)
	return fds, err
}

var errAgain = unix.EAGAIN

func setNonblock(fd int) error { return unix.SetNonblock(fd, true) }

// readRaw reads once from a non-blocking descriptor, in a system call the
// runtime does not account for: it cannot block.
func readRaw(fd int, p []byte) (int, error) {
	for {
		n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
		default:
			return 0, errno
		}
	}
}

// writeAll writes p to a non-blocking descriptor with raw system calls,
// and waits in poll, a system call the runtime accounts for (it may hand
// the thread's P to another), while the pipe is full.
func writeAll(fd int, p []byte) (int, error) {
	written := 0
	for written < len(p) {
		n, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[written])), uintptr(len(p)-written))
		switch errno {
		case 0:
			written += int(n)
		case unix.EINTR:
		case unix.EAGAIN:
			if err := waitWritable(fd); err != nil {
				return written, err
			}
		default:
			return written, errno
		}
	}
	return written, nil
}

// waitWritable returns once fd has room or its reader is gone.
func waitWritable(fd int) error {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		if _, err := unix.Poll(fds, -1); err != unix.EINTR {
			return err
		}
	}
}
