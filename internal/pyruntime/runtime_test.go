package pyruntime

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/testenv"
)

// TestPython runs the runtime's own Python unit tests (tests/test_*.py).
func TestPython(t *testing.T) {
	python := testenv.LookPath(t, "python3", "install python3 (apt-get install python3)")
	cmd := exec.Command(python, "-B", "-m", "unittest", "discover", "-s", "tests", "-v")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("python unit tests failed: %v", err)
	}
	if !strings.Contains(string(out), "OK") {
		t.Fatalf("unexpected unittest output")
	}
}

func TestLoad(t *testing.T) {
	b, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"_codemode.main", "_codemode.cell", "_codemode.output", "_codemode.wire", "mcp", "mcp.runtime"} {
		if _, ok := b.Modules[name]; !ok {
			t.Errorf("module %s missing from the bundle (have %d modules)", name, len(b.Modules))
		}
	}
	if len(b.Hash) != 16 {
		t.Errorf("hash = %q", b.Hash)
	}
	b2, _ := Load()
	if b2.Hash != b.Hash {
		t.Error("bundle hash is not stable")
	}
}
