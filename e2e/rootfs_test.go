package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/testenv"
)

// TestRootfsUnderPrivateDirectory runs the native backend on a rootfs
// reached through a directory only root can search, as a rootfs built under
// root's state directory (~ is 0700) is: the host hands the tree to the
// sandbox, which never walks the path itself.
func TestRootfsUnderPrivateDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the point is a directory only root can search")
	}
	private := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	rootfs := filepath.Join(private, "rootfs")
	if err := os.Symlink(testenv.Rootfs(t), rootfs); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(codemodeBin, "run", "--backend", "native", "--rootfs", rootfs,
		"-c", "import os, sys; print(sys.version_info[0], os.getuid())").CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "3 65534") {
		t.Fatalf("codemode run --rootfs %s: %v\n%s", rootfs, err, out)
	}
}
