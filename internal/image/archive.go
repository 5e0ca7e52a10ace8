package image

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Config is the part of an image's configuration codemode sets.
type Config struct {
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Cmd        []string          `json:"Cmd,omitempty"`
	Env        []string          `json:"Env,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	User       string            `json:"User,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
}

// File is one regular file of a layer built by FilesLayer.
type File struct {
	Path   string // absolute path in the image
	Source string // file on this machine to copy; "" when Data is used
	Data   []byte
	Mode   int64 // permission bits
}

// FilesLayer returns a layer (for WriteArchive) holding files, with their
// parent directories (mode 0755, owned by root) and every file owned by root.
func FilesLayer(files []File) func(context.Context, io.Writer) error {
	return func(ctx context.Context, w io.Writer) error {
		tw := tar.NewWriter(w)
		dirs := map[string]bool{}
		epoch := time.Unix(0, 0)
		for _, f := range files {
			name := strings.TrimPrefix(path.Clean(f.Path), "/")
			var parents []string
			for d := path.Dir(name); d != "." && !dirs[d]; d = path.Dir(d) {
				dirs[d] = true
				parents = append(parents, d)
			}
			slices.Reverse(parents)
			for _, d := range parents {
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
					return err
				}
			}
			data := f.Data
			if f.Source != "" {
				var err error
				if data, err = os.ReadFile(f.Source); err != nil {
					return err
				}
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: f.Mode, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return err
			}
			if _, err := tw.Write(data); err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return tw.Close()
	}
}

// Archive is what WriteArchive wrote: the image's id (its config digest,
// "sha256:…", which podman and docker show as the image id) and its
// manifest's digest (containerd's image digest).
type Archive struct {
	ID             string
	ManifestDigest string
}

const (
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar"
)

// WriteArchive writes a one-layer image tagged tag to w, as an OCI image
// layout with a Docker manifest.json next to it, so "ctr images import",
// "podman load" and "docker load" all take it. layer writes the layer's
// uncompressed tar; it is spooled to a temporary file in tmpDir ("" for the
// default) because the archive needs its digest and size first. The config
// has no timestamps, so the same layer and config give the same image id.
func WriteArchive(ctx context.Context, w io.Writer, tag string, cfg Config, layer func(context.Context, io.Writer) error, tmpDir string) (Archive, error) {
	a, err := writeArchive(ctx, w, tag, cfg, layer, tmpDir)
	if err != nil {
		return Archive{}, fmt.Errorf("writing image archive %s: %w", tag, err)
	}
	return a, nil
}

func writeArchive(ctx context.Context, w io.Writer, tag string, cfg Config, layer func(context.Context, io.Writer) error, tmpDir string) (Archive, error) {
	spool, err := os.CreateTemp(tmpDir, "codemode-layer-*.tar")
	if err != nil {
		return Archive{}, err
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	h := sha256.New()
	if err := layer(ctx, io.MultiWriter(spool, h)); err != nil {
		return Archive{}, fmt.Errorf("layer: %w", err)
	}
	layerSize, err := spool.Seek(0, io.SeekCurrent)
	if err != nil {
		return Archive{}, err
	}
	layerDigest := "sha256:" + hex.EncodeToString(h.Sum(nil))

	configJSON, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       cfg,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
		"history":      []map[string]string{{"created_by": "codemode image"}},
	})
	if err != nil {
		return Archive{}, err
	}
	configDigest := digest(configJSON)
	manifestJSON, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaManifest,
		"config":        map[string]any{"mediaType": mediaConfig, "digest": configDigest, "size": len(configJSON)},
		"layers":        []map[string]any{{"mediaType": mediaLayer, "digest": layerDigest, "size": layerSize}},
	})
	if err != nil {
		return Archive{}, err
	}
	manifestDigest := digest(manifestJSON)
	indexJSON, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaIndex,
		"manifests": []map[string]any{{
			"mediaType": mediaManifest,
			"digest":    manifestDigest,
			"size":      len(manifestJSON),
			"platform":  map[string]string{"architecture": runtime.GOARCH, "os": "linux"},
			"annotations": map[string]string{
				"io.containerd.image.name":          tag,
				"org.opencontainers.image.ref.name": tag,
			},
		}},
	})
	if err != nil {
		return Archive{}, err
	}
	dockerJSON, err := json.Marshal([]map[string]any{{
		"Config":   blobPath(configDigest),
		"RepoTags": []string{tag},
		"Layers":   []string{blobPath(layerDigest)},
	}})
	if err != nil {
		return Archive{}, err
	}

	tw := tar.NewWriter(w)
	epoch := time.Unix(0, 0)
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch}); err != nil {
			return Archive{}, err
		}
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return Archive{}, err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: blobPath(layerDigest), Mode: 0o644, Size: layerSize, ModTime: epoch}); err != nil {
		return Archive{}, err
	}
	if _, err := io.Copy(tw, spool); err != nil {
		return Archive{}, err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{blobPath(configDigest), configJSON},
		{blobPath(manifestDigest), manifestJSON},
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", indexJSON},
		{"manifest.json", dockerJSON},
	} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: epoch}); err != nil {
			return Archive{}, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return Archive{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return Archive{}, err
	}
	return Archive{ID: configDigest, ManifestDigest: manifestDigest}, nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func blobPath(digest string) string { return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:") }

// ServerUser is the user codemode's server image runs as: not root, and
// numeric, so Kubernetes' runAsNonRoot can check it.
const ServerUser = "65532:65532"

// ServerImage is the configuration and layer of codemode's server image:
// the static executable exe as /usr/local/bin/codemode (the entrypoint) and
// the CA bundle caFile as /etc/ssl/certs/ca-certificates.crt, run as
// ServerUser.
func ServerImage(exe, caFile string) (Config, func(context.Context, io.Writer) error, error) {
	if err := checkStatic(exe); err != nil {
		return Config{}, nil, err
	}
	cfg := Config{
		Entrypoint: []string{"/usr/local/bin/codemode"},
		Env:        []string{pathEnv, "HOME=/tmp"},
		WorkingDir: "/tmp",
		User:       ServerUser,
	}
	return cfg, FilesLayer([]File{
		{Path: "/usr/local/bin/codemode", Source: exe, Mode: 0o755},
		{Path: "/etc/ssl/certs/ca-certificates.crt", Source: caFile, Mode: 0o644},
		{Path: "/etc/passwd", Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n"), Mode: 0o644},
		{Path: "/etc/group", Data: []byte("root:x:0:\nnonroot:x:65532:\n"), Mode: 0o644},
	}), nil
}

// BinaryImage is the configuration and layer of an image holding just the
// static executable exe, as its entrypoint /NAME (e.g. a Kubernetes Pod
// sandbox's pause program, for nodes that reach no registry).
func BinaryImage(exe string) (Config, func(context.Context, io.Writer) error, error) {
	if err := checkStatic(exe); err != nil {
		return Config{}, nil, err
	}
	name := "/" + filepath.Base(exe)
	return Config{Entrypoint: []string{name}}, FilesLayer([]File{{Path: name, Source: exe, Mode: 0o755}}), nil
}

// checkStatic refuses executables that need a dynamic loader: these images
// have no libc.
func checkStatic(exe string) error {
	f, err := elf.Open(exe)
	if err != nil {
		return fmt.Errorf("%s: %w", exe, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; build it static (CGO_ENABLED=0)", exe)
		}
	}
	return nil
}
