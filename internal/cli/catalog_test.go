package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/testenv"
)

func TestCatalogCommands(t *testing.T) {
	prefix := filepath.Dir(testenv.NodeModules(t))
	home := t.TempDir()
	policyFile := filepath.Join(t.TempDir(), "policy.toml")
	os.WriteFile(policyFile, []byte("[[add]]\nname = \"io.example/*\"\ndecision = \"deny\"\n"), 0o644)
	environ := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"CODEMODE_CATALOG=testdata/catalog.json", "CODEMODE_NPM_PREFIX=" + prefix, "CODEMODE_POLICY=" + policyFile,
		"CODEMODE_STATE_DIR=" + filepath.Join(home, "state")}
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := Run(t.Context(), args, IO{Stdout: &stdout, Stderr: &stderr, Environ: environ, Home: home, Cwd: t.TempDir()})
		return code, stdout.String(), stderr.String()
	}
	tests := []struct {
		args       []string
		code       int
		stdout     string // a line of stdout, or "" for none to check
		stderrPart string
	}{
		{args: []string{"catalog", "search", "knowledge", "graph", "memory"}, stdout: "io.github.modelcontextprotocol/server-memory  npm       Knowledge graph-based persistent memory: entities, relations and observations"},
		{args: []string{"catalog", "show", "server-everything"}, stdout: `  "name": "io.github.modelcontextprotocol/server-everything",`},
		{args: []string{"catalog", "show", "nowhere"}, code: 1, stderrPart: "nowhere is in no catalog"},
		{args: []string{"catalog", "add", "io.example/blocked"}, code: 1, stderrPart: "adding io.example/blocked is denied by the policy: deny by add[0]"},
		{args: []string{"catalog", "add", "--env", "MEMORY_FILE_PATH=/tmp/m.jsonl", "--write", "server-memory"}, stderrPart: "server-memory: running (9 tools)"},
		{args: []string{"catalog"}, code: 2, stderrPart: "usage: codemode catalog"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := run(tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderrPart) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if tc.stdout != "" && !strings.Contains("\n"+stdout, "\n"+tc.stdout+"\n") {
				t.Fatalf("stdout lacks the line %q:\n%s", tc.stdout, stdout)
			}
		})
	}
	data, err := os.ReadFile(filepath.Join(home, "config", "mcp", "servers", "server-memory.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.MCPServers["server-memory"]
	if !strings.HasSuffix(s.Command, "/node") || len(s.Args) != 1 || !strings.HasSuffix(s.Args[0], "server-memory/dist/index.js") || s.Env["MEMORY_FILE_PATH"] != "/tmp/m.jsonl" {
		t.Fatalf("written configuration: %s", data)
	}
}
