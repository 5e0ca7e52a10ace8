// Package linuxns is codemode's built-in, daemon-less Linux sandbox. The
// codemode binary re-executes itself (see InitMain) as pid 1 of new user,
// mount, pid, network, IPC, UTS and cgroup namespaces; that init builds a
// read-only root from the host's system directories (or a rootfs directory),
// mounts a fresh /proc, a minimal /dev and size-limited noexec tmpfs /tmp and
// /workspace, brings up lo, drops every capability, sets no_new_privs,
// applies Landlock and a seccomp filter, and starts the command as uid 65534.
// Memory, pids and CPU are limited with cgroup v2 or v1 when a writable
// hierarchy exists, else with rlimits; Probe says which.
//
// It must pass sandboxtest.Run like every other backend. On other systems
// the backend only reports sandbox.ErrUnsupported, so that choosing a
// backend automatically moves on to a container engine.
package linuxns
