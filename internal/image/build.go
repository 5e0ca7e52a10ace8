package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// BuildOptions configures Build. A nil *BuildOptions runs debootstrap and
// chroot from PATH and logs nothing.
type BuildOptions struct {
	// Logger receives progress at Info and the commands' output at Debug.
	Logger *slog.Logger
	// Debootstrap is the debootstrap command and any leading arguments;
	// empty means {"debootstrap"}. Build appends the variant, the suite,
	// the target directory and the mirror.
	Debootstrap []string
	// Chroot is the chroot command; empty means {"chroot"}. Build appends
	// the target directory and an apt-get command line.
	Chroot []string
}

// stopGrace is how long debootstrap or apt gets after SIGTERM (debootstrap
// unmounts the target's /proc and /sys on the way out) before it is killed.
const stopGrace = 30 * time.Second

// Build makes dir a root filesystem for spec, unless it already is one
// (same content key, python3 present), and returns its manifest and whether
// it was built now.
//
// It runs in two stages: debootstrap --variant=minbase makes the base
// system, then apt-get (in a chroot, without recommends) installs the
// packages. debootstrap's own resolver always takes the first alternative
// of a dependency, which for python3-matplotlib means SciPy and a C++
// toolchain (1.4 GB instead of 0.6 GB); apt takes an alternative that is
// already being installed, such as python3-munkres in DefaultPackages.
// The .deb cache and the package lists are removed afterwards, as are the
// host's resolv.conf and hostname that debootstrap copies in.
//
// It needs root (debootstrap does). Concurrent Builds of the same dir are
// serialised with a lock file next to it. A rootfs for a different spec in
// dir is replaced: the new tree is built beside it and swapped in, so dir
// holds either the old complete rootfs or the new one, never a partial one.
func Build(ctx context.Context, dir string, spec Spec, opts *BuildOptions) (m Manifest, built bool, err error) {
	if opts == nil {
		opts = &BuildOptions{}
	}
	log := discardIfNil(opts.Logger).With("component", "image")
	if err := spec.Validate(); err != nil {
		return m, false, err
	}
	spec = spec.Normalized()
	key := spec.Key()
	if dir, err = filepath.Abs(dir); err != nil {
		return m, false, fmt.Errorf("building rootfs: %w", err)
	}
	if m, ok := Current(dir, spec); ok {
		log.InfoContext(ctx, "rootfs is current", "rootfs", dir, "key", key)
		return m, false, nil
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("building rootfs %s: %w", dir, err)
		}
	}()

	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return m, false, err
	}
	unlock, err := lock(ctx, filepath.Join(parent, "."+base+".lock"), log)
	if err != nil {
		return m, false, err
	}
	defer unlock()
	if m, ok := Current(dir, spec); ok { // built by whoever held the lock
		log.InfoContext(ctx, "rootfs is current", "rootfs", dir, "key", key)
		return m, false, nil
	}

	if _, err := os.Lstat(dir); err == nil {
		if err := replaceable(dir); err != nil {
			return m, false, err
		}
	}
	// Under the lock, any temporary tree is a leftover of an interrupted build.
	stale, _ := filepath.Glob(filepath.Join(parent, "."+base+".tmp-*"))
	for _, s := range stale {
		log.InfoContext(ctx, "removing leftover of an interrupted build", "dir", s)
		if err := removeTree(s); err != nil {
			return m, false, err
		}
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-")
	if err != nil {
		return m, false, err
	}
	keep := false
	defer func() {
		if !keep {
			if rerr := removeTree(tmp); rerr != nil {
				log.WarnContext(ctx, "removing temporary rootfs", "dir", tmp, "err", rerr)
			}
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return m, false, err
	}

	start := time.Now()
	log.InfoContext(ctx, "building rootfs with debootstrap", "rootfs", dir, "suite", spec.Suite,
		"mirror", spec.Mirror, "packages", strings.Join(spec.Packages, ","), "key", key)
	if err := debootstrap(ctx, opts.Debootstrap, tmp, spec, log); err != nil {
		saveLog(tmp, filepath.Join(parent, "."+base+".debootstrap.log"))
		return m, false, err
	}
	if err := aptInstall(ctx, opts.Chroot, tmp, spec, log); err != nil {
		return m, false, err
	}
	m, err = finish(tmp, spec)
	if err != nil {
		return m, false, err
	}
	if err := syncFS(tmp); err != nil {
		return m, false, err
	}
	// Swap the finished tree in; tmp then holds the previous rootfs, if
	// any, and is removed by the deferred cleanup.
	switch _, err := os.Lstat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Rename(tmp, dir); err != nil {
			return m, false, err
		}
		keep = true
	case err != nil:
		return m, false, err
	default:
		if err := exchange(tmp, dir); err != nil {
			return m, false, err
		}
	}
	log.InfoContext(ctx, "rootfs built", "rootfs", dir, "key", key, "python", m.Python, "duration", time.Since(start).Round(time.Millisecond))
	return m, true, nil
}

// replaceable refuses to replace a directory that is neither empty nor a
// rootfs this package built: --rootfs pointing at the wrong directory must
// not delete it.
func replaceable(dir string) error {
	if _, err := ReadManifest(dir); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s exists and is not a codemode rootfs (no %s); remove it or choose another directory", dir, ManifestPath)
	}
	return nil
}

// debootstrap makes a minimal Debian system in target.
// ErrNoDebootstrap is returned when debootstrap is not installed.
var ErrNoDebootstrap = errors.New("debootstrap not found")

func debootstrap(ctx context.Context, command []string, target string, spec Spec, log *slog.Logger) error {
	if len(command) == 0 {
		command = []string{"debootstrap"}
	}
	if _, err := exec.LookPath(command[0]); err != nil {
		return fmt.Errorf("%w: %s is not installed; install it with `apt-get install debootstrap` (Debian, Ubuntu) or `dnf install debootstrap` (Fedora), then run codemode image build again", ErrNoDebootstrap, command[0])
	}
	argv := append(slices.Clone(command), "--variant=minbase", spec.Suite, target, spec.Mirror)
	if err := run(ctx, argv, nil, log); err != nil {
		return fmt.Errorf("debootstrap %s: %w", spec.Suite, err)
	}
	return nil
}

// aptInstall installs spec's packages into the system in target with the
// system's own apt, using the package lists debootstrap left there.
func aptInstall(ctx context.Context, chroot []string, target string, spec Spec, log *slog.Logger) error {
	if len(chroot) == 0 {
		chroot = []string{"chroot"}
	}
	// No service may start inside the chroot.
	policy := filepath.Join(target, "usr", "sbin", "policy-rc.d")
	if err := os.MkdirAll(filepath.Dir(policy), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(policy, []byte("#!/bin/sh\nexit 101\n"), 0o755); err != nil {
		return err
	}
	argv := append(slices.Clone(chroot), target, "apt-get", "install", "-y", "-q", "--no-install-recommends",
		"-o", "Dpkg::Use-Pty=0", "-o", "Dpkg::Options::=--force-unsafe-io")
	argv = append(argv, spec.Packages...)
	// A clean environment: the host's (PYTHONPATH, locale, …) would leak
	// into the maintainer scripts.
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"DEBIAN_FRONTEND=noninteractive", "LC_ALL=C", "HOME=/root"}
	if err := run(ctx, argv, env, log); err != nil {
		return fmt.Errorf("apt-get install in the new rootfs: %w", err)
	}
	return os.Remove(policy)
}

// run runs a build command, logging its output, and returns an error
// carrying the output's last lines. On cancellation its whole process group
// (dpkg and maintainer scripts included) gets SIGTERM, and SIGKILL after
// stopGrace.
func run(ctx context.Context, argv, env []string, log *slog.Logger) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	out := &lineLogger{log: log, cmd: filepath.Base(argv[0])}
	cmd.Stdout, cmd.Stderr = out, out
	setProcessGroup(cmd)
	cmd.Cancel = func() error { return signalGroup(cmd.Process.Pid, false) }
	cmd.WaitDelay = stopGrace
	err := cmd.Run()
	out.flush()
	if err == nil {
		return nil
	}
	if cmd.Process != nil {
		signalGroup(cmd.Process.Pid, true) // stragglers of a failed or cancelled run
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w\n%s", err, out.tail())
}

// finish turns a fresh debootstrap tree into a codemode rootfs.
func finish(root string, spec Spec) (Manifest, error) {
	var m Manifest
	// The .deb cache and the package lists are a third of the tree and
	// useless in a read-only sandbox; the host's resolver configuration and
	// name do not belong in an image.
	for _, pat := range []string{"var/cache/apt/archives/*.deb", "var/cache/apt/archives/partial/*", "var/cache/apt/*.bin",
		"var/lib/apt/lists/*", "etc/resolv.conf"} {
		matches, _ := filepath.Glob(filepath.Join(root, pat))
		for _, f := range matches {
			if err := os.RemoveAll(f); err != nil {
				return m, err
			}
		}
	}
	python, err := resolveIn(root, "usr/bin/python3")
	if err != nil {
		return m, fmt.Errorf("rootfs has no usable /usr/bin/python3: %w", err)
	}
	// The sandbox user's working directory, and /tmp (both usually get a
	// tmpfs, but the directories must exist to mount on). World-writable and
	// sticky like /tmp: podman gives a tmpfs the mode of the directory it
	// covers, whatever the mount's mode= option says.
	if err := os.MkdirAll(filepath.Join(root, "workspace"), 0o755); err != nil {
		return m, err
	}
	if err := os.Chmod(filepath.Join(root, "workspace"), 0o777|fs.ModeSticky); err != nil {
		return m, err
	}
	if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o755); err != nil {
		return m, err
	}
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o777|fs.ModeSticky); err != nil {
		return m, err
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "hostname"), []byte("sandbox\n"), 0o644); err != nil {
		return m, err
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "hosts"), []byte("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"), 0o644); err != nil {
		return m, err
	}
	if err := ensureEntry(filepath.Join(root, "etc", "passwd"), 2, "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin"); err != nil {
		return m, err
	}
	if err := ensureEntry(filepath.Join(root, "etc", "group"), 2, "nogroup:x:65534:"); err != nil {
		return m, err
	}
	m = Manifest{
		Key:      spec.Key(),
		Suite:    spec.Suite,
		Mirror:   spec.Mirror,
		Packages: spec.Packages,
		Python:   filepath.Base(python),
		Built:    time.Now().UTC().Truncate(time.Second),
	}
	if err := writeManifest(root, m); err != nil {
		return m, fmt.Errorf("writing image manifest: %w", err)
	}
	return m, nil
}

// ensureEntry appends line to the colon-separated database file (passwd,
// group) unless an entry with the same id (field idField, 0-based) exists.
func ensureEntry(path string, idField int, line string) error {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	id := strings.Split(line, ":")[idField]
	for l := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Split(l, ":"); len(f) > idField && f[idField] == id {
			return nil
		}
	}
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, line+"\n"...), 0o644)
}

// saveLog keeps debootstrap's own log of a failed build next to the rootfs.
func saveLog(tmp, dst string) {
	if data, err := os.ReadFile(filepath.Join(tmp, "debootstrap", "debootstrap.log")); err == nil {
		os.WriteFile(dst, data, 0o644)
	}
}

// removeTree removes a (possibly partial) rootfs, first detaching anything
// an interrupted debootstrap left mounted inside it, so RemoveAll never
// walks into the host's /proc, /sys or /dev.
func removeTree(dir string) error {
	if err := unmountUnder(dir); err != nil {
		return fmt.Errorf("unmounting below %s: %w", dir, err)
	}
	return os.RemoveAll(dir)
}

// lineLogger logs command output line by line at Debug, and at Info
// whenever the command enters a new phase (debootstrap's "I: Retrieving …",
// apt's "Get:", "Unpacking …", "Setting up …"), so progress shows without
// hundreds of per-package lines. It keeps the last lines for errors.
type lineLogger struct {
	log   *slog.Logger
	cmd   string
	mu    sync.Mutex
	buf   []byte
	last  []string
	phase string
}

const tailLines = 20

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.line(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.line(string(l.buf))
		l.buf = nil
	}
}

func (l *lineLogger) line(s string) {
	s = strings.TrimRight(s, "\r")
	if strings.TrimSpace(s) == "" {
		return
	}
	l.last = append(l.last, s)
	if len(l.last) > tailLines {
		l.last = l.last[1:]
	}
	switch {
	case strings.HasPrefix(s, "E: "), strings.HasPrefix(s, "W: "):
		l.log.Warn(l.cmd, "line", s)
		return
	case phaseOf(s) != "" && phaseOf(s) != l.phase:
		l.phase = phaseOf(s)
		l.log.Info(l.cmd, "line", s)
		return
	}
	l.log.Debug(l.cmd, "line", s)
}

// phaseOf names the step of a build that a line of debootstrap or apt
// output announces, or "" for lines that announce none (per-package
// details, maintainer-script chatter). Alternating per-package lines
// ("Retrieving"/"Validating", "Selecting"/"Preparing"/"Unpacking") map to
// one step.
func phaseOf(s string) string {
	w, _, _ := strings.Cut(strings.TrimPrefix(s, "I: "), " ")
	switch w {
	case "Retrieving", "Validating":
		return "Retrieving"
	case "Selecting", "Preparing", "Unpacking", "(Reading":
		return "Unpacking"
	case "Setting", "Processing":
		return "Setting"
	case "Checking", "Resolving", "Extracting", "Installing", "Configuring", "Base", "Need", "Fetched":
		return w
	}
	if strings.HasPrefix(w, "Get:") {
		return "Get"
	}
	return ""
}

func (l *lineLogger) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.last, "\n")
}
