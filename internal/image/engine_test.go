package image

import (
	"os/exec"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEngineCommand(t *testing.T) {
	lookPath := func(installed ...string) func(string) (string, error) {
		return func(name string) (string, error) {
			if slices.Contains(installed, name) {
				return "/usr/bin/" + name, nil
			}
			return "", exec.ErrNotFound
		}
	}
	tests := []struct {
		name, engine, engineCmd string
		installed               []string
		want                    []string
		wantErr                 bool
	}{
		{name: "default prefers podman", installed: []string{"docker", "podman"}, want: []string{"podman"}},
		{name: "default falls back to docker", installed: []string{"docker"}, want: []string{"docker"}},
		{name: "default without engines", want: nil},
		{name: "explicit docker", engine: "docker", installed: []string{"docker", "podman"}, want: []string{"docker"}},
		{name: "explicit engine missing", engine: "podman", installed: []string{"docker"}, wantErr: true},
		{name: "none", engine: "none", installed: []string{"podman"}, want: nil},
		{name: "containerd is ctr in the k8s.io namespace", engine: "containerd", installed: []string{"ctr", "podman"}, want: []string{"ctr", "--namespace", "k8s.io"}},
		{name: "containerd without ctr", engine: "containerd", installed: []string{"podman"}, wantErr: true},
		{name: "unknown engine", engine: "lxc", wantErr: true},
		{name: "engine-cmd wins", engine: "podman", engineCmd: " /usr/bin/docker  -H unix:///run/d.sock ", installed: []string{"/usr/bin/docker", "podman"},
			want: []string{"/usr/bin/docker", "-H", "unix:///run/d.sock"}},
		{name: "engine-cmd not found", engineCmd: "nerdctl", wantErr: true},
		{name: "blank engine-cmd", engineCmd: "  ", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EngineCommand(tc.engine, tc.engineCmd, lookPath(tc.installed...))
			if (err != nil) != tc.wantErr {
				t.Fatalf("EngineCommand(%q, %q) error = %v, want error %v", tc.engine, tc.engineCmd, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("EngineCommand(%q, %q) mismatch (-want +got):\n%s", tc.engine, tc.engineCmd, diff)
			}
		})
	}
}
