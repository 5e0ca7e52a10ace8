package container

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Kind is the container engine family; both share one backend because their
// CLIs agree on everything codemode uses.
type Kind string

const (
	Podman Kind = "podman"
	Docker Kind = "docker"
)

// engine runs the engine CLI.
type engine struct {
	kind    Kind
	command []string // program and global flags
	env     []string // the CLI's environment (DOCKER_HOST, XDG_RUNTIME_DIR, ...)
	// dir is the CLI's working directory (engineDir): podman's conmon
	// writes a file "oom" into it when a container dies at its memory
	// limit, which must not land in the directory codemode was started
	// from.
	dir string
}

// detectKind names the engine from its command (a path or a name like
// "podman-remote"), or from its version output when the name says nothing.
func detectKind(ctx context.Context, command []string, env []string) (Kind, error) {
	if k, ok := kindByName(command[0]); ok {
		return k, nil
	}
	e := engine{command: command, env: env}
	out, err := e.output(ctx, "version")
	if err != nil {
		return "", err
	}
	if strings.Contains(strings.ToLower(string(out)), "podman") {
		return Podman, nil
	}
	return Docker, nil
}

// kindByName names the engine from its program's name, when that says.
func kindByName(program string) (Kind, bool) {
	base := strings.ToLower(filepath.Base(program))
	switch {
	case strings.Contains(base, "podman"):
		return Podman, true
	case strings.Contains(base, "docker"):
		return Docker, true
	}
	return "", false
}

func (e engine) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, e.command[0], append(append([]string{}, e.command[1:]...), args...)...)
	c.Env = e.env
	c.Dir = e.dir
	c.WaitDelay = 5 * time.Second
	return c
}

// output runs the CLI and returns stdout; errors carry stderr.
func (e engine) output(ctx context.Context, args ...string) ([]byte, error) {
	c := e.cmd(ctx, args...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(string(out))
		}
		return out, fmt.Errorf("%s %s: %w: %s", filepath.Base(e.command[0]), strings.Join(args[:min(len(args), 2)], " "), err, msg)
	}
	return out, nil
}

// hostInfo is what Probe needs to know about the engine.
type hostInfo struct {
	Version       string
	Rootless      bool
	CgroupVersion string // "1" or "2"
	OCIRuntime    string // the engine's default
	Runtimes      []string
	Machine       bool // podman talks to a VM (macOS/Windows podman machine)
}

// cgroupLimits reports whether the engine applies --memory, --pids-limit
// and --cpus: rootless engines on cgroup v1 get no cgroup delegated and
// ignore them.
func (h hostInfo) cgroupLimits() bool {
	return !h.Rootless || h.CgroupVersion != "1"
}

func (e engine) info(ctx context.Context) (hostInfo, error) {
	var h hostInfo
	switch e.kind {
	case Podman:
		out, err := e.output(ctx, "info", "--format", "json")
		if err != nil {
			return h, err
		}
		var v struct {
			Host struct {
				CgroupsVersion string `json:"cgroupVersion"`
				OCIRuntime     struct {
					Name string `json:"name"`
				} `json:"ociRuntime"`
				Security struct {
					Rootless bool `json:"rootless"`
				} `json:"security"`
				ServiceIsRemote bool `json:"serviceIsRemote"`
			} `json:"host"`
			Version struct {
				Version string `json:"Version"`
			} `json:"version"`
		}
		if err := json.Unmarshal(out, &v); err != nil {
			return h, fmt.Errorf("podman info: %w", err)
		}
		h.Version, h.Rootless, h.OCIRuntime = v.Version.Version, v.Host.Security.Rootless, v.Host.OCIRuntime.Name
		h.CgroupVersion = strings.TrimPrefix(v.Host.CgroupsVersion, "v")
		h.Machine = v.Host.ServiceIsRemote
	case Docker:
		out, err := e.output(ctx, "info", "--format", "{{json .}}")
		if err != nil {
			return h, err
		}
		var v struct {
			ServerVersion  string                     `json:"ServerVersion"`
			CgroupVersion  string                     `json:"CgroupVersion"`
			DefaultRuntime string                     `json:"DefaultRuntime"`
			Runtimes       map[string]json.RawMessage `json:"Runtimes"`
			SecurityOpts   []string                   `json:"SecurityOptions"`
		}
		if err := json.Unmarshal(out, &v); err != nil {
			return h, fmt.Errorf("docker info: %w", err)
		}
		h.Version, h.CgroupVersion, h.OCIRuntime = v.ServerVersion, v.CgroupVersion, v.DefaultRuntime
		for name := range v.Runtimes {
			h.Runtimes = append(h.Runtimes, name)
		}
		for _, o := range v.SecurityOpts {
			if strings.Contains(o, "rootless") {
				h.Rootless = true
			}
		}
	}
	return h, nil
}

// imageID returns the id of a local image, or "" when it is absent.
func (e engine) imageID(ctx context.Context, image string) (string, error) {
	out, err := e.output(ctx, "image", "inspect", "--format", "{{.Id}}", image)
	if err != nil {
		if isNotFound(err) {
			return "", nil
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

func isNotFound(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "no such") || strings.Contains(s, "not found") || strings.Contains(s, "not known")
}

// containerState is the end state of a container.
type containerState struct {
	ExitCode  int
	OOMKilled bool
	Running   bool
}

func (e engine) inspect(ctx context.Context, name string) (containerState, error) {
	out, err := e.output(ctx, "inspect", "--type", "container", "--format",
		"{{.State.ExitCode}} {{.State.OOMKilled}} {{.State.Running}}", name)
	if err != nil {
		return containerState{}, err
	}
	var st containerState
	_, err = fmt.Sscan(string(out), &st.ExitCode, &st.OOMKilled, &st.Running)
	return st, err
}

// remove kills and removes a container by name; a missing one is fine.
// So is one that another `rm -f` is already removing (a Kill racing the
// session's own cleanup): remove then waits until it is gone, so that
// success always means the container no longer exists.
func (e engine) remove(ctx context.Context, name string) error {
	args := []string{"rm", "-f", name}
	if e.kind == Podman {
		args = []string{"rm", "-f", "-t", "0", name}
	}
	_, err := e.output(ctx, args...)
	switch {
	case err == nil || isNotFound(err) || isRemoved(err):
		return nil
	case isRemoving(err):
		return e.waitGone(ctx, name)
	}
	return err
}

// isRemoving: docker refuses a second removal while one is under way.
func isRemoving(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "already in progress")
}

// isRemoved: podman's second removal finds the container already gone.
func isRemoved(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "already been removed")
}

// exists reports whether a container of that name exists; only a clear
// "no such container" counts as absent.
func (e engine) exists(ctx context.Context, name string) (bool, error) {
	_, err := e.output(ctx, "inspect", "--type", "container", "--format", "{{.Id}}", name)
	switch {
	case err == nil:
		return true, nil
	case isNotFound(err):
		return false, nil
	}
	return false, err
}

// waitGone waits until the container no longer exists.
func (e engine) waitGone(ctx context.Context, name string) error {
	for {
		if ok, err := e.exists(ctx, name); err == nil && !ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the removal of container %s: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// labelled lists containers with a label, as name -> value of that label.
func (e engine) labelled(ctx context.Context, label string) (map[string]string, error) {
	out, err := e.output(ctx, "ps", "-a", "--filter", "label="+label, "--format", `{{.Names}}	{{.Labels}}`)
	if err != nil {
		return nil, err
	}
	found := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, labels, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		found[strings.TrimSpace(name)] = labelValue(labels, label)
	}
	return found, nil
}

// labelValue finds key's value in the engines' label renderings
// ("a=b,c=d" for docker, "map[a:b c:d]" for podman).
func labelValue(labels, key string) string {
	labels = strings.TrimSuffix(strings.TrimPrefix(labels, "map["), "]")
	for _, f := range strings.FieldsFunc(labels, func(r rune) bool { return r == ',' || r == ' ' }) {
		for _, sep := range []string{"=", ":"} {
			if k, v, ok := strings.Cut(f, sep); ok && k == key {
				return v
			}
		}
	}
	return ""
}

var errNoEngine = errors.New("container engine not found")
