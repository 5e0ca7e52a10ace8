package pipe

import (
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// Both ends are blocking descriptors, which os.NewFile keeps out of the
// poller, and neither reaches a child unless handed to it.
func TestNew(t *testing.T) {
	r, w, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, f := range []*os.File{r, w} {
		// Through Control: Fd would make the descriptor blocking itself.
		var fl, fdFlags int
		raw, err := f.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		raw.Control(func(fd uintptr) {
			fl, _ = unix.FcntlInt(fd, unix.F_GETFL, 0)
			fdFlags, _ = unix.FcntlInt(fd, unix.F_GETFD, 0)
		})
		if fl&unix.O_NONBLOCK != 0 {
			t.Errorf("%s is non-blocking: the poller watches it", f.Name())
		}
		if fdFlags&unix.FD_CLOEXEC == 0 {
			t.Errorf("%s is inherited by children", f.Name())
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
