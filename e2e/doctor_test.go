package e2e

import (
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/testenv"
)

// doctorReport is the part of `codemode doctor --json` the tests read.
type doctorReport struct {
	Selected string         `json:"selected"`
	Required []string       `json:"required"`
	Results  []doctorResult `json:"results"`
}

type doctorResult struct {
	Backend  string `json:"backend"`
	Usable   bool   `json:"usable"`
	Selected bool   `json:"selected"`
	Error    string `json:"error"`
	Checks   []struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
		Fix    string `json:"fix"`
	} `json:"checks"`
	Protections []struct {
		Name     string `json:"name"`
		Enforced bool   `json:"enforced"`
		How      string `json:"how"`
	} `json:"protections"`
}

// TestDoctor runs `codemode doctor --json` against every backend with the
// test setup's engines and image, and with configurations that cannot run:
// the selected backend's verdict sets the exit status, each failure names
// its fix, and a usable backend has passed the isolation checks from
// inside a real sandbox.
func TestDoctor(t *testing.T) {
	podman := testenv.Podman(t)
	docker := testenv.Docker(t)
	runsc := testenv.Runsc(t)
	image := testenv.Image(t)
	dockerHost := ""
	for i, a := range docker {
		if a == "-H" && i+1 < len(docker) {
			dockerHost = docker[i+1]
		}
	}
	// podman's global flags (--runtime runc here) become codemode's setting.
	ociRuntime := "runc"
	if i := slices.Index(podman, "--runtime"); i >= 0 && i+1 < len(podman) {
		ociRuntime = podman[i+1]
	}
	tests := []struct {
		name    string
		args    []string
		env     []string
		backend string
		usable  bool
		fix     string // expected in a failed check's fix
	}{
		{name: "native", args: []string{"--backend", "native"}, backend: "native", usable: true},
		{name: "native with a missing rootfs", args: []string{"--backend", "native", "--rootfs", "/nonexistent/rootfs"}, backend: "native"},
		{name: "podman", args: []string{"--backend", "podman", "--runtime", podman[0], "--oci-runtime", ociRuntime, "--image", image}, backend: "podman", usable: true},
		{name: "podman without the image", args: []string{"--backend", "podman", "--runtime", podman[0], "--oci-runtime", ociRuntime, "--image", "localhost/codemode-no-such-image:1"},
			backend: "podman", fix: "codemode image build"},
		{name: "docker", args: []string{"--backend", "docker", "--runtime", docker[0], "--image", image}, env: []string{"DOCKER_HOST=" + dockerHost}, backend: "docker", usable: true},
		{name: "gvisor", args: []string{"--backend", "gvisor", "--runtime", podman[0], "--oci-runtime", runsc, "--image", image}, backend: "gvisor", usable: true},
		// dockerd knows runsc by the name testdeps registered it under.
		{name: "gvisor on docker", args: []string{"--backend", "gvisor", "--runtime", docker[0], "--oci-runtime", "runsc", "--image", image}, env: []string{"DOCKER_HOST=" + dockerHost}, backend: "gvisor", usable: true},
		{name: "gvisor without runsc", args: []string{"--backend", "gvisor", "--runtime", podman[0], "--oci-runtime", "/nonexistent/runsc", "--image", image},
			backend: "gvisor", fix: "runsc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(codemodeBin, append([]string{"doctor", "--json"}, tt.args...)...)
			cmd.Env = append(baseEnv(t), tt.env...)
			out, err := cmd.Output()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			if tt.usable != (err == nil) {
				t.Errorf("exit status %v, want success=%v", err, tt.usable)
			}
			var rep doctorReport
			if err := json.Unmarshal(out, &rep); err != nil {
				t.Fatalf("doctor --json printed no JSON report (%v):\n%s", err, out)
			}
			if rep.Selected != tt.backend {
				t.Errorf("selected = %q, want %q", rep.Selected, tt.backend)
			}
			i := slices.IndexFunc(rep.Results, func(r doctorResult) bool {
				return r.Backend == tt.backend
			})
			if i < 0 {
				t.Fatalf("no result for %s in %s", tt.backend, out)
			}
			r := rep.Results[i]
			if r.Usable != tt.usable || !r.Selected {
				t.Errorf("%s: usable=%v selected=%v, want usable=%v selected", r.Backend, r.Usable, r.Selected, tt.usable)
			}
			if tt.usable {
				isolation := false
				for _, c := range r.Checks {
					if !c.OK {
						t.Errorf("check %s failed on a usable backend: %s", c.Name, c.Detail)
					}
					isolation = isolation || strings.HasPrefix(c.Name, "isolation")
				}
				if !isolation {
					t.Errorf("no isolation check from inside a sandbox: %+v", r.Checks)
				}
				for _, want := range rep.Required {
					ok := false
					for _, p := range r.Protections {
						ok = ok || p.Name == want && p.Enforced && p.How != ""
					}
					if !ok {
						t.Errorf("required protection %s not reported as enforced (with how): %+v", want, r.Protections)
					}
				}
				return
			}
			fixes := ""
			for _, c := range r.Checks {
				if !c.OK {
					fixes += c.Fix + "\n"
				}
			}
			if r.Error == "" || !strings.Contains(fixes, tt.fix) {
				t.Errorf("unusable %s: error %q, fixes %q; want an error and a fix naming %q", r.Backend, r.Error, fixes, tt.fix)
			}
		})
	}
}
