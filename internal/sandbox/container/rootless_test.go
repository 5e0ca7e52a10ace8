package container

import (
	"slices"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/sandbox/sandboxtest"
	"github.com/codemode/codemode/internal/testenv"
)

// TestPodmanRootless runs the suite on podman run by an unprivileged user
// (testdeps' wrapper). Such an engine gets no cgroups on cgroup v1, so
// memory and CPU must be reported as not enforced, while the processes
// stay bounded by RLIMIT_NPROC and each process's memory by RLIMIT_DATA.
func TestPodmanRootless(t *testing.T) {
	testenv.Slow(t, "the backend suite on rootless podman")
	b := New(&Options{Name: "podman", Command: testenv.RootlessPodman(t), Image: testenv.Image(t),
		StateDir: testenv.ReadableTempDir(t)}) // the user's podman reads the seccomp profile there
	t.Cleanup(func() { b.Close() })
	caps, err := b.Probe(t.Context())
	if err != nil {
		t.Fatalf("Probe() = %v", err)
	}
	if !strings.Contains(caps.Engine, "rootless") {
		t.Fatalf("engine = %q, want a rootless podman", caps.Engine)
	}
	var notEnforced []string
	if testenv.HostCgroupV1() {
		notEnforced = []string{sandbox.ProtMemoryLimit, sandbox.ProtCPULimit}
	}
	sandboxtest.Run(t, sandboxtest.Config{Backend: b, Loopback: true, ImageRoot: true, NotEnforced: notEnforced, Leaks: containerLeaks(b)})
}

func TestRunArgsLimits(t *testing.T) {
	spec := sandbox.Spec{ID: "s", Command: []string{"python3"},
		Limits: sandbox.Limits{MemoryBytes: 256 << 20, PIDs: 64, CPUs: 1}}
	sockets := []sandbox.Mount{{Source: "/run/l", Target: "/run/codemode/egress", Sockets: true}}
	tests := []struct {
		name    string
		backend string
		command []string // engine (nil: the backend's default)
		mounts  []sandbox.Mount
		rc      runConfig
		want    []string // "flag value" prefixes that must be there
		absent  []string // ... and must not
	}{
		{name: "cgroups", backend: "podman", rc: runConfig{runtime: "runc", profile: "/p.json"},
			want:   []string{"--memory 268435456", "--memory-swap 268435456", "--pids-limit 64", "--ulimit nproc=128:128", "--cpus 1", "--security-opt seccomp=/p.json"},
			absent: []string{"--ulimit data="}},
		{name: "rootless on cgroup v1", backend: "podman", rc: runConfig{rlimitsOnly: true, runtime: "runc", profile: "/p.json"},
			want:   []string{"--ulimit nproc=64:64", "--ulimit data=268435456:268435456", "--security-opt seccomp=/p.json"},
			absent: []string{"--memory ", "--memory-swap ", "--pids-limit ", "--cpus "}},
		{name: "gvisor", backend: "gvisor", rc: runConfig{runtime: "runsc", profile: "/p.json"},
			want:   []string{"--memory 268435456", "--pids-limit 1024", "--ulimit nproc=64:64", "--cpus 1"},
			absent: []string{"--security-opt seccomp=", "--ulimit data=", "--runtime-flag "}},
		{name: "gvisor under podman with the egress socket", backend: "gvisor", command: []string{"podman"}, mounts: sockets,
			rc:   runConfig{runtime: "runsc"},
			want: []string{"--runtime-flag host-uds=open", "--runtime-flag network=none", "--volume /run/l:/run/codemode/egress:ro"}},
		{name: "gvisor under docker with the egress socket", backend: "gvisor", command: []string{"docker"}, mounts: sockets,
			rc: runConfig{runtime: "runsc"}, absent: []string{"--runtime-flag "}},
		{name: "podman with the egress socket", backend: "podman", command: []string{"podman"}, mounts: sockets,
			rc: runConfig{runtime: "runc"}, absent: []string{"--runtime-flag "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := spec
			spec.Mounts = tt.mounts
			args := New(&Options{Name: tt.backend, Command: tt.command}).runArgs(spec, "c", tt.rc)
			pairs := make([]string, 0, len(args))
			for i, a := range args {
				if strings.HasPrefix(a, "--") && i+1 < len(args) {
					pairs = append(pairs, a+" "+args[i+1])
				}
			}
			has := func(flag string) bool {
				return slices.ContainsFunc(pairs, func(p string) bool { return strings.HasPrefix(p, flag) })
			}
			for _, f := range tt.want {
				if !has(f) {
					t.Errorf("missing %q in %q", f, args)
				}
			}
			for _, f := range tt.absent {
				if has(f) {
					t.Errorf("unexpected %q in %q", f, args)
				}
			}
		})
	}
}

func TestCapabilitiesLimits(t *testing.T) {
	tests := []struct {
		name string
		info hostInfo
		want map[string]bool // protection -> enforced
	}{
		{name: "rootful cgroup v1", info: hostInfo{CgroupVersion: "1"},
			want: map[string]bool{sandbox.ProtMemoryLimit: true, sandbox.ProtPIDsLimit: true, sandbox.ProtCPULimit: true}},
		{name: "rootless cgroup v1", info: hostInfo{Rootless: true, CgroupVersion: "1"},
			want: map[string]bool{sandbox.ProtMemoryLimit: false, sandbox.ProtPIDsLimit: true, sandbox.ProtCPULimit: false}},
		{name: "rootless cgroup v2", info: hostInfo{Rootless: true, CgroupVersion: "2"},
			want: map[string]bool{sandbox.ProtMemoryLimit: true, sandbox.ProtPIDsLimit: true, sandbox.ProtCPULimit: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			caps := New(&Options{Name: "podman"}).capabilities(&engine{kind: Podman}, tt.info, "runc", true)
			for name, enforced := range tt.want {
				p, ok := caps.Protection(name)
				if !ok || p.Enforced != enforced || p.How == "" {
					t.Errorf("%s = %+v, want enforced=%v with how", name, p, enforced)
				}
			}
		})
	}
}

func TestDockerRuntime(t *testing.T) {
	registered := []string{"runc", "runsc", "io.containerd.runc.v2"}
	tests := []struct {
		want, name, errIn string
		note              bool
	}{
		{want: "", name: ""},
		{want: "runsc", name: "runsc"},
		{want: "/usr/local/bin/runsc", name: "runsc", note: true},
		{want: "/opt/kata/kata-runtime", errIn: "dockerd --add-runtime kata-runtime=/opt/kata/kata-runtime"},
		{want: "crun", errIn: "registered: io.containerd.runc.v2, runc, runsc"},
	}
	for _, tt := range tests {
		name, note, err := dockerRuntime(tt.want, registered)
		if tt.errIn != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errIn) {
				t.Errorf("dockerRuntime(%q) error = %v, want one containing %q", tt.want, err, tt.errIn)
			}
			continue
		}
		if err != nil || name != tt.name || (note != "") != tt.note {
			t.Errorf("dockerRuntime(%q) = %q, %q, %v; want %q (note %v)", tt.want, name, note, err, tt.name, tt.note)
		}
	}
}

// TestEgressBlocker: gVisor carries egress only where runsc can be given
// host-uds=open per container, which podman does and docker does not.
func TestEgressBlocker(t *testing.T) {
	tests := []struct {
		backend string
		command []string
		blocked bool
	}{
		{"podman", []string{"podman"}, false},
		{"docker", []string{"docker"}, false},
		{"gvisor", []string{"/usr/bin/podman"}, false},
		{"gvisor", []string{"docker", "-H", "unix:///d.sock"}, true},
	}
	for _, tt := range tests {
		got := New(&Options{Name: tt.backend, Command: tt.command}).EgressBlocker()
		if (got != "") != tt.blocked {
			t.Errorf("%s with %q: EgressBlocker() = %q, want blocked %v", tt.backend, tt.command, got, tt.blocked)
		}
	}
}

// A Spec's labels cannot say whose container it is: the owner label decides
// which codemode may remove it as a dead one's leftover.
func TestSpecLabelsCannotClaimOwnership(t *testing.T) {
	spec := sandbox.Spec{ID: "s1", Command: []string{"python3"},
		Labels: map[string]string{labelOwner: "principal:alice", labelManaged: "0", "codemode.session-owner": "principal:alice"}}
	b := New(&Options{Name: "podman", Command: []string{"podman"}})
	args := strings.Join(b.runArgs(spec, "c", runConfig{runtime: "runc"}), " ")
	for _, want := range []string{"--label " + labelOwner + "=" + b.owner, "--label " + labelManaged + "=1", "--label codemode.session-owner=principal:alice"} {
		if !strings.Contains(args, want) {
			t.Errorf("run args lack %q: %s", want, args)
		}
	}
	for _, bad := range []string{labelOwner + "=principal:alice", labelManaged + "=0"} {
		if strings.Contains(args, bad) {
			t.Errorf("run args carry the Spec's %q: %s", bad, args)
		}
	}
}
