// Package pipe makes the pipes codemode writes to at a high rate: to a
// downstream server's stdin and to a sandbox's reply pipe.
package pipe

import (
	"fmt"
	"os"
)

// New returns a pipe whose write end is a blocking descriptor, which Go
// keeps out of its network poller (os.Pipe registers both ends). The
// poller watches a registered writer for EPOLLOUT, which fires each time
// the reader drains the pipe and wakes the poller's thread for nothing:
// on a tool call, once for the request the server reads and once for the
// answer the sandbox reads, a thread wake-up each, which on a 2-vCPU VM
// costs tens of microseconds (BENCHMARKS.md, section 6). A write to a full
// pipe blocks its thread in the kernel instead of parking a goroutine and
// takes no deadline: it ends when the reader reads or exits.
//
// The read end is meant for a child process: it is blocking too.
func New() (r, w *os.File, err error) {
	fds, err := blockingPipe()
	if err != nil {
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}
