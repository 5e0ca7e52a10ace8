package pipe

import "golang.org/x/sys/unix"

var errAgain = unix.EAGAIN

func setNonblock(fd int) error { return unix.SetNonblock(fd, true) }

// readRaw reads once from a non-blocking descriptor (sysRead): it cannot
// block.
func readRaw(fd int, p []byte) (int, error) {
	for {
		n, err := sysRead(fd, p)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// writeAll writes p to a non-blocking descriptor (sysWrite), and waits in
// poll, a system call the runtime accounts for (it may hand the thread's P
// to another), while the pipe is full.
func writeAll(fd int, p []byte) (int, error) {
	written := 0
	for written < len(p) {
		n, err := sysWrite(fd, p[written:])
		switch err {
		case nil:
			written += n
		case unix.EINTR:
		case unix.EAGAIN:
			if err := waitWritable(fd); err != nil {
				return written, err
			}
		default:
			return written, err
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
