package kubernetes

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/codemode/codemode/internal/sandbox"
)

//go:embed keeper.py
var keeperSource string

//go:embed connector.py
var connectorSource string

// Labels and annotations codemode puts on sandbox Pods.
const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "codemode"
	labelSession   = "codemode.dev/session"
	labelReplica   = "codemode.dev/replica"
	// LabelDurable (sandbox.LabelLasting) in a Spec's Labels (any value
	// but "" or "false"), kept as a Pod label like the Spec's other
	// labels, keeps the Pod when the replica that started it is gone:
	// named sessions and handles. Idle expiry still applies.
	LabelDurable = sandbox.LabelLasting

	annLabels       = "codemode.dev/labels"       // the Spec's labels as given, JSON
	annSessionID    = "codemode.dev/session-id"   // the Spec's ID as given
	annReplicaKind  = "codemode.dev/replica-kind" // "pod" or "host"
	annReplicaNS    = "codemode.dev/replica-namespace"
	annOwner        = "codemode.dev/owner"       // out of cluster: sandbox.OwnerID of the process
	annLastActive   = "codemode.dev/last-active" // RFC 3339
	annIdleExpiry   = "codemode.dev/idle-expiry" // Go duration
	containerName   = "sandbox"
	runDir          = "/run/codemode"
	keeperSocket    = runDir + "/keeper/sock" // the keeper makes its directory private
	networkPolicyNm = "codemode-sandbox-deny-all"
	nobody          = 65534
)

// Defaults when the Spec's Limits leave a value zero.
const (
	defaultMemory    = 512 << 20
	defaultCPUs      = 1.0
	defaultPIDs      = 128
	defaultTmp       = 64 << 20
	defaultWorkspace = 128 << 20
	// The root is read-only and the emptyDirs are in memory: the
	// ephemeral-storage limit bounds the container log (the child's stderr).
	ephemeralStorage = 64 << 20
)

// replica identifies the codemode process that starts Pods.
type replica struct {
	ID        string // POD_NAME in a cluster, else the hostname
	Kind      string // "pod" or "host"
	Namespace string // the replica Pod's namespace, for "pod"
	Owner     string // sandbox.OwnerID, for "host"
}

// podConfig is what podFor needs besides the Spec.
type podConfig struct {
	Namespace      string
	Image          string
	RuntimeClass   string
	NodeSelector   map[string]string
	SeccompProfile string // Localhost profile path relative to the kubelet's seccomp dir; "" = RuntimeDefault
	Filter         []byte // codemode's seccomp filter for the keeper to install on the command (nil = none)
	Arch           string // the filter's architecture: the Pod must run on a node of it
	IdleExpiry     time.Duration
	Replica        replica
	Now            time.Time
}

// podName is the Pod's name: the Spec's id made a DNS label, made unique
// by a hash when it had to change.
func podName(id string) string {
	base := strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		default:
			return '-'
		}
	}, id), "-")
	name := "codemode-" + base
	if name != "codemode-"+id || len(name) > 63 {
		h := shortHash(id, 10)
		if len(base) > 40 {
			base = strings.Trim(base[:40], "-")
		}
		name = "codemode-" + base + "-" + h
	}
	return name
}

func shortHash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

// labelKey returns key if it is a valid label key, else a key derived from
// its hash (the original is kept in the labels annotation).
func labelKey(key string) string {
	if len(validation.IsQualifiedName(key)) == 0 {
		return key
	}
	return "label.codemode.dev/h-" + shortHash(key, 32)
}

// labelValue returns v if it is a valid label value, else "h-" and its hash.
func labelValue(v string) string {
	if len(validation.IsValidLabelValue(v)) == 0 {
		return v
	}
	return "h-" + shortHash(v, 40)
}

// reserved reports label keys a Spec may not set: they say who manages,
// started and names the Pod.
func reserved(key string) bool {
	return key == labelManagedBy || key == labelSession || key == labelReplica || key == "app.kubernetes.io/name"
}

// selectorLabels maps a Spec's labels to the Pod labels that stand for them.
func selectorLabels(labels map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		if reserved(labelKey(k)) {
			return nil, fmt.Errorf("label %q is reserved for codemode", k)
		}
		out[labelKey(k)] = labelValue(v)
	}
	return out, nil
}

// relabelPatch is the merge patch that replaces the Pod labels standing
// for its Spec's labels (recorded in the labels annotation) with those of
// labels, leaving codemode's own.
func relabelPatch(pod *corev1.Pod, labels map[string]string) ([]byte, error) {
	next, err := selectorLabels(labels)
	if err != nil {
		return nil, err
	}
	var old map[string]string
	if a := pod.Annotations[annLabels]; a != "" {
		if err := json.Unmarshal([]byte(a), &old); err != nil {
			return nil, fmt.Errorf("the Pod's %s annotation: %w", annLabels, err)
		}
	}
	patch := map[string]any{}
	for k := range old {
		patch[labelKey(k)] = nil // merge patch: null removes
	}
	for k, v := range next {
		patch[k] = v
	}
	original, err := json.Marshal(labels)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{
		"labels":      patch,
		"annotations": map[string]string{annLabels: string(original)},
	}})
}

func durable(labels map[string]string) bool {
	v, ok := labels[LabelDurable]
	return ok && v != "" && v != "false"
}

// podFor builds the Pod of one session.
func podFor(spec sandbox.Spec, c podConfig) (*corev1.Pod, error) {
	labels, err := selectorLabels(spec.Labels)
	if err != nil {
		return nil, err
	}
	labels[labelManagedBy] = managedBy
	labels[labelSession] = labelValue(spec.ID)
	labels[labelReplica] = labelValue(c.Replica.ID)
	original, err := json.Marshal(spec.Labels)
	if err != nil {
		return nil, err
	}
	annotations := map[string]string{
		annLabels:      string(original),
		annSessionID:   spec.ID,
		annReplicaKind: c.Replica.Kind,
		annLastActive:  c.Now.UTC().Format(time.RFC3339),
	}
	if c.IdleExpiry > 0 {
		annotations[annIdleExpiry] = c.IdleExpiry.String()
	}
	if c.Replica.Kind == "pod" {
		annotations[annReplicaNS] = c.Replica.Namespace
	} else {
		annotations[annOwner] = c.Replica.Owner
	}
	if len(spec.Mounts) > 0 {
		return nil, fmt.Errorf("host mounts are not available to Pods (%s)", spec.Mounts[0].Target)
	}

	lim := spec.Limits
	mem := orDefault(lim.MemoryBytes, defaultMemory)
	cpus := lim.CPUs
	if cpus <= 0 {
		cpus = defaultCPUs
	}
	pids := lim.PIDs
	if pids <= 0 {
		pids = defaultPIDs
	}
	tmp := orDefault(lim.TmpBytes, defaultTmp)
	work := orDefault(lim.WorkspaceBytes, defaultWorkspace)
	dir := spec.Dir
	if dir == "" {
		dir = "/workspace"
	}
	cfg, err := json.Marshal(map[string]any{
		"argv": spec.Command, "env": spec.Env, "dir": dir, "socket": keeperSocket, "nofile": lim.NoFile, "nproc": pids,
		"filter": c.Filter, // []byte: base64 in JSON
	})
	if err != nil {
		return nil, err
	}
	// In memory, as tmpfs sized by the limit: a full /workspace fails
	// with ENOSPC at once (a disk emptyDir's limit is only checked now and
	// then, by evicting the Pod), and what it holds counts against the
	// memory limit as it does on the other backends.
	emptyDir := func(name string, size int64) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(size, resource.BinarySI)}}}
	}
	seccomp := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	if c.SeccompProfile != "" {
		seccomp = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &c.SeccompProfile}
	}
	limits := corev1.ResourceList{
		corev1.ResourceMemory:           *resource.NewQuantity(mem, resource.BinarySI),
		corev1.ResourceCPU:              *resource.NewMilliQuantity(int64(cpus*1000), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(ephemeralStorage, resource.BinarySI),
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: podName(spec.ID), Namespace: c.Namespace, Labels: labels, Annotations: annotations,
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr(false),
			EnableServiceLinks:            ptr(false),
			TerminationGracePeriodSeconds: ptr(int64(1)),
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			ShareProcessNamespace:         ptr(false),
			NodeSelector:                  nodeSelector(c),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser: ptr(int64(nobody)), RunAsGroup: ptr(int64(nobody)), RunAsNonRoot: ptr(true),
				SeccompProfile: seccomp,
			},
			Containers: []corev1.Container{{
				Name:    containerName,
				Image:   c.Image,
				Command: []string{"python3", "-I", "-B", "-c", keeperSource, string(cfg)},
				// The image must be on the node already: a sandbox never
				// waits for (or depends on) a registry.
				ImagePullPolicy: corev1.PullIfNotPresent,
				WorkingDir:      "/",
				Resources:       corev1.ResourceRequirements{Limits: limits, Requests: requests(limits)},
				SecurityContext: &corev1.SecurityContext{
					RunAsUser: ptr(int64(nobody)), RunAsGroup: ptr(int64(nobody)), RunAsNonRoot: ptr(true),
					ReadOnlyRootFilesystem:   ptr(true),
					AllowPrivilegeEscalation: ptr(false),
					Privileged:               ptr(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           seccomp,
					ProcMount:                ptr(corev1.DefaultProcMount),
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "workspace", MountPath: "/workspace"},
					{Name: "tmp", MountPath: "/tmp"},
					{Name: "run", MountPath: runDir},
				},
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			Volumes: []corev1.Volume{emptyDir("workspace", work), emptyDir("tmp", tmp), emptyDir("run", 1<<20)},
		},
	}
	if c.RuntimeClass != "" {
		pod.Spec.RuntimeClassName = ptr(c.RuntimeClass)
	}
	return pod, nil
}

// requests are what the scheduler reserves per session: a small share, as
// most sessions idle between calls (the limits bound each one).
func requests(limits corev1.ResourceList) corev1.ResourceList {
	req := corev1.ResourceList{}
	for name, want := range map[corev1.ResourceName]resource.Quantity{
		corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
		corev1.ResourceEphemeralStorage: limits[corev1.ResourceEphemeralStorage],
	} {
		if lim := limits[name]; lim.Cmp(want) < 0 {
			want = lim
		}
		req[name] = want
	}
	return req
}

// nodeSelector adds the filter's architecture to the configured selector:
// a filter of another architecture would kill the command at once.
func nodeSelector(c podConfig) map[string]string {
	sel := maps.Clone(c.NodeSelector)
	if c.Arch != "" {
		if sel == nil {
			sel = map[string]string{}
		}
		sel[corev1.LabelArchStable] = c.Arch
	}
	return sel
}

// denyAll is the NetworkPolicy that isolates every sandbox Pod of the
// namespace: it selects them and allows no traffic either way, so a
// sandbox reaches nothing (the API server and DNS included) and nothing
// reaches it. Exec and logs go through the kubelet, not the Pod network.
func denyAll(namespace string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: networkPolicyNm, Namespace: namespace,
			Labels: map[string]string{labelManagedBy: managedBy}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{labelManagedBy: managedBy}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

// selector is the label selector of the managed Pods carrying labels.
func selector(labels map[string]string) (string, error) {
	sel, err := selectorLabels(labels)
	if err != nil {
		return "", err
	}
	sel[labelManagedBy] = managedBy
	keys := slices.Sorted(maps.Keys(sel))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + sel[k]
	}
	return strings.Join(parts, ","), nil
}

func orDefault(v, d int64) int64 {
	if v <= 0 {
		return d
	}
	return v
}

func ptr[T any](v T) *T { return &v }
