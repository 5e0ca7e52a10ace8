package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/codemode/codemode/internal/testenv"
)

// npmBin returns the entry script of the command bin of an installed npm
// package, read from its package.json, for running with testenv.Node
// directly (npx would cost ~400 ms a start and may look names up online).
func npmBin(t *testing.T, pkg, bin string) string {
	t.Helper()
	dir := testenv.NodePackage(t, pkg)
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Version string            `json:"version"`
		Bin     map[string]string `json:"bin"`
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		t.Fatalf("%s/package.json: %v", pkg, err)
	}
	script, ok := manifest.Bin[bin]
	if !ok {
		t.Fatalf("npm package %s %s has no bin %q (bins: %v)", pkg, manifest.Version, bin, manifest.Bin)
	}
	t.Logf("using %s %s", pkg, manifest.Version)
	return filepath.Join(dir, filepath.FromSlash(script))
}

// nodeEnv is the environment of a Node test client: a fixed PATH and a
// private home, so nothing from the developer's ~/.mcp-inspector or npm
// configuration leaks into the run.
func nodeEnv(t *testing.T) []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + t.TempDir()}
}
