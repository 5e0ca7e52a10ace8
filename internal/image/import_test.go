package image

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeEngine writes an engine stand-in that keeps images as files in its
// state directory: "image inspect" prints "<id> <key label>", "import"
// stores the tar and the --change arguments, "rmi" logs the id.
func fakeEngine(t *testing.T) (command []string, state string) {
	t.Helper()
	state = t.TempDir()
	script := filepath.Join(state, "engine")
	body := `#!/bin/bash
set -euo pipefail
S="` + state + `"
name() { echo "$1" | tr '/:' '__'; }
echo "$*" >>"$S/calls"
case "$1" in
image)
	[ "$2" = inspect ] || exit 2
	f="$S/$(name "${!#}")"
	[ -f "$f" ] || { echo "Error: ${!#}: image not known" >&2; exit 125; }
	cat "$f"
	;;
import)
	shift
	key=
	while [ "$1" = --change ]; do
		case "$2" in "LABEL ` + LabelKey + `="*) key=${2#*=} ;; esac
		echo "$2" >>"$S/changes"
		shift 2
	done
	[ "$1" = - ] || exit 2
	n=$(ls "$S" | grep -c '^img-' || true)
	id=img-$n
	cat >"$S/$id.tar"
	echo "$id $key" >"$S/$(name "$2")"
	echo "sha256:$id"
	;;
rmi)
	echo "$2" >>"$S/removed"
	;;
*)
	exit 2
	;;
esac
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{script}, state
}

func TestImport(t *testing.T) {
	ctx := t.Context()
	opts, _ := fakeBuild(t, "", "")
	dir := filepath.Join(t.TempDir(), "rootfs")
	m, _, err := Build(ctx, dir, Spec{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	command, state := fakeEngine(t)
	e := Engine{Command: command, Logger: testLogger(t)}
	const tag = "localhost/codemode-python:test"

	if _, ok := e.Inspect(ctx, tag); ok {
		t.Fatal("Inspect() found an image in an empty engine")
	}
	imported, err := e.Import(ctx, dir, tag)
	if err != nil || !imported {
		t.Fatalf("Import() = %v, %v; want an import", imported, err)
	}
	img, ok := e.Inspect(ctx, tag)
	if !ok || img.Key != m.Key || img.ID != "img-0" {
		t.Errorf("Inspect() = %+v, %v; want img-0 with key %s", img, ok, m.Key)
	}
	changes, _ := os.ReadFile(filepath.Join(state, "changes"))
	for _, want := range []string{"LABEL " + LabelKey + "=" + m.Key, "LABEL " + LabelSuite + "=bookworm", "ENV PATH=", `CMD ["python3"]`} {
		if !strings.Contains(string(changes), want) {
			t.Errorf("import changes %q lack %q", changes, want)
		}
	}
	names := tarNames(t, filepath.Join(state, "img-0.tar"))
	for _, want := range []string{"./", "usr/bin/python3", ManifestPath, "workspace/", "tmp/"} {
		if !slices.Contains(names, want) {
			t.Errorf("imported tar lacks %s; has %v", want, names)
		}
	}

	// Same rootfs: nothing to do.
	if imported, err := e.Import(ctx, dir, tag); err != nil || imported {
		t.Fatalf("second Import() = %v, %v; want it skipped", imported, err)
	}

	// A rebuilt rootfs replaces the image; the old one is removed.
	if _, _, err := Build(ctx, dir, Spec{Packages: []string{"python3-numpy"}}, opts); err != nil {
		t.Fatal(err)
	}
	if imported, err := e.Import(ctx, dir, tag); err != nil || !imported {
		t.Fatalf("Import(rebuilt) = %v, %v; want an import", imported, err)
	}
	if img, _ := e.Inspect(ctx, tag); img.ID != "img-1" {
		t.Errorf("after re-import the tag names %s, want img-1", img.ID)
	}
	if removed, _ := os.ReadFile(filepath.Join(state, "removed")); string(removed) != "img-0\n" {
		t.Errorf("removed images %q, want img-0", removed)
	}
}

func TestImportErrors(t *testing.T) {
	ctx := t.Context()
	command, _ := fakeEngine(t)
	if _, err := (Engine{Command: command}).Import(ctx, t.TempDir(), "x"); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Import(no manifest) = %v, want a missing-manifest error", err)
	}
	opts, _ := fakeBuild(t, "", "")
	dir := filepath.Join(t.TempDir(), "rootfs")
	if _, _, err := Build(ctx, dir, Spec{}, opts); err != nil {
		t.Fatal(err)
	}
	failing := filepath.Join(t.TempDir(), "engine")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\ncase $1 in import) echo 'Error: storage is full' >&2; exit 125;; *) exit 1;; esac\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := (Engine{Command: []string{failing}}).Import(ctx, dir, "x")
	if err == nil || !strings.Contains(err.Error(), "storage is full") {
		t.Errorf("Import(failing engine) = %v, want the engine's message", err)
	}
	if _, err := (Engine{}).Import(ctx, dir, "x"); err == nil {
		t.Error("Import(no engine command) = nil, want an error")
	}
}

func tarNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}
