package proxy

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/downstream"
	"github.com/codemode/codemode/internal/downstream/downstreamtest"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/codemode/codemode/internal/tooldocs"
	"github.com/go-json-experiment/json/jsontext"
)

func TestMain(m *testing.M) {
	downstreamtest.MaybeServe()
	os.Exit(m.Run())
}

func toolsServer(t testing.TB) serverconfig.Server {
	self, _ := os.Executable()
	return serverconfig.Server{Name: "my-tools", Description: "test tools", Transport: serverconfig.TransportStdio,
		Command: self, Env: map[string]string{downstreamtest.EnvVar: "tools"}}
}

func newProxy(t testing.TB, cacheDir string, servers ...serverconfig.Server) *Proxy {
	pool := downstream.New(downstream.Options{Servers: servers, BaseEnv: []string{"PATH=" + os.Getenv("PATH")}})
	t.Cleanup(pool.Close)
	px := New(Options{Servers: servers, Pool: pool, Catalog: tooldocs.NewCatalog(nil), CacheDir: cacheDir})
	pool.WatchTools(px.ToolsChanged)
	return px
}

func call(t *testing.T, px *Proxy, method string, params any, mws ...hostrpc.ToolMiddleware) (string, string) {
	t.Helper()
	raw, _ := json.Marshal(params)
	mux := hostrpc.NewMux()
	px.Register(mux, mws...)
	res, rerr := mux.Serve(context.Background(), &hostrpc.Request{Method: method, Params: jsontext.Value(raw)})
	if rerr != nil {
		return "", rerr.Kind + ": " + rerr.Message
	}
	return string(res), ""
}

func TestDispatch(t *testing.T) {
	px := newProxy(t, "", toolsServer(t))
	tests := []struct {
		method     string
		params     map[string]any
		want, werr string
	}{
		{"list_servers", nil, `[]`, ""},
		{"call_tool", map[string]any{"server": "my_tools", "tool": "echo", "arguments": map[string]any{"message": "hi"}}, `"text":"echo: hi"`, ""},
		{"call_tool", map[string]any{"server": "my-tools", "tool": "echo", "positional": []any{"pos"}}, `"text":"echo: pos"`, ""},
		{"call_tool", map[string]any{"server": "my-tools", "tool": "add", "positional": []any{1}}, "", "type_error: add() takes no positional arguments; call it with keyword arguments: a, b (required: a, b)"},
		{"call_tool", map[string]any{"server": "my-tools", "tool": "echo", "positional": []any{"a", "b"}}, "", "type_error: echo() takes 1 positional argument but 2 were given"},
		{"call_tool", map[string]any{"server": "my-tools", "tool": "echo", "arguments": map[string]any{"message": "a"}, "positional": []any{"b"}}, "", "type_error: echo() got multiple values for argument 'message'"},
		{"call_tool", map[string]any{"server": "my-tools", "tool": "nope"}, "", "unknown_tool: Tool \"nope\" not found for server my-tools; its tools: add, big, crash, echo, env, fail, grow, meet, sleep, traceparent"},
		{"call_tool", map[string]any{"server": "elsewhere", "tool": "x"}, "", "unknown_server: Unknown MCP server: elsewhere (configured: my-tools)"},
		{"call_tool", map[string]any{"server": "my-tools"}, "", "invalid: Missing tool name"},
		{"call_tool", map[string]any{"server": "my-tools", "tool": "echo", "arguments": map[string]any{"mesage": "hi"}}, "",
			"type_error: echo() got an unexpected keyword argument 'mesage' (did you mean 'message'?); is missing required argument(s): message; its arguments: message (required: message)"},
		{"call_tool", map[string]any{"server": "my-tools", "tool": "add", "arguments": map[string]any{"a": 1, "zzz": 2}}, "",
			"type_error: add() got an unexpected keyword argument 'zzz'; is missing required argument(s): b; its arguments: a, b (required: a, b)"},
		{"call_tool", map[string]any{"server": "my-tools", "tool": "echo", "arguments": []any{1}}, "", "invalid: Arguments must be an object"},
		{"list_servers", nil, `["my-tools"]`, ""},
		{"query_tool_docs", map[string]any{"server": "my-tools", "tool": "echo"}, `[{"server":"my-tools","serverAlias":"my_tools","tool":"echo","toolAlias":"echo","description":"Echo a message back."}]`, ""},
		{"query_tool_docs", map[string]any{"server": "my-tools", "tool": "zzz"}, "", "unknown_tool: Tool 'zzz' not found for server my-tools"},
		{"search_tool_docs", map[string]any{"query": "echo message back", "limit": 1}, `"tool":"echo"`, ""},
		{"search_tool_docs", map[string]any{"query": " "}, "", "invalid: Missing 'query' value"},
		{"describe_server", map[string]any{"server": "my_tools"}, `"alias":"my_tools","tools":[{"name":"add"`, ""},
		{"no_such_method", nil, "", "invalid: Unknown RPC type: no_such_method"},
		{"list_tools", map[string]any{"server": "my-tools", "bogus": 1}, "", "invalid: invalid parameters for list_tools"},
	}
	for _, tc := range tests {
		got, gerr := call(t, px, tc.method, tc.params)
		if tc.werr != "" {
			if !strings.HasPrefix(gerr, tc.werr) {
				t.Errorf("%s %v: error %q, want %q", tc.method, tc.params, gerr, tc.werr)
			}
			continue
		}
		if gerr != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s %v = %s, %s; want it to contain %s", tc.method, tc.params, got, gerr, tc.want)
		}
	}
}

// TestDiscoveredServersDescribeThemselves checks that a server without a
// configured description is described by what it said when it started,
// also in a later run (through the tool cache) before it starts again.
func TestDiscoveredServersDescribeThemselves(t *testing.T) {
	dir := t.TempDir()
	srv := toolsServer(t)
	srv.Description = ""
	px := newProxy(t, dir, srv)
	want := `[{"name":"my-tools","alias":"my_tools","description":""}]`
	if got, gerr := call(t, px, "discovered_servers", nil); got != want {
		t.Fatalf("before start = %s %s, want %s", got, gerr, want)
	}
	if _, gerr := call(t, px, "describe_server", map[string]any{"server": "my-tools"}); gerr != "" {
		t.Fatal(gerr)
	}
	want = `[{"name":"my-tools","alias":"my_tools","description":"Tools for codemode's tests: echo, add, sleep and friends."}]`
	if got, gerr := call(t, px, "discovered_servers", nil); got != want {
		t.Fatalf("after start = %s %s, want %s", got, gerr, want)
	}
	px2 := newProxy(t, dir, srv)
	if got, gerr := call(t, px2, "discovered_servers", nil); got != want {
		t.Fatalf("next run = %s %s, want %s", got, gerr, want)
	}
}

func TestToolCacheSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	srv := toolsServer(t)
	px := newProxy(t, dir, srv)
	if _, gerr := call(t, px, "describe_server", map[string]any{"server": "my-tools"}); gerr != "" {
		t.Fatal(gerr)
	}
	// A new codemode with the same configuration searches without starting the server.
	px2 := newProxy(t, dir, srv)
	got, gerr := call(t, px2, "search_tool_docs", map[string]any{"query": "sleep", "limit": 1})
	if gerr != "" || !strings.Contains(got, `"tool":"sleep"`) {
		t.Fatalf("search from cache = %s %s", got, gerr)
	}
	if running := px2.Loaded(); len(running) != 0 {
		t.Fatalf("search started %v; the cache should have answered", running)
	}
	// A changed configuration invalidates the entry.
	changed := srv
	changed.Args = []string{"-x"}
	if _, ok := openToolCache(dir).get(changed); ok {
		t.Fatal("cache entry used for a different command line")
	}
}

// TestToolMiddleware checks that every tool call reaches the middleware
// resolved (real names, positional arguments bound, annotations) and that a
// middleware refusing the call keeps it from the server.
func TestToolMiddleware(t *testing.T) {
	px := newProxy(t, "", toolsServer(t))
	var seen []hostrpc.ToolCall
	record := func(next hostrpc.ToolCaller) hostrpc.ToolCaller {
		return func(ctx context.Context, c *hostrpc.ToolCall) (any, error) {
			seen = append(seen, *c)
			if c.Tool == "fail" {
				return nil, &hostrpc.Error{Kind: "denied", Message: "no failing today", Server: c.Server, Tool: c.Tool}
			}
			return next(ctx, c)
		}
	}
	if got, gerr := call(t, px, "call_tool", map[string]any{"server": "my_tools", "tool": "echo", "positional": []any{"pos"}}, record); gerr != "" || !strings.Contains(got, "echo: pos") {
		t.Fatalf("echo through the middleware: %q %q", got, gerr)
	}
	if _, gerr := call(t, px, "call_tool", map[string]any{"server": "my-tools", "tool": "fail"}, record); gerr != "denied: no failing today" {
		t.Fatalf("refused call: error %q", gerr)
	}
	if len(seen) != 2 {
		t.Fatalf("middleware saw %d calls, want 2", len(seen))
	}
	if c := seen[0]; c.Server != "my-tools" || c.Tool != "echo" || string(c.Arguments["message"]) != `"pos"` {
		t.Errorf("resolved call = %+v, want server my-tools, tool echo, message \"pos\"", c)
	}
}

// hide hides the listed "server" or "server/tool" names.
type hide []string

func (h hide) ServerHidden(server string) bool     { return slices.Contains(h, server) }
func (h hide) ToolHidden(server, tool string) bool { return slices.Contains(h, server+"/"+tool) }

// TestHiddenToolsDisappearFromDiscovery checks every discovery path against
// a visibility that hides one tool, and a hidden server against all of them.
func TestHiddenToolsDisappearFromDiscovery(t *testing.T) {
	px := newProxy(t, "", toolsServer(t))
	px.opts.Visibility = hide{"my-tools/echo"}
	for _, tc := range []struct {
		method string
		params map[string]any
	}{
		{"describe_server", map[string]any{"server": "my-tools"}},
		{"list_tools", map[string]any{"server": "my-tools"}},
		{"list_tools_cached", map[string]any{"server": "my-tools"}},
		{"query_tool_docs", map[string]any{"server": "my-tools"}},
		{"search_tool_docs", map[string]any{"query": "echo a message back", "limit": 10}},
		{"list_loaded_server_metadata", nil},
	} {
		got, gerr := call(t, px, tc.method, tc.params)
		if gerr != "" || !strings.Contains(got, `"add"`) && tc.method != "search_tool_docs" {
			t.Errorf("%s: %q %q, want the visible tools", tc.method, got, gerr)
		}
		if strings.Contains(got, `"echo"`) {
			t.Errorf("%s shows the hidden tool: %s", tc.method, got)
		}
	}
	if _, gerr := call(t, px, "query_tool_docs", map[string]any{"server": "my-tools", "tool": "echo"}); !strings.HasPrefix(gerr, "unknown_tool:") {
		t.Errorf("query of a hidden tool: %q", gerr)
	}

	px.opts.Visibility = hide{"my-tools"}
	if b := px.Briefs(); len(b) != 0 {
		t.Errorf("Briefs lists a hidden server: %v", b)
	}
	if err := px.Preload(context.Background(), []string{"my-tools"}); err == nil || !strings.Contains(err.Error(), "Unknown MCP server") {
		t.Errorf("Preload of a hidden server: %v", err)
	}
	for _, m := range []string{"describe_server", "list_tools", "query_tool_docs", "call_tool"} {
		if _, gerr := call(t, px, m, map[string]any{"server": "my-tools", "tool": "add"}); !strings.HasPrefix(gerr, "unknown_server: Unknown MCP server: my-tools (configured: none)") {
			t.Errorf("%s on a hidden server: %q", m, gerr)
		}
	}
	if got, _ := call(t, px, "search_tool_docs", map[string]any{"query": "add numbers"}); got != "[]" {
		t.Errorf("search finds tools of a hidden server: %s", got)
	}
}
