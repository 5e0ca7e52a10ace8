package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/testenv"
)

// The tests here run on the real single-node cluster scripts/kube-up.sh
// builds (testenv.Cluster): codemode with --backend kubernetes, from the
// host and as the deploy/kubernetes Deployment.

// kube runs the cluster's kubectl and returns its output.
func kube(t testing.TB, k testenv.Kube, args ...string) string {
	t.Helper()
	out, err := kubeTry(k, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func kubeTry(k testenv.Kube, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.Kubectl, append([]string{"--kubeconfig", k.Kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// kubeNamespace creates a namespace for one test and deletes it (and
// checks no session Pod outlived it) when the test ends.
func kubeNamespace(t *testing.T, k testenv.Kube) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	ns := "codemode-e2e-" + hex.EncodeToString(b[:])
	kube(t, k, "create", "namespace", ns)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := kubeTry(k, "-n", ns, "get", "pods,networkpolicies", "-o", "wide", "--show-labels")
			t.Logf("namespace %s at the end:\n%s", ns, out)
		}
		if out, err := kubeTry(k, "delete", "namespace", ns, "--wait=true", "--timeout=120s"); err != nil {
			t.Errorf("deleting namespace %s: %v\n%s", ns, err, out)
		}
	})
	return ns
}

// sessionPods lists the names of the session Pods in ns.
func sessionPods(t *testing.T, k testenv.Kube, ns string) []string {
	t.Helper()
	out := kube(t, k, "-n", ns, "get", "pods", "-l", "app.kubernetes.io/managed-by=codemode",
		"-o", "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}")
	return strings.Fields(out)
}

// waitFor polls cond every half second until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, still not %s: %s", d, what, state)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// kubeEnv is codemode's environment for the kubernetes backend in ns.
func kubeEnv(k testenv.Kube, ns string, extra ...string) []string {
	return append([]string{"CODEMODE_BACKEND=kubernetes", "CODEMODE_KUBECONFIG=" + k.Kubeconfig,
		"CODEMODE_NAMESPACE=" + ns, "CODEMODE_IMAGE=" + k.Image}, extra...)
}

// apiAddresses are the ways a Pod could reach the API server: its Service
// ClusterIP and the address in the kubeconfig (the node's).
func apiAddresses(t *testing.T, k testenv.Kube) [][2]string {
	t.Helper()
	ip := kube(t, k, "get", "service", "kubernetes", "-n", "default", "-o", "jsonpath={.spec.clusterIP}")
	server := kube(t, k, "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	return [][2]string{{ip, "443"}, {u.Hostname(), u.Port()}}
}

// TestKubeSession runs sessions as Pods of the test cluster from a codemode
// on the host: the posture inside a Pod, state across calls, and no Pod
// left once the client goes.
func TestKubeSession(t *testing.T) {
	k := testenv.Cluster(t)
	ns := kubeNamespace(t, k)
	s := startServer(t, kubeEnv(k, ns, "CODEMODE_SPARES=1")...)

	var probes []string
	for _, a := range apiAddresses(t, k) {
		probes = append(probes, fmt.Sprintf("(%q, %s)", a[0], a[1]))
	}
	posture := `
import os, socket
status = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
print("uid", status["Uid"].split()[0], "gid", status["Gid"].split()[0])
print("capeff", status["CapEff"].strip(), "capbnd", status["CapBnd"].strip())
print("nnp", status["NoNewPrivs"].strip(), "seccomp", status["Seccomp"].strip())
try:
    open("/usr/codemode-probe", "w")
    print("root writable")
except OSError as e:
    print("root read-only", e.errno)
print("token", os.path.exists("/var/run/secrets/kubernetes.io/serviceaccount"))
print("service env", any(k.startswith("KUBERNETES_") for k in os.environ))
for host, port in [` + strings.Join(probes, ", ") + `]:
    try:
        socket.create_connection((host, port), timeout=3).close()
        print("api reachable", host, port)
    except OSError as e:
        print("api unreachable", host, port)
x = 41
`
	out := s.run(t, posture)
	got := text(out)
	for _, want := range []string{"uid 65534 gid 65534", "capeff 0000000000000000 capbnd 0000000000000000",
		"nnp 1 seccomp 2", "root read-only 30", "token False", "service env False"} {
		if !strings.Contains(got, want) {
			t.Errorf("posture: want %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "api reachable") || strings.Count(got, "api unreachable") != 2 {
		t.Errorf("a session Pod reached the API server:\n%s", got)
	}
	if got := text(s.run(t, "print(x + 1)")); !strings.Contains(got, "42") {
		t.Errorf("state across calls: got %q", got)
	}

	pods := sessionPods(t, k, ns)
	if len(pods) < 1 {
		t.Fatalf("no session Pod in %s", ns)
	}
	labels := kube(t, k, "-n", ns, "get", "pod", pods[0], "-o", "jsonpath={.metadata.labels}")
	if strings.Contains(labels, `"app.kubernetes.io/name":"codemode"`) {
		t.Errorf("a session Pod carries codemode's own name label: %s", labels)
	}
	if got := kube(t, k, "-n", ns, "get", "networkpolicies", "-o", "jsonpath={.items[*].spec.policyTypes}"); !strings.Contains(got, "Egress") || !strings.Contains(got, "Ingress") {
		t.Errorf("no deny-all NetworkPolicy for ingress and egress in %s: %s", ns, got)
	}

	s.cs.Close()
	if err := s.cmd.Wait(); err != nil && s.cmd.ProcessState == nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "free of session Pods after the client closed", func() (bool, string) {
		left := sessionPods(t, k, ns)
		return len(left) == 0, strings.Join(left, " ")
	})
}

// deployKube applies deploy/kubernetes's test variant (the test images,
// its tokens Secret) into ns and waits for the Deployment's replicas.
func deployKube(t *testing.T, k testenv.Kube, ns string) {
	t.Helper()
	overlay := t.TempDir()
	base, err := filepath.Rel(overlay, filepath.Join(testenv.RepoRoot(), "deploy", "kubernetes", "test"))
	if err != nil {
		t.Fatal(err)
	}
	kustomization := fmt.Sprintf("namespace: %s\nresources:\n- %s\n", ns, base)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	kube(t, k, "apply", "-k", overlay)
	kube(t, k, "-n", ns, "rollout", "status", "deployment/codemode", "--timeout=180s")
}

// kubeTestToken is the token deploy/kubernetes/test's Secret holds.
const kubeTestToken = "codemode-test-cluster-token"

// serviceURL is the MCP endpoint through the codemode Service's ClusterIP,
// which kube-proxy makes reachable from the node.
func serviceURL(t *testing.T, k testenv.Kube, ns string) string {
	ip := kube(t, k, "-n", ns, "get", "service", "codemode", "-o", "jsonpath={.spec.clusterIP}")
	port := kube(t, k, "-n", ns, "get", "service", "codemode", "-o", "jsonpath={.spec.ports[0].port}")
	return "http://" + ip + ":" + port + "/mcp"
}

// TestKubeDeployment runs deploy/kubernetes with two replicas: both answer
// through the Service, either serves a named session, and the session's
// state survives the deletion of every replica.
func TestKubeDeployment(t *testing.T) {
	k := testenv.Cluster(t)
	ns := kubeNamespace(t, k)
	token := kubeTestToken
	deployKube(t, k, ns)
	// A connection per call, so the Service spreads calls over replicas.
	svc := &httpServer{url: serviceURL(t, k, ns), client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}

	replicas := strings.Fields(kube(t, k, "-n", ns, "get", "pods", "-l", "app.kubernetes.io/name=codemode",
		"-o", "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}"))
	if len(replicas) != 2 {
		t.Fatalf("want 2 codemode replicas, got %v", replicas)
	}

	first := postCall(t, svc, token, map[string]any{"session": "notes", "code": "import socket\nn = 1\nprint(n)"})
	if first["status"] != "success" {
		t.Fatalf("first call through the Service: %v", first)
	}
	// Enough calls that both replicas serve the session (the Service picks
	// a replica per connection); the state carries across them.
	for i := 2; i <= 8; i++ {
		res := postCall(t, svc, token, map[string]any{"session": "notes", "code": "n += 1\nprint(n)"})
		if got := strings.TrimSpace(fmt.Sprint(res["stdout"])); !strings.Contains(got, fmt.Sprint(i)) {
			t.Fatalf("call %d through the Service: stdout %q, result %v", i, got, res)
		}
	}
	served := 0
	for _, r := range replicas {
		if logs := kube(t, k, "-n", ns, "logs", r); strings.Contains(logs, "run_python") || strings.Contains(logs, "session") {
			served++
		}
	}
	if served != 2 {
		t.Errorf("only %d of the 2 replicas served calls", served)
	}

	kube(t, k, "-n", ns, "delete", "pods", "-l", "app.kubernetes.io/name=codemode", "--wait=true", "--timeout=120s")
	kube(t, k, "-n", ns, "rollout", "status", "deployment/codemode", "--timeout=180s")
	// The Service needs a moment to route to the new replicas: wait until
	// a call of another session gets through (it touches no Pod of notes).
	waitFor(t, 60*time.Second, "answering through the Service after the rollout", func() (bool, string) {
		res, err := tryPostCall(t, svc, token, map[string]any{"code": "pass", "close": true})
		return err == nil && res["status"] == "success", fmt.Sprint(err, res)
	})
	res := postCall(t, svc, token, map[string]any{"session": "notes", "code": "n += 1\nprint(n)"})
	if got := fmt.Sprint(res["stdout"]); !strings.Contains(got, "9") {
		t.Fatalf("after every replica was deleted, the session's state is gone: %v", res)
	}
	postCall(t, svc, token, map[string]any{"session": "notes", "close": true})
	waitFor(t, 90*time.Second, "free of session Pods after the session closed", func() (bool, string) {
		left := sessionPods(t, k, ns)
		// The replicas' spares stay; the session's Pod must be gone.
		for _, p := range left {
			if l := kube(t, k, "-n", ns, "get", "pod", p, "-o", "jsonpath={.metadata.annotations}"); strings.Contains(l, "notes") {
				return false, p
			}
		}
		return true, ""
	})
}
