package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/sandbox/sandboxtest"
	"github.com/codemode/codemode/internal/testenv"
)

// These tests run against the real test cluster (testenv.Cluster), each
// in a namespace of its own that is removed afterwards.

// clusterBackend returns a backend on the test cluster, in a fresh
// namespace, and checks at the end that no Pod was left behind.
func clusterBackend(t testing.TB) *Backend {
	t.Helper()
	testenv.Slow(t, "sandbox Pods on the test cluster")
	k := testenv.Cluster(t)
	setup := New(Options{Kubeconfig: k.Kubeconfig, JanitorEvery: -1})
	c, err := setup.connect()
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("cm-test-%s-%d", strings.ToLower(shortHash(t.Name(), 6)), time.Now().UnixNano()%1e6)
	if _, err := c.cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := New(Options{Kubeconfig: k.Kubeconfig, Namespace: ns, Image: k.Image, JanitorEvery: -1})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if left := managedPods(t, b); len(left) > 0 {
			t.Errorf("Pods left behind: %v", left)
		}
		b.Close()
		c.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		setup.Close()
	})
	return b
}

func managedPods(t testing.TB, b *Backend) []string {
	c, err := b.connect()
	if err != nil {
		return []string{err.Error()}
	}
	list, err := c.cs.CoreV1().Pods(c.namespace).List(context.Background(), metav1.ListOptions{LabelSelector: labelManagedBy + "=" + managedBy})
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, p := range list.Items {
		out = append(out, "pod "+p.Name)
	}
	return out
}

func TestClusterSandboxSuite(t *testing.T) {
	b := clusterBackend(t)
	sandboxtest.Run(t, sandboxtest.Config{
		Backend: b, Loopback: true, ImageRoot: true, PodNetwork: true, ExecScratch: true,
		NoEgress: b.EgressBlocker(),
		Leaks:    func(t *testing.T) []string { return managedPods(t, b) },
	})
}

// counter answers each line with a wire 'O' frame carrying how many lines
// it has seen: its state shows whether a reattach kept the session.
const counter = `import os, struct, sys
def frame(k, p):
    os.write(1, k + struct.pack(">I", len(p)) + p)
frame(b"M", b'{"type":"ready"}')
n = 0
for line in sys.stdin.buffer:
    n += 1
    frame(b"O", b"%d %s" % (n, line.strip()))
`

func readFrame(t *testing.T, r io.Reader) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		hdr := make([]byte, 5)
		if _, err := io.ReadFull(r, hdr); err != nil {
			got <- "error: " + err.Error()
			return
		}
		body := make([]byte, int(hdr[1])<<24|int(hdr[2])<<16|int(hdr[3])<<8|int(hdr[4]))
		if _, err := io.ReadFull(r, body); err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- string(hdr[0]) + " " + string(body)
	}()
	select {
	case s := <-got:
		return s
	case <-time.After(30 * time.Second):
		t.Fatal("no frame within 30 s")
		return ""
	}
}

func counterSpec(id string, labels map[string]string) sandbox.Spec {
	return sandbox.Spec{ID: id, Command: []string{"python3", "-I", "-c", counter},
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}, Labels: labels,
		Limits: sandbox.Limits{MemoryBytes: 128 << 20, CPUs: 0.5, TmpBytes: 8 << 20, WorkspaceBytes: 8 << 20}}
}

func TestClusterReattach(t *testing.T) {
	b1 := clusterBackend(t)
	labels := map[string]string{"codemode.session": "alice's notebook"}
	began := time.Now()
	s1, err := b1.Start(t.Context(), counterSpec("reattach", labels))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cold start (Pod created to keeper attached): %s", time.Since(began))
	t.Cleanup(func() { s1.Kill(context.Background()) })
	if got := readFrame(t, s1.Stdout()); got != `M {"type":"ready"}` {
		t.Fatalf("first frame %q", got)
	}
	io.WriteString(s1.Stdin(), "one\n")
	if got := readFrame(t, s1.Stdout()); got != "O 1 one" {
		t.Fatalf("answer %q", got)
	}

	if _, err := b1.Reattach(t.Context(), map[string]string{"codemode.session": "bob"}); !errors.Is(err, sandbox.ErrNotFound) {
		t.Fatalf("Reattach(no such session) = %v, want ErrNotFound", err)
	}

	// Another replica (here, another Backend) takes the session over.
	b2 := New(Options{Kubeconfig: b1.opts.Kubeconfig, Namespace: b1.opts.Namespace, Image: b1.opts.Image, JanitorEvery: -1})
	defer b2.Close()
	began = time.Now()
	s2, err := b2.Reattach(t.Context(), labels)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reattach: %s", time.Since(began))
	if s2.ID() != "reattach" {
		t.Errorf("reattached ID = %q", s2.ID())
	}
	if got := readFrame(t, s2.Stdout()); got != `M {"type":"ready"}` {
		t.Fatalf("reattached session starts with %q, want the ready message again", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	exit, err := s1.Wait(ctx)
	if err != nil || !exit.Detached {
		t.Fatalf("taken-over session: Wait = %+v, %v; want Detached", exit, err)
	}
	if err := s1.Kill(ctx); err != nil {
		t.Fatalf("Kill of a taken-over session = %v", err)
	}
	io.WriteString(s2.Stdin(), "two\n")
	if got := readFrame(t, s2.Stdout()); got != "O 2 two" {
		t.Fatalf("after takeover and the old session's Kill: %q, want the state kept (O 2 two)", got)
	}
	if err := s2.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if exit, err := s2.Wait(ctx); err != nil || !exit.Killed {
		t.Fatalf("Wait after Kill = %+v, %v", exit, err)
	}
	if left := managedPods(t, b1); len(left) > 0 {
		t.Fatalf("Kill returned with %v still there", left)
	}
}

// A spare relabelled for its session is found by the session's labels
// alone, and a Detach leaves it running for the next replica.
func TestClusterRelabelDetach(t *testing.T) {
	b1 := clusterBackend(t)
	s1, err := b1.Start(t.Context(), counterSpec("spare-relabel", map[string]string{"codemode.session": "spare"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s1.Kill(context.Background()) })
	readFrame(t, s1.Stdout())
	io.WriteString(s1.Stdin(), "one\n")
	if got := readFrame(t, s1.Stdout()); got != "O 1 one" {
		t.Fatalf("answer %q", got)
	}
	labels := map[string]string{"codemode.session-owner": "principal:alice", "codemode.session": "notes", sandbox.LabelLasting: "true"}
	if err := s1.(sandbox.Lasting).Relabel(t.Context(), labels); err != nil {
		t.Fatal(err)
	}
	if _, err := b1.Reattach(t.Context(), map[string]string{"codemode.session": "spare"}); !errors.Is(err, sandbox.ErrNotFound) {
		t.Fatalf("Reattach by the spare's old label = %v, want ErrNotFound", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := s1.(sandbox.Lasting).Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if exit, err := s1.Wait(ctx); err != nil || !exit.Detached {
		t.Fatalf("Wait after Detach = %+v, %v; want Detached", exit, err)
	}
	b2 := New(Options{Kubeconfig: b1.opts.Kubeconfig, Namespace: b1.opts.Namespace, Image: b1.opts.Image, JanitorEvery: -1})
	defer b2.Close()
	s2, err := b2.Reattach(t.Context(), labels)
	if err != nil {
		t.Fatalf("Reattach by the session's labels after Detach: %v", err)
	}
	readFrame(t, s2.Stdout())
	io.WriteString(s2.Stdin(), "two\n")
	if got := readFrame(t, s2.Stdout()); got != "O 2 two" {
		t.Fatalf("after Detach and Reattach: %q, want the state kept (O 2 two)", got)
	}
	if err := s2.Kill(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestClusterJanitor(t *testing.T) {
	b := clusterBackend(t)
	c, err := b.connect()
	if err != nil {
		t.Fatal(err)
	}
	// A live replica: any Pod will do; its sandboxes are kept.
	live, err := b.Start(t.Context(), counterSpec("live-replica", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Kill(context.Background())
	liveName := podName("live-replica")

	now := time.Now()
	gone := replica{ID: "gone-replica", Kind: "pod", Namespace: c.namespace}
	host := c.replica // out of cluster: this host, this process
	pods := []struct {
		id      string
		replica replica
		labels  map[string]string
		active  time.Time
		reaped  bool
	}{
		{"orphan", gone, nil, now, true},
		{"durable-orphan", gone, map[string]string{LabelDurable: "true"}, now, false},
		{"kept", replica{ID: liveName, Kind: "pod", Namespace: c.namespace}, nil, now, false},
		{"idle-durable", gone, map[string]string{LabelDurable: "true"}, now.Add(-3 * time.Hour), true},
		{"this-process", host, nil, now, false},
		{"dead-process", replica{ID: host.ID, Kind: "host", Owner: "999999-1"}, nil, now, true},
		{"other-host", replica{ID: "elsewhere", Kind: "host", Owner: "999999-1"}, nil, now, false},
	}
	uids := map[string]types.UID{}
	for _, p := range pods {
		pod, err := podFor(counterSpec(p.id, p.labels), podConfig{Namespace: c.namespace, Image: b.opts.Image,
			IdleExpiry: time.Hour, Replica: p.replica, Now: p.active})
		if err != nil {
			t.Fatal(err)
		}
		created, err := c.cs.CoreV1().Pods(c.namespace).Create(t.Context(), pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[created.Name] = created.UID
	}
	removed, err := b.sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if got := slices.Contains(removed, podName(p.id)); got != p.reaped {
			t.Errorf("%s: reaped = %v, want %v (removed %v)", p.id, got, p.reaped, removed)
		}
	}
	if slices.Contains(removed, liveName) {
		t.Errorf("the janitor removed a live session's Pod")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, p := range pods {
		name := podName(p.id)
		if p.reaped {
			if err := waitGone(ctx, c, name, uids[name]); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if _, err := c.cs.CoreV1().Pods(c.namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("%s was removed: %v", name, err)
		}
		deletePod(ctx, c, name, uids[name])
	}
}

func TestClusterStartFailureLeavesNothing(t *testing.T) {
	b := clusterBackend(t)
	b.opts.Image = "localhost/codemode-no-such-image:missing"
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	_, err := b.Start(ctx, counterSpec("no-image", nil))
	if err == nil {
		t.Fatal("Start with a missing image succeeded")
	}
	t.Logf("Start: %v", err)
	if left := managedPods(t, b); len(left) > 0 {
		t.Fatalf("a failed Start left %v", left)
	}
	var status *apierrors.StatusError
	if errors.As(err, &status) {
		t.Fatalf("want the container's failure, got an API error: %v", err)
	}
}

func TestClusterDiagnose(t *testing.T) {
	b := clusterBackend(t)
	checks := b.Diagnose(t.Context())
	var buf bytes.Buffer
	for _, c := range checks {
		fmt.Fprintf(&buf, "%v %s: %s\n", c.OK, c.Name, c.Detail)
		if !c.OK {
			t.Errorf("check %s failed: %s (fix: %s)", c.Name, c.Detail, c.Fix)
		}
	}
	t.Log(buf.String())
}

// TestClusterNetworkPolicy: a sandbox reaches neither the API server (by
// its service address or the node's) nor the kubelet.
func TestClusterNetworkPolicy(t *testing.T) {
	b := clusterBackend(t)
	c, err := b.connect()
	if err != nil {
		t.Fatal(err)
	}
	svc, err := c.cs.CoreV1().Services("default").Get(t.Context(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := c.cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("nodes: %v", err)
	}
	targets := []string{net.JoinHostPort(svc.Spec.ClusterIP, "443")}
	for _, a := range nodes.Items[0].Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			targets = append(targets, net.JoinHostPort(a.Address, "6443"), net.JoinHostPort(a.Address, "10250"))
		}
	}
	code := "import socket, sys\nfor t in sys.argv[1:]:\n    h, p = t.rsplit(':', 1)\n    try:\n        socket.create_connection((h, int(p)), timeout=3).close(); print(t, 'connected')\n    except OSError as e:\n        print(t, 'blocked', type(e).__name__)\n"
	spec := sandbox.Spec{ID: "netpol", Command: append([]string{"python3", "-I", "-c", code}, targets...),
		Env: []string{"PATH=/usr/bin:/bin"}, Limits: sandbox.Limits{MemoryBytes: 128 << 20}}
	s, err := b.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill(context.Background())
	s.Stdin().Close()
	out, _ := io.ReadAll(s.Stdout())
	s.Wait(t.Context())
	t.Logf("%s", out)
	if strings.Contains(string(out), "connected") || strings.Count(string(out), "blocked") != len(targets) {
		t.Fatalf("a sandbox reached the cluster: %s", out)
	}
}

// BenchmarkClusterStart: a cold session, from creating the Pod to the
// keeper's answer on the exec (what a spare saves a call), and a reattach.
func BenchmarkClusterStart(b *testing.B) {
	be := clusterBackend(b)
	b.Run("start", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			s, err := be.Start(b.Context(), counterSpec(fmt.Sprintf("bench-%d", i), nil))
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			s.Kill(context.Background())
			b.StartTimer()
		}
	})
	b.Run("reattach", func(b *testing.B) {
		labels := map[string]string{"codemode.session": "bench-reattach"}
		s, err := be.Start(b.Context(), counterSpec("bench-reattach", labels))
		if err != nil {
			b.Fatal(err)
		}
		defer func() { s.Kill(context.Background()) }()
		for b.Loop() {
			next, err := be.Reattach(b.Context(), labels)
			if err != nil {
				b.Fatal(err)
			}
			s = next
		}
	})
}
