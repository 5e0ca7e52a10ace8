package pyruntime

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/testenv"
)

// TestPython runs the runtime's own Python unit tests (tests/test_*.py).
func TestPython(t *testing.T) {
	python := testenv.Python(t)
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

// TestHelpersDocumentRealNames checks that every runtime.<name> the helper
// docs promise is exported by mcp.runtime.
func TestHelpersDocumentRealNames(t *testing.T) {
	helpers, err := Helpers()
	if err != nil {
		t.Fatal(err)
	}
	if len(helpers) < 10 {
		t.Fatalf("read %d helpers from helpers.md", len(helpers))
	}
	b, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	src := b.Modules["mcp.runtime"]
	for _, h := range helpers {
		for _, m := range regexp.MustCompile(`runtime\.([a-z_A-Z]+)`).FindAllStringSubmatch(h.Signature+" "+h.Doc, -1) {
			if !strings.Contains(src, `"`+m[1]+`"`) {
				t.Errorf("helpers.md documents runtime.%s, which mcp.runtime does not export", m[1])
			}
		}
	}
}
