// Package sandboxtest is the conformance and posture suite every sandbox
// backend must pass: the session contract (stdio, exit codes, kill, wait,
// large transfers) and the isolation it promises, observed from inside the
// sandbox by real attempts (testdata/posture.py). Only tests import it.
package sandboxtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/sandbox/posture"
)

// Config describes the backend under test and what it is expected to show.
type Config struct {
	Backend sandbox.Backend
	// Python is the interpreter inside the sandbox (default python3).
	Python string
	// Loopback: the sandbox has an "lo" interface (gVisor with --network none has none).
	Loopback bool
	// ImageRoot: the root filesystem is an image that has its own (empty)
	// /home and /root; the host's must still be invisible.
	ImageRoot bool
	// PtraceContained: namespace and ptrace syscalls are served by a user-
	// space kernel (gVisor), so their success inside is not an escape.
	PtraceContained bool
	// PodNetwork and ExecScratch: see posture.Expect (Kubernetes Pods).
	PodNetwork, ExecScratch bool
	// NotEnforced names protections the backend cannot give on this host
	// (rootless podman on cgroup v1 has no memory or CPU cgroup): Probe
	// must report them as not enforced, saying why, instead of claiming them.
	NotEnforced []string
	// NoEgress, when set, says why the backend cannot carry the egress
	// proxy (gVisor refuses connections to host Unix sockets); the egress
	// case is skipped.
	NoEgress string
	// Leaks lists the backend's resources still present (processes,
	// containers, cgroups); it must return nothing after every test.
	Leaks func(t *testing.T) []string
	// Direct: sessions must have the direct pipes (sandbox.Direct);
	// without it, a backend that gives none skips their case.
	Direct bool
}

func (c Config) python() string {
	if c.Python == "" {
		return "python3"
	}
	return c.Python
}

var seq atomic.Int64

func newSpec(cfg Config, t *testing.T, code string) sandbox.Spec {
	name := strings.NewReplacer("/", "-", " ", "-", "_", "-").Replace(strings.ToLower(t.Name()))
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return sandbox.Spec{
		ID:      fmt.Sprintf("t%d-%s", seq.Add(1), strings.Trim(name, "-")),
		Command: []string{cfg.python(), "-I", "-c", code},
		Env:     []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/workspace"},
		Limits:  sandbox.Limits{MemoryBytes: 256 << 20, PIDs: 64, CPUs: 1, TmpBytes: 16 << 20, WorkspaceBytes: 16 << 20},
		Labels:  map[string]string{"codemode.test": "1"},
	}
}

type run struct {
	stdout, stderr []byte
	exit           sandbox.Exit
}

// runSpec starts spec, feeds stdin, collects output and waits (bounded).
func runSpec(t *testing.T, cfg Config, spec sandbox.Spec, stdin []byte, limit time.Duration) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	s, err := cfg.Backend.Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start(%s) = %v", spec.ID, err)
	}
	t.Cleanup(func() { s.Kill(context.Background()) })
	go func() {
		if len(stdin) > 0 {
			s.Stdin().Write(stdin)
		}
		s.Stdin().Close()
	}()
	var out, errOut bytes.Buffer
	done := make(chan struct{}, 2)
	go func() { io.Copy(&out, s.Stdout()); done <- struct{}{} }()
	go func() { io.Copy(&errOut, s.Stderr()); done <- struct{}{} }()
	exit, err := s.Wait(ctx)
	if err != nil {
		s.Kill(context.Background())
		t.Fatalf("Wait(%s) = %v; stdout=%q stderr=%q", spec.ID, err, out.String(), errOut.String())
	}
	for i := 0; i < 2; i++ {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("output of %s not closed after exit", spec.ID)
		}
	}
	return run{out.Bytes(), errOut.Bytes(), exit}
}

// Run runs the whole suite against cfg.Backend.
func Run(t *testing.T, cfg Config) {
	checkLeaks := func(t *testing.T) {
		if cfg.Leaks == nil {
			return
		}
		t.Cleanup(func() {
			deadline := time.Now().Add(5 * time.Second)
			for {
				leaks := cfg.Leaks(t)
				if len(leaks) == 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Errorf("leftovers after test: %v", leaks)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	tests := []struct {
		name string
		fn   func(*testing.T, Config)
	}{
		{"Probe", testProbe},
		{"StdioRoundTrip", testStdio},
		{"DirectPipes", testDirect},
		{"LargeTransfer", testLargeTransfer},
		{"ExitCode", testExitCode},
		{"Environment", testEnvironment},
		{"KillStopsEverything", testKill},
		{"KillIsIdempotent", testKillIdempotent},
		{"Posture", testPosture},
		{"MemoryLimit", testMemoryLimit},
		{"PIDsLimit", testPIDsLimit},
		{"WorkspaceSize", testWorkspaceSize},
		{"ConcurrentSessions", testConcurrent},
		{"Egress", testEgress},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			tc.fn(t, cfg)
		})
	}
}

func testProbe(t *testing.T, cfg Config) {
	caps, err := cfg.Backend.Probe(t.Context())
	if err != nil {
		t.Fatalf("Probe() = %v", err)
	}
	if caps.Backend != cfg.Backend.Name() || len(caps.Protections) == 0 {
		t.Fatalf("Probe() = %+v; want backend %q and protections", caps, cfg.Backend.Name())
	}
	for _, name := range []string{sandbox.ProtUser, sandbox.ProtNoCaps, sandbox.ProtNoNewPrivs, sandbox.ProtReadOnlyFS, sandbox.ProtNoNetwork, sandbox.ProtMemoryLimit, sandbox.ProtPIDsLimit} {
		if slices.Contains(cfg.NotEnforced, name) {
			continue
		}
		if p, ok := caps.Protection(name); !ok || !p.Enforced {
			t.Errorf("Probe(): protection %s = %+v, want enforced", name, p)
		}
	}
	for _, name := range cfg.NotEnforced {
		if p, ok := caps.Protection(name); !ok || p.Enforced || p.How == "" {
			t.Errorf("Probe(): protection %s = %+v, want reported as not enforced, with why", name, p)
		}
	}
}

func testStdio(t *testing.T, cfg Config) {
	r := runSpec(t, cfg, newSpec(cfg, t, "import sys; d=sys.stdin.read(); sys.stdout.write(d.upper()); sys.stderr.write('diag')"), []byte("hello sandbox"), 30*time.Second)
	if string(r.stdout) != "HELLO SANDBOX" || !strings.Contains(string(r.stderr), "diag") || r.exit.Code != 0 {
		t.Fatalf("round trip: stdout=%q stderr=%q exit=%+v", r.stdout, r.stderr, r.exit)
	}
}

// testDirect: the direct pipes (sandbox.Direct) reach the command at
// sandbox.DirectReplyFD and DirectRequestFD.
func testDirect(t *testing.T, cfg Config) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	code := fmt.Sprintf("import os\nos.write(%d, os.read(%d, 100).upper())", sandbox.DirectRequestFD, sandbox.DirectReplyFD)
	s, err := cfg.Backend.Start(ctx, newSpec(cfg, t, code))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Kill(context.Background()) })
	s.Stdin().Close()
	go io.Copy(io.Discard, s.Stdout())
	var stderr bytes.Buffer
	go io.Copy(&stderr, s.Stderr())
	var requests io.Reader
	var replies io.WriteCloser
	if d, ok := s.(sandbox.Direct); ok {
		requests, replies = d.DirectPipes()
	}
	if requests == nil {
		if cfg.Direct {
			t.Fatal("the session has no direct pipes")
		}
		t.Skip("the backend gives sessions no direct pipes")
	}
	if _, err := io.WriteString(replies, "hello"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(requests, got); err != nil || string(got) != "HELLO" {
		t.Fatalf("the request pipe carried %q (%v); stderr %q", got, err, stderr.String())
	}
	if exit, err := s.Wait(ctx); err != nil || exit.Code != 0 {
		t.Fatalf("exit %+v, %v; stderr %q", exit, err, stderr.String())
	}
}

func testLargeTransfer(t *testing.T, cfg Config) {
	in := bytes.Repeat([]byte("0123456789abcdef"), 8<<20/16) // 8 MiB each way
	code := "import sys\nwhile True:\n    b = sys.stdin.buffer.read1(1<<16)\n    if not b: break\n    sys.stdout.buffer.write(b)\n"
	r := runSpec(t, cfg, newSpec(cfg, t, code), in, 60*time.Second)
	if !bytes.Equal(r.stdout, in) || r.exit.Code != 0 {
		t.Fatalf("8 MiB echo: got %d bytes (equal=%v), exit %+v, stderr %q", len(r.stdout), bytes.Equal(r.stdout, in), r.exit, r.stderr)
	}
}

func testExitCode(t *testing.T, cfg Config) {
	r := runSpec(t, cfg, newSpec(cfg, t, "import sys; sys.exit(7)"), nil, 30*time.Second)
	if r.exit.Code != 7 || r.exit.Killed || r.exit.OOMKilled {
		t.Fatalf("exit = %+v, want code 7", r.exit)
	}
}

func testEnvironment(t *testing.T, cfg Config) {
	spec := newSpec(cfg, t, "import os, json; print(json.dumps(dict(os.environ)))")
	spec.Env = append(spec.Env, "PROBE=1")
	r := runSpec(t, cfg, spec, nil, 30*time.Second)
	var env map[string]string
	if err := json.Unmarshal(r.stdout, &env); err != nil {
		t.Fatalf("env output %q: %v", r.stdout, err)
	}
	if env["PROBE"] != "1" {
		t.Errorf("PROBE not passed: %v", env)
	}
	for k := range env {
		switch k {
		case "PATH", "LANG", "HOME", "PROBE", "LC_CTYPE", "HOSTNAME", "container", "TERM", "PWD":
		default:
			t.Errorf("unexpected variable %s=%q in the sandbox (host environment must not leak)", k, env[k])
		}
	}
}

func testKill(t *testing.T, cfg Config) {
	// A busy loop, a setsid grandchild and a sleeper: Kill must end all of them.
	code := "import os, subprocess, sys, time\n" +
		"subprocess.Popen(['python3', '-c', 'import os; os.setsid(); import time; time.sleep(600)'])\n" +
		"print('ready', flush=True)\nwhile True: pass\n"
	spec := newSpec(cfg, t, code)
	s, err := cfg.Backend.Start(t.Context(), spec)
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(s.Stdout(), buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("reading ready: %q %v", buf, err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := s.Kill(ctx); err != nil {
		t.Fatalf("Kill = %v", err)
	}
	exit, err := s.Wait(ctx)
	if err != nil || !exit.Killed {
		t.Fatalf("Wait after Kill = %+v, %v; want Killed", exit, err)
	}
	t.Logf("kill took %s", time.Since(start))
	if _, err := io.Copy(io.Discard, s.Stdout()); err != nil {
		t.Fatalf("stdout after kill: %v", err)
	}
}

func testKillIdempotent(t *testing.T, cfg Config) {
	s, err := cfg.Backend.Start(t.Context(), newSpec(cfg, t, "import time; time.sleep(600)"))
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() { errs <- s.Kill(t.Context()) }()
	}
	for i := 0; i < 3; i++ {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Kill = %v", err)
		}
	}
	if err := s.Kill(t.Context()); err != nil {
		t.Errorf("Kill after Kill = %v", err)
	}
	e1, _ := s.Wait(t.Context())
	e2, _ := s.Wait(t.Context())
	if e1 != e2 {
		t.Errorf("Wait results differ: %+v vs %+v", e1, e2)
	}
}

func testPosture(t *testing.T, cfg Config) {
	spec := newSpec(cfg, t, "")
	report, findings, err := posture.Run(t.Context(), cfg.Backend, spec, posture.Expect{
		ImageRoot: cfg.ImageRoot, NoLoopback: !cfg.Loopback, PtraceAllowed: cfg.PtraceContained,
		PodNetwork: cfg.PodNetwork, ExecScratch: cfg.ExecScratch})
	if err != nil {
		t.Fatalf("posture probe: %v", err)
	}
	t.Logf("posture: %+v", report)
	for _, f := range posture.Failed(findings) {
		t.Errorf("posture: %s: got %s", f.Check, f.Got)
	}
}

func testMemoryLimit(t *testing.T, cfg Config) {
	// Touch 1 GiB in 1 MiB steps against a 256 MiB limit.
	code := "import sys\nchunks=[]\nfor i in range(1024):\n    chunks.append(bytearray(1<<20))\n    if i % 64 == 0: print(i, flush=True)\nprint('survived', flush=True)\n"
	r := runSpec(t, cfg, newSpec(cfg, t, code), nil, 60*time.Second)
	if strings.Contains(string(r.stdout), "survived") {
		t.Fatalf("1 GiB allocation survived a 256 MiB limit: exit %+v", r.exit)
	}
	if !(r.exit.OOMKilled || r.exit.Code == 137 || strings.Contains(string(r.stderr), "MemoryError")) {
		t.Fatalf("1 GiB allocation: exit %+v stderr %q; want OOM kill or MemoryError", r.exit, r.stderr)
	}
	t.Logf("memory hog ended: %+v", r.exit)
}

func testPIDsLimit(t *testing.T, cfg Config) {
	code := "import os, time\nn = 0\ntry:\n    for i in range(1000):\n        if os.fork() == 0:\n            time.sleep(30); os._exit(0)\n        n += 1\nexcept OSError as e:\n    print('stopped', n, e.errno, flush=True)\nelse:\n    print('unbounded', n, flush=True)\nos._exit(0)\n"
	r := runSpec(t, cfg, newSpec(cfg, t, code), nil, 90*time.Second)
	var n, eno int
	if _, err := fmt.Sscanf(string(r.stdout), "stopped %d %d", &n, &eno); err != nil {
		// Killed whole is bounded too: under gVisor the children's memory
		// reaches the sandbox's limit before the process limit.
		if r.exit.OOMKilled || r.exit.Code == 137 {
			t.Logf("fork bomb ended the sandbox: %+v", r.exit)
			return
		}
		t.Fatalf("fork bomb not bounded: stdout %q exit %+v stderr %q", r.stdout, r.exit, r.stderr)
	}
	if n >= 64 {
		t.Fatalf("fork bomb made %d processes against a limit of 64", n)
	}
	t.Logf("fork bomb stopped after %d forks (errno %d)", n, eno)
}

func testWorkspaceSize(t *testing.T, cfg Config) {
	code := "import errno\ntry:\n    with open('/workspace/big', 'wb') as f:\n        for i in range(64): f.write(b'x' * (1<<20))\n    print('unbounded')\nexcept OSError as e:\n    print('stopped', errno.errorcode[e.errno])\n"
	r := runSpec(t, cfg, newSpec(cfg, t, code), nil, 60*time.Second)
	if strings.TrimSpace(string(r.stdout)) != "stopped ENOSPC" {
		t.Fatalf("writing 64 MiB to a 16 MiB workspace: %q %q", r.stdout, r.stderr)
	}
}

func testConcurrent(t *testing.T, cfg Config) {
	const n = 4
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			spec := newSpec(cfg, t, fmt.Sprintf("import os; open('/workspace/mine','w').write('%d'); import time; time.sleep(0.2); print(open('/workspace/mine').read(), len(os.listdir('/workspace')))", i))
			spec.ID += fmt.Sprint("-", i)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			s, err := cfg.Backend.Start(ctx, spec)
			if err != nil {
				errs <- err
				return
			}
			s.Stdin().Close()
			out, _ := io.ReadAll(s.Stdout())
			s.Wait(ctx)
			if got, want := strings.TrimSpace(string(out)), fmt.Sprintf("%d 1", i); got != want {
				errs <- fmt.Errorf("session %d saw %q, want %q (sessions must not share files)", i, got, want)
				return
			}
			errs <- nil
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
