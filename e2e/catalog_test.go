package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/testenv"
)

// catalogEnv serves testdata/catalog/registry.json under
// testdata/policy/add.toml, running npm entries from the test
// dependencies (no network), with an audit log.
func catalogEnv(t *testing.T) (env []string, auditLog string) {
	t.Helper()
	catalog, err := filepath.Abs(filepath.Join("testdata", "catalog", "registry.json"))
	if err != nil {
		t.Fatal(err)
	}
	auditLog = filepath.Join(t.TempDir(), "audit.log")
	return []string{"CODEMODE_CATALOG=" + catalog, "CODEMODE_NPM_PREFIX=" + filepath.Dir(testenv.NodeModules(t)),
		policyFile("add.toml"), "CODEMODE_AUDIT_LOG=" + auditLog}, auditLog
}

// TestCatalogFindAndAdd: code finds the memory server in the catalog, adds
// it and calls it in the same cell; denied and uncatalogued names raise
// MCPError of kind denied and not_found; every add is audited.
func TestCatalogFindAndAdd(t *testing.T) {
	env, auditLog := catalogEnv(t)
	s := startServer(t, env...)
	memFile := filepath.Join(t.TempDir(), "memory.jsonl")

	got := s.stdoutOf(t, `found = await runtime.find_servers("knowledge graph memory", limit=3)
print(found[0]["name"], found[0]["registry"], found[0]["configured"])
print(runtime.discovered_servers())`)
	if want := []string{"io.github.modelcontextprotocol/server-memory npm False", "()"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("find_servers: %q, want %q", got, want)
	}

	got = s.stdoutOf(t, `added = await runtime.add_server("io.github.modelcontextprotocol/server-memory", env={"MEMORY_FILE_PATH": `+pyStr(memFile)+`})
print(added["name"], added["alias"])
await mcp_server_memory.create_entities(entities=[{"name": "codemode", "entityType": "project", "observations": ["runs Python"]}])
graph = (await mcp_servers["server-memory"].read_graph()).data
print([e["name"] for e in graph["entities"]])
print(runtime.discovered_servers())`)
	want := []string{"server-memory server_memory", "['codemode']", "('server-memory',)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("add_server then a call in the same cell: %q, want %q", got, want)
	}
	if data, err := os.ReadFile(memFile); err != nil || !strings.Contains(string(data), "runs Python") {
		t.Fatalf("the memory server did not write %s: %v %q", memFile, err, data)
	}

	// Later cells, and the search, know the added server.
	got = s.stdoutOf(t, `print((await runtime.find_servers("memory", limit=1))[0]["configured"])
print([d["tool"] for d in await runtime.search_tool_docs("create entities", limit=1)])
print((await runtime.add_server("server-memory"))["alias"])`)
	if want := []string{"True", "['create_entities']", "server_memory"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after the add: %q, want %q", got, want)
	}

	for _, c := range []struct{ call, want string }{
		{`runtime.add_server("io.example/blocked")`, "denied adding io.example/blocked is denied by policy (add[0], line 3): not on this machine"},
		{`runtime.add_server("io.example/nowhere")`, "not_found io.example/nowhere is in no catalog"},
		{`runtime.add_server("server-everything")`, "denied add the MCP server io.github.modelcontextprotocol/server-everything"},
		{`runtime.add_server("server-everything", env={"NODE_OPTIONS": "--require /tmp/x.js"})`, "invalid io.github.modelcontextprotocol/server-everything declares no variable NODE_OPTIONS"},
	} {
		if got := s.attempt(t, "", c.call); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q, want %q...", c.call, got, c.want)
		}
	}

	// Closing the session ends codemode, which flushes the log.
	s.cs.Close()
	data, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"kind":"add"`); n != 4 {
		t.Errorf("%d audit records of kind add, want 4 (one per decided add):\n%s", n, data)
	}
}

// TestCatalogAddAsks: an entry no add rule names asks the client's user,
// and the added server answers in the same cell once approved.
func TestCatalogAddAsks(t *testing.T) {
	env, _ := catalogEnv(t)
	configHome := t.TempDir()
	s, e := startAnswering(t, "2025-11-25", append(env, "XDG_CONFIG_HOME="+configHome)...)
	n := e.set(reply("accept", map[string]any{"approve": true}))
	got := s.stdoutOf(t, `added = await runtime.add_server("server-everything")
print(added["alias"], (await mcp_server_everything.echo(message="hi")).text)`)
	if want := "server_everything Echo: hi"; strings.Join(got, "\n") != want {
		t.Fatalf("add after approval: %q, want %q", got, want)
	}
	asked := e.since(n)
	if len(asked) != 1 || !strings.Contains(asked[0].Message, "wants to add the MCP server io.github.modelcontextprotocol/server-everything") {
		t.Fatalf("questions: %+v", asked)
	}
	// The blocked entry is denied without asking.
	n = e.set(reply("accept", map[string]any{"approve": true}))
	if got := s.attempt(t, "", `runtime.add_server("io.example/blocked")`); !strings.HasPrefix(got, "denied ") {
		t.Fatalf("blocked: %q", got)
	}
	if asked := e.since(n); len(asked) != 0 {
		t.Fatalf("asked about a denied add: %+v", asked)
	}

	// persist=True asks even for an add the rules allow (here of a server
	// added a moment ago without asking), then keeps the server in
	// codemode's config directory.
	n = e.set(reply("accept", map[string]any{"approve": true}))
	got = s.stdoutOf(t, `await runtime.add_server("server-memory")
print((await runtime.add_server("server-memory", persist=True))["config"])`)
	path := filepath.Join(configHome, "mcp", "servers", "server-memory.json")
	if strings.Join(got, "\n") != path {
		t.Fatalf("persist: %q, want %s", got, path)
	}
	if asked := e.since(n); len(asked) != 1 || !strings.Contains(asked[0].Message, "keep it in codemode's config file") {
		t.Fatalf("persist questions: %+v", asked)
	}
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), "server-memory/dist/index.js") {
		t.Fatalf("kept configuration: %v %s", err, data)
	}
}

// pyStr is s as a Python string literal.
func pyStr(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }
