package kubernetes_test

import (
	"bytes"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/testenv"
	"go.yaml.in/yaml/v3"
)

// object is the part of a rendered object these tests read.
type object struct {
	Kind     string
	Metadata struct {
		Name      string
		Namespace string
		Labels    map[string]string
	}
	Spec struct {
		Replicas     *int
		Selector     selector
		MinAvailable *int `yaml:"minAvailable"`
		Ports        []struct {
			Port       int
			TargetPort string `yaml:"targetPort"`
		}
		Template struct {
			Metadata struct{ Labels map[string]string }
			Spec     podSpec
		}
	}
	Rules []struct {
		APIGroups []string `yaml:"apiGroups"`
		Resources []string
		Verbs     []string
	}
	RoleRef  struct{ Kind, Name string } `yaml:"roleRef"`
	Subjects []struct{ Kind, Name string }
}

// selector is a label selector: a Service's plain map, or the matchLabels
// of a Deployment's or PodDisruptionBudget's.
type selector map[string]string

func (s *selector) UnmarshalYAML(n *yaml.Node) error {
	var m struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	if err := n.Decode(&m); err == nil && m.MatchLabels != nil {
		*s = m.MatchLabels
		return nil
	}
	var plain map[string]string
	if err := n.Decode(&plain); err != nil {
		return err
	}
	*s = plain
	return nil
}

type podSpec struct {
	ServiceAccountName string `yaml:"serviceAccountName"`
	SecurityContext    struct {
		RunAsNonRoot   *bool `yaml:"runAsNonRoot"`
		SeccompProfile struct {
			Type string
		} `yaml:"seccompProfile"`
	} `yaml:"securityContext"`
	Containers []struct {
		Name            string
		Image           string
		ImagePullPolicy string `yaml:"imagePullPolicy"`
		Args            []string
		Env             []struct{ Name, Value string }
		Ports           []struct {
			Name          string
			ContainerPort int `yaml:"containerPort"`
		}
		LivenessProbe   probe `yaml:"livenessProbe"`
		ReadinessProbe  probe `yaml:"readinessProbe"`
		SecurityContext struct {
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
			Capabilities             struct{ Drop []string }
		} `yaml:"securityContext"`
	}
	Volumes []struct {
		Name   string
		Secret struct {
			SecretName string `yaml:"secretName"`
			Items      []struct{ Key string }
		}
	}
}

type probe struct {
	HTTPGet struct {
		Path string
		Port string
	} `yaml:"httpGet"`
}

// render runs kubectl kustomize on dir and returns the objects by kind/name.
func render(t *testing.T, dir string) map[string]object {
	t.Helper()
	k := testenv.Cluster(t)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), k.Kubectl, "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize %s: %v: %s", dir, err, stderr.String())
	}
	out := map[string]object{}
	dec := yaml.NewDecoder(&stdout)
	for {
		var o object
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding %s: %v", dir, err)
		}
		out[o.Kind+"/"+o.Metadata.Name] = o
	}
	return out
}

func TestKustomization(t *testing.T) {
	for _, tc := range []struct {
		dir, serverImage, sandboxImage, pullPolicy string
		tokenSecret                                bool
	}{
		{dir: ".", serverImage: "localhost/codemode:latest", sandboxImage: "localhost/codemode-python:bookworm", pullPolicy: "IfNotPresent"},
		{dir: "test", serverImage: "localhost/codemode:test", sandboxImage: "localhost/codemode-python:test", pullPolicy: "Never", tokenSecret: true},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			objs := render(t, tc.dir)
			get := func(key string) object {
				t.Helper()
				o, ok := objs[key]
				if !ok {
					t.Fatalf("%s is not rendered; have %v", key, keys(objs))
				}
				if o.Kind != "Namespace" && o.Metadata.Namespace != "codemode" {
					t.Errorf("%s is in namespace %q, want codemode", key, o.Metadata.Namespace)
				}
				return o
			}
			name := map[string]string{"app.kubernetes.io/name": "codemode"}
			get("Namespace/codemode")

			d := get("Deployment/codemode")
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
				t.Errorf("Deployment replicas = %v, want 2", d.Spec.Replicas)
			}
			if !subset(name, d.Spec.Selector) || !subset(name, d.Spec.Template.Metadata.Labels) {
				t.Errorf("Deployment selector %v / Pod labels %v lack %v", d.Spec.Selector, d.Spec.Template.Metadata.Labels, name)
			}
			if _, ok := d.Spec.Template.Metadata.Labels["app.kubernetes.io/managed-by"]; ok {
				t.Errorf("codemode's own Pods carry app.kubernetes.io/managed-by, which marks session Pods")
			}
			pod := d.Spec.Template.Spec
			if pod.ServiceAccountName != "codemode" {
				t.Errorf("serviceAccountName = %q, want codemode", pod.ServiceAccountName)
			}
			if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.SeccompProfile.Type != "RuntimeDefault" {
				t.Errorf("Pod securityContext %+v: want runAsNonRoot and seccomp RuntimeDefault", pod.SecurityContext)
			}
			if len(pod.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(pod.Containers))
			}
			c := pod.Containers[0]
			if c.Image != tc.serverImage || c.ImagePullPolicy != tc.pullPolicy {
				t.Errorf("image %s (%s), want %s (%s)", c.Image, c.ImagePullPolicy, tc.serverImage, tc.pullPolicy)
			}
			for _, want := range []string{"serve", "--http=0.0.0.0:8080", "--backend=kubernetes", "--namespace=$(POD_NAMESPACE)", "--image=$(SANDBOX_IMAGE)", "--tokens-file=/etc/codemode/tokens/tokens"} {
				if !slices.Contains(c.Args, want) {
					t.Errorf("args %q lack %q", c.Args, want)
				}
			}
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			if env["SANDBOX_IMAGE"] != tc.sandboxImage {
				t.Errorf("SANDBOX_IMAGE = %q, want %q", env["SANDBOX_IMAGE"], tc.sandboxImage)
			}
			if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
				t.Errorf("ports %+v, want http 8080", c.Ports)
			}
			if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
				c.LivenessProbe.HTTPGet.Port != "http" || c.ReadinessProbe.HTTPGet.Port != "http" {
				t.Errorf("probes: liveness %+v, readiness %+v; want /healthz and /readyz on http", c.LivenessProbe, c.ReadinessProbe)
			}
			sc := c.SecurityContext
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
				t.Errorf("container securityContext %+v: want no privilege escalation, a read-only root and all capabilities dropped", sc)
			}
			tokens := false
			for _, v := range pod.Volumes {
				if v.Secret.SecretName == "codemode-tokens" && len(v.Secret.Items) == 1 && v.Secret.Items[0].Key == "tokens" {
					tokens = true
				}
			}
			if !tokens {
				t.Errorf("no volume of Secret codemode-tokens, key tokens: %+v", pod.Volumes)
			}

			s := get("Service/codemode")
			if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 80 || s.Spec.Ports[0].TargetPort != "http" {
				t.Errorf("Service ports %+v, want 80 -> http", s.Spec.Ports)
			}
			if !subset(name, s.Spec.Selector) || len(s.Spec.Selector) != len(name) {
				t.Errorf("Service selector %v, want %v", s.Spec.Selector, name)
			}
			pdb := get("PodDisruptionBudget/codemode")
			if !subset(name, pdb.Spec.Selector) || pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable < 1 {
				t.Errorf("PodDisruptionBudget %+v: want minAvailable >= 1 over %v", pdb.Spec, name)
			}

			get("ServiceAccount/codemode")
			role := get("Role/codemode")
			want := map[string][]string{
				"pods":                              {"get", "list", "watch", "create", "delete", "patch"},
				"pods/exec":                         {"create", "get"},
				"pods/attach":                       {"create", "get"},
				"networking.k8s.io/networkpolicies": {"get", "list", "create", "patch"},
			}
			granted := map[string][]string{}
			for _, r := range role.Rules {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						if g != "" {
							res = g + "/" + res
						}
						granted[res] = append(granted[res], r.Verbs...)
					}
				}
			}
			for res, verbs := range want {
				for _, v := range verbs {
					if !slices.Contains(granted[res], v) {
						t.Errorf("Role does not grant %s %s", v, res)
					}
				}
			}
			for res := range granted {
				if !slices.Contains([]string{"pods", "pods/exec", "pods/attach", "pods/log", "networking.k8s.io/networkpolicies", "namespaces"}, res) {
					t.Errorf("Role grants %s, beyond what the backend needs", res)
				}
			}
			rb := get("RoleBinding/codemode")
			if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != "codemode" || len(rb.Subjects) != 1 || rb.Subjects[0].Kind != "ServiceAccount" || rb.Subjects[0].Name != "codemode" {
				t.Errorf("RoleBinding %+v %+v: want Role codemode bound to ServiceAccount codemode", rb.RoleRef, rb.Subjects)
			}

			_, hasSecret := objs["Secret/codemode-tokens"]
			if hasSecret != tc.tokenSecret {
				t.Errorf("Secret codemode-tokens rendered: %v, want %v", hasSecret, tc.tokenSecret)
			}
		})
	}
}

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func keys(m map[string]object) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
