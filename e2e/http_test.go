package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	aliceToken = "alice-token-0123456789abcdef"
	bobToken   = "bob-token-fedcba9876543210"
)

// httpServer runs `codemode serve --http 127.0.0.1:0` and returns its URL.
type httpServer struct {
	url    string
	cmd    *exec.Cmd
	stderr *lockedBuffer
	client *http.Client // for postCall (default http.DefaultClient)
}

func startHTTP(t testing.TB, env ...string) *httpServer {
	t.Helper()
	cmd := exec.Command(codemodeBin, "serve", "--http", "127.0.0.1:0")
	cmd.Env = append(append(baseEnv(t), "CODEMODE_TOKENS=alice:"+aliceToken+",bob:"+bobToken), env...)
	stderr := &lockedBuffer{}
	pr, pw, _ := os.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	serverPIDs.Store(cmd.Process.Pid, true)
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			stderr.Write([]byte(line + "\n"))
			if i := strings.Index(line, "url=http://"); i >= 0 {
				urlc <- strings.Fields(line[i+4:])[0]
			}
		}
	}()
	s := &httpServer{cmd: cmd, stderr: stderr}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("codemode stderr:\n%s", stderr.String())
		}
	})
	select {
	case s.url = <-urlc:
	case <-time.After(30 * time.Second):
		t.Fatalf("codemode did not start serving HTTP:\n%s", stderr.String())
	}
	return s
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

// statefulProtocol is the newest MCP revision with protocol sessions
// (Mcp-Session-Id): the tests of what a connection owns speak it.
const statefulProtocol = "2025-11-25"

// connect opens a stateful MCP session (a connection with its own default
// run_python session).
func (h *httpServer) connect(t testing.TB, token string) (*mcp.ClientSession, error) {
	return h.connectVersion(t, token, statefulProtocol)
}

// connectVersion connects asking for an MCP revision ("" = the SDK's newest,
// served statelessly).
func (h *httpServer) connectVersion(t testing.TB, token, version string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "http-e2e", Version: "1"}, nil)
	return client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: h.url,
		HTTPClient: &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
}

func runOver(t *testing.T, cs *mcp.ClientSession, code string) map[string]any {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
	if err != nil {
		t.Fatal(err)
	}
	return structured(t, res)
}

func TestHTTPClientsAreSeparate(t *testing.T) {
	h := startHTTP(t)
	alice, err := h.connect(t, aliceToken)
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	bob, err := h.connect(t, bobToken)
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	var wg sync.WaitGroup
	for _, c := range []struct {
		cs   *mcp.ClientSession
		name string
	}{{alice, "alice"}, {bob, "bob"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runOver(t, c.cs, fmt.Sprintf("import os, time\nwho = %q\nos.makedirs('out', exist_ok=True)\nopen('mine.txt', 'w').write(who)\nsave_memory('who', who)\ntime.sleep(1)", c.name))
		}()
	}
	wg.Wait()
	for _, c := range []struct {
		cs   *mcp.ClientSession
		name string
	}{{alice, "alice"}, {bob, "bob"}} {
		st := runOver(t, c.cs, "print(who, open('mine.txt').read(), load_memory('who'), sorted(os.listdir('.')))")
		if got := lines(st["stdout"]); !slices.Equal(got, []string{fmt.Sprintf("%s %s %s ['mine.txt', 'out']", c.name, c.name, c.name)}) {
			t.Errorf("%s sees %q", c.name, got)
		}
	}
}

func TestHTTPAuthentication(t *testing.T) {
	h := startHTTP(t)
	for _, token := range []string{"", "wrong-token-0123456789"} {
		if cs, err := h.connect(t, token); err == nil {
			cs.Close()
			t.Errorf("token %q was accepted", token)
		}
	}
	// A raw request without a token gets 401 and runs nothing.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"open('/tmp/ran','w')"}}}`
	req, _ := http.NewRequest("POST", h.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: status %d", resp.StatusCode)
	}
	if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
		t.Errorf("401 without a Bearer challenge: WWW-Authenticate %q", got)
	}
	if strings.Contains(h.stderr.String(), "session started") {
		t.Fatal("a sandbox started for an unauthenticated request")
	}
	// Cross-site browser requests are refused even with a token.
	req, _ = http.NewRequest("POST", h.url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site request: status %d", resp.StatusCode)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(strings.TrimSuffix(h.url, "/mcp") + path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, err, resp)
		}
		resp.Body.Close()
	}
}

func TestHTTPNonLoopbackNeedsTokens(t *testing.T) {
	cmd := exec.Command(codemodeBin, "serve", "--http", "0.0.0.0:0")
	cmd.Env = baseEnv(t)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to serve a non-loopback address without bearer tokens") {
		t.Fatalf("non-loopback without tokens: %v\n%s", err, out)
	}
}

func TestHTTPPerClientCallLimit(t *testing.T) {
	h := startHTTP(t, "CODEMODE_MAX_CLIENT_CALLS=1")
	a1, _ := h.connect(t, aliceToken)
	a2, _ := h.connect(t, aliceToken)
	b, _ := h.connect(t, bobToken)
	defer a1.Close()
	defer a2.Close()
	defer b.Close()
	done := make(chan struct{})
	go func() {
		runOver(t, a1, "import time; time.sleep(2)")
		close(done)
	}()
	time.Sleep(700 * time.Millisecond)
	if st := runOver(t, a2, "1"); st["status"] != "error" || !strings.Contains(st["error"].(string), "too many concurrent calls for client alice") {
		t.Errorf("second concurrent call of alice: %v", st)
	}
	if st := runOver(t, b, "1"); st["status"] != "success" {
		t.Errorf("bob was limited by alice's call: %v", st)
	}
	<-done
}

// sandboxes counts the sandboxes a codemode process runs.
func sandboxes(pid int) int { return len(sandboxPIDs(pid)) }

// sandboxPIDs lists the sandboxes a codemode process runs: its sandbox
// inits, except a zygote's (CODEMODE_ZYGOTE), whose forked sessions count
// instead.
func sandboxPIDs(server int) []int {
	type proc struct {
		ppid    int
		cmdline string
	}
	procs := map[int]proc{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			if f := strings.Fields(s[i+2:]); len(f) > 1 {
				ppid, _ := strconv.Atoi(f[1])
				procs[pid] = proc{ppid, string(cmdline)}
			}
		}
	}
	var out []int
	for pid, p := range procs {
		if p.ppid != server || !strings.HasPrefix(p.cmdline, "codemode-sandbox-init") {
			continue
		}
		zygote := false
		for cpid, c := range procs {
			if c.ppid == pid && strings.Contains(c.cmdline, "# codemode zygote:") {
				zygote = true
				for gpid, g := range procs {
					if g.ppid == cpid {
						out = append(out, gpid)
					}
				}
			}
		}
		if !zygote {
			out = append(out, pid)
		}
	}
	return out
}

func TestHTTPDisconnectLeavesNoSandbox(t *testing.T) {
	h := startHTTP(t, "CODEMODE_HTTP_SESSION_TIMEOUT=2s", "CODEMODE_SPARES=0")
	cs, err := h.connect(t, aliceToken)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	go cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "while True: pass", "timeout": 60}})
	deadline := time.Now().Add(20 * time.Second)
	for sandboxes(h.cmd.Process.Pid) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the call's sandbox never started")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The client goes away without closing its session.
	cancel()
	deadline = time.Now().Add(30 * time.Second)
	for sandboxes(h.cmd.Process.Pid) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a sandbox is left 30 s after the client disconnected")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestHTTPGracefulShutdown(t *testing.T) {
	h := startHTTP(t)
	cs, err := h.connect(t, aliceToken)
	if err != nil {
		t.Fatal(err)
	}
	result := make(chan map[string]any, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "import time; time.sleep(2); print('finished')"}})
		if err != nil {
			result <- map[string]any{"err": err.Error()}
			return
		}
		result <- res.StructuredContent.(map[string]any)
	}()
	time.Sleep(800 * time.Millisecond)
	h.cmd.Process.Signal(syscall.SIGTERM)
	st := <-result
	if got := lines(st["stdout"]); !slices.Equal(got, []string{"finished"}) {
		t.Errorf("running call at shutdown: %v", st)
	}
	if err := h.cmd.Wait(); err != nil {
		t.Errorf("exit: %v", err)
	}
	if n := sandboxes(h.cmd.Process.Pid); n != 0 {
		t.Errorf("%d sandboxes left after shutdown", n)
	}
}
