package linuxns

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/codemode/codemode/internal/sandbox"
	"golang.org/x/sys/unix"
)

var _ sandbox.Diagnoser = (*Backend)(nil)

// Diagnose implements sandbox.Diagnoser.
func (b *Backend) Diagnose(ctx context.Context) []sandbox.Check {
	var out []sandbox.Check
	add := func(name string, ok bool, detail, fix string) {
		out = append(out, sandbox.Check{Name: name, OK: ok, Detail: detail, Fix: fix})
	}
	if reason := userNamespaceBlocker(); reason != "" {
		fix := "sysctl -w user.max_user_namespaces=15000"
		switch {
		case strings.Contains(reason, "unprivileged_userns_clone"):
			fix = "sysctl -w kernel.unprivileged_userns_clone=1 (or run codemode as root)"
		case strings.Contains(reason, "apparmor"):
			fix = "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile allowing userns for codemode, or run as root"
		}
		add("user namespaces", false, reason, fix)
	} else {
		add("user namespaces", true, "can be created", "")
	}
	switch b.cgroups.version {
	case 0:
		add("cgroups", false, "limits fall back to rlimits (memory: RLIMIT_AS, pids: RLIMIT_NPROC, no CPU limit): "+b.cgroups.reason,
			"run codemode as root, or in a delegated cgroup v2 subtree (e.g. systemd-run --user --scope -p Delegate=yes codemode serve)")
	case 1:
		var ctrls []string
		for c := range b.cgroups.v1 {
			ctrls = append(ctrls, c)
		}
		add("cgroups", true, fmt.Sprintf("cgroup v1, writable controllers: %s", strings.Join(sortedStrings(ctrls), ", ")), "")
	case 2:
		add("cgroups", true, "cgroup v2 at "+b.cgroups.v2, "")
	}
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		add("seccomp", false, "prctl(PR_GET_SECCOMP): "+err.Error(), "use a kernel built with CONFIG_SECCOMP_FILTER=y")
	} else {
		add("seccomp", true, "available", "")
	}
	if abi, err := landlockABI(); err != nil || abi == 0 {
		add("landlock", false, "not available on this kernel (the other layers still apply)", "boot with Landlock among the LSMs (lsm=...,landlock) to add it")
	} else {
		add("landlock", true, fmt.Sprintf("ABI %d", abi), "")
	}
	if b.opts.Rootfs != "" {
		py := filepath.Join(b.opts.Rootfs, "usr", "bin", "python3")
		_, err := os.Stat(py)
		add("python", err == nil, "rootfs "+b.opts.Rootfs, "build one with `codemode image build --engine none --rootfs "+b.opts.Rootfs+"`")
	} else {
		path, err := exec.LookPath("python3")
		in := strings.HasPrefix(path, "/usr/") || strings.HasPrefix(path, "/bin/")
		if err == nil && !in {
			// The sandbox sees only the system directories.
			if _, serr := os.Stat("/usr/bin/python3"); serr == nil {
				path, in = "/usr/bin/python3", true
			}
		}
		add("python", err == nil && in, "host python3 under /usr: "+path, "apt-get install python3 (the sandbox sees the host's /usr, not other prefixes), or use --rootfs")
	}
	return out
}

func sortedStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}
