package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// Environment of the child that TestOwnerHeldByAnotherProcess starts: it
// claims an owner in this directory under this ID and holds it until its
// stdin closes (or it is killed).
const (
	childDirEnv = "CODEMODE_TEST_OWNER_DIR"
	childIDEnv  = "CODEMODE_TEST_OWNER_ID"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		if _, err := claimOwner(dir, os.Getenv(childIDEnv)); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("claimed")
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// IDs of pids above any pid_max: /proc cannot vouch for them, so only the
// lock can keep them alive.
func fakeID(n int) string { return fmt.Sprintf("99999999%d-1", n) }

func TestOwnerAlive(t *testing.T) {
	self := os.Getpid()
	tests := []struct {
		name  string
		id    string
		setup func(t *testing.T, dir, id string)
		alive bool
	}{
		{name: "claimed", id: fakeID(1), setup: claim, alive: true},
		{name: "claimed twice, released once", id: fakeID(2), setup: func(t *testing.T, dir, id string) {
			claim(t, dir, id)
			release(t, mustClaim(t, dir, id))
		}, alive: true},
		{name: "released", id: fakeID(3), setup: func(t *testing.T, dir, id string) { release(t, mustClaim(t, dir, id)) }},
		{name: "stale lock file", id: fakeID(4), setup: func(t *testing.T, dir, id string) {
			if err := os.WriteFile(lockPath(dir, id), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "never claimed", id: fakeID(5)},
		// This very process: /proc vouches for it on Linux; elsewhere only
		// a claim does.
		{name: "unclaimed live process", id: OwnerID(self), alive: runtime.GOOS == "linux"},
		{name: "claimed live process", id: OwnerID(self), setup: claim, alive: true},
		{name: "reused pid", id: strconv.Itoa(self) + "-1"},
		{name: "zero", id: "0-0"},
		{name: "garbage", id: "garbage"},
		{name: "path", id: "../1-1"},
		{name: "empty", id: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.setup != nil {
				tt.setup(t, dir, tt.id)
			}
			if got := ownerAlive(dir, tt.id); got != tt.alive {
				t.Errorf("ownerAlive(%q) = %v, want %v", tt.id, got, tt.alive)
			}
			// A lock file outlives its check only while a claim holds it.
			_, err := os.Stat(lockPath(dir, tt.id))
			if exists := err == nil; exists != (tt.setup != nil && tt.alive) {
				t.Errorf("lock file exists = %v after the check", exists)
			}
		})
	}
}

func TestOwnerHeldByAnotherProcess(t *testing.T) {
	dir, id := t.TempDir(), fakeID(6)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir, childIDEnv+"="+id)
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "claimed\n" {
		t.Fatalf("child: %q", line)
	}
	if !ownerAlive(dir, id) {
		t.Fatal("an owner holding its lock in another process is reported dead")
	}
	// Killed: it never releases, the kernel drops its lock.
	cmd.Process.Kill()
	cmd.Wait()
	if ownerAlive(dir, id) {
		t.Fatal("a killed owner is reported alive")
	}
	if _, err := os.Stat(lockPath(dir, id)); !os.IsNotExist(err) {
		t.Errorf("the killed owner's lock file was not removed: %v", err)
	}
}

// Checkers removing stale lock files must never make a claimed owner look
// dead, whatever the interleaving with its claims and releases.
func TestOwnerClaimsRaceCheckers(t *testing.T) {
	dir, id := t.TempDir(), fakeID(7)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					ownerAlive(dir, id)
				}
			}
		})
	}
	stop := sync.OnceFunc(func() { close(done); wg.Wait() })
	defer stop()
	for range 300 {
		o := mustClaim(t, dir, id)
		if !ownerAlive(dir, id) {
			t.Fatal("a claimed owner is reported dead")
		}
		release(t, o)
	}
	// A checker caught mid-check holds a lock file open for a moment: look
	// once they have all stopped.
	stop()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left in the owner directory: %v", entries)
	}
}

func TestClaimOwnerRejectsBadIDs(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"", "../x", "a/b"} {
		if _, err := claimOwner(dir, id); err == nil {
			t.Errorf("claimOwner(%q) succeeded", id)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 1 {
		t.Errorf("claims with bad ids wrote next to the owner directory: %v", entries)
	}
}

func mustClaim(t *testing.T, dir, id string) *Owner {
	t.Helper()
	o, err := claimOwner(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func claim(t *testing.T, dir, id string) {
	o := mustClaim(t, dir, id)
	t.Cleanup(func() { o.Release() })
}

func release(t *testing.T, o *Owner) {
	t.Helper()
	if err := o.Release(); err != nil {
		t.Fatal(err)
	}
}
