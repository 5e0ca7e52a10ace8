package pipe

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// flags reads a descriptor's status and descriptor flags through Control:
// Fd would make the descriptor blocking itself.
func flags(t *testing.T, rc syscall.RawConn) (fl, fdFlags int) {
	t.Helper()
	if err := rc.Control(func(fd uintptr) {
		fl, _ = unix.FcntlInt(fd, unix.F_GETFL, 0)
		fdFlags, _ = unix.FcntlInt(fd, unix.F_GETFD, 0)
	}); err != nil {
		t.Fatal(err)
	}
	return fl, fdFlags
}

func newPipe(t *testing.T) (*os.File, *Writer) {
	t.Helper()
	r, wf, err := New()
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(wf)
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

// The child's end is blocking, codemode's non-blocking for raw writes, and
// neither reaches a child unless handed to it.
func TestNew(t *testing.T) {
	r, w := newPipe(t)
	defer r.Close()
	defer w.Close()
	rrc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	for _, end := range []struct {
		name     string
		rc       syscall.RawConn
		nonblock bool
	}{{"read end", rrc, false}, {"write end", w.rc, true}} {
		fl, fdFlags := flags(t, end.rc)
		if got := fl&unix.O_NONBLOCK != 0; got != end.nonblock {
			t.Errorf("%s: non-blocking %v, want %v", end.name, got, end.nonblock)
		}
		if fdFlags&unix.FD_CLOEXEC == 0 {
			t.Errorf("%s is inherited by children", end.name)
		}
	}
	if _, err := io.WriteString(w, "x"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if data, err := io.ReadAll(r); err != nil || string(data) != "x" {
		t.Fatalf("read %q, %v", data, err)
	}
}

// A write larger than the pipe waits for the reader and writes it all.
func TestWriterWaitsForRoom(t *testing.T) {
	r, w := newPipe(t)
	defer r.Close()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, 16 pipes' worth
	got := make(chan []byte)
	go func() {
		time.Sleep(50 * time.Millisecond) // the pipe fills first
		b, _ := io.ReadAll(r)
		got <- b
	}()
	if n, err := w.Write(data); n != len(data) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	w.Close()
	if b := <-got; !bytes.Equal(b, data) {
		t.Fatalf("read %d bytes, want the %d written", len(b), len(data))
	}
}

// A full pipe whose reader goes away ends the write instead of hanging it,
// and a closed writer says so.
func TestWriterReaderGone(t *testing.T) {
	r, w := newPipe(t)
	go func() {
		time.Sleep(50 * time.Millisecond)
		r.Close()
	}()
	if _, err := w.Write(make([]byte, 1<<20)); !errors.Is(err, unix.EPIPE) {
		t.Fatalf("write after the reader left: %v, want EPIPE", err)
	}
	w.Close()
	if _, err := w.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("write after Close: %v, want os.ErrClosed", err)
	}
}

// A Reader waits for data, stops at a deadline without losing what comes
// later, and ends with io.EOF, or os.ErrClosed once closed.
func TestReader(t *testing.T) {
	rf, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(rf)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 64)
	go func() {
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte("late"))
	}()
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "late" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	r.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := r.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline: %v", err)
	}
	r.SetReadDeadline(time.Time{})
	w.Write([]byte("more"))
	w.Close()
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "more" {
		t.Fatalf("Read after the deadline = %q, %v", buf[:n], err)
	}
	if _, err := r.Read(buf); err != io.EOF {
		t.Fatalf("Read at the end: %v, want io.EOF", err)
	}
	r.Close()
	if _, err := r.Read(buf); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Read after Close: %v, want os.ErrClosed", err)
	}
}

// Closing a Reader ends a Read waiting on it.
func TestReaderClose(t *testing.T) {
	rf, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := NewReader(rf)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	r.Close()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("Read ended with %v, want os.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the Read")
	}
}
