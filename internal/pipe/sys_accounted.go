//go:build !linux || race

package pipe

import "syscall"

// sysRead and sysWrite go through the syscall package: elsewhere than on
// Linux raw system calls are not the C library's, and under the race
// detector the package's annotations are what orders a write to a pipe
// before the read that another goroutine makes of what it caused (the
// sandbox's answer on another pipe).
func sysRead(fd int, p []byte) (int, error) {
	n, err := syscall.Read(fd, p)
	return max(n, 0), err
}

func sysWrite(fd int, p []byte) (int, error) {
	n, err := syscall.Write(fd, p)
	return max(n, 0), err
}
