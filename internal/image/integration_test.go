package image

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/testenv"
)

// TestRealImage builds the real rootfs with debootstrap (or finds it built:
// it is the rootfs scripts/testdeps.sh keeps in .cache/testdeps), imports it
// into podman under a throw-away tag, and runs the data stack in it as
// nobody, with no network and a read-only root. For docker (whose import
// of this rootfs takes ~12 s) it checks the image scripts/testdeps.sh
// imported with the same code: current, and working.
func TestRealImage(t *testing.T) {
	testenv.Slow(t, "the real image build and its import into podman and docker")
	dir := filepath.Join(testenv.TestdepsDir(), "rootfs")
	if _, ok := Current(dir, Spec{}); !ok {
		testenv.LookPath(t, "debootstrap", "run scripts/testdeps.sh (apt-get install debootstrap)")
		if os.Geteuid() != 0 {
			testenv.Missing(t, "root", "building "+dir+" with debootstrap needs root")
		}
	}
	m, _, err := Build(t.Context(), dir, Spec{}, &BuildOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.Python, "python3.") {
		t.Errorf("manifest python = %q, want python3.N", m.Python)
	}
	passwd, err := os.ReadFile(filepath.Join(dir, "etc/passwd"))
	if err != nil || !strings.Contains(string(passwd), "nobody:x:65534:65534:") {
		t.Errorf("etc/passwd has no nobody (%v):\n%s", err, passwd)
	}
	debs, _ := filepath.Glob(filepath.Join(dir, "var/cache/apt/archives/*.deb"))
	if len(debs) > 0 {
		t.Errorf("%d .deb files left in the rootfs", len(debs))
	}
	// matplotlib's fonttools must not have pulled SciPy and a compiler in.
	for _, absent := range []string{"usr/bin/gcc", "usr/lib/python3/dist-packages/scipy"} {
		if _, err := os.Lstat(filepath.Join(dir, absent)); err == nil {
			t.Errorf("rootfs has %s", absent)
		}
	}

	t.Run("podman", func(t *testing.T) {
		podman := testenv.Podman(t)
		var b [4]byte
		rand.Read(b[:])
		tag := "localhost/codemode-imagetest:" + hex.EncodeToString(b[:])
		t.Cleanup(func() {
			exec.Command(podman[0], append(podman[1:len(podman):len(podman)], "rmi", "-f", tag)...).Run()
		})
		e := Engine{Command: podman, Logger: testLogger(t)}
		if imported, err := e.Import(t.Context(), dir, tag); err != nil || !imported {
			t.Fatalf("Import() = %v, %v; want an import", imported, err)
		}
		checkImage(t, e, dir, tag, m)
	})
	t.Run("docker", func(t *testing.T) {
		docker := testenv.Docker(t)
		checkImage(t, Engine{Command: docker, Logger: testLogger(t)}, dir, testenv.Image(t), m)
	})
}

// checkImage checks that the engine has tag with m's key (so Import skips
// it) and runs the data stack in it.
func checkImage(t *testing.T, e Engine, dir, tag string, m Manifest) {
	t.Helper()
	ctx := t.Context()
	if img, ok := e.Inspect(ctx, tag); !ok || img.Key != m.Key {
		t.Errorf("Inspect(%s) = %+v, %v; want key %s", tag, img, ok, m.Key)
	}
	if imported, err := e.Import(ctx, dir, tag); err != nil || imported {
		t.Errorf("Import() of a current image = %v, %v; want it skipped", imported, err)
	}
	args := append(e.Command[1:len(e.Command):len(e.Command)], "run", "--rm", "--network", "none", "--read-only",
		"--user", "65534:65534", "--tmpfs", "/tmp", "--tmpfs", "/workspace",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", // podman's defaults exceed the hard limits here
		// matplotlib warns on stderr without a writable config dir; the
		// warning and the printed line would race in the combined output.
		"--env", "MPLCONFIGDIR=/tmp",
		tag, "python3", "-c", "import os, numpy, pandas, matplotlib, PIL; print(1, os.getuid(), os.getcwd())")
	out, err := exec.CommandContext(ctx, e.Command[0], args...).CombinedOutput()
	if got, want := strings.TrimSpace(string(out)), "1 65534 /workspace"; err != nil || !strings.HasSuffix(got, want) {
		t.Errorf("%s %s = %v\n%s\nwant output ending in %q", e.Command[0], strings.Join(args, " "), err, out, want)
	}
}
