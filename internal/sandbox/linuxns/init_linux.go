package linuxns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/codemode/codemode/internal/sandbox/seccomp"
	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// Paths inside the staging root the init builds the sandbox in.
const (
	stagingDir = "/tmp"     // mounted over (in the init's private mount namespace only)
	oldRoot    = "/oldroot" // the host's tree, after the first pivot
	replyFD    = 5          // the read end of the command's direct reply pipe (after config 3 and status 4)
	requestFD  = 6          // the write end of its direct request pipe
	rootfsFD   = 7          // the rootfs tree, detached by the host
	newRoot    = "/newroot" // the sandbox's root, before the second pivot
)

// InitMain runs the sandbox init and returns the process exit code. It is
// pid 1 of fresh user, mount, pid, net, ipc and uts namespaces, running as
// uid 65534 with the capabilities the host granted for setup only. It builds
// the root filesystem, drops every privilege, starts the command with the
// channel on its stdio, reaps orphans and exits with the command's status.
func InitMain() int {
	// Capabilities, no_new_privs and seccomp are per thread; everything from
	// setup to the fork of the command happens on this one.
	runtime.LockOSThread()
	// pid 1 gets no default signal actions; make that explicit for Go's
	// handlers too, so sandboxed code cannot stop the init with a signal.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1,
		syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)

	// The command inherits only what startCommand gives it: not the config
	// and status pipes (the host reads the status until EOF), and not a
	// descriptor codemode itself inherited without close-on-exec.
	closeOnExecFrom(3)
	statusFile := os.NewFile(4, "status")
	report := func(st initStatus) {
		data, _ := json.Marshal(st)
		statusFile.Write(data)
		statusFile.Close()
	}
	var cfg initConfig
	cfgFile := os.NewFile(3, "config")
	data, err := io.ReadAll(cfgFile)
	cfgFile.Close()
	if err == nil {
		err = json.Unmarshal(data, &cfg)
	}
	if err != nil || (len(cfg.Command) == 0 && !cfg.Probe) {
		report(initStatus{Error: fmt.Sprintf("reading init config: %v (%d bytes)", err, len(data))})
		return 125
	}
	st, err := setup(&cfg)
	if err != nil {
		report(initStatus{Error: err.Error()})
		return 125
	}
	if cfg.Probe {
		st.OK = true
		report(st)
		return 0
	}
	pid, err := startCommand(&cfg)
	if err != nil {
		report(initStatus{Error: err.Error()})
		return 127
	}
	// Limits go on the command, not on the init: RLIMIT_AS would starve the
	// Go runtime's address-space reservations. The command cannot have run
	// user code yet: that arrives over the channel after this report.
	for _, r := range cfg.Rlimits {
		lim := unix.Rlimit{Cur: r.Value, Max: r.Value}
		if err := unix.Prlimit(pid, r.Resource, &lim, nil); err != nil {
			unix.Kill(pid, unix.SIGKILL)
			report(initStatus{Error: fmt.Sprintf("prlimit(%d, %d): %v", r.Resource, r.Value, err)})
			return 125
		}
	}
	st.OK, st.PID = true, pid
	report(st)
	// Drop our copies of the channel so the host sees EOF when the command
	// (not the init) closes it.
	if null, err := os.OpenFile("/dev/null", os.O_RDWR, 0); err == nil {
		unix.Dup2(int(null.Fd()), 0)
		unix.Dup2(int(null.Fd()), 1)
		null.Close()
	}
	return reap(pid)
}

func setup(cfg *initConfig) (initStatus, error) {
	var st initStatus
	// Join a new cgroup namespace now that the host has placed us in our
	// groups, so /proc/self/cgroup shows "/" inside.
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		st.Warnings = append(st.Warnings, "cgroup namespace: "+err.Error())
	}
	if err := buildRoot(cfg); err != nil {
		return st, err
	}
	if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
		return st, fmt.Errorf("sethostname: %w", err)
	}
	if err := loopbackUp(); err != nil {
		st.Warnings = append(st.Warnings, "loopback: "+err.Error())
	}
	if cfg.Template {
		return st, nil
	}
	if cfg.Landlock {
		st.Landlock = applyLandlock(cfg)
	}
	if err := dropCapabilities(); err != nil {
		return st, err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return st, fmt.Errorf("prctl(NO_NEW_PRIVS): %w", err)
	}
	if err := seccomp.Install(); err != nil {
		return st, err
	}
	return st, nil
}

// buildRoot assembles the sandbox's root filesystem and pivots into it. The
// staging trick (as in bubblewrap): a tmpfs over /tmp becomes the root for a
// moment, which leaves the host's tree reachable at /oldroot while the new
// root is populated at /newroot; the second pivot then detaches the host tree
// entirely.
func buildRoot(cfg *initConfig) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if err := unix.Mount("tmpfs", stagingDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m,mode=0755"); err != nil {
		return fmt.Errorf("mounting staging tmpfs: %w", err)
	}
	for _, d := range []string{oldRoot, newRoot} {
		if err := os.Mkdir(stagingDir+d, 0o755); err != nil {
			return fmt.Errorf("staging: %w", err)
		}
	}
	if err := unix.PivotRoot(stagingDir, stagingDir+oldRoot); err != nil {
		return fmt.Errorf("pivot_root to staging: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=4m,mode=0755"); err != nil {
		return fmt.Errorf("mounting root tmpfs: %w", err)
	}
	var err error
	if cfg.Rootfs == "" {
		err = populateFromHost(cfg)
	} else {
		err = populateFromRootfs(cfg)
	}
	if err != nil {
		return err
	}
	if err := mountSpecial(cfg); err != nil {
		return err
	}
	for _, m := range cfg.Mounts {
		if err := bindInto(oldRoot+m.Source, newRoot+m.Target, !m.Writable); err != nil {
			return fmt.Errorf("mount %s: %w", m.Target, err)
		}
	}
	for _, p := range cfg.MountPoints {
		if err := makeMountPoint(newRoot+p.Target, p.Dir); err != nil {
			return fmt.Errorf("mount point %s: %w", p.Target, err)
		}
	}
	if err := unix.Chdir(newRoot); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root to sandbox root: %w", err)
	}
	// The old root (staging tmpfs with the host tree under it) is stacked
	// under "."; detach it and everything below it.
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching host tree: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("remounting root read-only: %w", err)
	}
	if err := unix.Mount("", "/dev", "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("remounting /dev read-only: %w", err)
	}
	return nil
}

// populateFromHost exposes the host's system directories read-only and
// writes a minimal /etc: enough for the host's python3 to run, and nothing
// of /home, /root, /var or codemode's own state.
func populateFromHost(cfg *initConfig) error {
	for _, name := range cfg.HostDirs {
		if err := mirrorEntry(oldRoot+"/"+name, newRoot+"/"+name); err != nil {
			return fmt.Errorf("exposing /%s: %w", name, err)
		}
	}
	etc := newRoot + "/etc"
	if err := os.Mkdir(etc, 0o755); err != nil {
		return err
	}
	generated := map[string]string{
		"passwd":        "root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/workspace:/usr/sbin/nologin\n",
		"group":         "root:x:0:\nnogroup:x:65534:\n",
		"hostname":      cfg.Hostname + "\n",
		"hosts":         "127.0.0.1\tlocalhost " + cfg.Hostname + "\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
		"resolv.conf":   "",
	}
	for name, content := range generated {
		if err := os.WriteFile(etc+"/"+name, []byte(content), 0o644); err != nil {
			return fmt.Errorf("writing /etc/%s: %w", name, err)
		}
	}
	for _, name := range cfg.EtcFiles {
		src := oldRoot + "/etc/" + name
		if _, err := os.Lstat(src); err != nil {
			continue // optional: only what the host has
		}
		if err := os.MkdirAll(filepath.Dir(etc+"/"+name), 0o755); err != nil {
			return err
		}
		if err := mirrorEntry(src, etc+"/"+name); err != nil {
			return fmt.Errorf("exposing /etc/%s: %w", name, err)
		}
	}
	return nil
}

// specialDirs are provided by the init itself, never taken from a rootfs.
var specialDirs = map[string]bool{"proc": true, "dev": true, "sys": true, "tmp": true, "workspace": true, "run": true}

// populateFromRootfs exposes every top-level entry of a root filesystem
// directory (e.g. an unpacked Python image) read-only.
func populateFromRootfs(cfg *initConfig) error {
	// The host handed over a detached copy of the tree: attach it at a
	// staging point (no directory above the rootfs needs to be searchable
	// by the sandbox's uid), expose its entries, then drop the staging
	// mount.
	const src = "/rootfs"
	if err := os.Mkdir(src, 0o755); err != nil {
		return fmt.Errorf("staging the rootfs: %w", err)
	}
	if err := unix.MoveMount(rootfsFD, "", unix.AT_FDCWD, src, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attaching rootfs %s: %w", cfg.Rootfs, err)
	}
	defer unix.Unmount(src, unix.MNT_DETACH)
	entries, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("reading rootfs %s: %w", cfg.Rootfs, err)
	}
	for _, e := range entries {
		if specialDirs[e.Name()] {
			continue
		}
		if err := mirrorEntry(src+"/"+e.Name(), newRoot+"/"+e.Name()); err != nil {
			return fmt.Errorf("exposing rootfs entry %s: %w", e.Name(), err)
		}
	}
	return nil
}

// mirrorEntry recreates a symlink, or bind-mounts a directory or file
// read-only, at dst.
func mirrorEntry(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	return bindInto(src, dst, true)
}

// bindInto bind-mounts src at dst (creating the mount point) and, when
// readOnly, remounts it read-only. Flags the kernel locked on the source
// mount (nosuid, nodev, noexec, atime) must be repeated on remount.
func bindInto(src, dst string, readOnly bool) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := makeMountPoint(dst, fi.IsDir()); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND)
	if err := unix.Mount(src, dst, "", flags, ""); err != nil {
		// A mount with submounts can only be bound recursively in a user namespace.
		if !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("bind %s: %w", src, err)
		}
		flags |= unix.MS_REC
		if err := unix.Mount(src, dst, "", flags, ""); err != nil {
			return fmt.Errorf("bind %s: %w", src, err)
		}
	}
	if !readOnly {
		return nil
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(dst, &sfs); err != nil {
		return err
	}
	remount := uintptr(unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV) | lockedFlags(sfs.Flags)
	if err := unix.Mount("", dst, "", remount, ""); err != nil {
		return fmt.Errorf("read-only remount of %s: %w", dst, err)
	}
	if flags&unix.MS_REC != 0 {
		return remountSubmountsReadOnly(dst)
	}
	return nil
}

// makeMountPoint creates a directory or an empty file to mount on.
func makeMountPoint(dst string, dir bool) error {
	var err error
	if dir {
		err = os.MkdirAll(dst, 0o755)
	} else if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
		var f *os.File
		if f, err = os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("creating mount point %s: %w", dst, err)
	}
	return nil
}

// lockedFlags translates statfs flags that a remount inside a user namespace
// must keep into mount flags.
func lockedFlags(f int64) uintptr {
	var m uintptr
	if f&unix.ST_NOEXEC != 0 {
		m |= unix.MS_NOEXEC
	}
	if f&unix.ST_NOATIME != 0 {
		m |= unix.MS_NOATIME
	}
	if f&unix.ST_NODIRATIME != 0 {
		m |= unix.MS_NODIRATIME
	}
	if f&unix.ST_RELATIME != 0 {
		m |= unix.MS_RELATIME
	}
	return m
}

// remountSubmountsReadOnly makes every mount below dir read-only too (a
// recursive bind carries submounts with their original flags).
func remountSubmountsReadOnly(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountPath(f[4])
		if !strings.HasPrefix(mp, dir+"/") {
			continue
		}
		var sfs unix.Statfs_t
		if err := unix.Statfs(mp, &sfs); err != nil {
			continue
		}
		remount := uintptr(unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV) | lockedFlags(sfs.Flags)
		if err := unix.Mount("", mp, "", remount, ""); err != nil {
			return fmt.Errorf("read-only remount of %s: %w", mp, err)
		}
	}
	return nil
}

func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Kernel interfaces that are no business of sandboxed code, as container
// engines mask them: files are covered with /dev/null, directories are made
// read-only. Zygote children apply the same lists to their own /proc.
var (
	procMasked   = []string{"kcore", "keys", "timer_list", "sched_debug", "sysrq-trigger", "latency_stats", "kallsyms"}
	procReadOnly = []string{"sys", "irq", "bus", "fs", "sysvipc"}
)

// mountSpecial provides /proc, /dev, /tmp and /workspace.
func mountSpecial(cfg *initConfig) error {
	for _, d := range []string{"proc", "dev", "tmp", "workspace"} {
		if err := os.MkdirAll(newRoot+"/"+d, 0o755); err != nil {
			return err
		}
	}
	// We are pid 1 of a new pid namespace: this procfs shows only the sandbox.
	if err := unix.Mount("proc", newRoot+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	for _, p := range procMasked {
		if _, err := os.Stat(newRoot + "/proc/" + p); err == nil {
			if err := unix.Mount(oldRoot+"/dev/null", newRoot+"/proc/"+p, "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("masking /proc/%s: %w", p, err)
			}
		}
	}
	for _, p := range procReadOnly {
		dst := newRoot + "/proc/" + p
		if _, err := os.Stat(dst); err != nil {
			continue
		}
		if err := bindInto(dst, dst, true); err != nil {
			return fmt.Errorf("read-only /proc/%s: %w", p, err)
		}
	}
	tmpfs := func(dir, opts string, flags uintptr) error {
		if err := unix.Mount("tmpfs", dir, "tmpfs", flags, opts); err != nil {
			return fmt.Errorf("mounting %s: %w", strings.TrimPrefix(dir, newRoot), err)
		}
		return nil
	}
	noexec := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	if err := tmpfs(newRoot+"/tmp", fmt.Sprintf("size=%d,mode=1777", cfg.TmpBytes), noexec); err != nil {
		return err
	}
	if err := tmpfs(newRoot+"/workspace", fmt.Sprintf("size=%d,mode=0755", cfg.WorkspaceBytes), noexec); err != nil {
		return err
	}
	dev := newRoot + "/dev"
	if err := tmpfs(dev, "size=64k,mode=0755", unix.MS_NOSUID|unix.MS_NOEXEC); err != nil {
		return err
	}
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		if err := bindInto(oldRoot+"/dev/"+d, dev+"/"+d, false); err != nil {
			if d == "tty" {
				continue // absent on some hosts; nothing needs it
			}
			return fmt.Errorf("/dev/%s: %w", d, err)
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx"} {
		if err := os.Symlink(target, dev+"/"+name); err != nil {
			return err
		}
	}
	// POSIX semaphores and shared memory (multiprocessing) live in /dev/shm.
	if err := os.Mkdir(dev+"/shm", 0o1777); err != nil {
		return err
	}
	return tmpfs(dev+"/shm", "size=64m,mode=1777", noexec)
}

// loopbackUp brings up lo, the only interface of the new network namespace,
// so code may use localhost inside its own sandbox.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// applyLandlock confines file access below the (already read-only) root:
// read and execute everywhere, write only to the sandbox's scratch space. On
// kernels with scoping it also stops signals and abstract-socket connections
// to anything outside the sandbox. It reports what it enforced.
func applyLandlock(cfg *initConfig) string {
	rw := []string{"/tmp", "/workspace", "/dev/shm"}
	for _, m := range cfg.Mounts {
		if m.Writable {
			rw = append(rw, m.Target)
		}
	}
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWDirs(rw...),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/tty").IgnoreIfMissing(),
	}
	abi, _ := landlockABI()
	if abi == 0 {
		return "not available: kernel has no Landlock"
	}
	if err := landlock.V7.BestEffort().RestrictPaths(rules...); err != nil {
		return "not enforced: " + err.Error()
	}
	desc := fmt.Sprintf("filesystem (ABI %d)", abi)
	if abi >= 6 {
		if err := landlock.V7.BestEffort().RestrictScoped(); err == nil {
			desc += ", signal and abstract-socket scoping"
		}
	}
	return desc
}

func landlockABI() (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// dropCapabilities empties the bounding, ambient, inheritable, permitted and
// effective sets on every thread.
func dropCapabilities() error {
	allThreads := func(trap, a1, a2, a3 uintptr) error {
		_, _, errno := syscall.AllThreadsSyscall(trap, a1, a2, a3)
		if errno == syscall.ENOTSUP {
			// cgo builds cannot do this on all threads; the command is
			// forked from this locked thread, which is what matters.
			_, _, errno = syscall.RawSyscall(trap, a1, a2, a3)
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := allThreads(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := allThreads(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := allThreads(unix.SYS_CAPSET, uintptrOf(&hdr), uintptrOfData(&data[0]), 0); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// closeOnExecFrom marks every descriptor from first on close-on-exec.
func closeOnExecFrom(first int) {
	if unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	// Before Linux 5.11: one by one.
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= first {
			unix.CloseOnExec(fd)
		}
	}
}

// startCommand starts the sandboxed command with the init's stdio and the
// direct pipes (sandbox.Direct).
func startCommand(cfg *initConfig) (int, error) {
	path, err := lookPath(cfg.Command[0], cfg.Env)
	if err != nil {
		return 0, err
	}
	proc, err := os.StartProcess(path, cfg.Command, &os.ProcAttr{
		Dir: cfg.Dir,
		Env: cfg.Env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, // then sandbox.DirectReplyFD and DirectRequestFD
			os.NewFile(replyFD, "direct replies"), os.NewFile(requestFD, "direct requests")},
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return 0, fmt.Errorf("starting %s: %w", cfg.Command[0], err)
	}
	return proc.Pid, nil
}

func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathVar := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, dir := range filepath.SplitList(pathVar) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in the sandbox (PATH=%s)", name, pathVar)
}

// reap waits for every child; it returns the command's status once the
// command has exited. Orphans re-parented to us are reaped on the way.
func reap(pid int) int {
	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 126
		}
		if wpid != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}
