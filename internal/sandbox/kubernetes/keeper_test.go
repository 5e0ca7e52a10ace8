package kubernetes

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The keeper and connector run here as local processes, exactly as in a
// Pod: python3 -I -B -c <source>.

type localKeeper struct {
	cmd    *exec.Cmd
	socket string
	stderr *os.File // a file, not a pipe: a grandchild may keep it open
}

func startKeeper(t *testing.T, child string) *localKeeper {
	return startKeeperWith(t, child, nil)
}

func startKeeperWith(t *testing.T, child string, filter []byte) *localKeeper {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	k := &localKeeper{socket: filepath.Join(dir, "run", "keeper", "sock")}
	cfg, _ := json.Marshal(map[string]any{
		"argv": []string{python, "-I", "-c", child}, "env": []string{"PATH=/usr/bin:/bin"},
		"dir": dir, "socket": k.socket, "buffer": 1 << 20, "filter": filter,
	})
	k.cmd = exec.Command(python, "-I", "-B", "-c", keeperSource, string(cfg))
	if k.stderr, err = os.Create(filepath.Join(dir, "stderr")); err != nil {
		t.Fatal(err)
	}
	k.cmd.Stderr = k.stderr
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		k.cmd.Process.Kill()
		k.cmd.Wait()
		if t.Failed() {
			data, _ := os.ReadFile(k.stderr.Name())
			t.Logf("keeper stderr: %s", data)
		}
	})
	return k
}

// exitCode waits for the keeper to end.
func (k *localKeeper) exitCode(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- k.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(10 * time.Second):
		t.Fatal("keeper did not exit")
		return -1
	}
}

type localConn struct {
	cmd   *exec.Cmd
	link  *link
	out   io.Reader
	done  <-chan error
	stdin io.WriteCloser
}

// connect runs a connector as the exec would.
func (k *localKeeper) connect(t *testing.T) *localConn {
	t.Helper()
	c := &localConn{cmd: exec.Command("python3", "-I", "-B", "-c", connectorSource, k.socket)}
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stderr = os.Stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill(); c.cmd.Wait() })
	c.link, c.out, c.done = newLink(c.stdin, stdout)
	return c
}

// readN reads n bytes of the command's stdout through c.
func (c *localConn) readN(t *testing.T, n int) []byte {
	t.Helper()
	buf := make([]byte, n)
	got := make(chan error, 1)
	go func() { _, err := io.ReadFull(c.out, buf); got <- err }()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("reading %d bytes: %v (got %q)", n, err, buf)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("reading %d bytes: timed out (got %q)", n, buf)
	}
	return buf
}

func (c *localConn) end(t *testing.T) error {
	t.Helper()
	select {
	case err := <-c.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("connection did not end")
		return nil
	}
}

func wireFrame(kind byte, payload string) []byte {
	b := []byte{kind, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	return append(b, payload...)
}

// wireChild speaks like the runtime: a ready message first, then for each
// line of input one 'O' frame echoing it upper-cased.
const wireChild = `import os, struct, sys
def frame(k, p):
    os.write(1, k + struct.pack(">I", len(p)) + p)
frame(b"M", b'{"type":"ready"}')
for line in sys.stdin.buffer:
    if line.startswith(b"later"):
        import time; time.sleep(0.5)
    frame(b"O", line.upper())
`

func TestKeeperRelaysRawStreamsAndExitStatus(t *testing.T) {
	k := startKeeper(t, "import sys; d = sys.stdin.read(); sys.stdout.write(d.upper()); sys.stdout.flush(); sys.exit(7)")
	c := k.connect(t)
	in := strings.Repeat("abcdefgh", 1<<16) // 512 KiB, many frames and reads
	if _, err := (stdin{c.link}).Write([]byte(in)); err != nil {
		t.Fatal(err)
	}
	if err := (stdin{c.link}).Close(); err != nil {
		t.Fatal(err)
	}
	if got := string(c.readN(t, len(in))); got != strings.ToUpper(in) {
		t.Fatalf("stdout differs: %d bytes", len(got))
	}
	if err := c.end(t); err != nil {
		t.Fatal(err)
	}
	if !c.link.exited.Load() || c.link.status.Load() != 7 {
		t.Errorf("exit frame: exited=%v status=%d, want 7", c.link.exited.Load(), c.link.status.Load())
	}
	if code := k.exitCode(t); code != 7 {
		t.Errorf("keeper exit = %d, want the child's 7", code)
	}
}

func TestKeeperSignalledChildGives128PlusSignal(t *testing.T) {
	k := startKeeper(t, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
	c := k.connect(t)
	if err := c.end(t); err != nil {
		t.Fatal(err)
	}
	if s := c.link.status.Load(); !c.link.exited.Load() || s != 137 {
		t.Errorf("exit frame status = %d, want 137", s)
	}
	if code := k.exitCode(t); code != 137 {
		t.Errorf("keeper exit = %d, want 137", code)
	}
}

func TestKeeperDropsPartialFrameOfDeadConnection(t *testing.T) {
	k := startKeeper(t, "import sys\nfor line in sys.stdin: print(line.strip(), flush=True)\n")
	c1 := k.connect(t)
	// A frame announcing 20 bytes, of which only 9 arrive before the
	// connection dies.
	partial := append([]byte{kindData, 0, 0, 0, 20}, "half\nline"...)
	if _, err := c1.stdin.Write(partial); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	c1.cmd.Process.Kill()
	c1.cmd.Wait()

	c2 := k.connect(t)
	io.WriteString(stdin{c2.link}, "whole\n")
	if got := string(c2.readN(t, len("whole\n"))); got != "whole\n" {
		t.Fatalf("after a dead connection's partial frame: %q, want only the whole frame's line", got)
	}
}

func TestKeeperTakeoverReplaysReadyMessage(t *testing.T) {
	k := startKeeper(t, wireChild)
	ready := wireFrame('M', `{"type":"ready"}`)
	c1 := k.connect(t)
	if got := c1.readN(t, len(ready)); !bytes.Equal(got, ready) {
		t.Fatalf("first connection: %q, want the ready frame", got)
	}
	io.WriteString(stdin{c1.link}, "one\n")
	if got, want := c1.readN(t, 9), wireFrame('O', "ONE\n"); !bytes.Equal(got, want) {
		t.Fatalf("first connection: %q, want %q", got, want)
	}

	c2 := k.connect(t)
	if got := c2.readN(t, len(ready)); !bytes.Equal(got, ready) {
		t.Fatalf("second connection starts with %q, want the ready frame again", got)
	}
	if err := c1.end(t); err != nil {
		t.Fatal(err)
	}
	if !c1.link.takenOver.Load() {
		t.Error("first connection ended without a takeover frame")
	}
	io.WriteString(stdin{c2.link}, "two\n")
	if got, want := c2.readN(t, 9), wireFrame('O', "TWO\n"); !bytes.Equal(got, want) {
		t.Fatalf("second connection: %q, want %q", got, want)
	}
}

func TestKeeperBuffersOutputWhileDetached(t *testing.T) {
	k := startKeeper(t, wireChild)
	ready := wireFrame('M', `{"type":"ready"}`)
	c1 := k.connect(t)
	c1.readN(t, len(ready))
	// The answer comes 0.5 s later, when no one is connected.
	io.WriteString(stdin{c1.link}, "later\n")
	time.Sleep(100 * time.Millisecond)
	c1.link.close()
	c1.cmd.Wait()
	time.Sleep(time.Second)

	c2 := k.connect(t)
	want := append(ready, wireFrame('O', "LATER\n")...)
	if got := c2.readN(t, len(want)); !bytes.Equal(got, want) {
		t.Fatalf("reattached connection: %q, want the ready frame then the buffered answer %q", got, want)
	}
}

func TestKeeperStartsCommandAtFirstConnection(t *testing.T) {
	// The command exits at once; its output waits for the first connection.
	k := startKeeper(t, "print('early', flush=True)")
	time.Sleep(500 * time.Millisecond)
	c := k.connect(t)
	if got := string(c.readN(t, 6)); got != "early\n" {
		t.Fatalf("stdout %q", got)
	}
	if code := k.exitCode(t); code != 0 {
		t.Errorf("keeper exit = %d", code)
	}
}

func TestKeeperEndsWithChildEvenIfGrandchildHoldsStdout(t *testing.T) {
	k := startKeeper(t, "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\nprint('bye', flush=True)\n")
	c := k.connect(t)
	if got := string(c.readN(t, 4)); got != "bye\n" {
		t.Fatalf("stdout %q", got)
	}
	if code := k.exitCode(t); code != 0 {
		t.Errorf("keeper exit = %d, want 0", code)
	}
}

func TestKeeperInstallsSyscallFilter(t *testing.T) {
	filter, _, err := syscallFilter()
	if err != nil || filter == nil {
		t.Skipf("no filter on this platform: %v", err)
	}
	// ptrace(PTRACE_TRACEME): allowed by default, refused by codemode's policy.
	child := "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nr = libc.ptrace(0, 0, 0, 0)\nprint(r, os.strerror(ctypes.get_errno()) if r else 'ok', flush=True)\n"
	for _, tc := range []struct {
		filter []byte
		want   string
	}{{nil, "0 ok\n"}, {filter, "-1 Operation not permitted\n"}} {
		k := startKeeperWith(t, child, tc.filter)
		c := k.connect(t)
		if got := string(c.readN(t, len(tc.want))); got != tc.want {
			t.Errorf("with filter=%v: %q, want %q", tc.filter != nil, got, tc.want)
		}
	}
}

func TestLinkCloseReleasesBlockedOutput(t *testing.T) {
	// Output nobody reads must not keep the link (and so Wait and Kill)
	// from ending once the connection is dropped.
	k := startKeeper(t, "import sys\nwhile True: sys.stdout.write('x' * 65536)\n")
	c := k.connect(t)
	time.Sleep(300 * time.Millisecond) // the relay is now blocked on the unread pipe
	c.link.close()
	if err := c.end(t); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, c.out); err != nil {
		t.Errorf("stdout after close: %v, want EOF", err)
	}
}

func TestLinkCloseReleasesBlockedInput(t *testing.T) {
	// A command that never reads its stdin: writes back up until they
	// block; dropping the connection (Kill does) must release them.
	k := startKeeper(t, "import time; time.sleep(60)")
	c := k.connect(t)
	wrote := make(chan error, 1)
	go func() {
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for {
			if _, err := (stdin{c.link}).Write(chunk); err != nil {
				wrote <- err
				return
			}
		}
	}()
	time.Sleep(time.Second) // the writes are blocked by now
	closed := make(chan struct{})
	go func() { c.link.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("close blocked behind a stalled write")
	}
	select {
	case err := <-wrote:
		if err == nil {
			t.Fatal("write succeeded after close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stalled write was not released by close")
	}
}

func TestLinkStdinStallsWhenCommandStopsReading(t *testing.T) {
	// The command reads one line, then nothing: the host's writes must
	// block within a bounded window, as they would on a pipe.
	k := startKeeper(t, "import sys, time\nsys.stdin.readline()\nprint('read', flush=True)\ntime.sleep(60)\n")
	c := k.connect(t)
	io.WriteString(stdin{c.link}, "first\n")
	c.readN(t, 5)
	var sent atomic.Int64
	go func() {
		chunk := bytes.Repeat([]byte("x"), 4<<10)
		for {
			if _, err := (stdin{c.link}).Write(chunk); err != nil {
				return
			}
			sent.Add(int64(len(chunk)))
		}
	}()
	time.Sleep(2 * time.Second)
	// The child's stdin pipe, the keeper's one pending write, the socket
	// and the window: a few hundred KiB, never unbounded.
	if n := sent.Load(); n > 4<<20 {
		t.Fatalf("%d bytes accepted by a command that stopped reading", n)
	} else {
		t.Logf("writes stalled after %d bytes", n)
	}
	c.link.close()
}
