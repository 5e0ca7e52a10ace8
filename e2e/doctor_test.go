package e2e

import (
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/sandbox"
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
	Engine   string `json:"engine"`
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
	rootless := rootlessPodman(t)
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
		// weaker lists the protections the backend reports as not
		// enforced: it isolates, but cannot run without consent.
		weaker []string
		engine string // expected in the engine's description
	}{
		{name: "native", args: []string{"--backend", "native"}, backend: "native", usable: true},
		{name: "native with a missing rootfs", args: []string{"--backend", "native", "--rootfs", "/nonexistent/rootfs"}, backend: "native"},
		{name: "podman", args: []string{"--backend", "podman", "--runtime", podman[0], "--oci-runtime", ociRuntime, "--image", image}, backend: "podman", usable: true},
		{name: "podman without the image", args: []string{"--backend", "podman", "--runtime", podman[0], "--oci-runtime", ociRuntime, "--image", "localhost/codemode-no-such-image:1"},
			backend: "podman", fix: "codemode image build"},
		{name: "podman rootless", args: []string{"--backend", "podman", "--runtime", rootless.wrapper, "--image", image, "--state-dir", rootless.stateDir},
			backend: "podman", usable: rootless.weaker == nil, weaker: rootless.weaker, fix: "--allow-weaker-sandbox", engine: "rootless"},
		{name: "docker", args: []string{"--backend", "docker", "--runtime", docker[0], "--image", image}, env: []string{"DOCKER_HOST=" + dockerHost}, backend: "docker", usable: true},
		{name: "gvisor", args: []string{"--backend", "gvisor", "--runtime", podman[0], "--oci-runtime", runsc, "--image", image}, backend: "gvisor", usable: true},
		// dockerd knows runsc by the name testdeps registered it under.
		{name: "gvisor on docker", args: []string{"--backend", "gvisor", "--runtime", docker[0], "--oci-runtime", "runsc", "--image", image}, env: []string{"DOCKER_HOST=" + dockerHost}, backend: "gvisor", usable: true},
		{name: "gvisor on docker, runsc by path", args: []string{"--backend", "gvisor", "--runtime", docker[0], "--oci-runtime", runsc, "--image", image}, env: []string{"DOCKER_HOST=" + dockerHost}, backend: "gvisor", usable: true},
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
			if !strings.Contains(r.Engine, tt.engine) {
				t.Errorf("%s: engine %q, want it to mention %q", r.Backend, r.Engine, tt.engine)
			}
			if tt.usable || tt.weaker != nil {
				isolation := false
				fixes := ""
				for _, c := range r.Checks {
					switch {
					case c.Name == "required protections":
						if c.OK || c.Detail != "not enforced: "+strings.Join(tt.weaker, ", ") {
							t.Errorf("check %s: %s, want only %v not enforced", c.Name, c.Detail, tt.weaker)
						}
					case !c.OK && tt.weaker != nil:
						fixes += c.Fix + "\n"
					case !c.OK:
						t.Errorf("check %s failed on a usable backend: %s", c.Name, c.Detail)
					}
					isolation = isolation || strings.HasPrefix(c.Name, "isolation") && c.OK
				}
				if tt.weaker != nil && (r.Error != "" || !strings.Contains(fixes, tt.fix)) {
					t.Errorf("weaker %s: error %q, fixes %q; want no error and a fix naming %q", r.Backend, r.Error, fixes, tt.fix)
				}
				if !isolation {
					t.Errorf("no isolation check from inside a sandbox: %+v", r.Checks)
				}
				for _, want := range rep.Required {
					if slices.Contains(tt.weaker, want) {
						continue
					}
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

// rootlessSetup is how the tests reach rootless podman: testdeps' wrapper,
// which runs podman as an unprivileged user, as the engine; a state dir
// that user can read (its podman reads codemode's seccomp profile there);
// and the protections such an engine cannot give on this host.
type rootlessSetup struct {
	wrapper, stateDir string
	weaker            []string
}

func rootlessPodman(t *testing.T) rootlessSetup {
	r := rootlessSetup{wrapper: testenv.RootlessPodman(t)[0], stateDir: testenv.ReadableTempDir(t)}
	if testenv.HostCgroupV1() {
		r.weaker = []string{sandbox.ProtMemoryLimit, sandbox.ProtCPULimit}
	}
	return r
}

// TestWeakerSandboxNeedsConsent serves on rootless podman, chosen the
// reference project's way (MCP_BRIDGE_RUNTIME=<path>). Where it cannot
// limit a session's memory and CPU, codemode refuses to start until a
// weaker sandbox is allowed, and then runs code in it.
func TestWeakerSandboxNeedsConsent(t *testing.T) {
	rootless := rootlessPodman(t)
	if rootless.weaker == nil {
		t.Skip("rootless podman enforces every protection on this host (cgroup v2)")
	}
	env := []string{"MCP_BRIDGE_RUNTIME=" + rootless.wrapper, "CODEMODE_IMAGE=" + testenv.Image(t), "CODEMODE_STATE_DIR=" + rootless.stateDir}
	tests := []struct {
		name  string
		allow bool
	}{
		{name: "refused", allow: false},
		{name: "allowed", allow: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.allow {
				s := startServer(t, append(env, "CODEMODE_ALLOW_WEAKER_SANDBOX=1")...)
				if out := text(s.run(t, "import os\nprint(os.getuid(), 6 * 7)")); !strings.Contains(out, "65534 42") {
					t.Errorf("run_python on rootless podman printed %q, want 65534 42", out)
				}
				return
			}
			cmd := exec.Command(codemodeBin, "serve")
			cmd.Env = append(baseEnv(t), env...)
			out, err := cmd.CombinedOutput()
			want := "cannot enforce: " + strings.Join(rootless.weaker, ", ")
			if err == nil || !strings.Contains(string(out), want) || !strings.Contains(string(out), "--allow-weaker-sandbox") {
				t.Errorf("serve without consent: %v, output:\n%s\nwant a failure naming %q and --allow-weaker-sandbox", err, out, want)
			}
		})
	}
}
