package policy

import "testing"

const hiddenPolicy = `
[[rules]]               # 0: fs read tools stay
server = "fs"
tool = "read_*"
decision = "allow"

[[rules]]               # 1
server = "fs"
decision = "deny"

[[rules]]               # 2: may allow push, for some callers
server = "git"
tool = "push"
when = 'principal == "ci"'
decision = "allow"

[[rules]]               # 3
server = "git"
tool = "push"
decision = "deny"

[[rules]]               # 4: may deny, or not
server = "git"
tool = "*"
when = 'args.force == true'
decision = "deny"

[[rules]]               # 5: the condition is settled by the tool's name
server = "sh"
tool = "run"
when = 'tool == "run"'
decision = "deny"

[[rules]]               # 6: never holds for this tool
server = "sh"
tool = "exec"
when = 'tool == "other"'
decision = "allow"

[[rules]]               # 7
server = "sh"
decision = "deny"

[[rules]]               # 8: a conditional deny before an unconditional one
server = "mail"
when = 'args.to.endsWith("@corp")'
decision = "deny"

[[rules]]               # 9
server = "mail"
tool = "send"
decision = "deny"

[[rules]]               # 10: every tool, but a tool rule
server = "vault"
tool = "*"
decision = "deny"

[[rules]]               # 11
server = "k8s"
when = 'principal == "admin"'
decision = "allow"

[[rules]]               # 12
server = "k8s"
decision = "deny"

[[rules]]               # 13: ask is not hidden
server = "pay"
decision = "ask"

[[rules]]               # 14
server = "pay"
decision = "deny"

[[rules]]               # 15: ask for some tools first
server = "cloud"
tool = "list_*"
when = 'session != ""'
decision = "ask"

[[rules]]               # 16
server = "cloud"
decision = "deny"
`

func TestHidden(t *testing.T) {
	p := mustParse(t, "toml", hiddenPolicy)
	tests := []struct {
		server, tool string
		want         bool
	}{
		{"fs", "read_file", false},
		{"fs", "write_file", true},
		{"git", "push", false}, // rule 2 may allow it
		{"git", "pull", false}, // rule 4 may not hold; the default allows
		{"sh", "run", true},    // rule 5 holds for run
		{"sh", "exec", true},   // rule 6 cannot hold; rule 7 denies
		{"sh", "other", true},
		{"mail", "send", true}, // rule 8 denies or passes to rule 9, which denies
		{"mail", "read", false},
		{"vault", "anything", true},
		{"k8s", "get", false},
		{"pay", "charge", false},
		{"cloud", "list_vms", false},
		{"cloud", "delete_vm", true},
		{"elsewhere", "x", false},
	}
	for _, tt := range tests {
		if got := p.Hidden(tt.server, tt.tool); got != tt.want {
			t.Errorf("Hidden(%q, %q) = %v, want %v", tt.server, tt.tool, got, tt.want)
		}
	}
	servers := []struct {
		server string
		want   bool
	}{
		{"fs", false},   // rule 0 may allow a tool
		{"git", false},  // rule 2 may allow push
		{"sh", true},    // rule 6 cannot hold for exec; rule 7 denies
		{"mail", false}, // rule 9 denies only send
		{"vault", true}, // tool = "*" covers every tool
		{"k8s", false},
		{"pay", false},
		{"cloud", false},
		{"elsewhere", false},
	}
	for _, tt := range servers {
		if got := p.ServerHidden(tt.server); got != tt.want {
			t.Errorf("ServerHidden(%q) = %v, want %v", tt.server, got, tt.want)
		}
	}
}

// HiddenFor knows the caller, so conditions on it are settled.
func TestHiddenFor(t *testing.T) {
	p := mustParse(t, "toml", hiddenPolicy)
	tests := []struct {
		in   Input
		want bool
	}{
		{Input{Server: "k8s", Tool: "get", Principal: "admin"}, false},
		{Input{Server: "k8s", Tool: "get", Principal: "bob"}, true},
		{Input{Server: "git", Tool: "push", Principal: "ci"}, false},
		{Input{Server: "git", Tool: "push", Principal: "bob"}, true},
		{Input{Server: "cloud", Tool: "list_vms"}, true}, // no session: rule 15 cannot hold
		{Input{Server: "cloud", Tool: "list_vms", Session: "s1"}, false},
		{Input{Server: "git", Tool: "pull", Args: map[string]any{"force": true}}, false}, // arguments are never known
	}
	for _, tt := range tests {
		if got := p.HiddenFor(tt.in); got != tt.want {
			t.Errorf("HiddenFor(%+v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestHiddenDefaultDeny(t *testing.T) {
	p := mustParse(t, "toml", `
default = "deny"
[[rules]]
server = "fs"
tool = "read_*"
decision = "allow"
[[rules]]
server = "web"
when = 'args.url.startsWith("https://")'
decision = "allow"
`)
	tests := []struct {
		server, tool string
		want         bool
	}{
		{"fs", "read_file", false},
		{"fs", "write_file", true},
		{"web", "fetch", false},
		{"git", "push", true},
	}
	for _, tt := range tests {
		if got := p.Hidden(tt.server, tt.tool); got != tt.want {
			t.Errorf("Hidden(%q, %q) = %v, want %v", tt.server, tt.tool, got, tt.want)
		}
	}
	for server, want := range map[string]bool{"fs": false, "web": false, "git": true} {
		if got := p.ServerHidden(server); got != want {
			t.Errorf("ServerHidden(%q) = %v, want %v", server, got, want)
		}
	}
}

// Hidden never hides what Decide could allow: for a set of calls, a hidden
// tool is denied whatever the caller and arguments.
func TestHiddenAgreesWithDecide(t *testing.T) {
	p := mustParse(t, "toml", hiddenPolicy)
	callers := []Input{
		{}, {Principal: "ci"}, {Principal: "admin"}, {Session: "s"},
		{Args: map[string]any{"force": true, "to": "x@corp"}}, {Args: map[string]any{"force": false, "to": "x@home"}},
	}
	for _, server := range []string{"fs", "git", "sh", "mail", "vault", "k8s", "pay", "cloud", "elsewhere"} {
		for _, tool := range []string{"read_file", "write_file", "push", "pull", "run", "exec", "send", "list_vms", "get"} {
			if !p.Hidden(server, tool) {
				continue
			}
			for _, c := range callers {
				c.Server, c.Tool = server, tool
				if d := p.Decide(t.Context(), c); d.Effect != Deny {
					t.Errorf("Hidden(%q, %q) but Decide(%+v) = %v", server, tool, c, d)
				}
			}
		}
	}
}
