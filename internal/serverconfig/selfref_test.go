package serverconfig

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSelfReference(t *testing.T) {
	self := []string{"/opt/cm/bin/cm-server", "/usr/local/bin/codemode"}
	tests := []struct {
		name    string
		entry   string
		command string
		args    []string
		want    bool
	}{
		// The reference's rules.
		{name: "reference name", entry: "mcp-server-code-execution-mode", command: "anything", want: true},
		{name: "reference name underscores, any case", entry: "MCP_Server_Code_Execution_Mode", command: "x", want: true},
		{name: "reference command", entry: "bridge", command: "/home/u/.local/bin/mcp-server-code-execution-mode", want: true},
		{name: "reference script command", entry: "bridge", command: "/src/mcp_server_code_execution_mode.py", want: true},
		{name: "uvx from git", entry: "bridge", command: "uvx",
			args: []string{"--from", "git+https://github.com/elusznik/mcp-server-code-execution-mode", "mcp-server-code-execution-mode", "run"}, want: true},
		{name: "python script arg", entry: "bridge", command: "python3", args: []string{"/src/MCP_SERVER_CODE_EXECUTION_MODE.py"}, want: true},
		{name: "python module", entry: "bridge", command: "python3", args: []string{"-m", "mcp_server_code_execution_mode"}, want: true},
		{name: "pinned version", entry: "bridge", command: "uvx", args: []string{"mcp-server-code-execution-mode==0.2.0"}, want: true},
		// codemode itself.
		{name: "own name", entry: "codemode", command: "npx", want: true},
		{name: "own name any case", entry: "CodeMode", command: "npx", want: true},
		{name: "own command", entry: "x", command: "codemode", args: []string{"serve"}, want: true},
		{name: "own command path", entry: "x", command: "/home/u/go/bin/codemode", want: true},
		{name: "own command windows", entry: "x", command: `C:\tools\codemode.exe`, want: true},
		{name: "go run", entry: "x", command: "go", args: []string{"run", "github.com/codemode/codemode/cmd/codemode@latest"}, want: true},
		{name: "npx package", entry: "x", command: "npx", args: []string{"-y", "codemode@latest"}, want: true},
		{name: "self path", entry: "x", command: "/opt/cm/bin/cm-server", want: true},
		{name: "self bare name", entry: "x", command: "cm-server", want: true},
		{name: "self path as argument", entry: "x", command: "env", args: []string{"FOO=1", "/opt/cm/bin/cm-server"}, want: true},
		// Not self-references.
		{name: "ordinary server", entry: "memory", command: "npx", args: []string{"-y", "@modelcontextprotocol/server-memory"}},
		{name: "codemode checkout as a directory", entry: "fs", command: "npx",
			args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/home/u/src/codemode"}},
		{name: "similar name", entry: "codemode-docs", command: "docs-server"},
		{name: "other binary in self's directory", entry: "x", command: "/opt/cm/bin/other"},
		{name: "same base name, other directory", entry: "x", command: "/usr/bin/cm-server"},
		{name: "remote", entry: "remote"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			why, got := selfReference(tc.entry, tc.command, tc.args, self)
			if got != tc.want {
				t.Errorf("selfReference(%q, %q, %q) = %v (%s), want %v", tc.entry, tc.command, tc.args, got, why, tc.want)
			}
			if got && why == "" {
				t.Error("no explanation")
			}
		})
	}
}

// TestAllowSelfServer checks MCP_BRIDGE_ALLOW_SELF_SERVER's accepted values
// and that the report carries the reason when filtering is on.
func TestAllowSelfServer(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root+"/home/MCPs/a.json", `{"mcpServers": {
		"bridge": {"command": "uvx", "args": ["mcp-server-code-execution-mode", "run"]},
		"me": {"command": "codemode", "args": ["serve"]},
		"ok": {"command": "npx", "args": ["server"]}
	}}`)
	for _, tc := range []struct {
		value string
		allow bool
	}{
		{"", false}, {"0", false}, {"no", false}, {"false", false},
		{"1", true}, {"true", true}, {"YES", true}, {" True ", true},
	} {
		env := Env{Home: root + "/home", GOOS: "linux", Vars: map[string]string{"MCP_BRIDGE_ALLOW_SELF_SERVER": tc.value}}
		res, err := Load(t.Context(), env, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var names, skipped []string
		for _, s := range res.Servers {
			names = append(names, s.Name)
		}
		for _, s := range res.Skipped {
			skipped = append(skipped, s.Name+": "+s.String())
		}
		want := []string{"ok"}
		wantSkipped := []string{
			`bridge: self-reference: argument "mcp-server-code-execution-mode" starts the reference bridge`,
			`me: self-reference: command "codemode" starts codemode or the reference bridge`,
		}
		if tc.allow {
			want, wantSkipped = []string{"bridge", "me", "ok"}, nil
		}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("MCP_BRIDGE_ALLOW_SELF_SERVER=%q: servers (-want +got):\n%s", tc.value, diff)
		}
		if diff := cmp.Diff(wantSkipped, skipped); diff != "" {
			t.Errorf("MCP_BRIDGE_ALLOW_SELF_SERVER=%q: skipped (-want +got):\n%s", tc.value, diff)
		}
		if res.AllowSelf != tc.allow {
			t.Errorf("MCP_BRIDGE_ALLOW_SELF_SERVER=%q: AllowSelf = %v", tc.value, res.AllowSelf)
		}
	}
}
