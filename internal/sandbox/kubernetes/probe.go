package kubernetes

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/codemode/codemode/internal/sandbox"
)

// Probe implements sandbox.Backend. What a Pod enforces is fixed by its
// spec, except where the cluster decides: whether NetworkPolicy is
// enforced (it depends on the network plugin, which the API does not
// tell), and whether a Pod has a process limit of its own (the kubelet's
// podPidsLimit, node configuration the API does not show): the keeper's
// RLIMIT_NPROC counts the uid's processes on the whole node.
func (b *Backend) Probe(ctx context.Context) (sandbox.Capabilities, error) {
	c, err := b.connect()
	if err != nil {
		return sandbox.Capabilities{}, err
	}
	v, err := c.cs.Discovery().ServerVersion()
	if err != nil {
		return sandbox.Capabilities{}, fmt.Errorf("kubernetes: the API server at %s: %w", c.cfg.Host, err)
	}
	if b.opts.Image == "" {
		return sandbox.Capabilities{}, fmt.Errorf("kubernetes: no --image: the Pods need an image with python3")
	}
	engine := fmt.Sprintf("kubernetes %s (namespace %s", v.GitVersion, c.namespace)
	if b.opts.RuntimeClass != "" {
		engine += ", runtime class " + b.opts.RuntimeClass
	}
	engine += ")"
	seccomp := "the container runtime's RuntimeDefault profile"
	if b.opts.SeccompProfile != "" {
		seccomp = "the Localhost profile " + b.opts.SeccompProfile
	}
	if filter, arch, err := syscallFilter(); err == nil && filter != nil {
		seccomp = "codemode's policy (" + policySummary() + "), installed by the keeper on the command, over " + seccomp + "; Pods pinned to " + arch + " nodes"
	}
	caps := sandbox.Capabilities{Backend: Name, Engine: engine}
	add := func(name string, on bool, how string) {
		caps.Protections = append(caps.Protections, sandbox.Protection{Name: name, Enforced: on, How: how})
	}
	add(sandbox.ProtUser, true, "runAsUser/runAsGroup 65534, runAsNonRoot")
	add(sandbox.ProtNoCaps, true, "capabilities: drop ALL")
	add(sandbox.ProtNoNewPrivs, true, "allowPrivilegeEscalation: false")
	add(sandbox.ProtSeccomp, true, seccomp)
	add(sandbox.ProtLandlock, false, "not available: Pods have no Landlock setting")
	add(sandbox.ProtReadOnlyFS, true, "readOnlyRootFilesystem; /workspace and /tmp are size-limited memory emptyDirs")
	add(sandbox.ProtNoNetwork, true, "deny-all NetworkPolicy "+networkPolicyNm+" (ingress and egress) over every sandbox Pod")
	add(sandbox.ProtPIDIsolated, true, "the Pod's own PID namespace (no hostPID, no shareProcessNamespace)")
	add(sandbox.ProtMemoryLimit, true, "limits.memory (the /workspace and /tmp tmpfs count against it)")
	add(sandbox.ProtPIDsLimit, true, "RLIMIT_NPROC on the command, set by the keeper; counted per uid on the node, so the sandbox Pods of one node share it (the kubelet's podPidsLimit, node configuration the API does not show, adds a per-Pod cgroup limit)")
	add(sandbox.ProtCPULimit, true, "limits.cpu")
	add(sandbox.ProtHostHidden, true, "the image's root filesystem; no hostPath volumes")
	caps.Notes = append(caps.Notes,
		"no-network relies on the cluster's network plugin enforcing NetworkPolicy (Calico, Cilium, kube-router... do; flannel and kindnet alone do not); codemode cannot tell from the API",
		"the process limit (RLIMIT_NPROC, uid 65534) is shared by the sandbox Pods of a node: one session's fork bomb can keep the others of its node from starting processes until it ends; set the kubelet's podPidsLimit for a per-Pod limit, or run Pods with their own user namespaces")
	if b.opts.RuntimeClass != "" {
		caps.Notes = append(caps.Notes, "runtime class "+b.opts.RuntimeClass+" decides the kernel boundary (e.g. gVisor's runsc)")
	}
	return caps, nil
}

// Diagnose implements sandbox.Diagnoser.
func (b *Backend) Diagnose(ctx context.Context) []sandbox.Check {
	var out []sandbox.Check
	add := func(name string, ok bool, detail, fix string) {
		out = append(out, sandbox.Check{Name: name, OK: ok, Detail: detail, Fix: fix})
	}
	c, err := b.connect()
	if err != nil {
		add("kubernetes config", false, err.Error(), "run codemode in a Pod (in-cluster config), or pass --kubeconfig, or set KUBECONFIG")
		return out
	}
	v, err := c.cs.Discovery().ServerVersion()
	if err != nil {
		add("kubernetes API", false, err.Error(), "check that "+c.cfg.Host+" is reachable and the credentials are valid")
		return out
	}
	add("kubernetes API", true, c.cfg.Host+" "+v.GitVersion, "")
	if _, err := c.cs.CoreV1().Namespaces().Get(ctx, c.namespace, metav1.GetOptions{}); err != nil {
		add("namespace", false, err.Error(), "kubectl create namespace "+c.namespace+" (or pass --namespace)")
	} else {
		add("namespace", true, c.namespace, "")
	}
	var denied []string
	for _, r := range []struct{ group, resource, sub, verb string }{
		{"", "pods", "", "create"}, {"", "pods", "", "get"}, {"", "pods", "", "list"}, {"", "pods", "", "watch"},
		{"", "pods", "", "delete"}, {"", "pods", "", "patch"}, {"", "pods", "exec", "create"}, {"", "pods", "exec", "get"},
		{"", "pods", "log", "get"}, {"networking.k8s.io", "networkpolicies", "", "get"},
		{"networking.k8s.io", "networkpolicies", "", "create"}, {"networking.k8s.io", "networkpolicies", "", "update"},
	} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: c.namespace, Group: r.group,
				Resource: r.resource, Subresource: r.sub, Verb: r.verb}}}
		res, err := c.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		name := r.resource
		if r.sub != "" {
			name += "/" + r.sub
		}
		if err != nil || !res.Status.Allowed {
			denied = append(denied, r.verb+" "+name)
		}
	}
	if len(denied) > 0 {
		add("RBAC", false, "not allowed in "+c.namespace+": "+strings.Join(denied, ", "),
			"bind codemode's service account to a Role granting pods (create, get, list, watch, delete, patch), pods/exec (create, get), pods/log (get) and networkpolicies (get, create, update)")
	} else {
		add("RBAC", true, "pods, pods/exec, pods/log and networkpolicies allowed in "+c.namespace, "")
	}
	add("image", true, b.imagePresence(ctx, c), "")
	return out
}

// imagePresence says which nodes already hold the image (when nodes may
// be listed); pulling is left to the kubelet.
func (b *Backend) imagePresence(ctx context.Context, c *client) string {
	nodes, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return b.opts.Image + ": cannot list nodes to check (" + err.Error() + "); nodes pull it if they can"
	}
	var have []string
	for _, n := range nodes.Items {
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				if name == b.opts.Image || strings.TrimPrefix(name, "docker.io/library/") == b.opts.Image || strings.TrimPrefix(name, "docker.io/") == b.opts.Image {
					have = append(have, n.Name)
				}
			}
		}
	}
	if len(have) == 0 {
		return fmt.Sprintf("%s is on none of the %d nodes yet: they pull it at the first session (import it into the nodes' runtime where there is no registry)", b.opts.Image, len(nodes.Items))
	}
	return fmt.Sprintf("%s present on %d of %d nodes", b.opts.Image, len(have), len(nodes.Items))
}
