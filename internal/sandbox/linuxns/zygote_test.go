//go:build linux

package linuxns

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/sandbox/posture"
	"github.com/codemode/codemode/internal/testenv"
)

func zygoteBackend(t *testing.T, preload ...string) *Backend {
	t.Helper()
	testenv.NativePython(t)
	if os.Geteuid() != 0 {
		t.Skip("the zygote needs root")
	}
	b := New(&Options{Zygote: true, Preload: preload})
	t.Cleanup(func() { b.Close() })
	return b
}

func pySpec(id, code string) sandbox.Spec {
	return sandbox.Spec{
		ID:      id,
		Command: []string{"python3", "-I", "-c", code},
		Env:     []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/workspace"},
		Limits:  sandbox.Limits{MemoryBytes: 256 << 20, PIDs: 64, TmpBytes: 16 << 20, WorkspaceBytes: 16 << 20},
	}
}

// runPy runs code in a new session and returns its stdout.
func runPy(t *testing.T, b *Backend, id, code string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := b.Start(ctx, pySpec(id, code))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer s.Kill(context.Background())
	s.Stdin().Close()
	var out, errOut bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&errOut, s.Stderr()); close(done) }()
	io.Copy(&out, s.Stdout())
	exit, err := s.Wait(ctx)
	<-done
	if err != nil || exit.Code != 0 {
		t.Fatalf("session %s: %v %v; stderr: %s", id, exit, err, errOut.String())
	}
	return strings.TrimSpace(out.String())
}

// A session is forked from the template: what the template imported is
// already there, and only the session's own processes are visible.
func TestZygoteSessionsAreForked(t *testing.T) {
	b := zygoteBackend(t, "decimal")
	got := runPy(t, b, "forked", "import sys, os; print('decimal' in sys.modules, os.getpid(), os.getppid())")
	if got != "True 1 0" {
		t.Fatalf("session saw %q, want %q (preloaded module present, pid 1 of its own namespace)", got, "True 1 0")
	}
}

// The posture probe (every protection tried from the inside) reports the
// same for a forked session as for a booted one; only the booted one's init
// (pid 1, with python as pid 2) differs. A child that skipped a step
// (seccomp, capabilities, no_new_privs, its uid, its pid, mount or network
// namespace, its tmpfs) would differ here.
func TestZygotePostureEqualsBooted(t *testing.T) {
	zb := zygoteBackend(t)
	booted := New(nil)
	run := func(b *Backend, id string) posture.Report {
		r, findings, err := posture.Run(t.Context(), b, pySpec(id, ""), posture.Expect{})
		if err != nil {
			t.Fatalf("posture %s: %v", id, err)
		}
		for _, f := range posture.Failed(findings) {
			t.Errorf("posture %s: %s: got %s", id, f.Check, f.Got)
		}
		return r
	}
	want, got := run(booted, "posture-booted"), run(zb, "posture-forked")
	if len(want.PIDsVisible) != len(got.PIDsVisible)+1 {
		t.Errorf("pids visible: booted %v, forked %v (want the booted ones less its init)", want.PIDsVisible, got.PIDsVisible)
	}
	want.PIDsVisible, got.PIDsVisible = nil, nil
	if a, b := jsonOf(want), jsonOf(got); a != b {
		t.Errorf("posture differs:\nbooted %s\nforked %s", a, b)
	}
}

// Checks that only a step of the child's setup (not the read-only root it
// shares with its template) enforces: Landlock forbids writing procfs files
// that no mount option protects.
func TestZygoteLandlock(t *testing.T) {
	for _, b := range []*Backend{New(nil), zygoteBackend(t)} {
		got := runPy(t, b, "landlock-"+strconv.FormatBool(b.opts.Zygote), `
try:
    open("/proc/self/comm", "w").write("x")
    print("written")
except PermissionError as e:
    print("denied")
`)
		if got != "denied" {
			t.Errorf("zygote=%v: writing /proc/self/comm: %s, want denied", b.opts.Zygote, got)
		}
	}
}

// Two forked sessions share nothing: one cannot see the other's files or
// name any process outside its own pid namespace (so neither the other
// session nor the template, by signal, ptrace or /proc/<pid>/mem).
func TestZygoteSessionsIsolated(t *testing.T) {
	b := zygoteBackend(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// The first session holds a secret in memory and in its files, and says
	// its host-visible identity, then waits.
	holder, err := b.Start(ctx, pySpec("holder", `
import os, sys, time
secret = b"zygote-secret-" + b"%d" % 424242
open("/tmp/secret", "wb").write(secret)
open("/workspace/secret", "wb").write(secret)
print("ready", flush=True)
sys.stdin.read()
`))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Kill(context.Background())
	line := make([]byte, 6)
	if _, err := io.ReadFull(holder.Stdout(), line); err != nil || string(line) != "ready\n" {
		t.Fatalf("holder: %q %v", line, err)
	}
	got := runPy(t, b, "prober", `
import os, signal
found = []
for d in ("/tmp", "/workspace", "/dev/shm"):
    found += [d + "/" + f for f in os.listdir(d)]
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
alive = []
for pid in range(2, int(open("/proc/sys/kernel/pid_max").read()) + 1):
    try:
        os.kill(pid, 0)
        alive.append(pid)
    except ProcessLookupError:
        pass
    except PermissionError:
        alive.append(pid)
print(found, pids, alive)
`)
	if got != "[] [1] []" {
		t.Fatalf("prober saw %s; want no files, only its own pid 1, no other process to signal", got)
	}
}

func jsonOf(r posture.Report) string {
	data, _ := json.MarshalIndent(r, "", " ")
	return string(data)
}

// Sessions of one zygote get their own mount sources at the same targets,
// read-only unless writable, below /workspace too.
func TestZygoteMounts(t *testing.T) {
	b := zygoteBackend(t)
	for _, name := range []string{"first", "second"} {
		in, out := t.TempDir(), t.TempDir()
		for _, d := range []string{in, out} {
			os.Chmod(d, 0o777)
		}
		if err := os.WriteFile(in+"/name", []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		spec := pySpec("mounts-"+name, `
import os
name = open("/workspace/data/name").read()
try:
    open("/workspace/data/x", "w")
    ro = "writable"
except OSError as e:
    ro = "read-only"
open("/srv/out/got", "w").write(name)
print(name, ro)
`)
		spec.Mounts = []sandbox.Mount{{Source: in, Target: "/workspace/data"}, {Source: out, Target: "/srv/out", Writable: true}}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		s, err := b.Start(ctx, spec)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		s.Stdin().Close()
		got, _ := io.ReadAll(s.Stdout())
		s.Wait(ctx)
		cancel()
		if strings.TrimSpace(string(got)) != name+" read-only" {
			t.Errorf("session %s printed %q, want %q", name, got, name+" read-only")
		}
		if data, _ := os.ReadFile(out + "/got"); string(data) != name {
			t.Errorf("session %s wrote %q to its writable mount", name, data)
		}
	}
	if n := len(b.zygotePIDs()); n != 1 {
		t.Errorf("%d zygotes for sessions that differ only in mount sources, want 1", n)
	}
}

// A zygote that dies takes its sessions with it (they end as killed, like a
// sandbox whose init died), and the next session starts a new zygote.
func TestZygoteDeathEndsItsSessions(t *testing.T) {
	b := zygoteBackend(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := b.Start(ctx, pySpec("orphan", "import sys; sys.stdin.read()"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill(context.Background())
	zygotes := b.zygotePIDs()
	if len(zygotes) != 1 {
		t.Fatalf("zygotes: %v", zygotes)
	}
	syscall.Kill(zygotes[0], syscall.SIGKILL)
	exit, err := s.Wait(ctx)
	if err != nil || exit.Signal != "SIGKILL" {
		t.Fatalf("session of a dead zygote: %v %v, want SIGKILL", exit, err)
	}
	if got := runPy(t, b, "after", "print('ok')"); got != "ok" {
		t.Fatalf("after the zygote died: %q", got)
	}
	if now := b.zygotePIDs(); len(now) != 1 || now[0] == zygotes[0] {
		t.Fatalf("zygotes after restart: %v (before %v)", now, zygotes)
	}
}

// A zygote that cannot start (here: no room in its memory limit) leaves
// sessions to boot Python, as without the zygote.
func TestZygoteThatCannotStartBoots(t *testing.T) {
	testenv.NativePython(t)
	if os.Geteuid() != 0 {
		t.Skip("the zygote needs root")
	}
	b := New(&Options{Zygote: true, ZygoteMemoryBytes: 1 << 20})
	t.Cleanup(func() { b.Close() })
	if b.cgroups.version == 0 {
		t.Skip("no cgroup to hold the zygote's memory limit")
	}
	if got := runPy(t, b, "booted", "import os; print(os.getppid())"); got != "1" {
		t.Fatalf("session's parent pid %s, want 1 (python under a booted init)", got)
	}
	if n := len(b.zygotePIDs()); n != 0 {
		t.Fatalf("%d zygotes running", n)
	}
}

// The caches the template's imports build stay out of the sessions'
// /workspace: matplotlib keeps its choice of /tmp in the children.
func TestZygotePreloadCachesInTmp(t *testing.T) {
	b := zygoteBackend(t, "matplotlib.pyplot")
	got := runPy(t, b, "caches", "import sys, os\n"+
		"m = sys.modules.get('matplotlib')\n"+
		"print(m.get_cachedir() if m else 'no matplotlib', os.listdir('/workspace'))")
	if got == "no matplotlib []" {
		t.Skip("matplotlib is not installed for the host's python")
	}
	if want := "/tmp/matplotlib []"; got != want {
		t.Fatalf("forked session: %q, want %q", got, want)
	}
}

// The direct pipes (sandbox.Direct) reach the command at
// sandbox.DirectReplyFD and DirectRequestFD, booted or forked, and no other
// descriptor of the host's comes with them.
func TestDirectPipes(t *testing.T) {
	for _, zygote := range []bool{false, true} {
		t.Run("zygote="+strconv.FormatBool(zygote), func(t *testing.T) {
			b := zygoteBackend(t)
			if !zygote {
				b = New(&Options{})
				t.Cleanup(func() { b.Close() })
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			code := fmt.Sprintf("import os\nos.write(%d, os.read(%d, 100).upper())\n"+
				"print(os.read(%d, 100) == b'', sorted(int(fd) for fd in os.listdir('/proc/self/fd')))",
				sandbox.DirectRequestFD, sandbox.DirectReplyFD, sandbox.DirectReplyFD)
			s, err := b.Start(ctx, pySpec("direct-"+strconv.FormatBool(zygote), code))
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer s.Kill(context.Background())
			s.Stdin().Close()
			d, ok := s.(sandbox.Direct)
			if !ok {
				t.Fatal("a native session is not a sandbox.Direct")
			}
			requests, replies := d.DirectPipes()
			if requests == nil || replies == nil {
				t.Fatal("a native session has no direct pipes")
			}
			if _, err := io.WriteString(replies, "hello"); err != nil {
				t.Fatal(err)
			}
			echoed := make([]byte, 5)
			if _, err := io.ReadFull(requests, echoed); err != nil || string(echoed) != "HELLO" {
				t.Fatalf("the request pipe carried %q (%v), want HELLO", echoed, err)
			}
			replies.Close()
			go io.Copy(io.Discard, s.Stderr())
			out, _ := io.ReadAll(s.Stdout())
			// 0-2, the two direct pipes, and the directory listdir opened.
			if got, want := strings.TrimSpace(string(out)), "True [0, 1, 2, 3, 4, 5]"; got != want {
				t.Fatalf("session printed %q, want %q", got, want)
			}
		})
	}
}
