package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/serverconfig"
)

func TestParseFormats(t *testing.T) {
	tests := []struct {
		file  string
		names []string
	}{
		{"server.json", []string{"io.github.example/git-tools"}},
		{"array.json", []string{"io.github.example/git-tools", "com.example/tickets"}},
		{"registry.json", []string{"io.github.modelcontextprotocol/server-everything", "io.github.modelcontextprotocol/server-memory",
			"io.github.modelcontextprotocol/server-filesystem", "io.example/payments", "com.example/weather"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			page, err := Parse(data, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range page.Entries {
				names = append(names, e.Name)
				if e.Source != tt.file {
					t.Errorf("%s: source %q", e.Name, e.Source)
				}
			}
			if !slices.Equal(names, tt.names) {
				t.Errorf("names %q, want %q", names, tt.names)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct{ doc, want string }{
		{"", "empty document"},
		{"42", "want a JSON object or array"},
		{`{"description": "x"}`, "server 0: no name"},
		{`[{"name": "a"}, {"name": " "}]`, "server 1: no name"},
		{`{"servers": [{"server": {"name": 3}}]}`, "server 0:"},
		{`[1]`, "server 0:"},
	} {
		if _, err := Parse([]byte(tt.doc), "x"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q): %v, want %q", tt.doc, err, tt.want)
		}
	}
}

func testCatalog(t *testing.T) *Catalog {
	t.Helper()
	c, err := Load(context.Background(), []string{"testdata/server.json", "testdata/array.json", "testdata/registry.json"}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoadKeepsFirst(t *testing.T) {
	c := testCatalog(t)
	if c.Len() != 7 {
		t.Fatalf("%d entries, want 7", c.Len())
	}
	e, ok := c.Get("io.github.example/git-tools")
	if !ok || e.Registry() != "pypi" || !strings.HasSuffix(e.Source, "server.json") {
		t.Fatalf("git-tools: %+v", e)
	}
	if e, ok := c.Get("server-memory"); !ok || e.Name != "io.github.modelcontextprotocol/server-memory" {
		t.Fatalf("short name: %v %+v", ok, e)
	}
	if _, ok := c.Get("nowhere"); ok {
		t.Fatal("found an entry that no catalog has")
	}
}

func TestFind(t *testing.T) {
	c := testCatalog(t)
	tests := []struct{ query, first string }{
		{"knowledge graph memory", "io.github.modelcontextprotocol/server-memory"},
		{"persistent memroy", "io.github.modelcontextprotocol/server-memory"},
		{"weather forecast", "com.example/weather"},
		{"read files in a directory", "io.github.modelcontextprotocol/server-filesystem"},
		{"git blame", "io.github.example/git-tools"},
		{"server-everything", "io.github.modelcontextprotocol/server-everything"},
		{"support tickets", "com.example/tickets"},
	}
	for _, tt := range tests {
		got := c.Find(tt.query, 3, nil)
		if len(got) == 0 || got[0].Name != tt.first {
			t.Errorf("Find(%q) = %v, want %s first", tt.query, got, tt.first)
		}
	}
	configured := func(name string) (string, bool) {
		return "server_memory", name == "io.github.modelcontextprotocol/server-memory"
	}
	got := c.Find("memory", 1, configured)
	if len(got) != 1 || !got[0].Configured || got[0].Alias != "server_memory" || got[0].Registry != "npm" {
		t.Fatalf("Find with a configured entry: %+v", got)
	}
	got = c.Find("bank payments", 1, nil)
	if len(got) != 1 || !slices.Equal(got[0].Secrets, []string{"BANK_TOKEN"}) {
		t.Fatalf("secrets: %+v", got)
	}
}

func TestServer(t *testing.T) {
	c := testCatalog(t)
	prefix := t.TempDir()
	pkg := filepath.Join(prefix, "node_modules", "@modelcontextprotocol", "server-memory")
	os.MkdirAll(pkg, 0o755)
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"bin": {"mcp-server-memory": "dist/index.js"}}`), 0o644)
	lookPath := func(have ...string) func(string) (string, error) {
		return func(f string) (string, error) {
			if slices.Contains(have, f) {
				return "/usr/bin/" + f, nil
			}
			return "", errors.New("not found")
		}
	}
	environ := map[string]string{"BANK_TOKEN": "s3cret", "X-API-Key": "k"}
	lookup := func(n string) (string, bool) { v, ok := environ[n]; return v, ok }
	tests := []struct {
		name  string
		entry string
		env   map[string]string
		opts  LaunchOptions
		want  string // command line, env and URL; or "error KIND: text"
	}{
		{"npm installed under the prefix", "server-memory", map[string]string{"MEMORY_FILE_PATH": "/tmp/m.jsonl"},
			LaunchOptions{NPMPrefix: prefix, LookPath: lookPath("npx")}, "node " + pkg + "/dist/index.js env=MEMORY_FILE_PATH=/tmp/m.jsonl"},
		{"npm through npx", "server-everything", nil, LaunchOptions{LookPath: lookPath("npx")},
			"npx -y @modelcontextprotocol/server-everything@2025.9.25 stdio"},
		{"npm without npx", "server-everything", nil, LaunchOptions{LookPath: lookPath()}, "error unsupported: io.github.modelcontextprotocol/server-everything has no package or remote codemode can run here (npm (no runner on this host))"},
		{"pypi through uvx", "git-tools", nil, LaunchOptions{LookPath: lookPath("uvx", "podman")},
			"uvx --python 3.12 mcp-server-git==1.2.0 --repository ."},
		{"oci when uvx is missing", "git-tools", nil, LaunchOptions{LookPath: lookPath("podman"), Lookup: func(string) (string, bool) { return "t", true }},
			"podman run -i --rm -e GIT_TOKEN ghcr.io/example/git-tools:1.2.0 env=GIT_TOKEN=t"},
		{"secret from codemode's environment", "io.example/payments", nil, LaunchOptions{LookPath: lookPath("npx"), Lookup: lookup},
			"npx -y @modelcontextprotocol/server-everything stdio env=BANK_TOKEN=s3cret"},
		{"secret missing", "io.example/payments", nil, LaunchOptions{LookPath: lookPath("npx")}, "error needs_secret: the server needs the secret BANK_TOKEN"},
		{"secret from code refused", "io.example/payments", map[string]string{"BANK_TOKEN": "x"}, LaunchOptions{LookPath: lookPath("npx"), Lookup: lookup},
			"error invalid: BANK_TOKEN is a secret: code cannot set it"},
		{"undeclared variable refused", "server-memory", map[string]string{"NODE_OPTIONS": "--require /x"}, LaunchOptions{LookPath: lookPath("npx")},
			"error invalid: io.github.modelcontextprotocol/server-memory declares no variable NODE_OPTIONS"},
		{"streamable HTTP remote", "weather", nil, LaunchOptions{Lookup: lookup}, "http https://weather.example.com/mcp X-API-Key=k"},
		{"SSE remote", "tickets", nil, LaunchOptions{}, "sse https://tickets.example.com/sse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ok := c.Get(tt.entry)
			if !ok {
				t.Fatalf("no entry %s", tt.entry)
			}
			cfg, err := e.Server("x", tt.env, tt.opts)
			got := describeServer(cfg)
			if err != nil {
				var le *Error
				if !errors.As(err, &le) {
					t.Fatalf("error %v is not an *Error", err)
				}
				got = "error " + le.Kind + ": " + le.Msg
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestConfigEntryHidesSecrets(t *testing.T) {
	c := testCatalog(t)
	e, _ := c.Get("io.example/payments")
	cfg, err := e.Server("payments", nil, LaunchOptions{LookPath: func(string) (string, error) { return "/usr/bin/npx", nil },
		Lookup: func(string) (string, bool) { return "s3cret", true }})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(e.ConfigEntry(cfg))
	if want := `{"args":["-y","@modelcontextprotocol/server-everything","stdio"],"command":"npx","description":"Move money between bank accounts and list transactions","env":{"BANK_TOKEN":"${BANK_TOKEN}"}}`; string(doc) != want {
		t.Fatalf("config entry:\n%s\nwant\n%s", doc, want)
	}
	w, _ := c.Get("weather")
	cfg, _ = w.Server("weather", nil, LaunchOptions{Lookup: func(string) (string, bool) { return "k", true }})
	if doc, _ := json.Marshal(w.ConfigEntry(cfg)); !strings.Contains(string(doc), `"headers":{"X-API-Key":"${X-API-Key}"}`) {
		t.Fatalf("remote config entry: %s", doc)
	}
}

func describeServer(s serverconfig.Server) string {
	if s.Transport != serverconfig.TransportStdio {
		out := string(s.Transport) + " " + s.URL
		for _, k := range sortedKeys(s.Headers) {
			out += " " + k + "=" + s.Headers[k]
		}
		return out
	}
	out := strings.Join(append([]string{s.Command}, s.Args...), " ")
	for _, k := range sortedKeys(s.Env) {
		out += " env=" + k + "=" + s.Env[k]
	}
	return out
}

func TestLoadRegistry(t *testing.T) {
	pages := map[string]string{
		"":   `{"servers": [{"server": {"name": "a/one", "description": "first"}}], "metadata": {"nextCursor": "p2"}}`,
		"p2": `{"servers": [{"server": {"name": "a/two", "description": "second"}}], "metadata": {}}`,
	}
	up := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up || r.URL.Path != "/v0/servers" {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, pages[r.URL.Query().Get("cursor")])
	}))
	defer srv.Close()
	cache := t.TempDir()
	names := func(c *Catalog) []string {
		var out []string
		for _, e := range c.Entries() {
			out = append(out, e.Name)
		}
		return out
	}
	c, err := Load(context.Background(), []string{srv.URL}, LoadOptions{CacheDir: cache})
	if err != nil || !slices.Equal(names(c), []string{"a/one", "a/two"}) {
		t.Fatalf("Load: %v %v", err, c)
	}
	// Down, with a fresh cache: the cache answers.
	up = false
	c, err = Load(context.Background(), []string{srv.URL}, LoadOptions{CacheDir: cache})
	if err != nil || !slices.Equal(names(c), []string{"a/one", "a/two"}) || c.Entries()[0].Source != srv.URL {
		t.Fatalf("Load from the cache: %v %v", err, c)
	}
	// Down, without a cache: an error naming the registry.
	if _, err := Load(context.Background(), []string{srv.URL}, LoadOptions{}); err == nil || !strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("Load without a cache: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"servers": null}`))
	f.Add([]byte(`[{"server": null, "name": "x"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		page, err := Parse(data, "fuzz")
		if err != nil {
			return
		}
		c := New(page.Entries)
		for _, e := range page.Entries {
			if e.Name == "" {
				t.Fatal("an entry without a name")
			}
			if _, ok := c.Get(e.Name); !ok {
				t.Fatalf("Get(%q) misses a parsed entry", e.Name)
			}
			e.Server("x", nil, LaunchOptions{})
		}
		c.Find("memory graph", 5, nil)
	})
}
