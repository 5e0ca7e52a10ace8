package image

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// readArchive returns the regular files of a tar stream by name.
func readArchive(t *testing.T, r io.Reader) (files map[string][]byte, order []string) {
	t.Helper()
	files = map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, order
		}
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, hdr.Name)
		if hdr.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[hdr.Name] = b
		}
	}
}

func TestWriteArchive(t *testing.T) {
	const tag = "localhost/codemode-test:archive"
	cfg := Config{Entrypoint: []string{"/usr/local/bin/app"}, Env: []string{pathEnv}, User: ServerUser, Labels: map[string]string{"k": "v"}}
	layer := FilesLayer([]File{
		{Path: "/usr/local/bin/app", Data: []byte("#!/bin/sh\n"), Mode: 0o755},
		{Path: "/usr/local/share/note", Data: []byte("note"), Mode: 0o644},
		{Path: "/etc/passwd", Data: []byte("root:x:0:0::/:/bin/sh\n"), Mode: 0o644},
	})
	var buf bytes.Buffer
	a, err := WriteArchive(t.Context(), &buf, tag, cfg, layer, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files, _ := readArchive(t, bytes.NewReader(buf.Bytes()))

	// Every blob is named by its digest.
	for name, b := range files {
		if hexDigest, ok := strings.CutPrefix(name, "blobs/sha256/"); ok {
			if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != hexDigest {
				t.Errorf("blob %s has digest %x", name, sum)
			}
		}
	}
	blob := func(digest string) []byte {
		t.Helper()
		b, ok := files[blobPath(digest)]
		if !ok {
			t.Fatalf("no blob %s", digest)
		}
		return b
	}
	var index struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
			Platform    struct{ OS string }
		}
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json %s: %v", files["index.json"], err)
	}
	if m := index.Manifests[0]; m.Digest != a.ManifestDigest || m.Annotations["io.containerd.image.name"] != tag || m.Platform.OS != "linux" {
		t.Errorf("index entry %+v, want manifest %s named %s for linux", m, a.ManifestDigest, tag)
	}
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %s", files["oci-layout"])
	}
	var manifest struct {
		Config struct{ Digest string }
		Layers []struct{ Digest, MediaType string }
	}
	if err := json.Unmarshal(blob(a.ManifestDigest), &manifest); err != nil || len(manifest.Layers) != 1 {
		t.Fatalf("manifest: %v", err)
	}
	if manifest.Config.Digest != a.ID {
		t.Errorf("manifest config %s, want the image id %s", manifest.Config.Digest, a.ID)
	}
	var docker []struct {
		Config           string
		RepoTags, Layers []string
	}
	if err := json.Unmarshal(files["manifest.json"], &docker); err != nil || len(docker) != 1 {
		t.Fatalf("manifest.json %s: %v", files["manifest.json"], err)
	}
	if want := []string{blobPath(manifest.Layers[0].Digest)}; docker[0].Config != blobPath(a.ID) || !slices.Equal(docker[0].RepoTags, []string{tag}) || !slices.Equal(docker[0].Layers, want) {
		t.Errorf("manifest.json %+v: want config %s, tag %s, layers %v", docker[0], blobPath(a.ID), tag, want)
	}
	var config struct {
		OS     string
		Config Config
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(blob(a.ID), &config); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cfg, config.Config); diff != "" {
		t.Errorf("image config (-want +got):\n%s", diff)
	}
	if !slices.Equal(config.RootFS.DiffIDs, []string{manifest.Layers[0].Digest}) {
		t.Errorf("diff_ids %v, want the uncompressed layer %s", config.RootFS.DiffIDs, manifest.Layers[0].Digest)
	}

	// The layer: parents before children, modes kept.
	layerFiles, order := readArchive(t, bytes.NewReader(blob(manifest.Layers[0].Digest)))
	want := []string{"usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/app", "usr/local/share/", "usr/local/share/note", "etc/", "etc/passwd"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("layer entries (-want +got):\n%s", diff)
	}
	if string(layerFiles["usr/local/share/note"]) != "note" {
		t.Errorf("layer note = %q", layerFiles["usr/local/share/note"])
	}

	// Reproducible: the same inputs give the same image.
	again, err := WriteArchive(t.Context(), io.Discard, tag, cfg, layer, t.TempDir())
	if err != nil || again != a {
		t.Errorf("second WriteArchive = %+v, %v; want %+v", again, err, a)
	}
}

func TestImagesNeedStaticBinaries(t *testing.T) {
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, exe := range []string{"/bin/sh", notELF} {
		if _, _, err := ServerImage(exe, "/etc/ssl/certs/ca-certificates.crt"); err == nil {
			t.Errorf("ServerImage(%s) accepted it", exe)
		}
		if _, _, err := BinaryImage(exe); err == nil {
			t.Errorf("BinaryImage(%s) accepted it", exe)
		}
	}
	if _, _, err := BinaryImage(buildHello(t)); err != nil {
		t.Errorf("BinaryImage(static) = %v", err)
	}
}

// buildHello builds testdata/hello statically.
func buildHello(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "hello")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", out, "./testdata/hello")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building testdata/hello: %v\n%s", err, b)
	}
	return out
}

// fakeCtr writes a stand-in for containerd's ctr (the name matters: it
// selects ctr's commands) that keeps one image's state in files:
// "images ls" prints ctr's table, "images import" stores the archive's
// manifest digest, "images label" stores the label.
func fakeCtr(t *testing.T) (command []string, state string) {
	t.Helper()
	state = t.TempDir()
	script := filepath.Join(state, "ctr")
	body := `#!/bin/bash
set -euo pipefail
S="` + state + `"
while [ "${1#--}" != "$1" ]; do shift 2; done
echo "$*" >>"$S/calls"
case "$1 $2" in
"images ls")
	echo "REF TYPE DIGEST SIZE PLATFORMS LABELS"
	[ -f "$S/digest" ] || exit 0
	labels=$(cat "$S/labels" 2>/dev/null || echo -)
	echo "${3#name==} application/vnd.oci.image.manifest.v1+json $(cat "$S/digest") 1.0 MiB linux/amd64 $labels"
	;;
"images import")
	tar -xOf "$3" index.json | sed 's/.*"digest":"\([^"]*\)".*/\1/' >"$S/digest"
	echo "io.cri-containerd.image=managed" >"$S/labels"
	;;
"images label")
	echo "io.cri-containerd.image=managed,$4" >"$S/labels"
	;;
*)
	exit 2
	;;
esac
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{script, "--namespace", "k8s.io"}, state
}

func TestContainerdEngine(t *testing.T) {
	ctx := t.Context()
	opts, _ := fakeBuild(t, "", "")
	dir := filepath.Join(t.TempDir(), "rootfs")
	m, _, err := Build(ctx, dir, Spec{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	command, state := fakeCtr(t)
	e := Engine{Command: command, Logger: testLogger(t)}
	const tag = "localhost/codemode-python:test"

	if imported, err := e.Import(ctx, dir, tag); err != nil || !imported {
		t.Fatalf("Import() = %v, %v; want an import", imported, err)
	}
	if img, ok := e.Inspect(ctx, tag); !ok || img.Key != m.Key || !strings.HasPrefix(img.ID, "sha256:") {
		t.Errorf("Inspect() = %+v, %v; want key %s", img, ok, m.Key)
	}
	if imported, err := e.Import(ctx, dir, tag); err != nil || imported {
		t.Errorf("second Import() = %v, %v; want it skipped", imported, err)
	}

	cfg, layer, err := BinaryImage(buildHello(t))
	if err != nil {
		t.Fatal(err)
	}
	const pause = "localhost/codemode-pause:test"
	if loaded, err := e.Load(ctx, pause, cfg, layer); err != nil || !loaded {
		t.Fatalf("Load() = %v, %v; want a load", loaded, err)
	}
	if loaded, err := e.Load(ctx, pause, cfg, layer); err != nil || loaded {
		t.Errorf("second Load() = %v, %v; want it skipped", loaded, err)
	}
	calls, _ := os.ReadFile(filepath.Join(state, "calls"))
	if n := strings.Count(string(calls), "images import"); n != 2 {
		t.Errorf("%d imports, want 2 (one per image):\n%s", n, calls)
	}
}

// TestLoadRealEngines loads an image of a static program into podman and
// docker, runs it, and loads it again, which must be skipped.
func TestLoadRealEngines(t *testing.T) {
	testenv.Slow(t, "loading images into podman and docker")
	cfg, layer, err := BinaryImage(buildHello(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, engine := range map[string]func(testing.TB) []string{"podman": testenv.Podman, "docker": testenv.Docker} {
		t.Run(name, func(t *testing.T) {
			argv := engine(t)
			var b [4]byte
			rand.Read(b[:])
			tag := "localhost/codemode-loadtest:" + hex.EncodeToString(b[:])
			run := func(args ...string) (string, error) {
				out, err := exec.CommandContext(t.Context(), argv[0], append(argv[1:len(argv):len(argv)], args...)...).CombinedOutput()
				return strings.TrimSpace(string(out)), err
			}
			t.Cleanup(func() { run("rmi", "-f", tag) })
			e := Engine{Command: argv, Logger: testLogger(t)}
			if loaded, err := e.Load(t.Context(), tag, cfg, layer); err != nil || !loaded {
				t.Fatalf("Load() = %v, %v; want a load", loaded, err)
			}
			// podman's default ulimits exceed the hard limits here.
			if out, err := run("run", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", tag); err != nil || out != "hello from the image" {
				t.Errorf("running %s = %q, %v", tag, out, err)
			}
			if loaded, err := e.Load(t.Context(), tag, cfg, layer); err != nil || loaded {
				t.Errorf("second Load() = %v, %v; want it skipped", loaded, err)
			}
		})
	}
}
