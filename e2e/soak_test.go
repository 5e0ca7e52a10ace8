//go:build soak

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSoak makes many calls with random faults against one codemode and
// checks that nothing accumulates: sandboxes, cgroups, open descriptors,
// session files, memory. Not in the default run: scripts/soak.sh runs it
// (CODEMODE_SOAK_CALLS, default 10000).
func TestSoak(t *testing.T) {
	calls := 10000
	if v, err := strconv.Atoi(os.Getenv("CODEMODE_SOAK_CALLS")); err == nil {
		calls = v
	}
	state := t.TempDir()
	// Over HTTP, so that the client's sessions can end (DELETE) while
	// codemode keeps running for the before/after comparison.
	h := startHTTP(t, "CODEMODE_STATE_DIR="+state, "CODEMODE_MEMORY=128m", "CODEMODE_INTERRUPT_GRACE=1s",
		"CODEMODE_MAX_CLIENT_CALLS=16", writeConfig(t, map[string]any{"tools": testServer(t, "tools")}))
	pid := h.cmd.Process.Pid
	warm, err := h.connect(t, aliceToken)
	if err != nil {
		t.Fatal(err)
	}
	runOver(t, warm, "await mcp_tools.echo(message='warm')")
	warm.Close()
	settle := func() {
		deadline := time.Now().Add(10 * time.Second)
		for sandboxes(pid) > 1 && time.Now().Before(deadline) { // only the spare
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
	}
	settle()
	fdsBefore, rssBefore, sandboxesBefore := fdCount(pid), rssKiB(pid), sandboxes(pid)
	t.Logf("descriptors before: %v", fdTargets(pid))
	cs, err := h.connect(t, aliceToken)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{cs: cs, stderr: h.stderr}
	type op struct {
		name   string
		weight int
		code   string
		args   map[string]any
	}
	ops := []op{
		{"plain", 600, "x = sum(range(1000))\nprint(x)", nil},
		{"exception", 60, "raise ValueError('soak')", nil},
		{"exit", 20, "import sys; sys.exit(2)", nil},
		{"tool", 200, "r = await mcp_tools.echo(message='hi')\nprint(r.text)", nil},
		{"gather", 40, "import asyncio\nawait asyncio.gather(*[mcp_tools.echo(message=str(i)) for i in range(8)])", nil},
		{"tool-crash", 5, "try:\n    await mcp_tools.crash(message='x')\nexcept runtime.MCPError:\n    pass", nil},
		{"big-output", 20, "print('y' * 300_000)", nil},
		{"file", 20, "import os\nos.makedirs('out', exist_ok=True)\nopen('out/f.txt', 'w').write('z' * 1000)", nil},
		{"memory", 20, "update_memory('n', lambda v: (v or 0) + 1)", nil},
		{"timeout", 8, "while True: pass", map[string]any{"timeout": 1}},
		{"stubborn", 2, "import time\nwhile True:\n    try:\n        time.sleep(5)\n    except KeyboardInterrupt:\n        pass", map[string]any{"timeout": 1}},
		{"oom", 2, "hog = []\nwhile True: hog.append(bytearray(1 << 20))", nil},
		{"reset", 10, "1", map[string]any{"reset": true}},
	}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	var done atomic.Int64
	counts := map[string]*atomic.Int64{}
	for _, o := range ops {
		counts[o.name] = new(atomic.Int64)
	}
	var unexpected sync.Map
	const workers = 4
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			session := fmt.Sprintf("soak-%d", w)
			for done.Add(1) <= int64(calls) {
				n := rng.IntN(total)
				var o op
				for _, c := range ops {
					if n < c.weight {
						o = c
						break
					}
					n -= c.weight
				}
				if o.name == "kill" {
					continue
				}
				args := map[string]any{"code": o.code, "session": session}
				for k, v := range o.args {
					args[k] = v
				}
				res, err := s.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_python", Arguments: args})
				if err != nil {
					unexpected.Store("transport: "+err.Error(), true)
					continue
				}
				st := structured(t, res)
				counts[o.name].Add(1)
				ok := map[string]bool{
					"plain": st["status"] == "success", "tool": st["status"] == "success", "gather": st["status"] == "success",
					"exception": st["status"] == "error", "exit": st["status"] == "error", "tool-crash": st["status"] == "success",
					"big-output": st["status"] == "success" && st["truncated"] != nil, "file": st["status"] == "success",
					"memory": st["status"] == "success", "timeout": st["status"] == "timeout", "stubborn": st["status"] == "timeout",
					"oom": st["status"] == "error", "reset": st["status"] == "success",
				}[o.name]
				if !ok {
					unexpected.Store(fmt.Sprintf("%s: %v", o.name, st["error"]), true)
				}
			}
		}()
	}
	// Kill a sandbox from outside now and then.
	stopKiller := make(chan struct{})
	killed := 0
	go func() {
		for {
			select {
			case <-stopKiller:
				return
			case <-time.After(7 * time.Second):
				killSandboxes(t, pid)
				killed++
			}
		}
	}()
	wg.Wait()
	close(stopKiller)
	elapsed := time.Since(start)
	var report []string
	for _, o := range ops {
		report = append(report, fmt.Sprintf("%s=%d", o.name, counts[o.name].Load()))
	}
	t.Logf("%d calls in %s (%.0f calls/s) with %d outside kills: %s", calls, elapsed.Round(time.Second), float64(calls)/elapsed.Seconds(), killed, strings.Join(report, " "))
	bad := 0
	unexpected.Range(func(k, _ any) bool {
		// A call can legitimately land on a sandbox the killer just killed,
		// and tool calls in flight fail when another worker crashes the server.
		msg := k.(string)
		expected := strings.Contains(msg, "SIGKILL") || strings.Contains(msg, "state was lost") ||
			((strings.HasPrefix(msg, "tool:") || strings.HasPrefix(msg, "gather:")) &&
				(strings.Contains(msg, "closed the connection during the call") || strings.Contains(msg, "is unavailable")))
		if !expected {
			t.Errorf("unexpected result: %s", k)
			bad++
		}
		return true
	})
	// Leak accounting: the client leaves (its sessions end), then compare.
	cs.Close()
	settle()
	fdsAfter, rssAfter, sandboxesAfter := fdCount(pid), rssKiB(pid), sandboxes(pid)
	sessionFiles, _ := filepath.Glob(filepath.Join(state, "sessions", "*", "*"))
	t.Logf("codemode fds %d -> %d, RSS %d -> %d KiB, sandboxes %d -> %d, session file dirs left %d",
		fdsBefore, fdsAfter, rssBefore, rssAfter, sandboxesBefore, sandboxesAfter, len(sessionFiles))
	if fdsAfter > fdsBefore {
		t.Errorf("file descriptors grew from %d to %d: %v", fdsBefore, fdsAfter, fdTargets(pid))
	}
	if sandboxesAfter > sandboxesBefore {
		t.Errorf("sandboxes grew from %d to %d", sandboxesBefore, sandboxesAfter)
	}
	if len(sessionFiles) > 1 { // the spare's, at most
		t.Errorf("%d session file directories left", len(sessionFiles))
	}
}

// fdCount counts a process's open descriptors other than sockets: pipes
// and files are what a leaked sandbox or session would hold, while idle
// HTTP keep-alive connections come and go with the client.
func fdCount(pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && !strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n
}

func fdTargets(pid int) []string {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && !strings.HasPrefix(target, "socket:") {
			out = append(out, e.Name()+"->"+target)
		}
	}
	return out
}

func rssKiB(pid int) int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}
