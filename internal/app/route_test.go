package app

import (
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/codemode/codemode/internal/catalog"
	"github.com/codemode/codemode/internal/executor"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/proxy"
	"github.com/codemode/codemode/internal/pyruntime"
	"github.com/codemode/codemode/internal/statestore"
	"github.com/codemode/codemode/internal/tooldocs"
)

// hostCall matches the runtime's requests to the host: _rpc("m", ...),
// await _arpc("m", ...), rpc.call("m", ...) and rpc.acall("m", ...).
var hostCall = regexp.MustCompile(`(?:\b_a?rpc|\.a?call)\(\s*"([a-z_]+)"`)

// runtimeMethods lists the host methods the embedded Python runtime calls.
func runtimeMethods(t *testing.T) []string {
	t.Helper()
	b, err := pyruntime.Load()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, src := range b.Modules {
		for _, m := range hostCall.FindAllStringSubmatch(src, -1) {
			seen[m[1]] = true
		}
	}
	var out []string
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// TestRuntimeMethodsAreRouted fails when the Python runtime calls a method no
// handler serves (a renamed or forgotten method), or when a handler serves a
// method the runtime never calls (dead code).
func TestRuntimeMethodsAreRouted(t *testing.T) {
	mux := hostrpc.NewMux()
	exec := executor.New(executor.Options{})
	t.Cleanup(exec.Close)
	px := proxy.New(proxy.Options{Catalog: tooldocs.NewCatalog(nil)})
	route(mux, px, exec, statestore.New(statestore.Options{Dir: t.TempDir()}), catalog.NewService(catalog.ServiceOptions{Servers: px}))
	routed := mux.Methods()
	called := runtimeMethods(t)
	if len(called) < 10 {
		t.Fatalf("found only %d host methods in the runtime (%v): the pattern no longer matches how it calls the host", len(called), called)
	}
	for _, m := range called {
		if !slices.Contains(routed, m) {
			t.Errorf("the Python runtime calls %q, which no handler serves (routed: %v)", m, routed)
		}
	}
	for _, m := range routed {
		if !slices.Contains(called, m) {
			t.Errorf("%q is routed but the Python runtime never calls it", m)
		}
	}
}
