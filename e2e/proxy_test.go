package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/downstream/downstreamtest"
	"github.com/codemode/codemode/internal/testenv"
)

// writeConfig writes an mcpServers file and returns the CODEMODE_CONFIG setting for it.
func writeConfig(t *testing.T, servers map[string]any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcp.json")
	data, _ := json.Marshal(map[string]any{"mcpServers": servers})
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return "CODEMODE_CONFIG=" + path
}

// testServer configures this test binary as a downstream server of a kind.
func testServer(t *testing.T, kind string) map[string]any {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"command": self, "env": map[string]string{downstreamtest.EnvVar: kind}}
}

func npmServer(t *testing.T, pkg string, args ...string) map[string]any {
	return map[string]any{"command": testenv.Node(t), "args": append([]string{testenv.NodePackage(t, pkg) + "/dist/index.js"}, args...)}
}

// stdoutOf runs code and returns its stdout lines, failing on any error.
func (s *server) stdoutOf(t *testing.T, code string) []string {
	t.Helper()
	res := s.run(t, code)
	st := structured(t, res)
	if st["status"] != "success" {
		t.Fatalf("%s\n=> %s", code, text(res))
	}
	return lines(st["stdout"])
}

func TestProxyRealServers(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("alpha\nbeta\n"), 0o644)
	filesystem := npmServer(t, "@modelcontextprotocol/server-filesystem", root)
	memory := npmServer(t, "@modelcontextprotocol/server-memory")
	memory["env"] = map[string]string{"MEMORY_FILE_PATH": filepath.Join(root, "memory.jsonl")}
	everything := npmServer(t, "@modelcontextprotocol/server-everything", "stdio")
	everything["description"] = "reference test server"
	s := startServer(t, writeConfig(t, map[string]any{"everything": everything, "filesystem": filesystem, "memory": memory}))

	got := s.stdoutOf(t, "print(runtime.discovered_servers())\nprint(runtime.discovered_servers(detailed=True)[0])")
	if !slices.Equal(got, []string{"('everything', 'filesystem', 'memory')", "{'name': 'everything', 'description': 'reference test server'}"}) {
		t.Fatalf("discovered_servers: %q", got)
	}
	got = s.stdoutOf(t, "r = await mcp_everything.echo(message='hi')\nprint(r.text)\nprint((await mcp_everything.echo('positional')).text)\nprint((await mcp_everything.get_sum(a=2, b=40)).text)")
	if !slices.Equal(got, []string{"Echo: hi", "Echo: positional", "The sum of 2 and 40 is 42."}) {
		t.Fatalf("everything: %q", got)
	}
	// Two required parameters: a positional argument is ambiguous.
	res := s.run(t, "await mcp_everything.get_sum(2)")
	if st := structured(t, res); !strings.HasPrefix(st["error"].(string), "TypeError: get_sum() takes no positional arguments; call it with keyword arguments: a, b") {
		t.Fatalf("ambiguous positional: %v", st["error"])
	}
	got = s.stdoutOf(t, "r = await mcp_everything.get_structured_content(location='New York')\nprint(sorted(r.data))\nimg = await mcp_everything.get_tiny_image()\nprint([c['type'] for c in img['content']])")
	if len(got) != 2 || !strings.Contains(got[0], "temperature") || !strings.Contains(got[1], "'image'") {
		t.Fatalf("structured and image results: %q", got)
	}
	got = s.stdoutOf(t, "print((await mcp_filesystem.read_text_file(path='"+root+"/notes.txt')).text.split())\n"+
		"await mcp_memory.create_entities(entities=[{'name': 'codemode', 'entityType': 'project', 'observations': ['written in Go']}])\n"+
		"print([e['name'] for e in (await mcp_memory.read_graph()).data['entities']])")
	if !slices.Equal(got, []string{"['alpha', 'beta']", "['codemode']"}) {
		t.Fatalf("filesystem and memory: %q", got)
	}
	got = s.stdoutOf(t, "for q in ['read a text file', 'add observations to an entity', 'sum two numbers']:\n    print([d['server'] + '.' + d['tool'] for d in await runtime.search_tool_docs(q, limit=3)])")
	for i, want := range []string{"filesystem.read_text_file", "memory.add_observations", "everything.get-sum"} {
		if !strings.Contains(got[i], "'"+want+"'") {
			t.Errorf("search %d: %s not in the top 3: %s", i, want, got[i])
		}
	}
	got = s.stdoutOf(t, "d = await runtime.query_tool_docs('filesystem', 'read_text_file', detail='full')\nprint(d['toolAlias'], 'path' in d['inputSchema']['properties'])\n"+
		"print(len(runtime.query_tool_docs_sync('memory')))\nprint(runtime.describe_server('memory')['alias'])\nprint(sorted(await runtime.list_servers()))")
	if !slices.Equal(got, []string{"read_text_file True", "9", "memory", "['everything', 'filesystem', 'memory']"}) {
		t.Fatalf("docs: %q", got)
	}
	got = s.stdoutOf(t, "import mcp.servers.filesystem as fs\nprint('read_text_file' in fs.__all__, fs.TOOL_MAP['list_directory'])\nprint(len(await mcp_filesystem.list_tools()))")
	if !slices.Equal(got, []string{"True list_directory", "14"}) {
		t.Fatalf("server module: %q", got)
	}
}

// TestGatherRunsToolCallsConcurrently proves concurrency by a barrier in
// the downstream server, not by time (a loaded machine slows every call):
// each of 8 gathered calls answers only once all 8 are in flight at once,
// which calls run one after the other never are.
func TestGatherRunsToolCallsConcurrently(t *testing.T) {
	s := startServer(t, writeConfig(t, map[string]any{"tools": testServer(t, "tools")}))
	s.stdoutOf(t, "await mcp_tools.echo(message='warm')")
	got := s.stdoutOf(t, "import asyncio\nr = await asyncio.gather(*[mcp_tools.meet(count=8, milliseconds=20000) for _ in range(8)])\nprint(sorted({x.text for x in r}))")
	if !slices.Equal(got, []string{"['met 8']"}) {
		t.Fatalf("8 tool calls with gather were not all in flight at once: %q", got)
	}
}

func TestDownstreamFaults(t *testing.T) {
	s := startServer(t, "CODEMODE_SERVER_START_TIMEOUT=2s", writeConfig(t, map[string]any{
		"tools": testServer(t, "tools"), "hang": testServer(t, "hang-init"), "junk": testServer(t, "garbage"),
	}))
	// A crash in the middle of a call is a catchable MCPError, and the next call restarts the server.
	got := s.stdoutOf(t, "try:\n    await mcp_tools.crash(message='x')\nexcept runtime.MCPError as e:\n    print(e.kind, e.server, e.tool)\n"+
		"print((await mcp_tools.echo(message='again')).text)")
	if !slices.Equal(got, []string{"crashed tools crash", "echo: again"}) {
		t.Fatalf("crash: %q", got)
	}
	start := time.Now()
	got = s.stdoutOf(t, "try:\n    await mcp_hang.echo(message='x')\nexcept runtime.MCPError as e:\n    print(e.kind, 'did not start within 2s' in str(e))")
	if !slices.Equal(got, []string{"start True"}) || time.Since(start) > 20*time.Second {
		t.Fatalf("hanging server: %q after %s", got, time.Since(start))
	}
	got = s.stdoutOf(t, "try:\n    await mcp_junk.echo(message='x')\nexcept runtime.MCPError as e:\n    print('junk failed')")
	if !slices.Equal(got, []string{"junk failed"}) {
		t.Fatalf("garbage server: %q", got)
	}
	got = s.stdoutOf(t, "r = await mcp_tools.big(bytes=10_000_000)\nprint(len(r.text))")
	if !slices.Equal(got, []string{"10000000"}) {
		t.Fatalf("10 MB result: %q", got)
	}
	// The tool's own error result raises, with the result attached.
	got = s.stdoutOf(t, "try:\n    await mcp_tools.fail(message='m')\nexcept runtime.MCPError as e:\n    print(e.kind, e.result.text)")
	if !slices.Equal(got, []string{"tool_error it failed: m"}) {
		t.Fatalf("tool error: %q", got)
	}
}

func TestServersArgument(t *testing.T) {
	s := startServer(t, writeConfig(t, map[string]any{"tools": testServer(t, "tools")}))
	res := s.call(t, map[string]any{"code": "print(LOADED_MCP_SERVERS)", "servers": []string{"tools"}})
	st := structured(t, res)
	if got := lines(st["stdout"]); !slices.Equal(got, []string{"('tools',)"}) || !slices.Equal(lines(st["servers"]), []string{"tools"}) {
		t.Fatalf("preloaded: %v", st)
	}
	st = structured(t, s.call(t, map[string]any{"code": "1", "servers": []string{"nope"}}))
	if st["status"] != "error" || st["error"] != "Unknown MCP server: nope" {
		t.Fatalf("unknown server: %v", st)
	}
}

func TestSelfReferenceGuard(t *testing.T) {
	config := writeConfig(t, map[string]any{
		"codemode-again": map[string]any{"command": codemodeBin, "args": []string{"serve"}},
		"impostor":       testServer(t, "self"),
		"tools":          testServer(t, "tools"),
	})
	s := startServer(t, config)
	got := s.stdoutOf(t, "print(runtime.discovered_servers())\ntry:\n    await mcp_impostor.echo(message='x')\nexcept runtime.MCPError as e:\n    print(e.kind, 'must not call itself' in str(e))")
	if !slices.Equal(got, []string{"('impostor', 'tools')", "self True"}) {
		t.Fatalf("self guard: %q", got)
	}
	// codemode servers explains it.
	cmd := exec.Command(codemodeBin, "servers")
	cmd.Env = append(baseEnv(t), config)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "codemode-again") || !strings.Contains(string(out), "self") {
		t.Fatalf("codemode servers: %v\n%s", err, out)
	}
}

// TestToolCallLogging: at the default level, codemode logs one line per
// run_python with the number of tool calls its code made, not a line per
// tool call (code calls tools in loops).
func TestToolCallLogging(t *testing.T) {
	s := startServer(t, writeConfig(t, map[string]any{"tools": testServer(t, "tools")}), "CODEMODE_LOG_LEVEL=info")
	s.stdoutOf(t, "for i in range(3): await mcp_tools.echo(message=str(i))\nprint('ok')")
	// The line is written once the result is on its way: it may come after.
	var line string
	for deadline := time.Now().Add(5 * time.Second); line == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for l := range strings.Lines(s.stderr.String()) {
			if strings.Contains(l, "msg=run_python") {
				line = l
			}
		}
	}
	for l := range strings.Lines(s.stderr.String()) {
		if strings.Contains(l, `msg="tool call"`) {
			t.Errorf("a tool call was logged at the default level: %s", l)
		}
	}
	if !strings.Contains(line, " tool_calls=3 ") {
		t.Errorf("the run_python line does not count 3 tool calls: %q", line)
	}
}
