package linuxns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/codemode/codemode/internal/pipe"
	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/sandbox/seccomp"
	"golang.org/x/sys/unix"
)

// Defaults applied to zero Limits.
const (
	DefaultMemoryBytes    = 512 << 20
	DefaultPIDs           = 128
	DefaultNoFile         = 1024
	DefaultTmpBytes       = 64 << 20
	DefaultWorkspaceBytes = 128 << 20
	defaultUIDBase        = 1_900_000_000
	maxSandboxUIDs        = 1 << 16
	startTimeout          = 20 * time.Second
)

// hostDirs are exposed read-only in host mode; entries that are symlinks on
// the host (merged /usr) are recreated as symlinks.
var hostDirs = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// etcFiles are the host /etc entries a Python installation commonly needs.
// Credentials, host names and network configuration are never among them.
var etcFiles = []string{
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "alternatives",
	"mime.types", "protocols", "services", "os-release", "debian_version", "ssl/certs",
	"ssl/openssl.cnf", "fonts", "matplotlibrc", "gai.conf",
}

// Backend is the native Linux sandbox backend.
type Backend struct {
	opts     Options
	log      *slog.Logger
	etc      []string
	cgroups  cgroupHost
	spawner  spawner
	uidsMu   sync.Mutex
	uidsUsed map[int]bool
	uidNext  int

	zygotesMu sync.Mutex
	zygotes   map[string]*zygote
	zygoteSeq int
}

var _ sandbox.Backend = (*Backend)(nil)

// New returns a native backend. It sweeps cgroups left behind by codemode
// processes that died.
func New(opts *Options) *Backend {
	b := &Backend{uidsUsed: map[int]bool{}, zygotes: map[string]*zygote{}}
	if opts != nil {
		b.opts = *opts
	}
	if b.opts.InitBinary == "" {
		b.opts.InitBinary = "/proc/self/exe"
	}
	if b.opts.UIDBase == 0 {
		b.opts.UIDBase = defaultUIDBase
	}
	b.log = b.opts.Logger
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	b.etc = append([]string(nil), etcFiles...)
	if matches, _ := filepath.Glob("/etc/python3*"); len(matches) > 0 {
		for _, m := range matches {
			b.etc = append(b.etc, filepath.Base(m))
		}
	}
	b.cgroups = detectCgroups("/proc/self")
	if removed := b.cgroups.sweepStale(); len(removed) > 0 {
		b.log.Info("removed cgroups left by dead codemode processes", "count", len(removed))
	}
	return b
}

// Name implements sandbox.Backend.
func (b *Backend) Name() string { return "native" }

// Probe implements sandbox.Backend: it checks the host and starts one real
// sandbox (without a command) to see what is enforced.
func (b *Backend) Probe(ctx context.Context) (sandbox.Capabilities, error) {
	caps := sandbox.Capabilities{Backend: b.Name(), Engine: "linux namespaces"}
	if reason := userNamespaceBlocker(); reason != "" {
		return caps, fmt.Errorf("%w: %s", sandbox.ErrUnsupported, reason)
	}
	if b.opts.Rootfs != "" {
		if fi, err := os.Stat(filepath.Join(b.opts.Rootfs, "usr")); err != nil || !fi.IsDir() {
			return caps, fmt.Errorf("rootfs %s has no usr directory", b.opts.Rootfs)
		}
	}
	s, st, err := b.start(ctx, sandbox.Spec{ID: "probe-" + strconv.Itoa(os.Getpid())}, true)
	if err != nil {
		return caps, fmt.Errorf("%w: test sandbox: %v", sandbox.ErrUnsupported, err)
	}
	s.Wait(ctx)
	return b.capabilities(st), nil
}

func (b *Backend) capabilities(st initStatus) sandbox.Capabilities {
	caps := sandbox.Capabilities{Backend: b.Name(), Engine: "linux namespaces"}
	add := func(name string, on bool, how string) {
		caps.Protections = append(caps.Protections, sandbox.Protection{Name: name, Enforced: on, How: how})
	}
	uidHow := "uid 65534 mapped to a per-session host uid"
	if os.Geteuid() != 0 {
		uidHow = fmt.Sprintf("uid 65534 mapped to codemode's own uid %d", os.Geteuid())
	}
	add(sandbox.ProtUser, true, uidHow)
	add(sandbox.ProtNoCaps, true, "all capability sets and the bounding set emptied")
	add(sandbox.ProtNoNewPrivs, true, "prctl(PR_SET_NO_NEW_PRIVS)")
	add(sandbox.ProtSeccomp, true, seccomp.Summary())
	if b.opts.DisableLandlock {
		add(sandbox.ProtLandlock, false, "disabled by configuration")
	} else {
		add(sandbox.ProtLandlock, st.Landlock != "" && !strings.HasPrefix(st.Landlock, "not"), st.Landlock)
	}
	add(sandbox.ProtReadOnlyFS, true, "read-only root; writable tmpfs /tmp and /workspace (noexec)")
	add(sandbox.ProtNoNetwork, true, "network namespace with only lo")
	add(sandbox.ProtPIDIsolated, true, "pid namespace")
	switch b.cgroups.version {
	case 0:
		add(sandbox.ProtMemoryLimit, true, "RLIMIT_AS (no writable cgroup: "+b.cgroups.reason+")")
		add(sandbox.ProtPIDsLimit, true, "RLIMIT_NPROC")
		add(sandbox.ProtCPULimit, false, "not available without a writable cgroup")
		caps.Notes = append(caps.Notes, "limits fall back to rlimits: "+b.cgroups.reason)
		caps.Engine += " (rlimits)"
	default:
		v := fmt.Sprintf("cgroup v%d", b.cgroups.version)
		add(sandbox.ProtMemoryLimit, true, v+" memory")
		add(sandbox.ProtPIDsLimit, true, v+" pids")
		if b.cgroups.version == 1 && b.cgroups.v1["cpu"] == "" {
			add(sandbox.ProtCPULimit, false, "no writable cpu controller")
		} else {
			add(sandbox.ProtCPULimit, true, v+" cpu quota")
		}
		caps.Engine += " (" + v + ")"
	}
	hidden := "only /usr, /bin, /sbin, /lib* and a minimal generated /etc are visible"
	if b.opts.Rootfs != "" {
		hidden = "root is the directory " + b.opts.Rootfs
	}
	add(sandbox.ProtHostHidden, true, hidden)
	switch {
	case b.opts.Zygote && os.Geteuid() == 0:
		caps.Notes = append(caps.Notes, "python sessions fork from a zygote (a template interpreter that imported "+
			strings.Join(b.opts.Preload, ", ")+"); each child builds its own sandbox before it runs anything")
	case b.opts.Zygote:
		caps.Notes = append(caps.Notes, "zygote off: it needs codemode to run as root; sessions boot Python")
	}
	caps.Notes = append(caps.Notes, st.Warnings...)
	return caps
}

// userNamespaceBlocker returns why user namespaces cannot be created, or "".
func userNamespaceBlocker() string {
	if v, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(v)) == "0" {
		return "user namespaces are disabled (user.max_user_namespaces = 0)"
	}
	if os.Geteuid() != 0 {
		if v, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(v)) == "0" {
			return "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)"
		}
		if v, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && strings.TrimSpace(string(v)) == "1" {
			return "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)"
		}
	}
	return ""
}

// Start implements sandbox.Backend.
func (b *Backend) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Session, error) {
	if len(spec.Command) == 0 {
		return nil, errors.New("native sandbox: empty command")
	}
	if key, code, args := b.zygoteKey(spec); key != "" {
		s, err := b.startForked(ctx, key, code, args, spec)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errMustBoot) {
			return nil, err
		}
	}
	s, _, err := b.start(ctx, spec, false)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// withDefaults fills zero limits with the backend's defaults.
func withDefaults(lim sandbox.Limits) sandbox.Limits {
	if lim.MemoryBytes == 0 {
		lim.MemoryBytes = DefaultMemoryBytes
	}
	if lim.PIDs == 0 {
		lim.PIDs = DefaultPIDs
	}
	if lim.NoFile == 0 {
		lim.NoFile = DefaultNoFile
	}
	if lim.TmpBytes == 0 {
		lim.TmpBytes = DefaultTmpBytes
	}
	if lim.WorkspaceBytes == 0 {
		lim.WorkspaceBytes = DefaultWorkspaceBytes
	}
	return lim
}

// sessionRlimits are the rlimits a session's command gets.
func (b *Backend) sessionRlimits(lim sandbox.Limits) []rlimit {
	rl := []rlimit{
		{Resource: unix.RLIMIT_NOFILE, Value: uint64(lim.NoFile)},
		{Resource: unix.RLIMIT_CORE, Value: 0},
	}
	if b.cgroups.version == 0 {
		rl = append(rl, rlimit{Resource: unix.RLIMIT_AS, Value: uint64(lim.MemoryBytes)})
	}
	// RLIMIT_NPROC counts every process of the host uid. With a uid of its
	// own the session's count is exact; with codemode's shared uid it must
	// leave room for the processes that uid already runs.
	if os.Geteuid() == 0 {
		rl = append(rl, rlimit{Resource: unix.RLIMIT_NPROC, Value: uint64(lim.PIDs)})
	} else if b.cgroups.version == 0 {
		rl = append(rl, rlimit{Resource: unix.RLIMIT_NPROC, Value: uint64(countProcesses(os.Getuid()) + lim.PIDs)})
	}
	return rl
}

// createCgroup makes the session's cgroup, or returns nil where limits fall
// back to rlimits.
func (b *Backend) createCgroup(id string, lim sandbox.Limits) (*sessionCgroup, error) {
	if b.cgroups.version == 0 {
		return nil, nil
	}
	name := cgroupPrefix + strconv.Itoa(os.Getpid()) + "." + id
	return b.cgroups.create(name, cgroupLimits{memory: lim.MemoryBytes, pids: lim.PIDs + 1, cpus: lim.CPUs})
}

func (b *Backend) start(ctx context.Context, spec sandbox.Spec, probe bool) (_ *session, _ initStatus, err error) {
	return b.startInit(ctx, spec, probe, nil)
}

// startInit starts a sandbox init: for spec's command, for a probe, or (tmpl
// set) for a zygote.
func (b *Backend) startInit(ctx context.Context, spec sandbox.Spec, probe bool, tmpl *templateIDs) (_ *session, _ initStatus, err error) {
	lim := withDefaults(spec.Limits)
	cfg := initConfig{
		Command:        spec.Command,
		Env:            spec.Env,
		Dir:            spec.Dir,
		Hostname:       "sandbox",
		TmpBytes:       lim.TmpBytes,
		WorkspaceBytes: lim.WorkspaceBytes,
		Landlock:       !b.opts.DisableLandlock,
		Probe:          probe,
	}
	if cfg.Dir == "" {
		cfg.Dir = "/workspace"
	}
	if b.opts.Rootfs != "" {
		abs, err := filepath.Abs(b.opts.Rootfs)
		if err != nil {
			return nil, initStatus{}, err
		}
		cfg.Rootfs = abs
	} else {
		cfg.HostDirs, cfg.EtcFiles = hostDirs, b.etc
	}
	for _, m := range spec.Mounts {
		cfg.Mounts = append(cfg.Mounts, bindSpec{Source: m.Source, Target: m.Target, Writable: m.Writable})
	}

	var hostUID, hostGID int
	release := func() {}
	if tmpl != nil {
		cfg.MountPoints = tmpl.points
		// A zygote's own uid lies outside the range its children use; its
		// command needs no rlimit the init could set (RLIMIT_AS would also
		// bind every child until it sets its own).
		hostUID, hostGID = tmpl.own, tmpl.own
		cfg.Template = true
		cfg.Rlimits = []rlimit{{Resource: unix.RLIMIT_NOFILE, Value: uint64(lim.NoFile)}, {Resource: unix.RLIMIT_CORE, Value: 0}}
	} else {
		hostUID, hostGID, release = b.allocateID()
		cfg.Rlimits = b.sessionRlimits(lim)
	}
	defer func() {
		if err != nil {
			release()
		}
	}()

	cg, err := b.createCgroup(spec.ID, lim)
	if err != nil {
		return nil, initStatus{}, fmt.Errorf("native sandbox %s: %w", spec.ID, err)
	}
	defer func() {
		if err != nil && cg != nil {
			cg.destroy()
		}
	}()

	s, err := b.spawn(spec.ID, hostUID, hostGID, cfg.Rootfs, tmpl)
	if err != nil {
		return nil, initStatus{}, fmt.Errorf("native sandbox %s: %w", spec.ID, err)
	}
	s.cg, s.release = cg, release
	defer func() {
		if err != nil {
			s.Kill(context.Background())
		}
	}()
	if cg != nil {
		if err := cg.add(s.cmd.Process.Pid); err != nil {
			return nil, initStatus{}, fmt.Errorf("native sandbox %s: %w", spec.ID, err)
		}
	}
	go s.waitLoop()

	data, _ := json.Marshal(cfg)
	_, werr := s.config.Write(data)
	s.config.Close()
	st, err := s.readStatus(ctx)
	if err != nil {
		if werr != nil {
			err = errors.Join(err, werr)
		}
		return nil, initStatus{}, fmt.Errorf("native sandbox %s: %w", spec.ID, err)
	}
	return s, st, nil
}

// allocateID picks the host uid/gid the sandbox user maps to.
func (b *Backend) allocateID() (uid, gid int, release func()) {
	if os.Geteuid() != 0 {
		return os.Getuid(), os.Getgid(), func() {}
	}
	b.uidsMu.Lock()
	defer b.uidsMu.Unlock()
	for i := 0; i < maxSandboxUIDs; i++ {
		n := (b.uidNext + i) % maxSandboxUIDs
		if !b.uidsUsed[n] {
			b.uidsUsed[n] = true
			b.uidNext = n + 1
			id := b.opts.UIDBase + n
			return id, id, func() {
				b.uidsMu.Lock()
				delete(b.uidsUsed, n)
				b.uidsMu.Unlock()
			}
		}
	}
	// Every uid is taken (65536 live sessions): share the base uid.
	return b.opts.UIDBase, b.opts.UIDBase, func() {}
}

func countProcesses(uid int) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+e.Name(), &st) == nil && int(st.Uid) == uid {
			n++
		}
	}
	return n
}

// spawn starts the init process with its pipes. It runs on a dedicated,
// permanently locked OS thread: the init's parent-death signal fires when the
// thread that forked it exits, and Go may retire ordinary threads.
func (b *Backend) spawn(id string, hostUID, hostGID int, rootfs string, tmpl *templateIDs) (*session, error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	newPipe := func(open func() (r, w *os.File, err error)) (r, w *os.File, err error) {
		r, w, err = open()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	stdinR, stdinW, err1 := newPipe(os.Pipe)
	stdoutR, stdoutW, err2 := newPipe(os.Pipe)
	stderrR, stderrW, err3 := newPipe(os.Pipe)
	configR, configW, err4 := newPipe(os.Pipe)
	statusR, statusW, err5 := newPipe(os.Pipe)
	replyR, replyW, err6 := newPipe(pipe.New) // written on every tool call
	requestR, requestW, err7 := newPipe(os.Pipe)
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7); err != nil {
		closeAll()
		return nil, err
	}
	replies, requests, err := pipe.Ends(replyW, requestR)
	if err != nil {
		closeAll()
		return nil, err
	}
	extra := []*os.File{configR, statusW, replyR, requestW} // fds 3 to 6 in the init
	if rootfs != "" {
		// A detached copy of the tree, made here by the host's user: the
		// init attaches it, so a rootfs under a directory the sandbox's uid
		// cannot search (root's 0700 home) still works.
		fd, err := unix.OpenTree(unix.AT_FDCWD, rootfs, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("opening rootfs %s: %w", rootfs, err)
		}
		dir := os.NewFile(uintptr(fd), rootfs)
		defer dir.Close()
		extra = append(extra, dir) // fd 7 in the init (rootfsFD)
	}
	attr := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
			syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 65534, HostID: hostUID, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 65534, HostID: hostGID, Size: 1}},
		GidMappingsEnableSetgroups: false,
		Credential:                 &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: true},
		// For the init's setup only; it empties every set before starting the command.
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SYS_CHROOT, unix.CAP_SETPCAP, unix.CAP_NET_ADMIN},
		Setsid:      true,
		Pdeathsig:   syscall.SIGKILL,
	}
	if tmpl != nil {
		// A zygote is root of its user namespace, where the uids its
		// children take map to the host uids sessions get.
		attr.UidMappings = tmpl.mappings(hostUID)
		attr.GidMappings = tmpl.mappings(hostGID)
		attr.Credential = &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true}
		attr.AmbientCaps = nil
	}
	cmd := &exec.Cmd{
		Path:        b.opts.InitBinary,
		Args:        []string{InitArg0},
		Env:         []string{},
		Stdin:       stdinR,
		Stdout:      stdoutW,
		Stderr:      stderrW,
		ExtraFiles:  extra,
		SysProcAttr: attr,
	}
	if tmpl != nil {
		cmd.Stdin = tmpl.control
	}
	var startErr error
	b.spawner.do(func() { startErr = cmd.Start() })
	// The child holds its own copies now.
	for _, f := range []*os.File{stdinR, stdoutW, stderrW, configR, statusW, replyR, requestW} {
		f.Close()
	}
	if tmpl != nil {
		// A zygote makes no requests: its children get pipes of their own.
		replies.Close()
		requests.Close()
		replies, requests = nil, nil
	}
	if startErr != nil {
		for _, f := range []*os.File{stdinW, stdoutR, stderrR, configW, statusR, replyW, requestR} {
			f.Close()
		}
		return nil, fmt.Errorf("starting init: %w", startErr)
	}
	return &session{
		id: id, cmd: cmd, stdin: stdinW, stdout: stdoutR, stderr: stderrR, replies: replies, requests: requests,
		config: configW, status: statusR, done: make(chan struct{}),
	}, nil
}

type spawner struct {
	once sync.Once
	reqs chan func()
}

func (s *spawner) do(f func()) {
	s.once.Do(func() {
		s.reqs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: this thread must outlive every init it forked
			for f := range s.reqs {
				f()
			}
		}()
	})
	done := make(chan struct{})
	s.reqs <- func() { f(); close(done) }
	<-done
}

type session struct {
	id     string
	cmd    *exec.Cmd    // the init, for a booted session
	child  *zygoteChild // the forked interpreter, for a session from a zygote
	stdin  *os.File
	stdout *os.File
	stderr *os.File
	// The direct pipes (sandbox.Direct): the write end of the command's
	// sandbox.DirectReplyFD and the read end of its DirectRequestFD.
	replies  *pipe.Writer
	requests *pipe.Reader
	config   *os.File
	status   *os.File
	cg       *sessionCgroup
	release  func()

	killOnce sync.Once
	killed   atomic.Bool
	done     chan struct{}
	exit     sandbox.Exit
	err      error
}

func (s *session) ID() string { return s.id }

// MemoryBytes implements sandbox.MemoryReader from the session's cgroup.
func (s *session) MemoryBytes() (int64, error) {
	if s.cg == nil {
		return 0, errors.New("no cgroup: memory use is not measured")
	}
	return s.cg.memoryBytes()
}
func (s *session) Stdin() io.WriteCloser { return s.stdin }
func (s *session) Stdout() io.Reader     { return s.stdout }
func (s *session) Stderr() io.Reader     { return s.stderr }

// DirectPipes implements sandbox.Direct.
func (s *session) DirectPipes() (io.Reader, io.WriteCloser) {
	if s.replies == nil || s.requests == nil {
		return nil, nil
	}
	return s.requests, s.replies
}

// readStatus waits for the init's report: the command is running, or setup
// failed and why.
func (s *session) readStatus(ctx context.Context) (initStatus, error) {
	type result struct {
		data []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		data, err := io.ReadAll(io.LimitReader(s.status, 1<<20))
		s.status.Close()
		ch <- result{data, err}
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	var r result
	select {
	case r = <-ch:
	case <-ctx.Done():
		s.Kill(context.Background())
		return initStatus{}, ctx.Err()
	case <-timer.C:
		s.Kill(context.Background())
		diag, _ := io.ReadAll(io.LimitReader(s.stderr, 4096))
		return initStatus{}, fmt.Errorf("init did not report within %s: %s", startTimeout, strings.TrimSpace(string(diag)))
	}
	var st initStatus
	if r.err == nil && len(bytes.TrimSpace(r.data)) == 0 {
		// The init died before reporting; its stderr says why.
		<-s.done
		diag, _ := io.ReadAll(io.LimitReader(s.stderr, 4096))
		return st, fmt.Errorf("init exited (%s) before reporting: %s", s.exit, strings.TrimSpace(string(diag)))
	}
	if err := json.Unmarshal(r.data, &st); err != nil {
		return st, fmt.Errorf("init report: %w", err)
	}
	if !st.OK {
		return st, errors.New(st.Error)
	}
	return st, nil
}

func (s *session) waitLoop() {
	var exit sandbox.Exit
	if s.child != nil {
		exit, s.err = s.child.wait()
	} else {
		err := s.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			ws, _ := ee.Sys().(syscall.WaitStatus)
			exit = exitOf(ws)
		default:
			s.err = err
		}
	}
	exit.Killed = s.killed.Load()
	if s.cg != nil {
		exit.OOMKilled = s.cg.oomKilled()
		s.cg.killAll()
		if err := s.cg.destroy(); err != nil {
			s.err = errors.Join(s.err, err)
		}
	}
	if s.release != nil {
		s.release()
	}
	s.stdin.Close()
	if s.replies != nil {
		s.replies.Close()
	}
	s.exit = exit
	close(s.done)
}

func exitOf(ws syscall.WaitStatus) sandbox.Exit {
	if ws.Signaled() {
		return sandbox.Exit{Signal: unix.SignalName(ws.Signal()), Code: 128 + int(ws.Signal())}
	}
	return sandbox.Exit{Code: ws.ExitStatus()}
}

// Wait implements sandbox.Session.
func (s *session) Wait(ctx context.Context) (sandbox.Exit, error) {
	select {
	case <-s.done:
		return s.exit, s.err
	case <-ctx.Done():
		return sandbox.Exit{}, ctx.Err()
	}
}

// Kill implements sandbox.Session. SIGKILL to the init ends its pid
// namespace, which takes every process of the session with it.
func (s *session) Kill(ctx context.Context) error {
	s.killOnce.Do(func() {
		select {
		case <-s.done:
			return
		default:
		}
		s.killed.Store(true)
		if s.child != nil {
			s.child.kill()
		} else {
			s.cmd.Process.Signal(syscall.SIGKILL)
		}
		if s.cg != nil {
			s.cg.killAll()
		}
	})
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("killing sandbox %s: %w", s.id, ctx.Err())
	}
}
