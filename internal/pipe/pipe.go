// Package pipe does codemode's I/O on the pipes of a tool call: the
// requests a sandbox writes, the answers codemode writes back to it, and a
// downstream server's stdin and stdout.
//
// A tool call crosses four pipes, and on a 2-vCPU VM each thread wake-up
// that I/O causes costs tens of microseconds (BENCHMARKS.md, section 6).
// Go's own file I/O adds two kinds: the network poller's thread, woken by
// EPOLLOUT each time the reader drains a pipe whose write end the poller
// watches, and the runtime's monitor thread, which every system call the
// runtime accounts for (entersyscall) wakes when the process was idle, as
// it is between two tool calls. Here writes stay out of the poller and
// neither reads nor writes enter such a system call while the pipe is
// ready: they are raw, non-blocking system calls, and only a wait (an
// empty pipe to read, a full one to write) goes through the runtime.
package pipe

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// New returns a pipe whose ends are blocking descriptors, which Go keeps
// out of its poller (os.Pipe registers both): r for a child to read, w for
// a Writer.
func New() (r, w *os.File, err error) {
	fds, err := blockingPipe()
	if err != nil {
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}

// Writer is a pipe's write end outside the poller. Write blocks until all
// is written: while the pipe is full its thread waits in the kernel (a
// goroutine parked by the poller would need the EPOLLOUT wake-ups), and it
// takes no deadline; it ends when the reader reads or exits.
type Writer struct {
	f  *os.File
	rc syscall.RawConn
}

// NewWriter writes f, the write end of a pipe from New, whose descriptor
// turns non-blocking for the raw writes: from then on only the Writer may
// write it. The read end is another open file and keeps its own flags.
func NewWriter(f *os.File) (*Writer, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	var nerr error
	if err := rc.Control(func(fd uintptr) { nerr = setNonblock(int(fd)) }); err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	if nerr != nil {
		return nil, fmt.Errorf("pipe: %w", nerr)
	}
	return &Writer{f: f, rc: rc}, nil
}

// Write writes all of p.
func (w *Writer) Write(p []byte) (int, error) {
	var n int
	var err error
	// Through the RawConn, so that Close waits for a write in progress.
	if cerr := w.rc.Write(func(fd uintptr) bool {
		n, err = writeAll(int(fd), p)
		return true
	}); cerr != nil {
		return 0, &os.PathError{Op: "write", Path: w.f.Name(), Err: os.ErrClosed}
	}
	if err != nil {
		return n, &os.PathError{Op: "write", Path: w.f.Name(), Err: err}
	}
	return n, nil
}

// Close closes the write end: the reader sees the end of the stream.
func (w *Writer) Close() error { return w.f.Close() }

// Reader reads a pipe that the poller watches (one from os.Pipe): an empty
// pipe parks the goroutine in the poller, and a read deadline stops it.
type Reader struct {
	f  *os.File
	rc syscall.RawConn
}

// NewReader reads f, a pipe the poller watches (from os.Pipe).
func NewReader(f *os.File) (*Reader, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	return &Reader{f: f, rc: rc}, nil
}

// Read reads what the pipe holds, up to len(p), waiting while it is empty;
// io.EOF once the writers are gone.
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var err error
	if werr := r.rc.Read(func(fd uintptr) bool {
		n, err = readRaw(int(fd), p)
		return !errors.Is(err, errAgain)
	}); werr != nil {
		if errors.Is(werr, os.ErrDeadlineExceeded) {
			return 0, werr
		}
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: os.ErrClosed}
	}
	switch {
	case err != nil:
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: err}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// SetReadDeadline stops a Read waiting at t (os.ErrDeadlineExceeded).
func (r *Reader) SetReadDeadline(t time.Time) error { return r.f.SetReadDeadline(t) }

// Close closes the read end; a Read waiting ends.
func (r *Reader) Close() error { return r.f.Close() }

// Ends wraps codemode's ends of a pair of pipes: w, which it writes (from
// New), and r, which it reads (from os.Pipe): a sandbox's direct pipes, a
// server's stdin and stdout. Both are closed on failure.
func Ends(w, r *os.File) (*Writer, *Reader, error) {
	writer, err := NewWriter(w)
	if err == nil {
		var reader *Reader
		if reader, err = NewReader(r); err == nil {
			return writer, reader, nil
		}
	}
	w.Close()
	r.Close()
	return nil, nil, err
}
