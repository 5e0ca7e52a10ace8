package image

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// isContainerd reports whether the engine is containerd's ctr, whose
// commands differ from podman's and docker's.
func (e Engine) isContainerd() bool {
	return len(e.Command) > 0 && filepath.Base(e.Command[0]) == "ctr"
}

// inspectContainerd reads tag's manifest digest and LabelKey from "ctr
// images ls", whose columns are REF TYPE DIGEST SIZE (two words) PLATFORMS
// LABELS ("-" or k=v,k=v).
func (e Engine) inspectContainerd(ctx context.Context, tag string) (img Image, ok bool) {
	var stdout, stderr bytes.Buffer
	cmd := e.command(ctx, "images", "ls", "name=="+tag)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		e.logger().DebugContext(ctx, "image not found", "tag", tag, "err", err, "stderr", strings.TrimSpace(stderr.String()))
		return img, false
	}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[0] != tag {
			continue
		}
		img.ID = f[2]
		for _, kv := range strings.Split(f[len(f)-1], ",") {
			if k, v, ok := strings.Cut(kv, "="); ok && k == LabelKey {
				img.Key = v
			}
		}
		return img, true
	}
	return img, false
}

// importContainerd imports the rootfs in dir as an image archive and labels
// the containerd image with the rootfs's key, which is where
// inspectContainerd looks for it.
func (e Engine) importContainerd(ctx context.Context, dir, tag string, m Manifest) (string, error) {
	cfg := Config{
		Cmd:        []string{"python3"},
		Env:        []string{pathEnv, "LANG=C.UTF-8"},
		WorkingDir: "/workspace",
		Labels:     map[string]string{LabelKey: m.Key, LabelSuite: m.Suite},
	}
	a, err := e.load(ctx, tag, cfg, func(ctx context.Context, w io.Writer) error { return WriteTar(ctx, w, dir) })
	if err != nil {
		return "", err
	}
	var stderr bytes.Buffer
	cmd := e.command(ctx, "images", "label", tag, LabelKey+"="+m.Key)
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("labelling %s: %w: %s", tag, err, strings.TrimSpace(stderr.String()))
	}
	return a.ManifestDigest, nil
}

// Load makes tag an image of one layer (see WriteArchive and FilesLayer)
// with config cfg, unless the engine has that very image under tag already
// (the archive is reproducible, so its id tells). It reports whether it
// loaded the image.
func (e Engine) Load(ctx context.Context, tag string, cfg Config, layer func(context.Context, io.Writer) error) (loaded bool, err error) {
	if len(e.Command) == 0 {
		return false, fmt.Errorf("loading image %s: no engine command", tag)
	}
	a, err := WriteArchive(ctx, io.Discard, tag, cfg, layer, "")
	if err != nil {
		return false, err
	}
	if old, ok := e.Inspect(ctx, tag); ok && (sameID(old.ID, a.ID) || sameID(old.ID, a.ManifestDigest)) {
		e.logger().InfoContext(ctx, "image is current", "tag", tag, "id", old.ID, "engine", e.Command[0])
		return false, nil
	}
	if _, err := e.load(ctx, tag, cfg, layer); err != nil {
		return false, err
	}
	return true, nil
}

// load writes the image archive to a temporary file and has the engine
// load it: "ctr images import", "podman load" or "docker load".
func (e Engine) load(ctx context.Context, tag string, cfg Config, layer func(context.Context, io.Writer) error) (Archive, error) {
	f, err := os.CreateTemp("", "codemode-image-*.tar")
	if err != nil {
		return Archive{}, fmt.Errorf("loading image %s: %w", tag, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	a, err := WriteArchive(ctx, f, tag, cfg, layer, "")
	if err != nil {
		return Archive{}, err
	}
	if err := f.Close(); err != nil {
		return Archive{}, fmt.Errorf("loading image %s: %w", tag, err)
	}
	args := []string{"load", "-i", f.Name()}
	if e.isContainerd() {
		args = []string{"images", "import", f.Name()}
	}
	stderr := &tailBuffer{max: 8 << 10}
	cmd := e.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	if err := cmd.Run(); err != nil {
		return Archive{}, fmt.Errorf("loading image %s into %s: %w: %s", tag, e.Command[0], err, stderr)
	}
	e.logger().InfoContext(ctx, "image loaded", "tag", tag, "id", a.ID, "engine", e.Command[0])
	return a, nil
}
