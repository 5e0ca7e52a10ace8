//go:build linux

package linuxns

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/codemode/codemode/internal/sandbox"
)

// A failed start (here: a mount the sandbox user may not read) must leave
// no cgroup, process or uid allocation behind.
func TestFailedStartLeavesNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs a directory the sandbox cannot read, which root can create")
	}
	private := t.TempDir() // 0700, owned by root
	os.Mkdir(filepath.Join(private, "data"), 0o755)
	b := New(nil)
	_, err := b.Start(context.Background(), sandbox.Spec{ID: "mountfail", Command: []string{"true"},
		Mounts: []sandbox.Mount{{Source: filepath.Join(private, "data"), Target: "/workspace/data"}}})
	if err == nil {
		t.Fatal("start with an unreadable mount source succeeded")
	}
	if got := leaks(b)(t); len(got) != 0 {
		t.Fatalf("left behind: %v", got)
	}
	b.uidsMu.Lock()
	defer b.uidsMu.Unlock()
	if len(b.uidsUsed) != 0 {
		t.Fatalf("uids still allocated: %v", b.uidsUsed)
	}
}
