package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestSandboxOOMKilled(t *testing.T) {
	s := startServer(t, "CODEMODE_MEMORY=96m", "CODEMODE_SPARES=0")
	s.run(t, "kept = 1")
	res := s.run(t, "import os\nhog = []\nwhile True:\n    hog.append(os.urandom(1 << 20))")
	st := structured(t, res)
	// Either the cgroup OOM-kills the sandbox, or (rlimit fallback) Python
	// raises MemoryError and the session survives.
	switch {
	case st["stateLost"] == true:
		if !strings.Contains(st["error"].(string), "memory limit") || st["exitCode"] != 137.0 {
			t.Fatalf("OOM kill reported as %v", st)
		}
	case strings.Contains(fmt.Sprint(st["error"]), "MemoryError"):
	default:
		t.Fatalf("memory bomb: %v", st)
	}
	if got := s.stdoutOf(t, "print('alive')"); !slices.Equal(got, []string{"alive"}) {
		t.Fatalf("after OOM: %q", got)
	}
}

func TestSandboxKilledFromOutside(t *testing.T) {
	s := startServer(t, "CODEMODE_SPARES=0")
	s.run(t, "kept = 1")
	done := make(chan map[string]any, 1)
	go func() { done <- structured(t, s.run(t, "import time\nwhile True: time.sleep(0.1)")) }()
	deadline := time.Now().Add(10 * time.Second)
	for sandboxes(s.cmd.Process.Pid) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	killSandboxes(t, s.cmd.Process.Pid)
	st := <-done
	if st["stateLost"] != true || st["status"] != "error" || !strings.Contains(st["error"].(string), "SIGKILL") {
		t.Fatalf("killed sandbox reported as %v", st)
	}
	if got := s.stdoutOf(t, "print('kept' in globals())"); !slices.Equal(got, []string{"False"}) {
		t.Fatalf("after the kill: %q", got)
	}
}

func killSandboxes(t *testing.T, serverPID int) {
	for _, pid := range sandboxPIDs(serverPID) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func TestClientVanishesMidCall(t *testing.T) {
	cmd := exec.Command(codemodeBin, "serve")
	cmd.Env = append(baseEnv(t), "CODEMODE_SPARES=0")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serverPIDs.Store(cmd.Process.Pid, true)
	send := func(msg string) { fmt.Fprintln(stdin, msg) }
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	buf := make([]byte, 4096)
	stdout.Read(buf)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"while True: pass"}}}`)
	deadline := time.Now().Add(10 * time.Second)
	for sandboxes(cmd.Process.Pid) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	// The client dies: its end of the pipes closes.
	stdin.Close()
	stdout.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatal("codemode did not exit after its client vanished")
	}
}

func TestHammerOneSession(t *testing.T) {
	s := startServer(t)
	other := startServer(t)
	s.run(t, "count = 0")
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				if st := structured(t, s.run(t, "count += 1")); st["status"] != "success" {
					errs <- fmt.Sprint(st)
				}
				if st := structured(t, other.run(t, "1")); st["status"] != "success" {
					errs <- fmt.Sprint(st)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if got := s.stdoutOf(t, "count"); !slices.Equal(got, []string{"100"}) {
		t.Fatalf("100 concurrent increments in one session gave %q", got)
	}
}

func TestStateDirDiskFull(t *testing.T) {
	// A tiny filesystem for the state directory (test infrastructure on the
	// host, not sandboxed code).
	dir := filepath.Join(t.TempDir(), "state")
	os.MkdirAll(dir, 0o700)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mounting a small tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	// Fill it up.
	filler, _ := os.Create(filepath.Join(dir, "filler"))
	filler.Write(make([]byte, 250<<10))
	filler.Close()
	s := startServer(t, "CODEMODE_STATE_DIR="+dir)
	st := structured(t, s.run(t, "save_memory('big', 'x' * 100_000)"))
	if st["status"] != "error" || !strings.Contains(st["error"].(string), "no space left on device") {
		t.Fatalf("memory save on a full disk: %v", st)
	}
	if got := s.stdoutOf(t, "print('still serving')"); !slices.Equal(got, []string{"still serving"}) {
		t.Fatalf("after a full disk: %q", got)
	}
}
