package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// Engine is a container engine's command line: podman or docker, with any
// global flags, e.g. {"podman"} or {"/usr/bin/docker", "-H",
// "unix:///run/codemode/docker.sock"}, or containerd's ctr, e.g. {"ctr",
// "--namespace", "k8s.io"} for the images a Kubernetes node runs. podman's
// and docker's import, load and image inspect commands are used, which have
// the same shape; ctr gets image archives (see WriteArchive) to import.
type Engine struct {
	Command []string
	Logger  *slog.Logger // nil logs nothing
}

// EngineCommand resolves `codemode image build`'s --engine (podman,
// docker, containerd, none, or "" for podman if installed, else docker, else
// none; containerd means ctr in the k8s.io namespace, which is the
// Kubernetes node's) and
// --engine-cmd (a command line, split at spaces, that wins) to an engine
// command line; nil means no engine. lookPath is exec.LookPath.
func EngineCommand(engine, engineCmd string, lookPath func(string) (string, error)) ([]string, error) {
	if engineCmd != "" {
		argv := strings.Fields(engineCmd)
		if len(argv) == 0 {
			return nil, errors.New("--engine-cmd is blank")
		}
		if _, err := lookPath(argv[0]); err != nil {
			return nil, fmt.Errorf("--engine-cmd: %w", err)
		}
		return argv, nil
	}
	engines := []string{"podman", "docker"}
	switch {
	case engine == "":
		for _, name := range engines {
			if _, err := lookPath(name); err == nil {
				return []string{name}, nil
			}
		}
		return nil, nil
	case engine == "none":
		return nil, nil
	case slices.Contains(engines, engine):
		if _, err := lookPath(engine); err != nil {
			return nil, fmt.Errorf("--engine %s: %w", engine, err)
		}
		return []string{engine}, nil
	case engine == "containerd":
		if _, err := lookPath("ctr"); err != nil {
			return nil, fmt.Errorf("--engine containerd: %w", err)
		}
		return []string{"ctr", "--namespace", "k8s.io"}, nil
	}
	return nil, fmt.Errorf("--engine %q: want podman, docker, containerd or none", engine)
}

// Image is what an engine knows about a tag.
type Image struct {
	ID  string
	Key string // the LabelKey label; "" when the image has none
}

// Inspect returns the image the engine has under tag, or ok=false when it
// has none (or cannot say: a broken engine shows up when importing).
func (e Engine) Inspect(ctx context.Context, tag string) (img Image, ok bool) {
	if len(e.Command) == 0 {
		return img, false
	}
	if e.isContainerd() {
		return e.inspectContainerd(ctx, tag)
	}
	// Labels is nil (and index fails) for an image without any.
	format := fmt.Sprintf(`{{.Id}} {{if .Config.Labels}}{{index .Config.Labels %q}}{{end}}`, LabelKey)
	var stdout, stderr bytes.Buffer
	cmd := e.command(ctx, "image", "inspect", "--format", format, tag)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		e.logger().DebugContext(ctx, "image not found", "tag", tag, "err", err, "stderr", strings.TrimSpace(stderr.String()))
		return img, false
	}
	id, key, _ := strings.Cut(strings.TrimSpace(stdout.String()), " ")
	if key == "<no value>" {
		key = ""
	}
	return Image{ID: id, Key: strings.TrimSpace(key)}, id != ""
}

// Import makes tag an image of the rootfs in dir (built by Build, so it has
// a manifest) and labels it with the rootfs's content key. When the engine
// already has tag with that key it does nothing and returns false. The
// image that tag named before, if any, is removed when nothing else uses it.
func (e Engine) Import(ctx context.Context, dir, tag string) (imported bool, err error) {
	if len(e.Command) == 0 {
		return false, errors.New("importing image: no engine command")
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("importing %s into %s as %s: %w", dir, e.Command[0], tag, err)
		}
	}()
	m, err := ReadManifest(dir)
	if err != nil {
		return false, err
	}
	log := e.logger()
	old, had := e.Inspect(ctx, tag)
	if had && old.Key == m.Key {
		log.InfoContext(ctx, "image is current", "tag", tag, "key", m.Key, "engine", e.Command[0])
		return false, nil
	}

	start := time.Now()
	log.InfoContext(ctx, "importing image", "tag", tag, "key", m.Key, "engine", e.Command[0], "rootfs", dir)
	importTar := e.importTar
	if e.isContainerd() {
		importTar = e.importContainerd
	}
	id, err := importTar(ctx, dir, tag, m)
	if err != nil {
		return false, err
	}
	log.InfoContext(ctx, "image imported", "tag", tag, "id", id, "duration", time.Since(start).Round(time.Millisecond))
	// containerd moves the name to the new image and collects the old one.
	if had && old.ID != "" && !sameID(old.ID, id) && !e.isContainerd() {
		var stderr bytes.Buffer
		cmd := e.command(ctx, "rmi", old.ID)
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			log.DebugContext(ctx, "previous image kept", "id", old.ID, "err", err, "stderr", strings.TrimSpace(stderr.String()))
		} else {
			log.InfoContext(ctx, "previous image removed", "id", old.ID)
		}
	}
	return true, nil
}

// importTar streams the rootfs into "<engine> import" and returns the new
// image id.
func (e Engine) importTar(ctx context.Context, dir, tag string, m Manifest) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	args := []string{"import"}
	for _, c := range []string{
		"LABEL " + LabelKey + "=" + m.Key,
		"LABEL " + LabelSuite + "=" + m.Suite,
		"ENV " + pathEnv,
		"ENV LANG=C.UTF-8",
		"WORKDIR /workspace",
		`CMD ["python3"]`,
	} {
		args = append(args, "--change", c)
	}
	args = append(args, "-", tag)
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: 8 << 10}
	cmd := e.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	pipe := &recordingWriter{w: stdin}
	werr := make(chan error, 1)
	go func() {
		err := WriteTar(ctx, pipe, dir)
		if err != nil && pipe.err == nil {
			// Reading the rootfs failed (or ctx ended): kill the engine
			// before it sees end of input, so a truncated archive is
			// never committed as an image.
			cancel()
		}
		stdin.Close()
		werr <- err
	}()
	waitErr := cmd.Wait()
	writeErr := <-werr
	switch {
	case writeErr != nil && (pipe.err == nil || waitErr == nil):
		if waitErr == nil { // the engine committed a partial archive
			e.command(context.WithoutCancel(ctx), "rmi", tag).Run()
		}
		return "", writeErr
	case waitErr != nil:
		return "", fmt.Errorf("%w: %s", waitErr, stderr)
	}
	// podman prints the id alone; docker prints "sha256:<id>".
	return strings.TrimSpace(stdout.String()), nil
}

const pathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func (e Engine) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, e.Command[0], append(e.Command[1:len(e.Command):len(e.Command)], args...)...)
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

func (e Engine) logger() *slog.Logger {
	return discardIfNil(e.Logger).With("component", "image")
}

// sameID compares image ids the way both engines print them (with or
// without "sha256:", full or not).
func sameID(a, b string) bool {
	a, b = strings.TrimPrefix(a, "sha256:"), strings.TrimPrefix(b, "sha256:")
	if a == "" || b == "" {
		return false
	}
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}

// recordingWriter remembers the first write error, which tells a failing
// engine (write side) from a failing rootfs (read side).
type recordingWriter struct {
	w   io.Writer
	err error
}

func (r *recordingWriter) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.TrimSpace(string(t.b)) }
