package connect

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/serverconfig"
)

// install copies a fixture to the client's config path under a fresh home.
func install(t *testing.T, clientName, fixture string) (serverconfig.Env, string) {
	t.Helper()
	env := serverconfig.Env{Home: t.TempDir(), Vars: map[string]string{}, GOOS: "linux"}
	c, err := client(clientName)
	if err != nil {
		t.Fatal(err)
	}
	path, _, _, err := c.location(env)
	if err != nil {
		t.Fatal(err)
	}
	if fixture != "" {
		data, err := os.ReadFile(filepath.Join("testdata", fixture))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return env, path
}

// Connect adds the entry each client expects, keeps the file's comments and
// other content, and keeps the original as a backup.
func TestConnectAddsEntryKeepingTheFile(t *testing.T) {
	tests := []struct {
		client, fixture string
		want            []string // substrings of the edited file
	}{
		{client: "cursor", fixture: "cursor.json", want: []string{"// servers for every project", "// files", "/* kept as is */", `"theme": "dark"`,
			"\n    \"codemode\": {\n      \"command\": \"/opt/codemode\"\n    }"}},
		{client: "gemini", fixture: "gemini.json", want: []string{`"theme": "Default"`, `"codemode": {`}},
		{client: "codex", fixture: "codex.toml", want: []string{"# Codex settings", "# after the servers", "[mcp_servers.fs.env]", "[mcp_servers.codemode]\ncommand = \"/opt/codemode\"\n"}},
		{client: "vscode", want: []string{`"servers": {`, `"type": "stdio"`, `"command": "/opt/codemode"`}},
		{client: "claude-code", want: []string{`"mcpServers": {`}},
		{client: "claude-desktop", want: []string{`"mcpServers": {`}},
		{client: "windsurf", want: []string{`"mcpServers": {`}},
	}
	for _, tc := range tests {
		t.Run(tc.client, func(t *testing.T) {
			env, path := install(t, tc.client, tc.fixture)
			orig, _ := os.ReadFile(path)
			res, err := Connect(t.Context(), tc.client, Options{Env: env, Command: "/opt/codemode"})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Changed || res.Path != path {
				t.Fatalf("result = %+v", res)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("edited file lacks %q:\n%s", w, got)
				}
			}
			if tc.fixture != "" {
				saved, err := os.ReadFile(res.Backup)
				if err != nil || string(saved) != string(orig) {
					t.Errorf("backup %s = %q, %v; want the original", res.Backup, saved, err)
				}
			} else if res.Backup != "" {
				t.Errorf("backup %q of a file that did not exist", res.Backup)
			}
			// Discovery reads the file and finds the codemode entry (and
			// skips it as codemode itself).
			loaded, err := serverconfig.Load(t.Context(), env, serverconfig.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(loaded.Skipped, func(s serverconfig.Skipped) bool { return s.Name == ServerName && s.Source == path }) {
				t.Errorf("discovery does not see codemode in %s: %+v", path, loaded.Skipped)
			}
			// A second run changes nothing.
			again, err := Connect(t.Context(), tc.client, Options{Env: env, Command: "/opt/codemode"})
			if err != nil || again.Changed || again.Backup != "" {
				t.Errorf("second connect = %+v, %v; want no change", again, err)
			}
		})
	}
}

// --move-servers leaves only codemode in the client's file, and discovery
// finds the servers in codemode's own file, in the portable form.
func TestConnectMoveServers(t *testing.T) {
	tests := []struct {
		client, fixture string
		moved           []string
		want            []string // substrings of codemode's file
	}{
		{client: "cursor", fixture: "cursor.json", moved: []string{"fs", "search"}, want: []string{`"Authorization": "Bearer ${TOKEN}"`}},
		{client: "gemini", fixture: "gemini.json", moved: []string{"api", "events"}, want: []string{`"type": "sse"`, `"type": "http"`}},
		{client: "codex", fixture: "codex.toml", moved: []string{"fs"}, want: []string{`"LOG": "1"`}},
	}
	for _, tc := range tests {
		t.Run(tc.client, func(t *testing.T) {
			env, path := install(t, tc.client, tc.fixture)
			res, err := Connect(t.Context(), tc.client, Options{Env: env, Command: "/opt/codemode", MoveServers: true})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Moved, tc.moved) {
				t.Fatalf("moved %v, want %v", res.Moved, tc.moved)
			}
			c, _ := client(tc.client)
			_, key, _, _ := c.location(env)
			data, _ := os.ReadFile(path)
			names, err := serverNames(path, data, key)
			if err != nil || !slices.Equal(names, []string{ServerName}) {
				t.Errorf("client keeps %v (%v), want only codemode:\n%s", names, err, data)
			}
			own, err := os.ReadFile(res.MovedTo)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(own), w) {
					t.Errorf("codemode's file lacks %q:\n%s", w, own)
				}
			}
			loaded, err := serverconfig.Load(t.Context(), env, serverconfig.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range tc.moved {
				i := slices.IndexFunc(loaded.Servers, func(s serverconfig.Server) bool { return s.Name == name })
				if i < 0 || loaded.Servers[i].Source != res.MovedTo {
					t.Errorf("discovery does not find %s in %s: %+v", name, res.MovedTo, loaded.Servers)
				}
			}
		})
	}
}

func TestListShowsState(t *testing.T) {
	env, _ := install(t, "cursor", "cursor.json")
	states := List(t.Context(), env)
	if len(states) != len(Clients()) {
		t.Fatalf("%d states for %d clients", len(states), len(Clients()))
	}
	for _, st := range states {
		switch st.Client.Name {
		case "cursor":
			if !st.Exists || st.Connected || !slices.Equal(st.Servers, []string{"fs", "search"}) {
				t.Errorf("cursor before connect: %+v", st)
			}
		default:
			if st.Exists || st.Path == "" {
				t.Errorf("%s: %+v", st.Client.Name, st)
			}
		}
	}
	if _, err := Connect(t.Context(), "cursor", Options{Env: env, Command: "/opt/codemode"}); err != nil {
		t.Fatal(err)
	}
	for _, st := range List(t.Context(), env) {
		if st.Client.Name == "cursor" && !st.Connected {
			t.Errorf("cursor after connect: %+v", st)
		}
	}
}

func TestConnectRefuses(t *testing.T) {
	env := serverconfig.Env{Home: t.TempDir(), GOOS: "linux"}
	if _, err := Connect(t.Context(), "emacs", Options{Env: env, Command: "/opt/codemode"}); err == nil || !strings.Contains(err.Error(), "want one of claude-code") {
		t.Errorf("unknown client: %v", err)
	}
	if _, err := Connect(t.Context(), "cursor", Options{Env: env, Command: "codemode"}); err == nil {
		t.Error("relative command accepted")
	}
}
