package archtest

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/codemode/codemode"

type pkg struct {
	ImportPath string
	Name       string
	Doc        string
	Standard   bool
	Imports    []string
	Deps       []string
	GoFiles    []string
}

// list runs `go list -json` over patterns in the repository.
func list(t *testing.T, args ...string) []pkg {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", append([]string{"list", "-e", "-json"}, args...)...)
	cmd.Dir = filepath.Join(filepath.Dir(self), "..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// rule is what one package's doc comment promises about its imports.
type rule struct {
	pkg       string   // import path below the module
	stdOnly   bool     // nothing outside the standard library
	forbidden []string // import path prefixes it must not depend on, even indirectly
	why       string
}

var rules = []rule{
	{pkg: "internal/sandbox", forbidden: []string{"github.com/modelcontextprotocol/", module + "/internal/wire", module + "/internal/pyruntime", module + "/internal/hostrpc"},
		why: "backends run a command, they do not know what it speaks (sandbox.go)"},
	{pkg: "internal/wire", forbidden: []string{"github.com/modelcontextprotocol/", module + "/internal/sandbox"},
		why: "the frame protocol is shared by the interpreter client and knows no MCP or backend (wire.go)"},
	{pkg: "internal/hostrpc", forbidden: []string{"github.com/modelcontextprotocol/", module + "/internal/sandbox", module + "/internal/proxy", module + "/internal/executor"},
		why: "every handler package depends on the router contract, so it depends on none of them (hostrpc.go)"},
	{pkg: "internal/pyruntime", stdOnly: true, why: "the embedded runtime imports nothing but the standard library (embed.go)"},
	{pkg: "internal/toon", stdOnly: true, why: "the encoder imports nothing outside the standard library (doc.go)"},
	{pkg: "internal/serverconfig", forbidden: []string{"github.com/modelcontextprotocol/"},
		why: "config discovery does not import the MCP SDK (doc.go)"},
}

// TestImportRules fails when a package depends on what its doc comment says
// it must not, in the spirit of Tailscale's deptest.
func TestImportRules(t *testing.T) {
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			pkgs := list(t, "-deps", "./"+r.pkg)
			for _, p := range pkgs {
				if p.ImportPath == module+"/"+r.pkg {
					continue
				}
				if r.stdOnly && !p.Standard {
					t.Errorf("%s depends on %s outside the standard library: %s", r.pkg, p.ImportPath, r.why)
				}
				for _, f := range r.forbidden {
					if strings.HasPrefix(p.ImportPath, f) {
						t.Errorf("%s depends on %s: %s", r.pkg, p.ImportPath, r.why)
					}
				}
			}
		})
	}
}

// TestNoUpwardImports keeps the wiring on top: only the main package imports
// cli, and app is imported only by cli, the attack runner (which drives a
// whole codemode) and tests.
func TestNoUpwardImports(t *testing.T) {
	importers := map[string][]string{
		module + "/internal/cli": {module + "/cmd/codemode"},
		module + "/internal/app": {module + "/internal/cli", module + "/internal/attacks"},
	}
	for _, p := range list(t, "./...") {
		for _, imp := range p.Imports {
			allowed, ruled := importers[imp]
			if !ruled {
				continue
			}
			ok := false
			for _, a := range allowed {
				ok = ok || p.ImportPath == a
			}
			if !ok {
				t.Errorf("%s imports %s, which only %v may import", p.ImportPath, imp, allowed)
			}
		}
	}
}

// TestEveryPackageIsDocumented requires a package doc comment everywhere.
func TestEveryPackageIsDocumented(t *testing.T) {
	for _, p := range list(t, "./...") {
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("%s has no package doc comment", p.ImportPath)
		}
	}
}
