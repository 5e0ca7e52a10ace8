package container

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/sandbox/seccomp"
)

// prepare resolves the engine, writes the seccomp profile, removes
// containers left by dead codemode processes, makes sure the image is
// there, and settles the OCI runtime and --init with a real test run. It
// runs once; Start calls it so the first session, never a call's timeout,
// pays for a pull.
func (b *Backend) prepare(ctx context.Context) error {
	b.mu.Lock()
	done := b.prepared
	b.mu.Unlock()
	if done {
		return nil
	}
	_, err := b.Probe(ctx)
	return err
}

// Probe implements sandbox.Backend.
func (b *Backend) Probe(ctx context.Context) (sandbox.Capabilities, error) {
	caps := sandbox.Capabilities{Backend: b.Name()}
	e, err := b.resolve(ctx)
	if err != nil {
		return caps, fmt.Errorf("%w: %v", sandbox.ErrUnsupported, err)
	}
	info, err := e.info(ctx)
	if err != nil && e.kind == Podman && needsMachine(err) {
		// macOS and Windows podman talk to a VM: start it when first needed.
		if err = b.startMachine(ctx, e); err == nil {
			info, err = e.info(ctx)
		}
	}
	if err != nil {
		return caps, fmt.Errorf("%w: %v", sandbox.ErrUnsupported, err)
	}
	if err := b.writeProfile(); err != nil {
		return caps, err
	}
	b.sweep(ctx, e)
	if err := b.ensureImage(ctx, e); err != nil {
		return caps, err
	}
	runtime, useInit, notes, err := b.trial(ctx, e, info)
	if err != nil {
		return caps, fmt.Errorf("%w: %v", sandbox.ErrUnsupported, err)
	}
	caps = b.capabilities(e, info, runtime, useInit)
	caps.Notes = append(caps.Notes, notes...)
	b.mu.Lock()
	b.runtime, b.useInit, b.rlimits, b.caps, b.prepared = runtime, useInit, !info.cgroupLimits(), caps, true
	b.mu.Unlock()
	return caps, nil
}

func (b *Backend) writeProfile() error {
	dir := b.opts.StateDir
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	path := filepath.Join(dir, "seccomp-codemode.json")
	data, err := seccomp.OCIProfile()
	if err != nil {
		return fmt.Errorf("%w: %v", sandbox.ErrUnsupported, err)
	}
	if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, data) {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return fmt.Errorf("writing seccomp profile: %w", err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	b.mu.Lock()
	b.profile = path
	b.mu.Unlock()
	return nil
}

// sweep removes containers whose codemode owner no longer runs.
func (b *Backend) sweep(ctx context.Context, e *engine) {
	found, err := e.labelled(ctx, labelOwner)
	if err != nil {
		b.log.Warn("listing codemode containers", "error", err)
		return
	}
	for name, owner := range found {
		if owner == b.owner || sandbox.OwnerAlive(owner) {
			continue
		}
		if err := e.remove(ctx, name); err != nil {
			b.log.Warn("removing a container left by a dead codemode", "container", name, "error", err)
			continue
		}
		b.log.Info("removed a container left by a dead codemode", "container", name, "owner", owner)
	}
}

func (b *Backend) ensureImage(ctx context.Context, e *engine) error {
	id, err := e.imageID(ctx, b.opts.Image)
	if err != nil {
		return err
	}
	if id != "" {
		return nil
	}
	if !b.opts.Pull {
		return fmt.Errorf("image %s is not present in %s; build one from Debian packages with `codemode image build --engine %s` (no registry needed), or allow pulling",
			b.opts.Image, e.kind, e.kind)
	}
	b.log.Info("pulling image before the first session", "image", b.opts.Image)
	c := e.cmd(ctx, "pull", b.opts.Image)
	out, err := c.StdoutPipe()
	if err != nil {
		return err
	}
	c.Stderr = c.Stdout
	if err := c.Start(); err != nil {
		return err
	}
	logLines(out, func(line string) { b.log.Info("pull", "image", b.opts.Image, "progress", line) })
	if err := c.Wait(); err != nil {
		return fmt.Errorf("pulling %s: %w", b.opts.Image, err)
	}
	return nil
}

// trial runs a throw-away container with the session flags. It picks the
// OCI runtime (crun cannot run on hybrid cgroup hosts; runc can) and
// whether the engine offers --init (an init as pid 1 reaps orphans).
func (b *Backend) trial(ctx context.Context, e *engine, info hostInfo) (runtime string, useInit bool, notes []string, err error) {
	want := b.opts.OCIRuntime
	if e.kind == Docker {
		name, note, err := dockerRuntime(want, info.Runtimes)
		if err != nil {
			return "", false, nil, err
		}
		if note != "" {
			notes = append(notes, note)
		}
		want = name
	}
	runtimes := []string{want}
	if b.opts.OCIRuntime == "" && e.kind == Podman {
		runtimes = append(runtimes, "runc")
	}
	var lastErr error
	for _, rt := range runtimes {
		for _, init := range []bool{true, false} {
			if err := b.tryRun(ctx, e, runConfig{init: init, rlimitsOnly: !info.cgroupLimits(), runtime: rt}); err != nil {
				lastErr = err
				continue
			}
			if rt != want {
				notes = append(notes, fmt.Sprintf("the default OCI runtime (%s) could not start a container; using %s", info.OCIRuntime, rt))
			}
			if !init {
				notes = append(notes, "the engine has no --init: orphaned processes are reaped only when the session ends")
			}
			return rt, init, notes, nil
		}
	}
	return "", false, nil, fmt.Errorf("test container failed: %v", lastErr)
}

// dockerRuntime maps --oci-runtime to a runtime dockerd knows. dockerd
// takes runtimes by registered name only, so a path (as podman takes)
// becomes the registered runtime of the same base name.
func dockerRuntime(want string, registered []string) (name, note string, err error) {
	if want == "" || slices.Contains(registered, want) {
		return want, "", nil
	}
	base := filepath.Base(want)
	if strings.Contains(want, "/") && slices.Contains(registered, base) {
		return base, fmt.Sprintf("docker takes OCI runtimes by registered name: using %q for %s", base, want), nil
	}
	return "", "", fmt.Errorf("dockerd has no OCI runtime %q (registered: %s); register it with dockerd --add-runtime %s=%s (or \"runtimes\" in /etc/docker/daemon.json), then use --oci-runtime %s",
		want, strings.Join(slices.Sorted(slices.Values(registered)), ", "), base, absOr(want), base)
}

// absOr is path made absolute when it names a file, else a placeholder.
func absOr(path string) string {
	if strings.Contains(path, "/") {
		if abs, err := filepath.Abs(path); err == nil {
			return abs
		}
	}
	return "/path/to/" + path
}

func (b *Backend) tryRun(ctx context.Context, e *engine, rc runConfig) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	spec := sandbox.Spec{ID: "probe", Command: []string{"python3", "-c", "print('ok')"}, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}}
	name := fmt.Sprintf("codemode-%d-probe-%d", os.Getpid(), time.Now().UnixNano())
	b.mu.Lock()
	rc.profile = b.profile
	b.mu.Unlock()
	args := b.runArgs(spec, name, rc)
	out, err := e.output(ctx, args...)
	e.remove(context.Background(), name)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(out)) != "ok" {
		return fmt.Errorf("test container printed %q", out)
	}
	return nil
}

func (b *Backend) capabilities(e *engine, info hostInfo, runtime string, useInit bool) sandbox.Capabilities {
	rt := runtime
	if rt == "" {
		rt = info.OCIRuntime
	}
	mode := "rootful"
	if info.Rootless {
		mode = "rootless"
	}
	caps := sandbox.Capabilities{Backend: b.Name(),
		Engine: fmt.Sprintf("%s %s (%s, %s, cgroup v%s)", e.kind, info.Version, filepath.Base(rt), mode, info.CgroupVersion)}
	add := func(name string, on bool, how string) {
		caps.Protections = append(caps.Protections, sandbox.Protection{Name: name, Enforced: on, How: how})
	}
	gvisor := b.isGVisor(runtime)
	add(sandbox.ProtUser, true, "--user "+b.opts.User)
	add(sandbox.ProtNoCaps, true, "--cap-drop ALL")
	add(sandbox.ProtNoNewPrivs, true, "--security-opt no-new-privileges")
	if gvisor {
		add(sandbox.ProtSeccomp, true, "gVisor: application syscalls are served by the sentry, never by the host kernel")
	} else {
		add(sandbox.ProtSeccomp, true, "codemode's profile: "+seccomp.Summary())
	}
	add(sandbox.ProtLandlock, false, "not applied in containers")
	add(sandbox.ProtReadOnlyFS, true, "--read-only; tmpfs /tmp and /workspace (noexec)")
	netHow := "--network none (only lo)"
	if gvisor {
		netHow = "--network none (gVisor: no interface at all)"
	}
	add(sandbox.ProtNoNetwork, true, netHow)
	add(sandbox.ProtPIDIsolated, true, "container pid namespace")
	if info.cgroupLimits() {
		add(sandbox.ProtMemoryLimit, true, "--memory with equal --memory-swap (cgroup v"+info.CgroupVersion+")")
		add(sandbox.ProtPIDsLimit, true, "--pids-limit and --ulimit nproc")
		add(sandbox.ProtCPULimit, true, "--cpus")
	} else {
		// A per-process RLIMIT_DATA is no ceiling for the session, so the
		// memory limit is reported missing; RLIMIT_NPROC counts every
		// process of the sandbox uid, which bounds the session.
		add(sandbox.ProtMemoryLimit, false, "rootless containers on cgroup v1 ignore --memory; only each process is capped (--ulimit data)")
		add(sandbox.ProtPIDsLimit, true, "--ulimit nproc, shared by all sessions (rootless cgroup v1 ignores --pids-limit)")
		add(sandbox.ProtCPULimit, false, "rootless containers on cgroup v1 ignore --cpus")
	}
	add(sandbox.ProtHostHidden, true, "image "+b.opts.Image+" as the root filesystem")
	if !useInit {
		caps.Notes = append(caps.Notes, "no init process in the container")
	}
	return caps
}
