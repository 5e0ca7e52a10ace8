package downstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/downstream/downstreamtest"
	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/codemode/codemode/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) {
	downstreamtest.MaybeServe()
	os.Exit(m.Run())
}

// testServer configures this test binary as a stdio MCP server of a kind.
func testServer(t *testing.T, name, kind string, env ...string) serverconfig.Server {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{downstreamtest.EnvVar: kind}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		e[k] = v
	}
	return serverconfig.Server{Name: name, Transport: serverconfig.TransportStdio, Command: self, Env: e}
}

func newPool(t *testing.T, opts Options) *Pool {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if opts.BaseEnv == nil {
		opts.BaseEnv = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CODEMODE_SECRET=hunter2"}
	}
	p := New(opts)
	t.Cleanup(p.Close)
	return p
}

// decoded is a result as the SDK's types.
func decoded(t testing.TB, res Result) *mcp.CallToolResult {
	t.Helper()
	var out mcp.CallToolResult
	if err := json.Unmarshal(res.JSON(), &out); err != nil {
		t.Fatalf("result %s: %v", res.JSON(), err)
	}
	return &out
}

func textOf(res Result) string {
	var out mcp.CallToolResult
	if json.Unmarshal(res.JSON(), &out) != nil {
		return "(undecodable: " + string(res.JSON()) + ")"
	}
	var b strings.Builder
	for _, c := range out.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestLazySingleFlightStart(t *testing.T) {
	starts := t.TempDir() + "/starts"
	p := newPool(t, Options{Servers: []serverconfig.Server{testServer(t, "tools", "tools", "CODEMODE_TEST_STARTS="+starts)}})
	if st := p.State("tools"); st != "stopped" {
		t.Fatalf("state before use = %q", st)
	}
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.Tools(t.Context(), "tools"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	data, _ := os.ReadFile(starts)
	if n := strings.Count(string(data), "\n"); n != 1 {
		t.Fatalf("10 concurrent first uses started %d processes, want 1", n)
	}
	if st := p.State("tools"); !strings.HasPrefix(st, "running (") {
		t.Fatalf("state = %q", st)
	}
}

func TestCalls(t *testing.T) {
	p := newPool(t, Options{Servers: []serverconfig.Server{testServer(t, "tools", "tools")}})
	res, err := p.CallTool(t.Context(), "tools", "echo", map[string]any{"message": "hi"})
	if err != nil || textOf(res) != "echo: hi" {
		t.Fatalf("echo = %v, %v", res, err)
	}
	res, err = p.CallTool(t.Context(), "tools", "add", map[string]any{"a": 2, "b": 40})
	if err != nil || decoded(t, res).StructuredContent == nil {
		t.Fatalf("add = %s, %v", res.JSON(), err)
	}
	res, err = p.CallTool(t.Context(), "tools", "fail", map[string]any{"message": "x"})
	if err != nil || !res.IsError() || !decoded(t, res).IsError || textOf(res) != "it failed: x" {
		t.Fatalf("fail = %s, %v (a tool error is a result, not a transport error)", res.JSON(), err)
	}
	res, err = p.CallTool(t.Context(), "tools", "big", map[string]any{"bytes": 10 << 20})
	if err != nil || len(textOf(res)) != 10<<20 {
		t.Fatalf("10 MB result: %d bytes, %v", len(textOf(res)), err)
	}
	_, err = p.CallTool(t.Context(), "nope", "echo", nil)
	if !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("unknown server: %v", err)
	}
}

func TestChildEnvironmentIsMinimal(t *testing.T) {
	p := newPool(t, Options{Servers: []serverconfig.Server{testServer(t, "tools", "tools", "CONFIGURED=yes")}})
	for name, want := range map[string]string{"CODEMODE_SECRET": "", "CONFIGURED": "yes"} {
		res, err := p.CallTool(t.Context(), "tools", "env", map[string]any{"message": name})
		if err != nil || textOf(res) != want {
			t.Errorf("child sees %s=%q (%v), want %q", name, textOf(res), err, want)
		}
	}
}

func TestCrashMidCallAndRestart(t *testing.T) {
	starts := t.TempDir() + "/starts"
	p := newPool(t, Options{Servers: []serverconfig.Server{testServer(t, "tools", "tools", "CODEMODE_TEST_STARTS="+starts)}})
	_, err := p.CallTool(t.Context(), "tools", "crash", map[string]any{"message": "x"})
	var e *Error
	if !errors.As(err, &e) || e.Kind != "crashed" || e.Server != "tools" || e.Tool != "crash" {
		t.Fatalf("crash mid-call = %#v", err)
	}
	// The next use restarts it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := p.CallTool(t.Context(), "tools", "echo", map[string]any{"message": "back"})
		if err == nil && textOf(res) == "echo: back" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no restart after crash: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	data, _ := os.ReadFile(starts)
	if n := strings.Count(string(data), "\n"); n != 2 {
		t.Fatalf("starts = %d, want 2", n)
	}
}

func TestHangingInitializeTimesOut(t *testing.T) {
	p := newPool(t, Options{StartTimeout: time.Second, Servers: []serverconfig.Server{testServer(t, "hang", "hang-init"), testServer(t, "tools", "tools")}})
	start := time.Now()
	_, err := p.Tools(t.Context(), "hang")
	if err == nil || !strings.Contains(err.Error(), "did not start within 1s") {
		t.Fatalf("hanging server: %v", err)
	}
	if el := time.Since(start); el > 8*time.Second {
		t.Fatalf("hanging server took %s to fail", el)
	}
	// A second use within the backoff fails fast and says when it retries.
	if _, err := p.Tools(t.Context(), "hang"); err == nil || !strings.Contains(err.Error(), "next start attempt") {
		t.Fatalf("second use: %v", err)
	}
	if _, err := p.Tools(t.Context(), "tools"); err != nil {
		t.Fatalf("other servers affected: %v", err)
	}
}

func TestGarbageServer(t *testing.T) {
	p := newPool(t, Options{StartTimeout: 5 * time.Second, Servers: []serverconfig.Server{testServer(t, "junk", "garbage")}})
	if _, err := p.Tools(t.Context(), "junk"); err == nil {
		t.Fatal("a server writing garbage started")
	}
}

func TestToolListChanged(t *testing.T) {
	got := make(chan []*mcp.Tool, 10)
	p := newPool(t, Options{Servers: []serverconfig.Server{testServer(t, "tools", "tools")}})
	p.WatchTools(func(server string, tools []*mcp.Tool) { got <- tools })
	if _, err := p.CallTool(t.Context(), "tools", "grow", map[string]any{"message": "fresh_tool"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case tools := <-got:
			for _, tl := range tools {
				if tl.Name == "fresh_tool" {
					cached, _ := p.Tools(t.Context(), "tools")
					if len(cached) != len(tools) {
						t.Fatalf("cache not refreshed: %d vs %d tools", len(cached), len(tools))
					}
					return
				}
			}
		case <-deadline:
			t.Fatal("no refresh after notifications/tools/list_changed")
		}
	}
}

func TestSelfServerIsDropped(t *testing.T) {
	p := newPool(t, Options{Servers: []serverconfig.Server{testServer(t, "me", "self")}})
	if _, err := p.Tools(t.Context(), "me"); !errors.Is(err, ErrSelfServer) {
		t.Fatalf("self server: %v", err)
	}
	if st := p.State("me"); !strings.HasPrefix(st, "dropped: ") {
		t.Fatalf("state = %q", st)
	}
	allowed := newPool(t, Options{AllowSelf: true, Servers: []serverconfig.Server{testServer(t, "me", "self")}})
	if _, err := allowed.Tools(t.Context(), "me"); err != nil {
		t.Fatalf("self server with AllowSelf: %v", err)
	}
}

func TestCallTimeout(t *testing.T) {
	cfg := testServer(t, "tools", "tools")
	cfg.ToolTimeout = 300 * time.Millisecond
	p := newPool(t, Options{Servers: []serverconfig.Server{cfg}})
	_, err := p.CallTool(t.Context(), "tools", "sleep", map[string]any{"milliseconds": 5000})
	var e *Error
	if !errors.As(err, &e) || e.Kind != "timeout" || !strings.Contains(err.Error(), "did not answer within 300ms") {
		t.Fatalf("slow tool = %v", err)
	}
	// The server is still usable.
	if _, err := p.CallTool(t.Context(), "tools", "echo", map[string]any{"message": "ok"}); err != nil {
		t.Fatal(err)
	}
}

func TestCloseStopsProcessGroups(t *testing.T) {
	p := New(Options{Servers: []serverconfig.Server{testServer(t, "tools", "tools")}, BaseEnv: []string{"PATH=" + os.Getenv("PATH")}})
	if _, err := p.Tools(t.Context(), "tools"); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	pid := p.servers["tools"].conn.cmd.Process.Pid
	p.mu.Unlock()
	p.Close()
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("server process %d still alive after Close", pid)
	}
	if _, err := p.Tools(context.Background(), "tools"); !errors.Is(err, ErrClosed) {
		t.Fatalf("use after Close: %v", err)
	}
}

func TestRealServerEverything(t *testing.T) {
	node := testenv.Node(t)
	pkg := testenv.NodePackage(t, "@modelcontextprotocol/server-everything")
	p := newPool(t, Options{Servers: []serverconfig.Server{{Name: "everything", Transport: serverconfig.TransportStdio,
		Command: node, Args: []string{pkg + "/dist/index.js", "stdio"}}}})
	tools, err := p.Tools(t.Context(), "everything")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools {
		names[tl.Name] = true
	}
	if !names["echo"] || !names["get-sum"] {
		t.Fatalf("tools = %v", names)
	}
	res, err := p.CallTool(t.Context(), "everything", "echo", map[string]any{"message": "hello"})
	if err != nil || textOf(res) != "Echo: hello" {
		t.Fatalf("echo = %v %v", textOf(res), err)
	}
}

func benchServer(b *testing.B) serverconfig.Server {
	self, _ := os.Executable()
	return serverconfig.Server{Name: "tools", Transport: serverconfig.TransportStdio, Command: self, Env: map[string]string{downstreamtest.EnvVar: "tools"}}
}

// TestWatchersKnowBeforeStartReturns checks the one-way flow of tool lists:
// a watcher has the list by the time the start that loaded it returns.
func TestWatchersKnowBeforeStartReturns(t *testing.T) {
	p := newPool(t, Options{Servers: []serverconfig.Server{testServer(t, "tools", "tools")}})
	var mu sync.Mutex
	var known []string
	p.WatchTools(func(server string, tools []*mcp.Tool) {
		mu.Lock()
		defer mu.Unlock()
		known = append(known, fmt.Sprintf("%s:%d", server, len(tools)))
	})
	if err := p.Start(t.Context(), "tools"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(known) != 1 || !strings.HasPrefix(known[0], "tools:") || known[0] == "tools:0" {
		t.Fatalf("watcher saw %v when Start returned, want one non-empty list of server tools", known)
	}
}
