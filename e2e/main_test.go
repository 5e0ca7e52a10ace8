package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/downstream/downstreamtest"
	"github.com/codemode/codemode/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var codemodeBin string

func TestMain(m *testing.M) {
	// The test binary doubles as a downstream MCP server for codemode.
	downstreamtest.MaybeServe()
	// And as the conformance suite's client under test.
	maybeConformanceClient()
	// Every test here runs the built binary's sandboxes, most with real MCP
	// servers or container engines: minutes, and more than Go.
	flag.Parse()
	if testing.Short() {
		fmt.Printf("e2e: -short skips the end-to-end tests; %s runs them\n", testenv.FullSuite)
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "codemode-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	codemodeBin = filepath.Join(dir, "codemode")
	build := exec.Command("go", "build", "-o", codemodeBin, "./cmd/codemode")
	build.Dir = testenv.RepoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building codemode: %v\n%s", err, out)
		os.Exit(1)
	}
	mountsBefore := mounts()
	code := m.Run()
	if code == 0 {
		if leaks := leftovers(); len(leaks) > 0 {
			fmt.Fprintf(os.Stderr, "e2e: left behind after the suite: %v\n", leaks)
			code = 1
		}
		for m := range mounts() {
			if !mountsBefore[m] {
				fmt.Fprintf(os.Stderr, "e2e: a mount appeared on the host during the suite: %s\n", m)
				code = 1
			}
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// mounts returns the host's mount points, except those container engines
// and runsc create and keep on their own.
func mounts() map[string]bool {
	out := map[string]bool{}
	for _, m := range testenv.Mounts() {
		out[m] = true
	}
	return out
}

// serverPIDs are the codemode processes the tests started; their cgroups
// are named after them.
var serverPIDs sync.Map

// leftovers lists sandbox processes and cgroups of our servers still present.
func leftovers() []string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		var out []string
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err != nil {
				continue
			}
			cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if !bytes.HasPrefix(cmdline, []byte("codemode-sandbox-init")) {
				continue
			}
			// Ours if its cgroup names one of our servers (other codemode
			// processes may run on the machine).
			cg, _ := os.ReadFile("/proc/" + e.Name() + "/cgroup")
			serverPIDs.Range(func(k, _ any) bool {
				if bytes.Contains(cg, []byte(fmt.Sprintf("codemode.%d.", k.(int)))) {
					out = append(out, "sandbox init process "+e.Name()+" of codemode "+fmt.Sprint(k))
				}
				return true
			})
		}
		serverPIDs.Range(func(k, _ any) bool {
			pid := k.(int)
			for _, ctrl := range []string{"memory", "pids", "cpu", "unified", ""} {
				matches, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", ctrl, "*", fmt.Sprintf("codemode.%d.*", pid)))
				more, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", ctrl, fmt.Sprintf("codemode.%d.*", pid)))
				for _, m := range append(matches, more...) {
					out = append(out, "cgroup "+m)
				}
			}
			return true
		})
		if len(out) == 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// server is one codemode process with a connected client.
type server struct {
	cs     *mcp.ClientSession
	cmd    *exec.Cmd
	stderr *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// baseEnv is the environment of codemode under test: nothing from ours
// but PATH, and a private home.
func baseEnv(t testing.TB) []string {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + t.TempDir(), "CODEMODE_LOG_LEVEL=debug"}
	// CODEMODE_ZYGOTE=1 runs the suite with sessions forked from a zygote.
	if v := os.Getenv("CODEMODE_ZYGOTE"); v != "" {
		env = append(env, "CODEMODE_ZYGOTE="+v)
	}
	return env
}

// startServer runs `codemode serve` with extra environment and connects a
// go-sdk client over stdio.
func startServer(t *testing.T, env ...string) *server {
	t.Helper()
	s := connect(t, append(baseEnv(t), env...))
	t.Cleanup(func() {
		s.cs.Close()
		// Closing stdin must end codemode by itself, cleanly: a server the
		// transport had to signal may have left sandboxes and cgroups behind.
		if st := s.cmd.ProcessState; st == nil || !st.Exited() || st.ExitCode() != 0 {
			t.Errorf("codemode did not exit cleanly after stdin closed: %v", st)
		}
		if t.Failed() {
			t.Logf("codemode stderr:\n%s", s.stderr.String())
		}
	})
	return s
}

// execCommand is `codemode serve` with the test environment.
func execCommand(t *testing.T, env ...string) *exec.Cmd {
	cmd := exec.Command(codemodeBin, "serve")
	cmd.Env = append(baseEnv(t), env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// rootfsEnv selects the Python rootfs built from Debian packages (with
// numpy, pandas, matplotlib and PIL) for the native backend.
func rootfsEnv(t *testing.T) string {
	return "CODEMODE_ROOTFS=" + testenv.Rootfs(t)
}

// startServerB is startServer for benchmarks (info-level logs only).
func startServerB(b *testing.B, env ...string) *mcp.ClientSession {
	s := connect(b, append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + b.TempDir()}, env...))
	b.Cleanup(func() { s.cs.Close() })
	return s.cs
}

func connect(t testing.TB, env []string) *server {
	t.Helper()
	cmd := exec.Command(codemodeBin, "serve")
	cmd.Env = env
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "codemode-e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 15 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting to codemode: %v\nstderr:\n%s", err, stderr.String())
	}
	serverPIDs.Store(cmd.Process.Pid, true)
	return &server{cs: cs, cmd: cmd, stderr: stderr}
}

// call runs run_python with the given arguments.
func (s *server) call(t *testing.T, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%v) = %v", args, err)
	}
	return res
}

func (s *server) run(t *testing.T, code string) *mcp.CallToolResult {
	t.Helper()
	return s.call(t, map[string]any{"code": code})
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	m, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("structuredContent = %T %v, want an object", res.StructuredContent, res.StructuredContent)
	}
	return m
}

func lines(v any) []string {
	list, _ := v.([]any)
	out := make([]string, len(list))
	for i, x := range list {
		out[i], _ = x.(string)
	}
	return out
}
