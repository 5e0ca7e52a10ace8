package kubernetes

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/codemode/codemode/internal/sandbox"
)

func TestLabelSafety(t *testing.T) {
	long := strings.Repeat("x", 64)
	tests := []struct {
		name, key, value string
		keepKey, keepVal bool
	}{
		{"plain", "codemode.session", "s-1", true, true},
		{"prefixed", "example.com/tenant", "a_b.c", true, true},
		{"value with spaces", "codemode.session", "alice's notebook", true, false},
		{"value too long", "k", long, true, false},
		{"value ends badly", "k", "abc-", true, false},
		{"empty value", "k", "", true, true},
		{"key with spaces", "my key", "v", false, true},
		{"key too long", long, "v", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, v := labelKey(tc.key), labelValue(tc.value)
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				t.Errorf("labelKey(%q) = %q: invalid: %v", tc.key, k, errs)
			}
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("labelValue(%q) = %q: invalid: %v", tc.value, v, errs)
			}
			if (k == tc.key) != tc.keepKey || (v == tc.value) != tc.keepVal {
				t.Errorf("labelKey(%q), labelValue(%q) = %q, %q; want kept %v, %v", tc.key, tc.value, k, v, tc.keepKey, tc.keepVal)
			}
			if labelValue(tc.value) != v || labelKey(tc.key) != k {
				t.Error("not deterministic: Reattach must find what Start labelled")
			}
		})
	}
	if labelValue("a b") == labelValue("a c") {
		t.Error("different values map to one label value")
	}
}

func TestPodNames(t *testing.T) {
	for _, id := range []string{"s1", "t1-abc", "Upper_Case.id", strings.Repeat("long-", 30), "-edge-"} {
		name := podName(id)
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			t.Errorf("podName(%q) = %q: %v", id, name, errs)
		}
	}
	if podName("a_b") == podName("a.b") {
		t.Error("ids that differ only in replaced characters share a name")
	}
}

func testConfig() podConfig {
	return podConfig{Namespace: "sandboxes", Image: "python:3.12-slim", IdleExpiry: time.Hour,
		Replica: replica{ID: "codemode-0", Kind: "pod", Namespace: "codemode"}, Now: time.Unix(1700000000, 0)}
}

func TestPodSpecIsHardened(t *testing.T) {
	spec := sandbox.Spec{ID: "s1", Command: []string{"python3", "-I", "-c", "pass"}, Env: []string{"A=1"},
		Limits: sandbox.Limits{MemoryBytes: 256 << 20, CPUs: 1.5, TmpBytes: 16 << 20, WorkspaceBytes: 32 << 20, NoFile: 512},
		Labels: map[string]string{"codemode.session": "alice's notebook", LabelDurable: "1"}}
	pod, err := podFor(spec, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	ps := pod.Spec
	c := ps.Containers[0]
	sc := c.SecurityContext
	checks := []struct {
		name string
		ok   bool
	}{
		{"runAsUser 65534", *sc.RunAsUser == nobody && *ps.SecurityContext.RunAsUser == nobody},
		{"runAsGroup 65534", *sc.RunAsGroup == nobody && *ps.SecurityContext.RunAsGroup == nobody},
		{"runAsNonRoot", *sc.RunAsNonRoot && *ps.SecurityContext.RunAsNonRoot},
		{"readOnlyRootFilesystem", *sc.ReadOnlyRootFilesystem},
		{"allowPrivilegeEscalation false", !*sc.AllowPrivilegeEscalation},
		{"not privileged", !*sc.Privileged},
		{"drop ALL", len(sc.Capabilities.Drop) == 1 && sc.Capabilities.Drop[0] == "ALL" && len(sc.Capabilities.Add) == 0},
		{"seccomp RuntimeDefault", sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault},
		{"no service account token", !*ps.AutomountServiceAccountToken},
		{"no service links", !*ps.EnableServiceLinks},
		{"no host namespaces", !ps.HostNetwork && !ps.HostPID && !ps.HostIPC && !*ps.ShareProcessNamespace},
		{"restartPolicy Never", ps.RestartPolicy == corev1.RestartPolicyNever},
		{"short grace", *ps.TerminationGracePeriodSeconds <= 2},
		{"memory limit", c.Resources.Limits.Memory().Value() == 256<<20},
		{"cpu limit", c.Resources.Limits.Cpu().MilliValue() == 1500},
		{"ephemeral-storage limit", c.Resources.Limits.StorageEphemeral().Value() > 0},
		{"small requests", c.Resources.Requests.Cpu().MilliValue() == 50 && c.Resources.Requests.Memory().Value() == 64<<20},
		{"managed-by label", pod.Labels[labelManagedBy] == managedBy},
		{"never codemode's own name label", pod.Labels["app.kubernetes.io/name"] == ""},
		{"replica label", pod.Labels[labelReplica] == "codemode-0"},
		{"durable", durable(pod.Labels)},
		{"session label safe", pod.Labels["codemode.session"] == labelValue("alice's notebook")},
		{"original labels kept", strings.Contains(pod.Annotations[annLabels], "alice's notebook")},
		{"idle expiry", pod.Annotations[annIdleExpiry] == "1h0m0s"},
		{"keeper command", c.Command[0] == "python3" && c.Command[3] == "-c" && c.Command[4] == keeperSource},
	}
	for _, ck := range checks {
		if !ck.ok {
			t.Errorf("%s: not so in %+v", ck.name, pod)
		}
	}
	for _, v := range ps.Volumes {
		if v.HostPath != nil || v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory {
			t.Errorf("volume %s: want a size-limited memory emptyDir, got %+v", v.Name, v.VolumeSource)
		}
	}
	sizes := map[string]int64{}
	for _, v := range ps.Volumes {
		sizes[v.Name] = v.EmptyDir.SizeLimit.Value()
	}
	if sizes["tmp"] != 16<<20 || sizes["workspace"] != 32<<20 {
		t.Errorf("emptyDir sizes = %v", sizes)
	}
	var cfg struct {
		Argv   []string
		Env    []string
		Dir    string
		NoFile int
	}
	if err := json.Unmarshal([]byte(c.Command[5]), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Argv[3] != "pass" || cfg.Env[0] != "A=1" || cfg.Dir != "/workspace" || cfg.NoFile != 512 {
		t.Errorf("keeper config = %+v", cfg)
	}
	for k, v := range pod.Labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			t.Errorf("label key %q: %v", k, errs)
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("label %s=%q: %v", k, v, errs)
		}
	}
}

func TestPodSpecOptions(t *testing.T) {
	tests := []struct {
		name  string
		spec  sandbox.Spec
		edit  func(*podConfig)
		check func(*corev1.Pod) bool
		fails bool
	}{
		{name: "localhost seccomp", edit: func(c *podConfig) { c.SeccompProfile = "codemode.json" },
			check: func(p *corev1.Pod) bool {
				s := p.Spec.Containers[0].SecurityContext.SeccompProfile
				return s.Type == corev1.SeccompProfileTypeLocalhost && *s.LocalhostProfile == "codemode.json"
			}},
		{name: "runtime class", edit: func(c *podConfig) { c.RuntimeClass = "gvisor" },
			check: func(p *corev1.Pod) bool { return *p.Spec.RuntimeClassName == "gvisor" }},
		{name: "node selector", edit: func(c *podConfig) { c.NodeSelector = map[string]string{"pool": "sandbox"} },
			check: func(p *corev1.Pod) bool { return p.Spec.NodeSelector["pool"] == "sandbox" }},
		{name: "defaults", check: func(p *corev1.Pod) bool {
			return p.Spec.RuntimeClassName == nil && p.Spec.Containers[0].Resources.Limits.Memory().Value() == defaultMemory
		}},
		{name: "host replica", edit: func(c *podConfig) { c.Replica = replica{ID: "laptop.local", Kind: "host", Owner: "42-1"} },
			check: func(p *corev1.Pod) bool {
				return p.Annotations[annOwner] == "42-1" && p.Annotations[annReplicaKind] == "host"
			}},
		{name: "not durable", spec: sandbox.Spec{Labels: map[string]string{LabelDurable: "false"}},
			check: func(p *corev1.Pod) bool { return !durable(p.Labels) }},
		{name: "reserved label", spec: sandbox.Spec{Labels: map[string]string{labelManagedBy: "me"}}, fails: true},
		{name: "host mount", spec: sandbox.Spec{Mounts: []sandbox.Mount{{Source: "/", Target: "/host"}}}, fails: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			spec := tc.spec
			spec.ID, spec.Command = "s1", []string{"true"}
			pod, err := podFor(spec, cfg)
			if tc.fails {
				if err == nil {
					t.Fatal("podFor succeeded, want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(pod) {
				t.Errorf("unexpected Pod: %+v", pod)
			}
		})
	}
}

func TestSelectorMatchesPodLabels(t *testing.T) {
	labels := map[string]string{"codemode.session": "alice's notebook", "tenant": "t1"}
	pod, err := podFor(sandbox.Spec{ID: "s1", Command: []string{"true"}, Labels: labels}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	sel, err := selector(map[string]string{"codemode.session": "alice's notebook"})
	if err != nil {
		t.Fatal(err)
	}
	for _, term := range strings.Split(sel, ",") {
		k, v, _ := strings.Cut(term, "=")
		if pod.Labels[k] != v {
			t.Errorf("selector term %s does not match the Pod's labels %v", term, pod.Labels)
		}
	}
}

func TestDenyAllPolicy(t *testing.T) {
	p := denyAll("ns")
	if len(p.Spec.Ingress) != 0 || len(p.Spec.Egress) != 0 || len(p.Spec.PolicyTypes) != 2 {
		t.Errorf("policy allows something: %+v", p.Spec)
	}
	if p.Spec.PodSelector.MatchLabels[labelManagedBy] != managedBy || len(p.Spec.PodSelector.MatchLabels) != 1 {
		t.Errorf("policy selects %v, want every managed sandbox Pod", p.Spec.PodSelector.MatchLabels)
	}
}

func TestRelabelPatch(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{annLabels: `{"codemode.session":"spare"}`}}}
	patch, err := relabelPatch(pod, map[string]string{"codemode.session": "notes", "codemode.session-owner": "principal:alice"})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metadata struct {
			Labels      map[string]*string
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal(patch, &got); err != nil {
		t.Fatal(err)
	}
	if v := got.Metadata.Labels["codemode.session"]; v == nil || *v != "notes" {
		t.Errorf("session label = %v, want notes", v)
	}
	if v := got.Metadata.Labels["codemode.session-owner"]; v == nil || *v != labelValue("principal:alice") || *v == "principal:alice" {
		t.Errorf("owner label = %v, want the hashed value %s", v, labelValue("principal:alice"))
	}
	if _, ok := got.Metadata.Labels[labelManagedBy]; ok {
		t.Errorf("the patch touches codemode's own label: %s", patch)
	}
	if a := got.Metadata.Annotations[annLabels]; !strings.Contains(a, `"codemode.session-owner":"principal:alice"`) {
		t.Errorf("labels annotation = %q", a)
	}
	// A label the old set had and the new one lacks is removed.
	pod.Annotations[annLabels] = `{"codemode.session":"spare","old":"x"}`
	patch, _ = relabelPatch(pod, map[string]string{"codemode.session": "notes"})
	if !strings.Contains(string(patch), `"old":null`) {
		t.Errorf("patch %s does not remove the old label", patch)
	}
	if _, err := relabelPatch(pod, map[string]string{labelManagedBy: "x"}); err == nil {
		t.Error("a reserved label was accepted")
	}
}
