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
// With Options.Zygote (and codemode running as root), a session whose
// command is `python [flags] -c code` is instead forked from a zygote: a
// template interpreter, started by that same init but keeping uid 0 and its
// capabilities inside its own user namespace, that imported Options.Preload
// and never runs user code (zygote.py). Each child waits until the host has
// moved it into the session's cgroup, then, before anything of the session
// runs, takes new mount, network, IPC, UTS and cgroup namespaces (and is pid
// 1 of a new pid namespace), mounts its own /proc, /tmp, /workspace and
// /dev/shm, brings up lo, sets the session's rlimits, becomes the session's
// own host uid and 65534 in a user namespace of its own, and applies the
// booted sandbox's Landlock rules, capability drop, no_new_privs and seccomp
// program. Copy-on-write shares the template's pages between sessions.
//
// It must pass sandboxtest.Run like every other backend. On other systems
// the backend only reports sandbox.ErrUnsupported, so that choosing a
// backend automatically moves on to a container engine.
package linuxns
