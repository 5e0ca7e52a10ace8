//go:build linux

package linuxns

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/codemode/codemode/internal/sandbox/sandboxtest"
	"github.com/codemode/codemode/internal/testenv"
)

// unprivilegedUID runs the suite a second time as this uid (when the tests
// run as root), with no writable cgroup, to cover the rlimit fallbacks.
const unprivilegedUID = 23456

func TestNativeBackend(t *testing.T) {
	testenv.NativePython(t)
	b := New(nil)
	sandboxtest.Run(t, sandboxtest.Config{Backend: b, Loopback: true, Leaks: leaks(b), Direct: true})
}

// TestNativeBackendZygote runs the suite with sessions forked from a
// zygote: every session of it that runs `python -c` is a forked child.
func TestNativeBackendZygote(t *testing.T) {
	testenv.NativePython(t)
	if os.Geteuid() != 0 {
		t.Skip("the zygote needs root")
	}
	b := New(&Options{Zygote: true})
	t.Cleanup(func() { b.Close() })
	sandboxtest.Run(t, sandboxtest.Config{Backend: b, Loopback: true, Leaks: leaks(b), Direct: true})
}

func TestNativeBackendUnprivileged(t *testing.T) {
	if os.Getenv("CODEMODE_TEST_UNPRIVILEGED") == "1" {
		if os.Geteuid() == 0 {
			t.Fatal("expected to run unprivileged")
		}
		b := New(nil)
		if b.cgroups.version != 0 {
			t.Fatalf("unprivileged codemode found a writable cgroup (%+v); the test wants the rlimit fallback", b.cgroups)
		}
		sandboxtest.Run(t, sandboxtest.Config{Backend: b, Loopback: true, Leaks: leaks(b), Direct: true})
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("already unprivileged: TestNativeBackend covers this case")
	}
	testenv.NativePython(t)
	// Re-run this test binary as an unprivileged user. Its own directory may
	// be private to root, so run a world-readable copy.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "codemode-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// World-writable (sticky) as the unprivileged run's TMPDIR: the egress
	// case makes its socket directory there.
	os.Chmod(dir, 0o1777)
	bin := filepath.Join(dir, "linuxns.test")
	if err := copyFile(self, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "-test.run", "^TestNativeBackendUnprivileged$", "-test.v")
	cmd.Env = []string{"CODEMODE_TEST_UNPRIVILEGED=1", "PATH=/usr/bin:/bin", "TMPDIR=" + dir}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivilegedUID, Gid: unprivilegedUID, NoSetGroups: true}}
	out, err := cmd.CombinedOutput()
	t.Logf("unprivileged run:\n%s", out)
	if err != nil {
		t.Fatalf("unprivileged suite failed: %v", err)
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// leaks reports child processes of this test process and cgroups it created.
func leaks(b *Backend) func(t *testing.T) []string {
	return func(t *testing.T) []string {
		var out []string
		zygotes := b.zygotePIDs()
		for _, c := range testenv.Children() {
			if pid, _, _ := strings.Cut(c, " "); slices.Contains(zygotes, atoi(pid)) {
				continue
			}
			out = append(out, "process "+c)
		}
		self := os.Getpid()
		prefix := cgroupPrefix + strconv.Itoa(self) + "."
		var parents []string
		if b.cgroups.v2 != "" {
			parents = append(parents, b.cgroups.v2)
		}
		for _, p := range b.cgroups.v1 {
			parents = append(parents, p)
		}
		for _, p := range parents {
			matches, _ := filepath.Glob(filepath.Join(p, prefix+"*"))
			for _, m := range matches {
				if strings.Contains(m, ".zygote-") {
					continue
				}
				out = append(out, "cgroup "+m)
			}
		}
		return out
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
