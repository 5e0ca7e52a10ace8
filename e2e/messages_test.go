package e2e

import (
	"strings"
	"testing"
)

// TestModelFacingMessages drives the mistakes models make through a real
// MCP session and checks that each answer names the fix.
func TestModelFacingMessages(t *testing.T) {
	s := startServer(t, writeConfig(t, map[string]any{"tools": testServer(t, "tools")}))
	tests := []struct {
		name string
		args map[string]any
		want []string // substrings of the whole text result
	}{
		{"missing await on a tool call",
			map[string]any{"code": "r = mcp_tools.echo(message='hi')\nprint(r.text)"},
			[]string{"was not awaited", "await mcp_tools.echo("}},
		{"misspelt tool argument",
			map[string]any{"code": "await mcp_tools.echo(mesage='hi')"},
			[]string{"unexpected keyword argument 'mesage'", "did you mean 'message'"}},
		{"unknown server as a name",
			map[string]any{"code": "await mcp_nosuch.anything()"},
			[]string{"Unknown MCP server: nosuch", "tools (mcp_tools)"}},
		{"unknown server by key",
			map[string]any{"code": "mcp_servers['nosuch']"},
			[]string{"Unknown MCP server: nosuch"}},
		{"awaiting a synchronous-looking helper",
			map[string]any{"code": "d = await runtime.describe_server('tools')\nprint(d['name'])"},
			[]string{"tools"}},
		{"code indented as a block",
			map[string]any{"code": "    x = 2\n    print(x * 21)"},
			[]string{"42"}},
		{"timeout as a quoted number",
			map[string]any{"code": "print('ok')", "timeout": "10"},
			[]string{"ok"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := text(s.call(t, tc.args))
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("result lacks %q:\n%s", w, got)
				}
			}
		})
	}
}
