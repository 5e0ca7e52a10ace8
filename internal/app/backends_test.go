package app

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codemode/codemode/internal/sandbox/kubernetes"
	"github.com/codemode/codemode/internal/settings"
)

// loadSettings loads the settings from flags alone.
func loadSettings(t *testing.T, flags map[string]string) (settings.Settings, error) {
	t.Helper()
	s, _, err := SettingsRegistry().Load(flags, settings.Env{Home: t.TempDir()})
	return s, err
}

// Every backend of the table is a choice of the backend setting, is what
// Candidates returns when chosen, is what NewBackend builds under its name,
// and is examined by doctor with the table's expectations, in table order.
func TestTableAgrees(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	table := Backends()
	if len(table) == 0 {
		t.Fatal("no backends")
	}
	for _, b := range table {
		t.Run(b.Name, func(t *testing.T) {
			if b.Summary == "" || b.New == nil {
				t.Errorf("%s lacks a summary or a constructor: %+v", b.Name, b)
			}
			s, err := loadSettings(t, map[string]string{"backend": strings.ToUpper(b.Name)})
			if err != nil || s.Backend != b.Name {
				t.Fatalf("--backend %s = %q, %v; want it accepted", b.Name, s.Backend, err)
			}
			if got := Candidates(s); !slices.Equal(got, []string{b.Name}) {
				t.Errorf("Candidates(backend=%s) = %v, want just it", b.Name, got)
			}
			sb, err := NewBackend(b.Name, s, nil, log)
			if err != nil || sb.Name() != b.Name {
				t.Fatalf("NewBackend(%s) = %v, %v; want a backend of that name", b.Name, sb, err)
			}
			if got, _ := LookupBackend(b.Name); got.Name != b.Name || got.Expect != b.Expect {
				t.Errorf("LookupBackend(%s) = %+v", b.Name, got)
			}
		})
	}
	s, err := loadSettings(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	targets := doctorTargets(s, nil, log)
	if len(targets) != len(table) {
		t.Fatalf("doctor examines %d backends, the table has %d", len(targets), len(table))
	}
	for i, tg := range targets {
		if tg.Backend.Name() != table[i].Name || tg.Expect != table[i].Expect {
			t.Errorf("doctor target %d = %s %+v, want %s %+v", i, tg.Backend.Name(), tg.Expect, table[i].Name, table[i].Expect)
		}
	}
	var choices []string
	for _, c := range BackendChoices() {
		choices = append(choices, c.Name)
		if c.Summary == "" {
			t.Errorf("backend choice %s has no summary for the help text", c.Name)
		}
	}
	if want := append([]string{"auto"}, backendNames(table)...); !slices.Equal(choices, want) {
		t.Errorf("backend choices = %v, want %v", choices, want)
	}
}

// "auto" is the default and tries the Auto backends in table order; a
// --runtime (MCP_BRIDGE_RUNTIME) naming an engine picks that engine's
// backend, and one naming none the first engine's.
func TestCandidates(t *testing.T) {
	var auto, engines []string
	for _, b := range Backends() {
		if b.Auto {
			auto = append(auto, b.Name)
			if b.Engine != "" {
				engines = append(engines, b.Name)
			}
		}
	}
	if len(auto) == 0 || len(engines) == 0 {
		t.Fatalf("auto tries %v, with engines %v; want both", auto, engines)
	}
	tests := []struct {
		name  string
		flags map[string]string
		env   map[string]string
		want  []string
	}{
		{name: "default", want: auto},
		{name: "explicit auto", flags: map[string]string{"backend": "auto"}, want: auto},
		{name: "runtime docker", env: map[string]string{"MCP_BRIDGE_RUNTIME": "docker"}, want: []string{"docker"}},
		{name: "runtime podman path", env: map[string]string{"MCP_BRIDGE_RUNTIME": "/usr/bin/podman"}, want: []string{"podman"}},
		{name: "runtime docker path", flags: map[string]string{"runtime": "/usr/local/bin/Docker"}, want: []string{"docker"}},
		{name: "runtime naming no engine", env: map[string]string{"MCP_BRIDGE_RUNTIME": "/opt/engine-wrapper"}, want: engines[:1]},
		{name: "explicit backend ignores runtime", flags: map[string]string{"backend": "gvisor", "runtime": "docker"}, want: []string{"gvisor"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _, err := SettingsRegistry().Load(tc.flags, settings.Env{Home: t.TempDir(), Vars: tc.env})
			if err != nil {
				t.Fatal(err)
			}
			if got := Candidates(s); !slices.Equal(got, tc.want) {
				t.Errorf("Candidates = %v, want %v", got, tc.want)
			}
		})
	}
}

// An unknown backend is refused everywhere, naming the table's backends.
func TestUnknownBackend(t *testing.T) {
	names := strings.Join(backendNames(Backends()), ", ")
	if _, err := loadSettings(t, map[string]string{"backend": "vm"}); err == nil || !strings.Contains(err.Error(), "want one of auto, "+names) {
		t.Errorf("--backend vm: error %v, want one naming auto, %s", err, names)
	}
	if _, err := NewBackend("vm", settings.Settings{}, nil, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), names) {
		t.Errorf("NewBackend(vm): error %v, want one naming %s", err, names)
	}
	if _, err := AttackSettings(settings.Settings{Backend: "auto"}, "native,vm", "runsc"); err == nil || !strings.Contains(err.Error(), names) {
		t.Errorf("AttackSettings(native,vm): error %v, want one naming %s", err, names)
	}
	if _, _, err := selectBackend(t.Context(), settings.Settings{Backend: "vm"}, nil, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), names) {
		t.Errorf("selectBackend(vm): error %v, want one naming %s", err, names)
	}
}

// Each attacked backend gets settings of its own: gVisor gets runsc as its
// OCI runtime and the others lose it; a --runtime naming the other engine
// is dropped.
func TestAttackSettings(t *testing.T) {
	type got struct{ Backend, OCIRuntime, Runtime string }
	tests := []struct {
		name                string
		backend, list       string
		ociRuntime, runtime string
		want                []got
	}{
		{name: "default auto", backend: "auto", want: []got{{Backend: "native"}}},
		{name: "default explicit", backend: "docker", runtime: "/usr/bin/docker", want: []got{{Backend: "docker", Runtime: "/usr/bin/docker"}}},
		{name: "gvisor gets runsc", backend: "auto", list: "gvisor,podman", ociRuntime: "crun",
			want: []got{{Backend: "gvisor", OCIRuntime: "/opt/runsc"}, {Backend: "podman", OCIRuntime: "crun"}}},
		{name: "runsc kept for gvisor, dropped elsewhere", backend: "gvisor", list: "native, gvisor,docker", ociRuntime: "/usr/local/bin/runsc",
			want: []got{{Backend: "native"}, {Backend: "gvisor", OCIRuntime: "/usr/local/bin/runsc"}, {Backend: "docker"}}},
		{name: "other engine's runtime dropped", backend: "auto", list: "podman,docker,gvisor", runtime: "/usr/bin/docker",
			want: []got{{Backend: "podman"}, {Backend: "docker", Runtime: "/usr/bin/docker"}, {Backend: "gvisor", OCIRuntime: "/opt/runsc", Runtime: "/usr/bin/docker"}}},
		{name: "wrapper runtime kept", backend: "auto", list: "podman,docker", runtime: "/opt/wrapper",
			want: []got{{Backend: "podman", Runtime: "/opt/wrapper"}, {Backend: "docker", Runtime: "/opt/wrapper"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := settings.Settings{Backend: tc.backend, OCIRuntime: tc.ociRuntime, Runtime: tc.runtime, Image: "img"}
			out, err := AttackSettings(s, tc.list, "/opt/runsc")
			if err != nil {
				t.Fatal(err)
			}
			var gots []got
			for _, bs := range out {
				if bs.Image != "img" {
					t.Errorf("%s lost the other settings: %+v", bs.Backend, bs)
				}
				gots = append(gots, got{bs.Backend, bs.OCIRuntime, bs.Runtime})
			}
			if diff := cmp.Diff(tc.want, gots); diff != "" {
				t.Errorf("AttackSettings(%q) mismatch (-want +got):\n%s", tc.list, diff)
			}
		})
	}
}

// A session Pod outlives its replicas as long as its session would: the
// idle timeout, plus the lag of its activity record.
func TestKubernetesIdleExpiry(t *testing.T) {
	for _, tc := range []struct {
		idle, want time.Duration
	}{
		{10 * time.Minute, 10*time.Minute + kubernetes.ActivityLag},
		{0, time.Hour}, // sessions never expire: the backend's default
	} {
		b := newKubernetes(settings.Settings{IdleTimeout: tc.idle}, nil, slog.New(slog.DiscardHandler)).(*kubernetes.Backend)
		if got := b.IdleExpiry(); got != tc.want {
			t.Errorf("idle timeout %s: Pod idle expiry %s, want %s", tc.idle, got, tc.want)
		}
	}
}
