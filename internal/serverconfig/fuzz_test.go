package serverconfig

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addFixtureSeeds adds every testdata file ending in ext to f's corpus.
func addFixtureSeeds(f *testing.F, ext string) {
	f.Helper()
	err := filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ext) {
			return err
		}
		data, err := os.ReadFile(path)
		if err == nil {
			f.Add(data)
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fuzzEnv is a fixed environment for decoding fuzzed entries. Cwd does not
// exist, so relative envFile paths find nothing.
var fuzzEnv = Env{
	Home: "/nonexistent/home",
	Cwd:  "/nonexistent/proj",
	Vars: map[string]string{"TOKEN": "t", "EMPTY": "", "HOST": "example.com"},
	Self: []string{"/opt/codemode/bin/codemode"},
}

// checkDecode extracts and decodes every entry of a parsed file under the
// usual keys and checks the invariants every Server must satisfy.
func checkDecode(t *testing.T, tree map[string]any, keys [][]string) {
	t.Helper()
	for _, dialect := range []string{"", "gemini"} {
		for _, key := range keys {
			doc, err := extract(tree, key, "/p", dialect)
			if err != nil {
				if err.Error() == "" {
					t.Fatal("empty extract error")
				}
				continue
			}
			ec := &entryContext{dialect: dialect, description: doc.description, env: fuzzEnv, x: &expander{lookup: fuzzEnv.lookup}}
			for name, raw := range doc.entries {
				checkEntry(t, name, decodeEntry(name, raw, ec))
			}
		}
	}
}

func checkEntry(t *testing.T, name string, d decoded) {
	t.Helper()
	if d.skip != "" {
		switch d.skip {
		case SkipDisabled, SkipSelf, SkipInvalid, SkipNeedsInput:
		default:
			t.Fatalf("entry %q: unknown skip reason %q", name, d.skip)
		}
		if d.detail == "" {
			t.Fatalf("entry %q: skipped (%s) without detail", name, d.skip)
		}
		return
	}
	s := d.server
	if s.Name != name || name == "" {
		t.Fatalf("server name %q from entry %q", s.Name, name)
	}
	switch s.Transport {
	case TransportStdio:
		if s.Command == "" || s.URL != "" || s.Headers != nil {
			t.Fatalf("stdio server %q: command %q, url %q, headers %v", name, s.Command, s.URL, s.Headers)
		}
	case TransportHTTP, TransportSSE:
		if err := checkURL(s.URL); err != nil || s.Command != "" || s.Args != nil || s.Env != nil {
			t.Fatalf("%s server %q: url %q (%v), command %q", s.Transport, name, s.URL, err, s.Command)
		}
	default:
		t.Fatalf("server %q: transport %q", name, s.Transport)
	}
	if s.StartupTimeout < 0 || s.ToolTimeout < 0 {
		t.Fatalf("server %q: negative timeout", name)
	}
	if _, ok := selfReference(s.Name, s.Command, s.Args, fuzzEnv.Self); ok {
		t.Fatalf("self-reference %q was not skipped", name)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Fatalf("server %q: marshal: %v", name, err)
	}
}

// FuzzParseJSONConfig feeds arbitrary bytes through the JSON path: JSONC
// stripping, parsing, key lookup and entry decoding.
func FuzzParseJSONConfig(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers": {"a": {"command": "npx", "args": ["-y", "x"], "env": {"K": "${TOKEN}"}}}}`,
		`{"servers": {"r": {"type": "http", "url": "https://${HOST}/mcp", "headers": {"A": "${env:TOKEN}"}}}}`,
		`{"mcpServers": {"g": {"httpUrl": "http://h/mcp", "timeout": 1e300}, "s": {"url": "http://h/sse"}}}`,
		`{"mcpServers": {"i": {"command": "x", "env": {"K": "${input:k}"}}, "d": {"disabled": true}}}`,
		`{"mcpServers": {"codemode": {"command": "codemode"}}, "description": "d"}`,
		`{"projects": {"/p": {"mcpServers": {"l": {"command": "x", "cwd": "~/w"}}}}}`,
		`{"mcp": {"allowed": ["a"], "excluded": ["b"]}, "mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}}`,
		`{"mcpServers": {"t": {"command": "x", "startup_timeout_sec": -1, "args": [1, true, null]}}}`,
		`{"mcpServers": {"o": {"url": "https://h/mcp", "oauth": {"clientId": "c", "clientSecret": "${S}", "scopes": ["a", 1]}}}}`,
		`{"mcpServers": {"o": {"url": "https://h/mcp", "oauth": {"scopes": "a"}}, "p": {"url": "https://h", "oauth": 1}}}`,
		`{"mcpServers": [1]}`, `[]`, `{}`, ``, `{"a": 1} x`, "{\"a\": /* c */ 1,}",
	} {
		f.Add([]byte(s))
	}
	addFixtureSeeds(f, ".json")
	keys := [][]string{nil, {"mcpServers"}, {"servers"}, {"projects", "{cwd}", "mcpServers"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, err := parseJSON(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty parse error")
			}
			return
		}
		if tree == nil {
			t.Fatal("nil tree without error")
		}
		checkDecode(t, tree, keys)
	})
}

// FuzzParseTOMLConfig is FuzzParseJSONConfig for TOML files (Codex's
// config.toml, MCP_SERVERS_CONFIG=*.toml).
func FuzzParseTOMLConfig(f *testing.F) {
	for _, s := range []string{
		"[mcp_servers.a]\ncommand = \"npx\"\nargs = [\"-y\", 1]\nenv = { K = \"${TOKEN}\" }\n",
		"[mcp_servers.r]\nurl = \"https://x/mcp\"\nbearer_token_env_var = \"TOKEN\"\nhttp_headers = { A = \"b\" }\n",
		"[mcpServers.f]\ncommand = \"f\"\nstartup_timeout_sec = 1.5\nenabled = false\n",
		"[mcpServers.d]\ncommand = 1979-05-27T07:32:00Z\n",
		"[[mcp_servers]]\ncommand = \"x\"\n",
		"mcp_servers = 3\n", "", "[a\n",
	} {
		f.Add([]byte(s))
	}
	addFixtureSeeds(f, ".toml")
	keys := [][]string{nil, {"mcp_servers"}, {"mcpServers"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, err := parseTOML(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty parse error")
			}
			return
		}
		checkDecode(t, tree, keys)
	})
}
