package container

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/sandbox/sandboxtest"
	"github.com/codemode/codemode/internal/testenv"
)

func newBackend(t *testing.T, opts Options) *Backend {
	opts.Image = testenv.Image(t)
	opts.StateDir = t.TempDir()
	b := New(&opts)
	t.Cleanup(func() { b.Close() })
	return b
}

// withoutRuntime drops a global --runtime flag (the gVisor backend picks
// its runtime per container).
func withoutRuntime(argv []string) []string {
	out := slices.Clone(argv)
	if i := slices.Index(out, "--runtime"); i >= 0 && i+1 < len(out) {
		out = slices.Delete(out, i, i+2)
	}
	return out
}

// noLitter fails t if it leaves files in the working directory: conmon
// writes "oom" into podman's when a container dies at its memory limit
// (the suite's MemoryLimit), which was codemode's own.
func noLitter(t *testing.T) {
	before, _ := os.ReadDir(".")
	t.Cleanup(func() {
		after, _ := os.ReadDir(".")
		for _, e := range after {
			if !slices.ContainsFunc(before, func(b os.DirEntry) bool { return b.Name() == e.Name() }) {
				t.Errorf("the backend left %q in codemode's working directory", e.Name())
				os.Remove(e.Name())
			}
		}
	})
}

func TestPodman(t *testing.T) {
	testenv.Slow(t, "the backend suite on podman")
	noLitter(t)
	b := newBackend(t, Options{Name: "podman", Command: testenv.Podman(t)})
	sandboxtest.Run(t, sandboxtest.Config{Backend: b, Loopback: true, ImageRoot: true, Leaks: containerLeaks(b), Direct: true})
}

func TestDocker(t *testing.T) {
	testenv.Slow(t, "the backend suite on docker")
	b := newBackend(t, Options{Name: "docker", Command: testenv.Docker(t)})
	sandboxtest.Run(t, sandboxtest.Config{Backend: b, Loopback: true, ImageRoot: true, Leaks: containerLeaks(b)})
}

func TestGVisorWithPodman(t *testing.T) {
	testenv.Slow(t, "the backend suite on gVisor under podman")
	noLitter(t)
	b := newBackend(t, Options{Name: "gvisor", Command: withoutRuntime(testenv.Podman(t)), OCIRuntime: testenv.Runsc(t)})
	sandboxtest.Run(t, sandboxtest.Config{Backend: b, Loopback: false, ImageRoot: true, PtraceContained: true, NoEgress: b.EgressBlocker(), Leaks: containerLeaks(b)})
}

func TestGVisorWithDocker(t *testing.T) {
	testenv.Slow(t, "the backend suite on gVisor under docker")
	// The docker daemon knows runsc by the name testdeps registered.
	b := newBackend(t, Options{Name: "gvisor", Command: testenv.Docker(t), OCIRuntime: "runsc"})
	caps, err := b.Probe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(caps.Engine, "docker") || !strings.Contains(caps.Engine, "runsc") {
		t.Fatalf("engine = %q", caps.Engine)
	}
	// Under docker, runsc's netstack keeps lo (under podman it has none).
	sandboxtest.Run(t, sandboxtest.Config{Backend: b, Loopback: true, ImageRoot: true, PtraceContained: true, NoEgress: b.EgressBlocker(), Leaks: containerLeaks(b)})
}

func TestLeftoverContainersAreRemovedAtStartup(t *testing.T) {
	testenv.Slow(t, "the leftover-container cleanup on podman")
	podman := testenv.Podman(t)
	b := newBackend(t, Options{Name: "podman", Command: podman})
	if _, err := b.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A container owned by a codemode process that no longer exists.
	e := b.eng
	name := "codemode-999999-leftover"
	if _, err := e.output(context.Background(), "run", "-d", "--name", name, "--label", labelManaged+"=1",
		"--label", labelOwner+"=999999-1", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"--network", "none", testenv.Image(t), "sleep", "600"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.remove(context.Background(), name) })
	fresh := newBackend(t, Options{Name: "podman", Command: podman})
	if _, err := fresh.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	found, _ := e.labelled(context.Background(), labelOwner)
	if _, ok := found[name]; ok {
		t.Fatalf("the container of a dead codemode survived a new codemode's start")
	}
}

func containerLeaks(b *Backend) func(t *testing.T) []string {
	return func(t *testing.T) []string {
		found, err := b.eng.labelled(context.Background(), labelOwner)
		if err != nil {
			return []string{err.Error()}
		}
		var out []string
		for name, owner := range found {
			if owner == b.owner {
				out = append(out, "container "+name)
			}
		}
		return out
	}
}

// TestConcurrentRemovesAllSucceed: several `rm -f` of one container at once
// (a Kill racing the session's own cleanup) all count as success, and the
// container is gone when each returns. Docker answers all but one with
// "removal ... is already in progress".
func TestConcurrentRemovesAllSucceed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command func(testing.TB) []string
	}{
		{"podman", testenv.Podman},
		{"docker", testenv.Docker},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t, Options{Name: tc.name, Command: tc.command(t)})
			if _, err := b.Probe(t.Context()); err != nil {
				t.Fatal(err)
			}
			e := b.eng
			name := fmt.Sprintf("codemode-%d-rmrace", os.Getpid())
			if _, err := e.output(t.Context(), "run", "-d", "--name", name, "--label", labelManaged+"=1",
				"--label", labelOwner+"="+b.owner, "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
				"--network", "none", testenv.Image(t), "sleep", "600"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.remove(context.Background(), name) })
			const n = 4
			errs, start := make(chan error, n), make(chan struct{})
			for range n {
				go func() {
					<-start
					err := e.remove(t.Context(), name)
					if err == nil {
						if ok, ierr := e.exists(t.Context(), name); ok || ierr != nil {
							err = fmt.Errorf("remove returned but the container exists (%v, %v)", ok, ierr)
						}
					}
					errs <- err
				}()
			}
			close(start)
			for range n {
				if err := <-errs; err != nil {
					t.Errorf("concurrent remove = %v", err)
				}
			}
		})
	}
}
