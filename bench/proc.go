package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lockedBuffer collects a child's stderr.
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

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// cmOpts describes one codemode process.
type cmOpts struct {
	backend string         // native, podman, docker, gvisor
	spares  int            // -1: codemode's default (1)
	servers map[string]any // the mcpServers entries of its config; nil: none
	env     []string       // more environment
	record  bool           // record the wire messages (for byte counts)
}

// cmProc is a running `codemode serve` with a go-sdk client on its stdio.
type cmProc struct {
	cs      *mcp.ClientSession
	cmd     *exec.Cmd
	rec     *recorder
	stderr  *lockedBuffer
	connect time.Duration // spawn to initialized
}

// backendEnv is the environment that selects a backend.
func (h *harness) backendEnv(backend string) []string {
	env := []string{"CODEMODE_BACKEND=" + backend}
	switch backend {
	case "podman":
		env = append(env, "CODEMODE_IMAGE="+h.image)
	case "docker":
		env = append(env, "CODEMODE_IMAGE="+h.image, "CODEMODE_RUNTIME="+h.dockerCLI, "DOCKER_HOST="+h.dockerHost)
	case "gvisor":
		env = append(env, "CODEMODE_IMAGE="+h.image, "CODEMODE_OCI_RUNTIME="+h.runsc)
	}
	return env
}

var procSeq struct {
	mu sync.Mutex
	n  int
}

// startCodemode runs `codemode serve` over stdio and connects to it.
func (h *harness) startCodemode(ctx context.Context, o cmOpts) (*cmProc, error) {
	procSeq.mu.Lock()
	procSeq.n++
	n := procSeq.n
	procSeq.mu.Unlock()
	dir := filepath.Join(h.tmp, fmt.Sprintf("codemode-%d", n))
	if err := os.MkdirAll(filepath.Join(dir, "home"), 0o755); err != nil {
		return nil, fmt.Errorf("creating codemode's home: %w", err)
	}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + filepath.Join(dir, "home"),
		"CODEMODE_STATE_DIR=" + filepath.Join(dir, "state"), "CODEMODE_LOG_LEVEL=info"}
	env = append(env, h.backendEnv(o.backend)...)
	if o.spares >= 0 {
		env = append(env, "CODEMODE_SPARES="+strconv.Itoa(o.spares))
	}
	servers := o.servers
	if servers == nil {
		servers = map[string]any{}
	}
	cfg := filepath.Join(dir, "mcp.json")
	data, _ := json.Marshal(map[string]any{"mcpServers": servers})
	if err := os.WriteFile(cfg, data, 0o644); err != nil {
		return nil, fmt.Errorf("writing codemode's config: %w", err)
	}
	env = append(env, "CODEMODE_CONFIG="+cfg)
	env = append(env, o.env...)
	cmd := exec.Command(h.codemode, "serve")
	cmd.Env = env
	cmd.Dir = dir
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	var tr mcp.Transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}
	var rec *recorder
	if o.record {
		rec = &recorder{}
		tr = &recordingTransport{inner: tr, rec: rec}
	}
	cctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	t0 := time.Now()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "codemode-bench", Version: "1"}, nil).Connect(cctx, tr, nil)
	if err != nil {
		return nil, fmt.Errorf("starting codemode (%s): %w\n%s", o.backend, err, tail(stderr.String(), 20))
	}
	return &cmProc{cs: cs, cmd: cmd, rec: rec, stderr: stderr, connect: time.Since(t0)}, nil
}

// close ends the client session; codemode then removes its sandboxes and exits.
func (p *cmProc) close() {
	done := make(chan struct{})
	go func() {
		p.cs.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		if p.cmd.Process != nil {
			p.cmd.Process.Kill()
		}
	}
}

func (p *cmProc) pid() int { return p.cmd.Process.Pid }

// call runs run_python once and returns the result and its duration.
func (p *cmProc) call(ctx context.Context, args map[string]any) (*mcp.CallToolResult, time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, 180*time.Second)
	defer cancel()
	t0 := time.Now()
	res, err := p.cs.CallTool(cctx, &mcp.CallToolParams{Name: "run_python", Arguments: args})
	d := time.Since(t0)
	if err != nil {
		return nil, d, fmt.Errorf("run_python: %w\ncodemode stderr:\n%s", err, tail(p.stderr.String(), 20))
	}
	if res.IsError {
		return res, d, fmt.Errorf("run_python failed: %s\ncodemode stderr:\n%s", resultText(res), tail(p.stderr.String(), 20))
	}
	return res, d, nil
}

// py runs code in a session and decodes the last line of its output as
// JSON into out (when out is not nil).
func (p *cmProc) py(ctx context.Context, session, code string, out any) error {
	args := map[string]any{"code": code, "timeout": 120}
	if session != "" {
		args["session"] = session
	}
	res, _, err := p.call(ctx, args)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	txt := strings.TrimSpace(resultText(res))
	if i := strings.LastIndexByte(txt, '\n'); i >= 0 {
		txt = txt[i+1:]
	}
	if err := json.Unmarshal([]byte(txt), out); err != nil {
		return fmt.Errorf("decoding the output %q: %w", txt, err)
	}
	return nil
}

// resultText concatenates the text blocks of a tool result.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// ---- /proc helpers ----

type procInfo struct {
	pid, ppid int
	cmdline   string
	exe       string
}

// processes lists every process on the machine.
func processes() map[int]procInfo {
	out := map[int]procInfo{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		out[pid] = procInfo{pid: pid, ppid: ppid, cmdline: strings.ReplaceAll(string(cl), "\x00", " "), exe: exe}
	}
	return out
}

// descendants returns the pids below root (not root itself).
func descendants(all map[int]procInfo, root int) []int {
	kids := map[int][]int{}
	for _, p := range all {
		kids[p.ppid] = append(kids[p.ppid], p.pid)
	}
	var out []int
	stack := []int{root}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, k := range kids[p] {
			out = append(out, k)
			stack = append(stack, k)
		}
	}
	return out
}

// mem is resident memory in KiB: RSS and PSS (shared pages divided among
// the processes that map them).
type mem struct{ rss, pss int }

func (m mem) add(o mem) mem { return mem{m.rss + o.rss, m.pss + o.pss} }

func procMem(pid int) mem {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return mem{}
	}
	defer f.Close()
	var m mem
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.Atoi(fields[1])
		switch fields[0] {
		case "Rss:":
			m.rss = v
		case "Pss:":
			m.pss = v
		}
	}
	return m
}

func mib(kb int) float64 { return float64(kb) / 1024 }

// loadavg returns the first three fields of /proc/loadavg.
func loadavg() string {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
