package testenv

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The container prerequisites (podman, docker, gVisor, the Python image and
// rootfs) are set up by scripts/testdeps.sh under .cache/testdeps/, which it
// describes in .cache/testdeps/env as shell exports:
//
//	CODEMODE_TEST_PODMAN           podman command line (engine flags this machine needs)
//	CODEMODE_TEST_ROOTLESS_PODMAN  wrapper running podman as an unprivileged user (rootless)
//	CODEMODE_TEST_DOCKER           Debian docker client with -H of the private dockerd
//	CODEMODE_TEST_RUNSC            static gVisor runsc
//	CODEMODE_TEST_IMAGE            tag of the Python test image, in every engine
//	CODEMODE_TEST_ROOTFS           the debootstrapped rootfs the image was made from
//	DOCKER_HOST                    the private dockerd, for tools that read it
//
// A variable set in the test's environment overrides the file. Command lines
// are split at spaces.

const installHint = "scripts/testdeps.sh"

// TestdepsDir returns .cache/testdeps, where scripts/testdeps.sh keeps what
// it builds (rootfs, runsc, the private dockerd's state).
func TestdepsDir() string {
	return filepath.Join(RepoRoot(), ".cache", "testdeps")
}

// Podman returns the podman command line tests must use (e.g. "podman
// --runtime runc …"); callers append a subcommand. It fails the test when
// podman is not installed or does not answer.
func Podman(t testing.TB) []string {
	t.Helper()
	argv := commandSetting("CODEMODE_TEST_PODMAN", "podman --runtime runc")
	if _, err := exec.LookPath(argv[0]); err != nil {
		Missing(t, "podman", "podman not found (run "+installHint+"; it apt-installs podman runc uidmap)")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		Missing(t, "podman", "runc not found; podman needs it on this machine (run "+installHint+")")
	}
	if out, err := probe(t, append(argv, "version", "--format", "{{.Client.Version}}")); err != nil {
		Missing(t, "podman", strings.Join(argv, " ")+" version: "+err.Error()+": "+out)
	}
	return argv
}

// RootlessPodman returns the command of a wrapper that runs podman as the
// unprivileged test user scripts/testdeps.sh created, with the test image
// in that user's storage; callers append a subcommand. It fails the test
// when the wrapper is missing or its podman is not rootless.
func RootlessPodman(t testing.TB) []string {
	t.Helper()
	argv := commandSetting("CODEMODE_TEST_ROOTLESS_PODMAN", filepath.Join(TestdepsDir(), "bin", "podman-rootless"))
	if _, err := exec.LookPath(argv[0]); err != nil {
		Missing(t, "rootless-podman", "no rootless podman wrapper: "+err.Error()+" ("+installHint+" creates the user and the wrapper)")
	}
	out, err := probe(t, append(argv, "info", "--format", "{{.Host.Security.Rootless}}"))
	if err != nil {
		Missing(t, "rootless-podman", strings.Join(argv, " ")+" info: "+err.Error()+": "+out)
	}
	// The last line: podman may warn on stderr first (a non-shared "/").
	if lines := strings.Split(out, "\n"); lines[len(lines)-1] != "true" {
		Missing(t, "rootless-podman", strings.Join(argv, " ")+" is not rootless: "+out)
	}
	return argv
}

// HostCgroupV1 reports whether the host uses cgroup v1 (alone or hybrid),
// where rootless engines get no cgroups; found from the host, not from an
// engine under test. Only a pure v2 host has cgroup.controllers at the top.
func HostCgroupV1() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err != nil
}

// ReadableTempDir returns a temporary directory that other users can read,
// removed when the test ends: an engine run as another user (the rootless
// wrapper) reads files codemode writes there, such as the seccomp profile.
func ReadableTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "codemode-test-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatalf("readable temp dir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Docker returns the Debian docker client's command line with -H pointing
// at the dockerd that scripts/testdeps.sh started; callers append a
// subcommand. It fails the test when the client is missing or the daemon
// does not answer.
func Docker(t testing.TB) []string {
	t.Helper()
	sock := filepath.Join(TestdepsDir(), "docker", "docker.sock")
	argv := commandSetting("CODEMODE_TEST_DOCKER", "/usr/bin/docker -H unix://"+sock)
	if _, err := exec.LookPath(argv[0]); err != nil {
		Missing(t, "docker", argv[0]+" not found (run "+installHint+"; it apt-installs docker.io)")
	}
	if out, err := probe(t, append(argv, "version", "--format", "{{.Server.Version}}")); err != nil {
		Missing(t, "docker", "our dockerd does not answer ("+installHint+" starts it): "+err.Error()+": "+out)
	}
	return argv
}

// Runsc returns the path of the static gVisor runsc binary.
func Runsc(t testing.TB) string {
	t.Helper()
	p := setting("CODEMODE_TEST_RUNSC")
	if p == "" {
		p = filepath.Join(TestdepsDir(), "bin", "runsc")
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
		Missing(t, "runsc", "gVisor runsc not found at "+p+" ("+installHint+" builds it)")
	}
	return p
}

// Image returns the tag of the Python test image (python3, numpy, pandas,
// matplotlib, PIL), which scripts/testdeps.sh imports into every engine:
// root's podman, the rootless user's podman and the private dockerd.
func Image(t testing.TB) string {
	t.Helper()
	tag := setting("CODEMODE_TEST_IMAGE")
	if tag == "" {
		Missing(t, "image", "no test image recorded in "+envFile()+" ("+installHint+" builds and imports it)")
	}
	return tag
}

// Rootfs returns the directory of the debootstrapped Python root filesystem
// the test image was made from; it also works as the native backend's
// rootfs.
func Rootfs(t testing.TB) string {
	t.Helper()
	dir := setting("CODEMODE_TEST_ROOTFS")
	if dir == "" {
		dir = filepath.Join(TestdepsDir(), "rootfs")
	}
	for _, f := range []string{"etc/codemode-image.json", "usr/bin/python3"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			Missing(t, "rootfs", "no complete Python rootfs at "+dir+" ("+installHint+" builds it)")
		}
	}
	return dir
}

func envFile() string { return filepath.Join(TestdepsDir(), "env") }

// setting returns name from the environment, else from the env file.
func setting(name string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return envFileValue(envFile(), name)
}

// envFileValue reads name from a file of shell lines `export NAME='value'`
// (the quotes are optional); "" when the file or the name is missing.
func envFileValue(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export "))
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != name {
			continue
		}
		if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		return v
	}
	return ""
}

func commandSetting(name, def string) []string {
	if argv := strings.Fields(setting(name)); len(argv) > 0 {
		return argv
	}
	return strings.Fields(def)
}

// probe runs a quick command and returns its combined output.
func probe(t testing.TB, argv []string) (string, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// Kube describes the single-node test cluster that scripts/kube-up.sh
// brings up (scripts/testdeps.sh runs it and records it in the env file).
type Kube struct {
	Kubeconfig  string // admin kubeconfig of the cluster
	Kubectl     string // kubectl of the cluster's version (next to Kubeconfig)
	Image       string // the Python sandbox image, imported into the node's containerd
	ServerImage string // codemode's own server image, built from this checkout
}

// Cluster returns the test cluster, or reports it missing.
func Cluster(t testing.TB) Kube {
	t.Helper()
	k := Kube{
		Kubeconfig:  setting("CODEMODE_TEST_KUBECONFIG"),
		Image:       setting("CODEMODE_TEST_KUBE_IMAGE"),
		ServerImage: setting("CODEMODE_TEST_KUBE_SERVER_IMAGE"),
	}
	if k.Kubeconfig == "" || k.Image == "" || k.ServerImage == "" {
		Missing(t, "kubernetes", "no test cluster recorded in "+envFile()+" ("+installHint+" runs scripts/kube-up.sh)")
	}
	if _, err := os.Stat(k.Kubeconfig); err != nil {
		Missing(t, "kubernetes", "the test cluster's kubeconfig is gone: "+err.Error()+" (run scripts/kube-up.sh)")
	}
	k.Kubectl = filepath.Join(filepath.Dir(k.Kubeconfig), "kubectl")
	return k
}
