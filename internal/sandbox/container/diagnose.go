package container

import (
	"context"
	"fmt"
	"os/exec"

	"github.com/codemode/codemode/internal/sandbox"
)

var _ sandbox.Diagnoser = (*Backend)(nil)

// Diagnose implements sandbox.Diagnoser.
func (b *Backend) Diagnose(ctx context.Context) []sandbox.Check {
	var out []sandbox.Check
	add := func(name string, ok bool, detail, fix string) {
		out = append(out, sandbox.Check{Name: name, OK: ok, Detail: detail, Fix: fix})
	}
	e, err := b.resolve(ctx)
	if err != nil {
		fix := "apt-get install podman runc uidmap (or set --runtime to the engine's path)"
		if b.opts.Name == "docker" {
			fix = "apt-get install docker.io and start dockerd, or set DOCKER_HOST"
		}
		add("engine", false, err.Error(), fix)
		return out
	}
	info, err := e.info(ctx)
	if err != nil {
		fix := "start the engine's service"
		if e.kind == Docker {
			fix = "start dockerd (without systemd: dockerd --bridge=none --iptables=false &) or point DOCKER_HOST at a running one"
		} else if info.Machine {
			fix = "podman machine start"
		}
		add("engine", false, err.Error(), fix)
		return out
	}
	mode := "rootful"
	if info.Rootless {
		mode = "rootless"
	}
	add("engine", true, fmt.Sprintf("%s %s, %s, cgroup v%s, default OCI runtime %s", e.kind, info.Version, mode, info.CgroupVersion, info.OCIRuntime), "")
	if !info.cgroupLimits() {
		add("resource limits", false, "rootless containers on cgroup v1 ignore --memory, --pids-limit and --cpus: codemode bounds processes with --ulimit nproc and each process's memory with --ulimit data, but the session has no memory or CPU limit",
			"run the engine rootful, or move the host to cgroup v2 (systemd.unified_cgroup_hierarchy=1), or accept a weaker sandbox with --allow-weaker-sandbox")
	}
	switch {
	case b.opts.OCIRuntime == "":
	case e.kind == Docker:
		// dockerd runs the runtime, by registered name.
		name, _, err := dockerRuntime(b.opts.OCIRuntime, info.Runtimes)
		if err != nil {
			add("OCI runtime", false, b.opts.OCIRuntime+" is not registered with dockerd", err.Error())
		} else {
			add("OCI runtime", true, fmt.Sprintf("%s (dockerd's runtime %q)", b.opts.OCIRuntime, name), "")
		}
	default:
		_, err := exec.LookPath(b.opts.OCIRuntime)
		fix := ""
		if err != nil && b.isGVisor(b.opts.OCIRuntime) {
			fix = "install gVisor's runsc (https://gvisor.dev/docs/user_guide/install/, or `CGO_ENABLED=0 go install gvisor.dev/gvisor/runsc@<version>`), then --oci-runtime /path/to/runsc; for docker also register it: dockerd --add-runtime runsc=/path/to/runsc"
		}
		add("OCI runtime", err == nil, b.opts.OCIRuntime, fix)
	}
	id, err := e.imageID(ctx, b.opts.Image)
	switch {
	case err != nil:
		add("image", false, err.Error(), "")
	case id == "":
		add("image", false, b.opts.Image+" is not present", fmt.Sprintf("codemode image build --engine %s (builds from Debian packages, no registry), then --image localhost/codemode-python:bookworm; or pass --pull to fetch %s", e.kind, b.opts.Image))
	default:
		add("image", true, b.opts.Image+" present ("+shortID(id)+")", "")
	}
	return out
}

func shortID(id string) string {
	if len(id) > 19 {
		return id[:19]
	}
	return id
}
