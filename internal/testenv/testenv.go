// Package testenv locates the real software that codemode's tests run against
// (npm MCP servers, reference encoders, the sandbox rootfs) and decides what a
// missing prerequisite means.
//
// A missing prerequisite fails the test: CI installs everything through
// scripts/testdeps.sh, so a skip there would hide a broken setup. On a
// developer machine CODEMODE_TEST_ALLOW_MISSING=all (or a comma-separated list
// of names such as "node,podman") turns the failure into a skip.
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

// LookPath returns the path of a host program or handles it as missing.
func LookPath(t testing.TB, name, hint string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name, name+" not found in PATH: "+hint)
	}
	return p
}

// Missing fails the test, or skips it when CODEMODE_TEST_ALLOW_MISSING names
// the prerequisite (or is "all").
func Missing(t testing.TB, name, why string) {
	t.Helper()
	allowed := strings.Split(os.Getenv("CODEMODE_TEST_ALLOW_MISSING"), ",")
	if slices.Contains(allowed, "all") || slices.Contains(allowed, name) {
		t.Skipf("prerequisite %s missing (allowed by CODEMODE_TEST_ALLOW_MISSING): %s", name, why)
	}
	t.Fatalf("prerequisite %s missing: %s (set CODEMODE_TEST_ALLOW_MISSING=%s to skip)", name, why, name)
}
