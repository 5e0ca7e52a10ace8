package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// kubectl runs the test cluster's kubectl with its admin kubeconfig, stdin
// as input, and returns stdout; it fails the test on an error.
func kubectl(t *testing.T, k testenv.Kube, stdin string, args ...string) string {
	t.Helper()
	out, err := tryKubectl(t.Context(), k, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func tryKubectl(ctx context.Context, k testenv.Kube, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, k.Kubectl, append([]string{"--kubeconfig", k.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// probeScript tries a TCP connection to each host:port argument and prints
// a JSON object of "open" or "closed" per target.
const probeScript = `
import json, socket, sys
out = {}
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
        out[target] = "open"
    except OSError:
        out[target] = "closed"
print(json.dumps(out))
`

// TestKubeClusterEnforcesNetworkPolicy proves the test cluster is a real
// one whose network plugin enforces NetworkPolicy: a Pod of the sandbox
// image reaches another Pod, the API server's ClusterIP and the node's IP
// (and the host reaches a Service's ClusterIP);
// under a deny-all policy it reaches none of them; under an ingress-only
// policy on the other Pod it reaches the API server but not that Pod; and
// with no policy everything is open again.
func TestKubeClusterEnforcesNetworkPolicy(t *testing.T) {
	k := testenv.Cluster(t)
	ns := fmt.Sprintf("codemode-e2e-netpol-%d", time.Now().UnixNano())
	kubectl(t, k, "", "create", "namespace", ns)
	t.Cleanup(func() {
		if _, err := tryKubectl(context.Background(), k, "", "delete", "namespace", ns, "--wait=false"); err != nil {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
	})

	pod := func(name string, command ...string) string {
		c, _ := json.Marshal(command)
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: %s}}
spec:
  terminationGracePeriodSeconds: 0
  automountServiceAccountToken: false
  containers:
  - name: main
    image: %s
    imagePullPolicy: Never
    command: %s
`, name, name, k.Image, c)
	}
	kubectl(t, k, pod("server", "python3", "-m", "http.server", "8080")+"---\n"+pod("client", "sleep", "3600"), "-n", ns, "apply", "-f", "-")
	kubectl(t, k, "", "-n", ns, "wait", "--for=condition=Ready", "pod/server", "pod/client", "--timeout=120s")

	serverIP := strings.TrimSpace(kubectl(t, k, "", "-n", ns, "get", "pod", "server", "-o", "jsonpath={.status.podIP}"))
	apiIP := strings.TrimSpace(kubectl(t, k, "", "-n", "default", "get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP}"))
	nodeIP := strings.TrimSpace(kubectl(t, k, "", "get", "nodes", "-o", `jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}`))
	pod2pod, pod2api, pod2node := serverIP+":8080", apiIP+":443", nodeIP+":6443"
	targets := []string{pod2pod, pod2api, pod2node}
	if serverIP == "" || apiIP == "" || nodeIP == "" {
		t.Fatalf("addresses: server Pod %q, API ClusterIP %q, node %q", serverIP, apiIP, nodeIP)
	}

	// expect polls until the client sees want: the network plugin applies
	// a policy change asynchronously.
	expect := func(phase string, want map[string]string) {
		t.Helper()
		var got map[string]string
		deadline := time.Now().Add(45 * time.Second)
		for {
			out := kubectl(t, k, probeScript, append([]string{"-n", ns, "exec", "-i", "client", "--", "python3", "-"}, targets...)...)
			got = nil
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%s: probe output %q: %v", phase, out, err)
			}
			if cmp.Equal(want, got) || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Second)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: reachability from the client Pod (-want +got):\n%s", phase, diff)
		}
	}
	all := func(state string) map[string]string {
		return map[string]string{pod2pod: state, pod2api: state, pod2node: state}
	}

	expect("no policy", all("open"))

	// kube-proxy: the host reaches a Service's ClusterIP (as tests reach
	// codemode's Service).
	kubectl(t, k, "", "-n", ns, "expose", "pod", "server", "--port=80", "--target-port=8080")
	svcIP := strings.TrimSpace(kubectl(t, k, "", "-n", ns, "get", "service", "server", "-o", "jsonpath={.spec.clusterIP}"))
	direct := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second} // no HTTP_PROXY
	var lastErr error
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := direct.Get("http://" + net.JoinHostPort(svcIP, "80") + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if lastErr = err; time.Now().After(deadline) {
			t.Fatalf("GET the Service's ClusterIP %s from the host: %v", svcIP, lastErr)
		}
		time.Sleep(500 * time.Millisecond)
	}

	kubectl(t, k, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all}
spec:
  podSelector: {}
  policyTypes: [Ingress, Egress]
`, "-n", ns, "apply", "-f", "-")
	expect("deny-all (ingress and egress)", all("closed"))

	kubectl(t, k, "", "-n", ns, "delete", "networkpolicy", "deny-all")
	kubectl(t, k, `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server-ingress}
spec:
  podSelector: {matchLabels: {app: server}}
  policyTypes: [Ingress]
`, "-n", ns, "apply", "-f", "-")
	expect("ingress denied to the server Pod only", map[string]string{pod2pod: "closed", pod2api: "open", pod2node: "open"})

	kubectl(t, k, "", "-n", ns, "delete", "networkpolicy", "server-ingress")
	expect("policies removed", all("open"))
}
