// Package testenv locates the real software that codemode's tests run against
// (npm MCP servers, reference encoders, the sandbox rootfs) and decides what a
// missing prerequisite means.
//
// A missing prerequisite fails the test: CI installs everything through
// scripts/testdeps.sh, so a skip there would hide a broken setup. On a
// developer machine CODEMODE_TEST_ALLOW_MISSING=all (or a comma-separated list
// of names such as "node,podman") turns the failure into a skip.
//
// Under -short (the inner loop, `go test -short ./...`) a missing
// prerequisite skips, so the run needs nothing but Go, and Slow skips the
// suites that take minutes; the full suite still runs both.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// RepoRoot returns the repository root, found from this source file's location.
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("testenv: cannot locate source file")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// NodeModules returns the node_modules directory that scripts/testdeps.sh fills.
func NodeModules(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(RepoRoot(), "testdeps", "node_modules")
	if _, err := os.Stat(filepath.Join(dir, ".package-lock.json")); err != nil {
		Missing(t, "node", "npm test dependencies are not installed; run scripts/testdeps.sh")
	}
	return dir
}

// NodePackage returns the directory of an installed npm package, e.g.
// "@modelcontextprotocol/server-everything".
func NodePackage(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(NodeModules(t), filepath.FromSlash(name))
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		Missing(t, "node", "npm package "+name+" is not installed; run scripts/testdeps.sh")
	}
	return dir
}

// Node returns the path of the Node 22 binary installed with the test
// dependencies (the machine's own node may be older).
func Node(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(NodeModules(t), ".bin", "node")
	if _, err := os.Stat(bin); err != nil {
		Missing(t, "node", "node 22 is not installed in testdeps; run scripts/testdeps.sh")
	}
	return bin
}

// FullSuite names the run that covers what -short leaves out.
const FullSuite = "the full suite (go test ./... or scripts/test.sh)"

// Slow skips t under -short: what names the suite (e.g. "the attack corpus
// on podman"), which the message says the full suite runs.
func Slow(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short skips %s; %s runs it", what, FullSuite)
	}
}

// Python returns the host's python3: $CODEMODE_TEST_PYTHON when set, else
// python3 in PATH, so a PATH without one stands for a machine without
// Python even where /usr/bin/python3 exists.
func Python(t testing.TB) string {
	t.Helper()
	name := "python3"
	if v := strings.TrimSpace(os.Getenv("CODEMODE_TEST_PYTHON")); v != "" {
		name = v
	}
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "python3", err.Error()+" (apt-get install python3)")
	}
	return p
}

// NativePython checks that the native sandbox has a python3 to run. It
// runs the host's, seeing only the host's system directories: Python must
// find one, and /usr must hold one.
func NativePython(t testing.TB) {
	t.Helper()
	Python(t)
	for _, p := range []string{"/usr/local/bin/python3", "/usr/bin/python3"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return
		}
	}
	Missing(t, "python3", "no python3 in /usr/bin or /usr/local/bin, the only places the native sandbox sees (apt-get install python3)")
}

// LookPath returns the path of a host program or handles it as missing.
func LookPath(t testing.TB, name, hint string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name, name+" not found in PATH: "+hint)
	}
	return p
}

// Missing fails the test, or skips it under -short or when
// CODEMODE_TEST_ALLOW_MISSING names the prerequisite (or is "all").
func Missing(t testing.TB, name, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("prerequisite %s missing (skipped under -short; %s fails on it): %s", name, FullSuite, why)
	}
	allowed := strings.Split(os.Getenv("CODEMODE_TEST_ALLOW_MISSING"), ",")
	if slices.Contains(allowed, "all") || slices.Contains(allowed, name) {
		t.Skipf("prerequisite %s missing (allowed by CODEMODE_TEST_ALLOW_MISSING): %s", name, why)
	}
	t.Fatalf("prerequisite %s missing: %s (set CODEMODE_TEST_ALLOW_MISSING=%s to skip)", name, why, name)
}
