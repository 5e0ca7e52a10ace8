package serverconfig

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// rootMark stands for the temporary directory a fixture is copied to, in
// fixture files and in expected values.
const rootMark = "@ROOT@"

// copyFixture copies testdata/<name> to a temporary directory, replacing
// @ROOT@ in every file with that directory, and returns it.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", name))); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), rootMark) {
			return os.WriteFile(path, []byte(strings.ReplaceAll(string(data), rootMark, root)), 0o644)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// fixtureEnv is the Env of a fixture: home/ is the home directory and proj/
// the working directory. @ROOT@ in vars is replaced.
func fixtureEnv(root, goos string, vars map[string]string) Env {
	v := map[string]string{}
	for k, val := range vars {
		v[k] = strings.ReplaceAll(val, rootMark, root)
	}
	return Env{
		Vars: v,
		Home: filepath.Join(root, "home"),
		Cwd:  filepath.Join(root, "proj"),
		GOOS: goos,
	}
}

// rootOpts compares results with the fixture directory written as @ROOT@.
func rootOpts(root string) cmp.Options {
	return cmp.Options{
		cmp.Transformer("root", func(s string) string { return strings.ReplaceAll(s, root, rootMark) }),
		cmpopts.EquateEmpty(),
	}
}

type loadCase struct {
	name      string
	fixture   string // under testdata/
	goos      string // default linux
	vars      map[string]string
	explicit  []string
	noProject bool

	want         []Server
	wantSkipped  []Skipped
	wantWarnings []Warning
}

func (c loadCase) run(t *testing.T) (*Result, string) {
	t.Helper()
	root := copyFixture(t, c.fixture)
	goos := c.goos
	if goos == "" {
		goos = "linux"
	}
	var explicit []string
	for _, e := range c.explicit {
		explicit = append(explicit, strings.ReplaceAll(e, rootMark, root))
	}
	res, err := Load(t.Context(), fixtureEnv(root, goos, c.vars), Options{Explicit: explicit, NoProject: c.noProject})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	opts := rootOpts(root)
	if diff := cmp.Diff(c.want, res.Servers, opts); diff != "" {
		t.Errorf("Servers mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(c.wantSkipped, res.Skipped, opts); diff != "" {
		t.Errorf("Skipped mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(c.wantWarnings, res.Warnings, opts); diff != "" {
		t.Errorf("Warnings mismatch (-want +got):\n%s", diff)
	}
	return res, root
}

// TestSources has one fixture per configuration source.
func TestSources(t *testing.T) {
	const (
		home = rootMark + "/home"
		proj = rootMark + "/proj"
	)
	tests := []loadCase{
		{
			name:    "mcps-dir",
			fixture: "sources/mcps-dir",
			want: []Server{
				{
					Name: "memory", Description: "Servers from the reference's own directory", Transport: TransportStdio,
					Command: "node", Args: []string{home + "/servers/memory/index.js", "3", "true"},
					Env:    map[string]string{"MEMORY_FILE": "~/memory.json", "LIMIT": "100"},
					Cwd:    home + "/servers/memory",
					Source: home + "/MCPs/10-main.json", SourceKind: "mcps-dir", Scope: ScopeUser,
				},
				{
					Name: "time", Description: "Clock", Transport: TransportStdio,
					Command: "uvx", Args: []string{"mcp-server-time", "--local-timezone", "UTC"},
					Source: home + "/MCPs/20-extra.json", SourceKind: "mcps-dir", Scope: ScopeUser,
				},
			},
			wantSkipped: []Skipped{
				{Name: "memory", Source: home + "/MCPs/20-extra.json", SourceKind: "mcps-dir", Scope: ScopeUser,
					Reason: SkipShadowed, Detail: home + "/MCPs/10-main.json"},
			},
		},
		{
			name:    "mcp-servers-xdg default",
			fixture: "sources/mcp-servers-xdg",
			want: []Server{{
				Name: "fetch", Transport: TransportStdio, Command: "uvx", Args: []string{"mcp-server-fetch"},
				Source: home + "/.config/mcp/servers/fetch.json", SourceKind: "mcp-servers-xdg", Scope: ScopeUser,
			}},
		},
		{
			name:    "mcp-servers-xdg XDG_CONFIG_HOME",
			fixture: "sources/mcp-servers-xdg",
			vars:    map[string]string{"XDG_CONFIG_HOME": rootMark + "/xdg"},
			want: []Server{{
				Name: "git", Transport: TransportStdio, Command: "uvx", Args: []string{"mcp-server-git", "--repository", proj},
				Source: rootMark + "/xdg/mcp/servers/git.json", SourceKind: "mcp-servers-xdg", Scope: ScopeUser,
			}},
		},
		{
			name:    "mcp-servers-dir",
			fixture: "sources/mcp-servers-dir",
			want: []Server{{
				Name: "sqlite", Transport: TransportStdio, Command: "uvx",
				Args: []string{"mcp-server-sqlite", "--db-path", "./data/app.db"}, Cwd: proj + "/tools",
				Source: proj + "/mcp-servers/sqlite.json", SourceKind: "mcp-servers-dir", Scope: ScopeProject,
			}},
		},
		{
			name:    "claude-code user, local and project",
			fixture: "sources/claude-code",
			vars:    map[string]string{"GITHUB_TOKEN": "ghp_x"},
			want: []Server{
				{
					Name: "api", Transport: TransportSSE, URL: "https://api.example.com/sse",
					Headers: map[string]string{"X-API-Key": ""},
					Source:  proj + "/.mcp.json", SourceKind: "claude-code-project", Scope: ScopeProject,
				},
				{
					Name: "chrome-devtools", Transport: TransportStdio, Command: "npx", Args: []string{"chrome-devtools-mcp@latest"},
					Source: home + "/.claude.json", SourceKind: "claude-code-local", Scope: ScopeProject,
				},
				{
					Name: "db", Transport: TransportStdio, Command: "npx",
					Args:   []string{"-y", "@bytebase/dbhub", "--dsn", "sqlite:///tmp/dev.db"},
					Source: proj + "/.mcp.json", SourceKind: "claude-code-project", Scope: ScopeProject,
				},
				{
					Name: "github", Transport: TransportHTTP, URL: "https://api.githubcopilot.com/mcp/",
					Headers: map[string]string{"Authorization": "Bearer ghp_x"},
					Source:  home + "/.claude.json", SourceKind: "claude-code-user", Scope: ScopeUser,
				},
				{
					Name: "playwright", Transport: TransportStdio, Command: "npx", Args: []string{"@playwright/mcp@latest"},
					Source: home + "/.claude.json", SourceKind: "claude-code-user", Scope: ScopeUser,
				},
			},
			wantWarnings: []Warning{
				{File: proj + "/.mcp.json", Server: "api", Message: "variable API_KEY is not set; it expands to an empty string"},
			},
		},
		{
			name:    "claude-desktop linux",
			fixture: "sources/claude-desktop",
			want: []Server{{
				Name: "filesystem", Transport: TransportStdio, Command: "npx",
				Args:   []string{"-y", "@modelcontextprotocol/server-filesystem", home + "/Desktop"},
				Source: home + "/.config/Claude/claude_desktop_config.json", SourceKind: "claude-desktop", Scope: ScopeUser,
			}},
		},
		{
			name:    "claude-desktop darwin",
			fixture: "sources/claude-desktop",
			goos:    "darwin",
			want: []Server{{
				Name: "filesystem-mac", Transport: TransportStdio, Command: "npx",
				Args:   []string{"-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"},
				Source: home + "/Library/Application Support/Claude/claude_desktop_config.json", SourceKind: "claude-desktop", Scope: ScopeUser,
			}},
		},
		{
			name:    "claude-desktop windows",
			fixture: "sources/claude-desktop",
			goos:    "windows",
			vars:    map[string]string{"APPDATA": rootMark + "/appdata"},
			want: []Server{{
				Name: "filesystem-win", Transport: TransportStdio, Command: "npx.cmd",
				Args:   []string{"-y", "@modelcontextprotocol/server-filesystem", `C:\Users\me\Desktop`},
				Source: rootMark + "/appdata/Claude/claude_desktop_config.json", SourceKind: "claude-desktop", Scope: ScopeUser,
			}},
		},
		{
			name:    "cursor user and project",
			fixture: "sources/cursor",
			vars:    map[string]string{"NOTION_TOKEN": "secret"},
			want: []Server{
				{
					Name: "linear", Transport: TransportSSE, URL: "https://mcp.linear.app/sse",
					Source: home + "/.cursor/mcp.json", SourceKind: "cursor-user", Scope: ScopeUser,
				},
				{
					Name: "notion", Transport: TransportHTTP, URL: "https://mcp.notion.com/mcp",
					Headers: map[string]string{"Authorization": "Bearer secret"},
					Source:  home + "/.cursor/mcp.json", SourceKind: "cursor-user", Scope: ScopeUser,
				},
				{
					Name: "project-tools", Transport: TransportStdio, Command: "python3",
					Args: []string{proj + "/tools/server.py", "--name", "proj"},
					Env: map[string]string{
						"API_KEY": `from "env" file`, "MODE": "dev", "PLAIN": "value", "HOME_DIR": home,
					},
					Source: proj + "/.cursor/mcp.json", SourceKind: "cursor-project", Scope: ScopeProject,
				},
			},
		},
		{
			name:    "vscode workspace and user",
			fixture: "sources/vscode",
			want: []Server{
				{
					Name: "docs", Transport: TransportHTTP, URL: "https://learn.microsoft.com/api/mcp",
					Source: proj + "/.vscode/mcp.json", SourceKind: "vscode-workspace", Scope: ScopeProject,
				},
				{
					Name: "legacy", Transport: TransportSSE, URL: "http://localhost:3001/events",
					Source: proj + "/.vscode/mcp.json", SourceKind: "vscode-workspace", Scope: ScopeProject,
				},
				{
					Name: "memory", Transport: TransportStdio, Command: "npx",
					Args:   []string{"-y", "@modelcontextprotocol/server-memory"},
					Env:    map[string]string{"MEMORY_PATH": proj + "/memory.json"},
					Source: proj + "/.vscode/mcp.json", SourceKind: "vscode-workspace", Scope: ScopeProject,
				},
				{
					Name: "user-docs", Transport: TransportHTTP, URL: "https://example.com/mcp",
					Source: home + "/.config/Code/User/mcp.json", SourceKind: "vscode-user", Scope: ScopeUser,
				},
			},
			wantSkipped: []Skipped{
				{Name: "perplexity", Source: proj + "/.vscode/mcp.json", SourceKind: "vscode-workspace", Scope: ScopeProject,
					Reason: SkipNeedsInput, Detail: "uses ${input:perplexity-key}, which only VS Code can prompt for"},
			},
		},
		{
			name:      "vscode user darwin",
			fixture:   "sources/vscode",
			goos:      "darwin",
			noProject: true,
			want: []Server{{
				Name: "user-docs-mac", Transport: TransportHTTP, URL: "https://example.com/mcp",
				Source: home + "/Library/Application Support/Code/User/mcp.json", SourceKind: "vscode-user", Scope: ScopeUser,
			}},
		},
		{
			name:      "vscode user windows",
			fixture:   "sources/vscode",
			goos:      "windows",
			vars:      map[string]string{"APPDATA": rootMark + "/appdata"},
			noProject: true,
			want: []Server{{
				Name: "user-docs-win", Transport: TransportHTTP, URL: "https://example.com/mcp",
				Source: rootMark + "/appdata/Code/User/mcp.json", SourceKind: "vscode-user", Scope: ScopeUser,
			}},
		},
		{
			name:    "windsurf",
			fixture: "sources/windsurf",
			want: []Server{
				{
					Name: "puppeteer", Transport: TransportStdio, Command: "npx",
					Args: []string{"-y", "@modelcontextprotocol/server-puppeteer"}, ExcludeTools: []string{"puppeteer_evaluate"},
					Source: home + "/.codeium/windsurf/mcp_config.json", SourceKind: "windsurf", Scope: ScopeUser,
				},
				{
					Name: "sevalla", Transport: TransportHTTP, URL: "https://mcp.sevalla.com/mcp",
					Headers: map[string]string{"Authorization": "Bearer "},
					Source:  home + "/.codeium/windsurf/mcp_config.json", SourceKind: "windsurf", Scope: ScopeUser,
				},
			},
			wantSkipped: []Skipped{
				{Name: "old", Source: home + "/.codeium/windsurf/mcp_config.json", SourceKind: "windsurf", Scope: ScopeUser,
					Reason: SkipDisabled, Detail: "disabled: true"},
			},
			wantWarnings: []Warning{
				{File: home + "/.codeium/windsurf/mcp_config.json", Server: "sevalla",
					Message: "variable SEVALLA_API_KEY is not set; it expands to an empty string"},
			},
		},
		{
			name:    "gemini user and project",
			fixture: "sources/gemini",
			vars:    map[string]string{"DB_CONNECTION_STRING": "postgres://db", "EXTERNAL_API_KEY": "k"},
			want: []Server{
				{
					Name: "httpServer", Transport: TransportHTTP, URL: "http://localhost:3000/mcp",
					Headers: map[string]string{"Authorization": "Bearer token"}, ToolTimeout: 5 * time.Second,
					Source: home + "/.gemini/settings.json", SourceKind: "gemini-user", Scope: ScopeUser,
				},
				{
					Name: "project-gemini", Transport: TransportStdio, Command: "node", Args: []string{"dist/server.js", "--verbose"},
					Source: proj + "/.gemini/settings.json", SourceKind: "gemini-project", Scope: ScopeProject,
				},
				{
					Name: "pythonTools", Transport: TransportStdio, Command: "python",
					Args: []string{"-m", "my_mcp_server", "--port", "8080"}, Cwd: proj + "/mcp-servers/python",
					Env:          map[string]string{"DATABASE_URL": "postgres://db", "API_KEY": "k"},
					ToolTimeout:  15 * time.Second,
					IncludeTools: []string{"safe_tool", "file_reader"}, ExcludeTools: []string{"file_deleter"},
					Source: home + "/.gemini/settings.json", SourceKind: "gemini-user", Scope: ScopeUser,
				},
				{
					Name: "sseServer", Transport: TransportSSE, URL: "http://localhost:8080/sse",
					Source: home + "/.gemini/settings.json", SourceKind: "gemini-user", Scope: ScopeUser,
				},
			},
			wantSkipped: []Skipped{
				{Name: "experimental", Source: home + "/.gemini/settings.json", SourceKind: "gemini-user", Scope: ScopeUser,
					Reason: SkipDisabled, Detail: "listed in mcp.excluded"},
			},
		},
		{
			name:    "codex",
			fixture: "sources/codex",
			vars:    map[string]string{"API_KEY2": "k2", "FIGMA_TOKEN": "ft", "FIGMA_FEATURES": "f1"},
			want: []Server{
				{
					Name: "docs", Transport: TransportStdio, Command: "docs-server", Args: []string{"--port", "4000"},
					Env: map[string]string{"API_KEY": "value", "API_KEY2": "k2"}, Cwd: "/srv/docs",
					StartupTimeout: 20 * time.Second, ToolTimeout: 30 * time.Second,
					IncludeTools: []string{"search", "summarize"}, ExcludeTools: []string{"search"},
					Source: home + "/.codex/config.toml", SourceKind: "codex", Scope: ScopeUser,
				},
				{
					Name: "figma", Transport: TransportHTTP, URL: "https://mcp.figma.com/mcp",
					Headers: map[string]string{"Authorization": "Bearer ft", "X-Static": "static-value", "X-From-Env": "f1"},
					Source:  home + "/.codex/config.toml", SourceKind: "codex", Scope: ScopeUser,
				},
			},
			wantSkipped: []Skipped{
				{Name: "retired", Source: home + "/.codex/config.toml", SourceKind: "codex", Scope: ScopeUser,
					Reason: SkipDisabled, Detail: "enabled: false"},
			},
		},
		{
			name:    "codex CODEX_HOME",
			fixture: "sources/codex",
			vars:    map[string]string{"CODEX_HOME": rootMark + "/codexhome"},
			want: []Server{{
				Name: "alt", Transport: TransportStdio, Command: "alt-server",
				Source: rootMark + "/codexhome/config.toml", SourceKind: "codex", Scope: ScopeUser,
			}},
		},
		{
			name:     "explicit files",
			fixture:  "sources/explicit",
			explicit: []string{rootMark + "/conf/one.json", rootMark + "/conf/missing.json", "~/.config/codemode/servers.json", "local.json"},
			vars: map[string]string{
				"CODEMODE_CONFIG":    rootMark + "/conf/two.json" + string(filepath.ListSeparator) + rootMark + "/conf/three.json",
				"MCP_SERVERS_CONFIG": rootMark + "/conf/four.toml",
			},
			want: []Server{
				{
					Name: "four", Description: "TOML for MCP_SERVERS_CONFIG", Transport: TransportStdio,
					Command: "four-server", Args: []string{"--flag", "7"}, Env: map[string]string{"LEVEL": "debug"},
					Source: rootMark + "/conf/four.toml", SourceKind: "env:MCP_SERVERS_CONFIG", Scope: ScopeExplicit,
				},
				{
					Name: "one", Transport: TransportStdio, Command: "one-server",
					Source: rootMark + "/conf/one.json", SourceKind: "flag", Scope: ScopeExplicit,
				},
				{
					Name: "relative", Transport: TransportStdio, Command: "relative-server",
					Source: proj + "/local.json", SourceKind: "flag", Scope: ScopeExplicit,
				},
				{
					Name: "remote", Description: "TOML for MCP_SERVERS_CONFIG", Transport: TransportHTTP, URL: "https://four.example.com/mcp",
					Source: rootMark + "/conf/four.toml", SourceKind: "env:MCP_SERVERS_CONFIG", Scope: ScopeExplicit,
				},
				{
					Name: "three", Transport: TransportStdio, Command: "three-server",
					Source: rootMark + "/conf/three.json", SourceKind: "env:CODEMODE_CONFIG", Scope: ScopeExplicit,
				},
				{
					Name: "tilde", Transport: TransportStdio, Command: "tilde-server",
					Source: home + "/.config/codemode/servers.json", SourceKind: "flag", Scope: ScopeExplicit,
				},
				{
					Name: "two", Description: "from CODEMODE_CONFIG", Transport: TransportStdio, Command: "two-server",
					Source: rootMark + "/conf/two.json", SourceKind: "env:CODEMODE_CONFIG", Scope: ScopeExplicit,
				},
			},
			wantWarnings: []Warning{
				{File: rootMark + "/conf/missing.json", Message: "file not found"},
				{File: proj + "/local.json", Message: `"servers" ignored: the file also has "mcpServers", which is used`},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

// TestPrecedence checks the documented order: explicit > project > user,
// the table's order within a tier, name order within a glob, and that the
// first definition wins even when it is disabled.
func TestPrecedence(t *testing.T) {
	const (
		home = rootMark + "/home"
		proj = rootMark + "/proj"
		conf = rootMark + "/conf"
	)
	shadow := func(name, source, kind string, scope Scope, winner string) Skipped {
		return Skipped{Name: name, Source: source, SourceKind: kind, Scope: scope, Reason: SkipShadowed, Detail: winner}
	}
	srv := func(name, command, source, kind string, scope Scope) Server {
		return Server{Name: name, Transport: TransportStdio, Command: command, Source: source, SourceKind: kind, Scope: scope}
	}
	tc := loadCase{
		fixture:  "precedence",
		explicit: []string{conf + "/flag.json"},
		vars:     map[string]string{"MCP_SERVERS_CONFIG": conf + "/env.json"},
		want: []Server{
			srv("only-env", "only-env", conf+"/env.json", "env:MCP_SERVERS_CONFIG", ScopeExplicit),
			srv("only-flag", "only-flag", conf+"/flag.json", "flag", ScopeExplicit),
			srv("proj-a", "from-claude-local", home+"/.claude.json", "claude-code-local", ScopeProject),
			srv("shared", "from-flag", conf+"/flag.json", "flag", ScopeExplicit),
			srv("user-a", "from-mcps-a", home+"/MCPs/a.json", "mcps-dir", ScopeUser),
		},
		wantSkipped: []Skipped{
			{Name: "gone", Source: proj + "/.mcp.json", SourceKind: "claude-code-project", Scope: ScopeProject, Reason: SkipDisabled, Detail: "disabled: true"},
			shadow("gone", home+"/MCPs/a.json", "mcps-dir", ScopeUser, proj+"/.mcp.json"),
			shadow("only-env", home+"/MCPs/b.json", "mcps-dir", ScopeUser, conf+"/env.json"),
			shadow("proj-a", proj+"/.mcp.json", "claude-code-project", ScopeProject, home+"/.claude.json"),
			shadow("proj-a", proj+"/.cursor/mcp.json", "cursor-project", ScopeProject, home+"/.claude.json"),
			shadow("shared", conf+"/env.json", "env:MCP_SERVERS_CONFIG", ScopeExplicit, conf+"/flag.json"),
			shadow("shared", proj+"/.mcp.json", "claude-code-project", ScopeProject, conf+"/flag.json"),
			shadow("shared", proj+"/.cursor/mcp.json", "cursor-project", ScopeProject, conf+"/flag.json"),
			shadow("shared", home+"/MCPs/a.json", "mcps-dir", ScopeUser, conf+"/flag.json"),
			shadow("shared", home+"/.claude.json", "claude-code-user", ScopeUser, conf+"/flag.json"),
			shadow("shared", home+"/.codex/config.toml", "codex", ScopeUser, conf+"/flag.json"),
			shadow("user-a", home+"/.claude.json", "claude-code-user", ScopeUser, home+"/MCPs/a.json"),
		},
	}
	first, root := tc.run(t)

	// Loading again gives the same result, sources included.
	again, err := Load(t.Context(), fixtureEnv(root, "linux", map[string]string{"MCP_SERVERS_CONFIG": conf + "/env.json"}),
		Options{Explicit: []string{root + "/conf/flag.json"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, again, cmp.AllowUnexported(Result{})); diff != "" {
		t.Errorf("second Load differs (-first +second):\n%s", diff)
	}

	// Without the project tier, the user files take over project names.
	tc.noProject = true
	tc.want = []Server{
		srv("gone", "gone", home+"/MCPs/a.json", "mcps-dir", ScopeUser),
		srv("only-env", "only-env", conf+"/env.json", "env:MCP_SERVERS_CONFIG", ScopeExplicit),
		srv("only-flag", "only-flag", conf+"/flag.json", "flag", ScopeExplicit),
		srv("shared", "from-flag", conf+"/flag.json", "flag", ScopeExplicit),
		srv("user-a", "from-mcps-a", home+"/MCPs/a.json", "mcps-dir", ScopeUser),
	}
	tc.wantSkipped = []Skipped{
		shadow("only-env", home+"/MCPs/b.json", "mcps-dir", ScopeUser, conf+"/env.json"),
		shadow("shared", conf+"/env.json", "env:MCP_SERVERS_CONFIG", ScopeExplicit, conf+"/flag.json"),
		shadow("shared", home+"/MCPs/a.json", "mcps-dir", ScopeUser, conf+"/flag.json"),
		shadow("shared", home+"/.claude.json", "claude-code-user", ScopeUser, conf+"/flag.json"),
		shadow("shared", home+"/.codex/config.toml", "codex", ScopeUser, conf+"/flag.json"),
		shadow("user-a", home+"/.claude.json", "claude-code-user", ScopeUser, home+"/MCPs/a.json"),
	}
	t.Run("NoProject", func(t *testing.T) { tc.run(t) })
}

// TestSameFileOnce checks that a file reached twice is read once, at its
// highest position, instead of shadowing itself.
func TestSameFileOnce(t *testing.T) {
	root := copyFixture(t, "sources/cursor")
	env := fixtureEnv(root, "linux", map[string]string{"MCP_SERVERS_CONFIG": rootMark + "/home/.cursor/mcp.json"})
	env.Cwd = env.Home // running codemode from the home directory
	res, err := Load(t.Context(), env, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 0 {
		t.Errorf("Skipped = %v, want none", res.Skipped)
	}
	var got []string
	for _, s := range res.Servers {
		got = append(got, s.Name+"@"+s.SourceKind)
	}
	want := []string{"linear@env:MCP_SERVERS_CONFIG", "notion@env:MCP_SERVERS_CONFIG"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	var notes []string
	for _, s := range res.Sources {
		if s.Note != "" && s.Found {
			notes = append(notes, s.Kind+": "+s.Note)
		}
	}
	wantNotes := []string{
		"cursor-project: same file as env:MCP_SERVERS_CONFIG",
		"cursor-user: same file as env:MCP_SERVERS_CONFIG",
	}
	if diff := cmp.Diff(wantNotes, notes); diff != "" {
		t.Errorf("source notes (-want +got):\n%s", diff)
	}
}

// TestBrokenFiles checks that every broken file gives a warning naming the
// file and the reason, broken entries are skipped with a reason, and the
// good file still loads.
func TestBrokenFiles(t *testing.T) {
	const (
		home = rootMark + "/home"
		proj = rootMark + "/proj"
	)
	entries := home + "/MCPs/entries.json"
	invalid := func(name, detail string) Skipped {
		return Skipped{Name: name, Source: entries, SourceKind: "mcps-dir", Scope: ScopeUser, Reason: SkipInvalid, Detail: detail}
	}
	tc := loadCase{
		fixture: "broken",
		want: []Server{{
			Name: "good", Transport: TransportStdio, Command: "good-server",
			Source: home + "/MCPs/good.json", SourceKind: "mcps-dir", Scope: ScopeUser,
		}},
		wantSkipped: []Skipped{
			invalid("args-object", "args: want a list of strings, got an object"),
			invalid("bad-type", `unknown type "websocket" (want stdio, http or sse)`),
			invalid("bad-url", `url: "ftp://example.com/mcp" is not an http or https URL`),
			invalid("disabled-string", "disabled: want true or false, got a string"),
			invalid("empty-command", "command is empty"),
			invalid("env-nested", "env.A: want a string, got an object"),
			invalid("no-command", "no command or url"),
			invalid("not-object", "want an object, got a string"),
			invalid("num-command", "command: want a string, got a number"),
			invalid("unsupported", "unsupported variable ${command:pick}"),
		},
		wantWarnings: []Warning{
			{File: home + "/.claude.json", Message: "invalid JSON: unexpected end of file"},
			{File: proj + "/.vscode/mcp.json", Message: "invalid JSON: line 1, column 17: unterminated /* comment"},
			{File: home + "/MCPs/array.json", Message: "invalid JSON: top level is a list, want an object"},
			{File: home + "/.cursor/mcp.json", Message: "invalid JSON: line 3, column 26: invalid character '\"' after object key:value pair"},
			{File: home + "/.gemini/settings.json", Message: "mcpServers: want an object, got a list"},
			{File: home + "/.codex/config.toml", Message: "invalid TOML: line 2, column 10: expected value but found '\\n' instead"},
		},
	}
	res, root := tc.run(t)

	// The sources say which files were broken.
	var broken []string
	for _, s := range res.Sources {
		if s.Error != "" {
			broken = append(broken, s.Kind+" "+strings.ReplaceAll(s.Path, root, rootMark))
		}
	}
	wantBroken := []string{
		"claude-code-local " + home + "/.claude.json",
		"vscode-workspace " + proj + "/.vscode/mcp.json",
		"mcps-dir " + home + "/MCPs/array.json",
		"claude-code-user " + home + "/.claude.json",
		"cursor-user " + home + "/.cursor/mcp.json",
		"gemini-user " + home + "/.gemini/settings.json",
		"codex " + home + "/.codex/config.toml",
	}
	if diff := cmp.Diff(wantBroken, broken); diff != "" {
		t.Errorf("broken sources (-want +got):\n%s", diff)
	}
}

func TestLoadCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Load(ctx, Env{Home: t.TempDir()}, Options{}); err == nil {
		t.Error("Load with a cancelled context succeeded")
	}
}

// TestSourcesUnavailable checks that locations that do not apply are listed
// with the reason.
func TestSourcesUnavailable(t *testing.T) {
	res, err := Load(t.Context(), Env{GOOS: "windows"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	notes := map[string]string{}
	for _, s := range res.Sources {
		if s.Found {
			t.Errorf("source %s found without a home or working directory", s.Path)
		}
		notes[s.Kind] = s.Note
	}
	for kind, want := range map[string]string{
		"claude-desktop":   "APPDATA is not set",
		"cursor-project":   "working directory unknown",
		"cursor-user":      "home directory unknown",
		"claude-code-user": "home directory unknown",
	} {
		if notes[kind] != want {
			t.Errorf("source %s note = %q, want %q", kind, notes[kind], want)
		}
	}
}

// TestLocationsTable checks the embedded table's invariants.
func TestLocationsTable(t *testing.T) {
	all := Locations("")
	if len(all) == 0 {
		t.Fatal("empty table")
	}
	knownOS := map[string]bool{"linux": true, "darwin": true, "windows": true}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		kinds := map[string]bool{}
		for _, l := range Locations(goos) {
			if kinds[l.Kind] {
				t.Errorf("%s: kind %s appears twice", goos, l.Kind)
			}
			kinds[l.Kind] = true
		}
		for _, k := range []string{"claude-desktop", "vscode-user"} {
			if !kinds[k] {
				t.Errorf("%s: no %s row", goos, k)
			}
		}
	}
	for _, l := range all {
		if l.Kind == "" || l.Client == "" || l.Path == "" || len(l.Key) == 0 {
			t.Errorf("incomplete row %+v", l)
		}
		if l.Scope != ScopeProject && l.Scope != ScopeUser {
			t.Errorf("%s: scope %q", l.Kind, l.Scope)
		}
		for _, o := range l.OS {
			if !knownOS[o] {
				t.Errorf("%s: unknown OS %q", l.Kind, o)
			}
		}
		if l.Dialect != "" && l.Dialect != "gemini" {
			t.Errorf("%s: unknown dialect %q", l.Kind, l.Dialect)
		}
	}
}
