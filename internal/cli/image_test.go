package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/image"
)

func TestImageUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"image"},
		{"image", "push"},
		{"image", "build", "--engine", "lxc"},
		{"image", "build", "--packages", "python3,--force-yes"},
		{"image", "build", "--suite", "bookworm;true"},
		{"image", "build", "extra"},
		{"image", "binary", "--tag", "t"},
		{"image", "binary", "--binary", "x"},
		{"image", "server", "--engine", "lxc"},
		{"image", "server", "extra"},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(t.Context(), args, IO{Stdout: &stdout, Stderr: &stderr, Home: t.TempDir(), Cwd: t.TempDir()})
		if code != 2 || stdout.Len() > 0 {
			t.Errorf("codemode %s = exit %d, stdout %q; want exit 2 and no output\nstderr: %s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
	}
}

// TestImageBuildCurrent runs the command end to end on a rootfs and an
// image that are already current, so it neither builds nor imports; stdout
// must carry exactly the rootfs directory and the tag.
func TestImageBuildCurrent(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, "images", "bookworm")
	if err := os.MkdirAll(filepath.Join(dir, "usr", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "usr", "bin", "python3"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := image.Spec{}.Normalized()
	m, _ := json.Marshal(image.Manifest{Key: spec.Key(), Suite: spec.Suite, Mirror: spec.Mirror, Packages: spec.Packages})
	if err := os.MkdirAll(filepath.Join(dir, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, image.ManifestPath), m, 0o644); err != nil {
		t.Fatal(err)
	}
	// An engine that has the image with the current key and fails anything else.
	engine := filepath.Join(t.TempDir(), "engine")
	script := "#!/bin/sh\n[ \"$1\" = --some-flag ] && shift\n[ \"$1 $2\" = \"image inspect\" ] || exit 1\necho \"sha256:abc " + spec.Key() + "\"\n"
	if err := os.WriteFile(engine, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"image", "build", "--engine", "none"}, dir + "\n"},
		{[]string{"image", "build", "--engine-cmd", engine + " --some-flag"}, dir + "\nlocalhost/codemode-python:bookworm\n"},
		{[]string{"image", "build", "--engine-cmd", engine, "--tag", "example/py:1", "--rootfs", "images/bookworm", "--state-dir", "/nonexistent"}, dir + "\nexample/py:1\n"},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(t.Context(), tc.args, IO{Stdout: &stdout, Stderr: &stderr, Environ: []string{"CODEMODE_STATE_DIR=" + state}, Home: t.TempDir(), Cwd: state})
		if code != 0 || stdout.String() != tc.want {
			t.Errorf("codemode %s = exit %d, stdout %q; want 0, %q\nstderr: %s", strings.Join(tc.args, " "), code, stdout.String(), tc.want, stderr.String())
		}
	}
}
