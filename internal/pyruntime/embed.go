// Package pyruntime holds codemode's in-sandbox Python runtime as real .py
// files, embedded into the binary and sent to each new interpreter over the
// wire protocol (no host volume is shared with the sandbox).
//
// bootstrap.py is passed on the interpreter's command line; it reads the boot
// frame carrying the modules under python/ and starts _codemode.main. The
// Python unit tests in tests/ run as part of `go test` (see runtime_test.go).
// This package imports nothing but the standard library.
package pyruntime

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed bootstrap.py
var bootstrap string

//go:embed all:python
var files embed.FS

// Entry is the module whose main(config) takes over after boot.
const Entry = "_codemode.main"

// Bootstrap returns the source passed to `python3 -c`.
func Bootstrap() string { return bootstrap }

// Bundle is the runtime's modules as the boot frame carries them.
type Bundle struct {
	Modules  map[string]string // dotted name -> source
	Packages []string          // names that are packages (their source is __init__.py)
	Hash     string            // sha256 over bootstrap and modules, for doctor and the capabilities resource
}

// Load reads the embedded modules.
func Load() (Bundle, error) {
	b := Bundle{Modules: map[string]string{}}
	h := sha256.New()
	h.Write([]byte(bootstrap))
	var paths []string
	err := fs.WalkDir(files, "python", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "__pycache__" {
			return fs.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".py") {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return Bundle{}, err
	}
	sort.Strings(paths) // stable hash
	for _, p := range paths {
		src, err := files.ReadFile(p)
		if err != nil {
			return Bundle{}, err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, "python/"), ".py")
		name := strings.ReplaceAll(rel, "/", ".")
		if path.Base(rel) == "__init__" {
			name = strings.ReplaceAll(path.Dir(rel), "/", ".")
			b.Packages = append(b.Packages, name)
		}
		b.Modules[name] = string(src)
		h.Write([]byte(p))
		h.Write(src)
	}
	b.Hash = hex.EncodeToString(h.Sum(nil))[:16]
	return b, nil
}

// Warm returns Python code that installs the runtime's modules as the boot
// frame would and imports them all, without booting. A zygote runs
// it once, so that the interpreters it forks find the runtime imported and
// their boot skips compiling it.
func (b Bundle) Warm() string {
	modules, _ := json.Marshal(b.Modules)
	packages, _ := json.Marshal(b.Packages)
	quote := func(s []byte) string {
		q, _ := json.Marshal(string(s))
		return string(q)
	}
	return bootstrap + "\nsys.meta_path.insert(0, _MemoryModules(json.loads(" + quote(modules) + "), json.loads(" + quote(packages) + ")))\n" +
		"for _name in sorted(sys.meta_path[0].sources):\n    __import__(_name)\n"
}
