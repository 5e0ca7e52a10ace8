package pipe

import "golang.org/x/sys/unix"

func blockingPipe() ([2]int, error) {
	var fds [2]int
	err := unix.Pipe2(fds[:], unix.O_CLOEXEC)
	return fds, err
}
