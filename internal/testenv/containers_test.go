package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnvFileValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "env")
	data := `# comment
export CODEMODE_TEST_PODMAN='podman --runtime runc'
export CODEMODE_TEST_IMAGE=localhost/codemode-python:test
CODEMODE_TEST_RUNSC="/opt/runsc"
export CODEMODE_TEST_ROOTFS_X='/not/this'
`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"CODEMODE_TEST_PODMAN": "podman --runtime runc",
		"CODEMODE_TEST_IMAGE":  "localhost/codemode-python:test",
		"CODEMODE_TEST_RUNSC":  "/opt/runsc",
		"CODEMODE_TEST_ROOTFS": "",
	} {
		if got := envFileValue(path, name); got != want {
			t.Errorf("envFileValue(%s) = %q, want %q", name, got, want)
		}
	}
	if got := envFileValue(filepath.Join(t.TempDir(), "missing"), "X"); got != "" {
		t.Errorf("envFileValue(missing file) = %q, want empty", got)
	}
}

// TestContainerPrerequisites checks that what scripts/testdeps.sh set up is
// usable, so a broken setup fails here, with the hint, before the backend
// suites fail in confusing ways.
func TestContainerPrerequisites(t *testing.T) {
	t.Run("podman", func(t *testing.T) {
		podman := Podman(t)
		image := Image(t)
		if out, err := exec.Command(podman[0], append(podman[1:], "image", "exists", image)...).CombinedOutput(); err != nil {
			t.Errorf("podman has no image %s: %v %s", image, err, out)
		}
	})
	t.Run("rootless podman", func(t *testing.T) {
		podman := RootlessPodman(t)
		image := Image(t)
		if out, err := exec.Command(podman[0], append(podman[1:], "image", "exists", image)...).CombinedOutput(); err != nil {
			t.Errorf("rootless podman has no image %s: %v %s", image, err, out)
		}
	})
	t.Run("docker", func(t *testing.T) {
		docker := Docker(t)
		image := Image(t)
		if out, err := exec.Command(docker[0], append(docker[1:], "image", "inspect", "--format", "{{.Id}}", image)...).CombinedOutput(); err != nil {
			t.Errorf("docker has no image %s: %v %s", image, err, out)
		}
		if out, err := exec.Command(docker[0], append(docker[1:], "info", "--format", "{{json .Runtimes}}")...).Output(); err != nil || !strings.Contains(string(out), "runsc") {
			t.Errorf("dockerd has no runsc runtime: %v %s", err, out)
		}
	})
	t.Run("runsc", func(t *testing.T) {
		if out, err := exec.Command(Runsc(t), "--version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "runsc version") {
			t.Errorf("runsc --version = %v %s", err, out)
		}
	})
	t.Run("rootfs", func(t *testing.T) {
		dir := Rootfs(t)
		if fi, err := os.Stat(filepath.Join(dir, "workspace")); err != nil || !fi.IsDir() {
			t.Errorf("rootfs %s has no /workspace: %v", dir, err)
		}
	})
}
