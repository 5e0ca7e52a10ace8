package linuxns

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/codemode/codemode/internal/pipe"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/sandbox/seccomp"
	"golang.org/x/sys/unix"
)

// zygoteSource is the template interpreter's program.
//
//go:embed zygote.py
var zygoteSource string

// templateIDs are a zygote's user namespace mappings: its own uid 0 maps to
// own, and uid 1+n to the host uid UIDBase+n that allocateID hands to a
// session, so each forked session keeps a host uid of its own.
type templateIDs struct {
	own     int
	base    int
	control *os.File     // the zygote's end of the control socket (its stdin)
	points  []mountPoint // where children mount their sessions' mounts
}

func (t *templateIDs) mappings(own int) []syscall.SysProcIDMap {
	return []syscall.SysProcIDMap{
		{ContainerID: 0, HostID: own, Size: 1},
		{ContainerID: 1, HostID: t.base, Size: maxSandboxUIDs},
	}
}

// zygote is one running template interpreter.
type zygote struct {
	key     string
	session *session // the template's init
	mu      sync.Mutex
	control *os.File // codemode's end of the SOCK_SEQPACKET control socket; nil once closed
}

// zygoteKey says which template can run spec, or "" when none can: its
// command must be `python [flags] -c code [args]`, and the template must
// have started with the same interpreter, flags and environment (the
// interpreter read them at startup) and mount targets (its read-only root
// has their mount points; each child mounts its own sources there).
func (b *Backend) zygoteKey(spec sandbox.Spec) (key string, code string, args []string) {
	if !b.opts.Zygote || os.Geteuid() != 0 {
		return "", "", nil
	}
	i := slices.Index(spec.Command, "-c")
	if i < 1 || i+1 >= len(spec.Command) {
		return "", "", nil
	}
	for _, flag := range spec.Command[1:i] {
		if !strings.HasPrefix(flag, "-") {
			return "", "", nil
		}
	}
	var targets []string
	for _, m := range spec.Mounts {
		targets = append(targets, m.Target)
	}
	data, _ := json.Marshal([]any{spec.Command[:i], spec.Env, targets})
	return string(data), spec.Command[i+1], spec.Command[i+2:]
}

// maxZygotes bounds the templates one backend keeps: sessions whose
// interpreter, flags or environment differ from all of them boot instead.
const maxZygotes = 4

// template returns the zygote for key, starting it on first use, or nil
// when there are maxZygotes for other keys.
func (b *Backend) template(ctx context.Context, key string, spec sandbox.Spec) (*zygote, error) {
	b.zygotesMu.Lock()
	defer b.zygotesMu.Unlock()
	if z := b.zygotes[key]; z != nil {
		select {
		case <-z.session.done:
			z.closeControl()
			delete(b.zygotes, key)
		default:
			return z, nil
		}
	}
	if len(b.zygotes) >= maxZygotes {
		return nil, nil
	}
	z, err := b.startZygote(ctx, key, spec)
	if err != nil {
		return nil, err
	}
	b.zygotes[key] = z
	return z, nil
}

func (b *Backend) startZygote(ctx context.Context, key string, spec sandbox.Spec) (*zygote, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("zygote control socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "zygote-control"), os.NewFile(uintptr(fds[1]), "zygote-control")
	defer theirs.Close()
	i := slices.Index(spec.Command, "-c")
	b.zygoteSeq++
	tspec := sandbox.Spec{
		ID:      "zygote-" + strconv.Itoa(b.zygoteSeq),
		Command: append(append(slices.Clone(spec.Command[:i]), "-c", zygoteSource), b.opts.Preload...),
		Env:     spec.Env,
		Limits:  sandbox.Limits{MemoryBytes: b.opts.ZygoteMemoryBytes},
	}
	var points []mountPoint
	for _, m := range spec.Mounts {
		fi, err := os.Stat(m.Source)
		if err != nil {
			ours.Close()
			return nil, fmt.Errorf("mount %s: %w", m.Target, err)
		}
		points = append(points, mountPoint{Target: m.Target, Dir: fi.IsDir()})
	}
	// The zygote's own host uid is just below the sessions' range.
	ids := &templateIDs{own: b.opts.UIDBase - b.zygoteSeq, base: b.opts.UIDBase, control: theirs}
	ids.points = points
	s, _, err := b.startInit(ctx, tspec, false, ids)
	if err != nil {
		ours.Close()
		return nil, fmt.Errorf("starting zygote: %w", err)
	}
	// The zygote never reads its stdin pipe; what it prints goes to the log.
	s.stdin.Close()
	if b.opts.ZygoteWarm != "" {
		warm, _ := json.Marshal(map[string]string{"warm": b.opts.ZygoteWarm})
		if err := unix.Sendmsg(int(ours.Fd()), warm, nil, nil, 0); err != nil {
			ours.Close()
			s.Kill(context.Background())
			return nil, fmt.Errorf("starting zygote: sending its warm-up code: %w", err)
		}
	}
	for _, r := range []*os.File{s.stdout, s.stderr} {
		go func() {
			defer r.Close()
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				b.log.Info("zygote", "id", tspec.ID, "line", sc.Text())
			}
		}()
	}
	return &zygote{key: key, session: s, control: ours}, nil
}

var errZygoteGone = errors.New("the zygote exited")

// dropZygote forgets a zygote that died.
func (b *Backend) dropZygote(z *zygote) {
	b.zygotesMu.Lock()
	if b.zygotes[z.key] == z {
		delete(b.zygotes, z.key)
	}
	b.zygotesMu.Unlock()
	z.closeControl()
	z.session.Kill(context.Background())
}

// closeControl closes codemode's end of the control socket, once no fork
// is using it.
func (z *zygote) closeControl() {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.control != nil {
		z.control.Close()
		z.control = nil
	}
}

// Close stops the zygotes; sessions forked from them end with them.
func (b *Backend) Close() error {
	b.zygotesMu.Lock()
	zs := b.zygotes
	b.zygotes = map[string]*zygote{}
	b.zygotesMu.Unlock()
	var errs []error
	for _, z := range zs {
		z.closeControl()
		errs = append(errs, z.session.Kill(context.Background()))
	}
	return errors.Join(errs...)
}

// zygotePIDs lists the zygotes' inits (for leak checks: a zygote outlives
// the sessions it forked).
func (b *Backend) zygotePIDs() []int {
	b.zygotesMu.Lock()
	defer b.zygotesMu.Unlock()
	var pids []int
	for _, z := range b.zygotes {
		pids = append(pids, z.session.cmd.Process.Pid)
	}
	return pids
}

// forkRequest is what a zygote gets, with the child's stdin, stdout,
// stderr, status and go-ahead pipes. It carries nothing of the session's
// own: the command's code and arguments reach the child over its go-ahead
// pipe, which the zygote never reads, so no session leaves a trace in the
// memory that later children inherit.
type forkRequest struct {
	Dir            string            `json:"dir"`
	Hostname       string            `json:"hostname"`
	TmpBytes       int64             `json:"tmpBytes"`
	WorkspaceBytes int64             `json:"workspaceBytes"`
	Rlimits        []rlimit          `json:"rlimits"`
	UID            int               `json:"uid"` // in the zygote's user namespace
	Landlock       bool              `json:"landlock"`
	WritableDirs   []string          `json:"writableDirs"` // Landlock's, as a booted sandbox's (applyLandlock)
	Mounts         []mountPoint      `json:"mounts"`       // one descriptor each, after the five pipes
	Seccomp        string            `json:"seccomp"`      // the booted sandbox's BPF program, hex
	Syscalls       map[string]uint64 `json:"nr"`
	ProcMasked     []string          `json:"procMasked"`
	ProcReadOnly   []string          `json:"procReadOnly"`
}

// errMustBoot: the session cannot fork from a zygote and boots instead.
var errMustBoot = errors.New("no zygote for this session")

// startForked starts spec as a child of the zygote for key, or returns
// errMustBoot, having released what it took, when spec must boot instead.
func (b *Backend) startForked(ctx context.Context, key, code string, args []string, spec sandbox.Spec) (_ *session, err error) {
	z, err := b.template(ctx, key, spec)
	if err != nil {
		// Booting is as safe, only slower: a zygote that cannot start
		// must not stop sessions.
		b.log.Warn("zygote did not start; the session boots Python", "error", err)
		return nil, errMustBoot
	}
	if z == nil {
		return nil, errMustBoot
	}
	prog, err := seccomp.Program()
	if err != nil {
		return nil, err
	}
	bpf := make([]byte, 0, 8*len(prog))
	for _, f := range prog {
		bpf = append(bpf, byte(f.Code), byte(f.Code>>8), f.Jt, f.Jf, byte(f.K), byte(f.K>>8), byte(f.K>>16), byte(f.K>>24))
	}
	lim := withDefaults(spec.Limits)
	hostUID, _, release := b.allocateID()
	defer func() {
		if err != nil {
			release()
		}
	}()
	req := forkRequest{
		Dir: spec.Dir, Hostname: "sandbox",
		TmpBytes: lim.TmpBytes, WorkspaceBytes: lim.WorkspaceBytes, Rlimits: b.sessionRlimits(lim),
		UID: 1 + hostUID - b.opts.UIDBase, Landlock: !b.opts.DisableLandlock, Seccomp: hex.EncodeToString(bpf),
		Syscalls: map[string]uint64{
			"seccomp": unix.SYS_SECCOMP, "capset": unix.SYS_CAPSET, "landlock_create_ruleset": unix.SYS_LANDLOCK_CREATE_RULESET,
			"landlock_add_rule": unix.SYS_LANDLOCK_ADD_RULE, "landlock_restrict_self": unix.SYS_LANDLOCK_RESTRICT_SELF,
			"open_tree": unix.SYS_OPEN_TREE, "move_mount": unix.SYS_MOVE_MOUNT,
		},
		ProcMasked: procMasked, ProcReadOnly: procReadOnly,
	}
	if req.Dir == "" {
		req.Dir = "/workspace"
	}
	req.WritableDirs = []string{"/tmp", "/workspace", "/dev/shm"}
	mountFDs, err := detachMounts(spec.Mounts)
	if err != nil {
		return nil, fmt.Errorf("native sandbox %s: %w", spec.ID, err)
	}
	defer func() {
		for _, f := range mountFDs {
			f.Close()
		}
	}()
	req.Mounts = []mountPoint{}
	for _, m := range spec.Mounts {
		fi, _ := mountFDs[len(req.Mounts)].Stat()
		req.Mounts = append(req.Mounts, mountPoint{Target: m.Target, Dir: fi != nil && fi.IsDir()})
		if m.Writable {
			req.WritableDirs = append(req.WritableDirs, m.Target)
		}
	}
	cg, err := b.createCgroup(spec.ID, lim)
	if err != nil {
		return nil, fmt.Errorf("native sandbox %s: %w", spec.ID, err)
	}
	defer func() {
		if err != nil && cg != nil {
			cg.destroy()
		}
	}()

	var files []*os.File // closed on return unless handed over
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	newPipe := func(open func() (r, w *os.File, err error)) (r, w *os.File) {
		if err != nil {
			return nil, nil
		}
		r, w, err = open()
		files = append(files, r, w)
		return r, w
	}
	stdinR, stdinW := newPipe(os.Pipe)
	stdoutR, stdoutW := newPipe(os.Pipe)
	stderrR, stderrW := newPipe(os.Pipe)
	statusR, statusW := newPipe(os.Pipe)
	goR, goW := newPipe(os.Pipe)
	replyR, replyW := newPipe(pipe.New) // written on every tool call
	requestR, requestW := newPipe(os.Pipe)
	if err != nil {
		return nil, fmt.Errorf("native sandbox %s: %w", spec.ID, err)
	}
	replies, requests, err := pipe.Ends(replyW, requestR)
	if err != nil {
		return nil, fmt.Errorf("native sandbox %s: %w", spec.ID, err)
	}
	data, _ := json.Marshal(req)
	childFDs := append([]*os.File{stdinR, stdoutW, stderrW, statusW, goR, replyR, requestW}, mountFDs...)
	pidfd, err := z.fork(data, childFDs...)
	if errors.Is(err, errZygoteGone) {
		// It died since it was last used: once more, with a new one.
		b.dropZygote(z)
		if z, err = b.template(ctx, key, spec); err == nil && z != nil {
			pidfd, err = z.fork(data, childFDs...)
		} else if err == nil {
			err = errZygoteGone
		}
		if err != nil {
			if z != nil {
				b.dropZygote(z)
			}
			b.log.Warn("zygote died; the session boots Python", "error", err)
			return nil, errMustBoot
		}
	}
	if err != nil {
		return nil, fmt.Errorf("native sandbox %s: %w", spec.ID, err)
	}
	// The child holds its own copies now.
	for _, f := range []*os.File{stdinR, stdoutW, stderrW, statusW, goR, replyR, requestW} {
		f.Close()
	}
	child := &zygoteChild{pidfd: pidfd, status: statusR}
	command, _ := json.Marshal(map[string]any{"code": code, "argv": args})
	if err := b.admit(ctx, child, cg, goW, command); err != nil {
		child.kill()
		child.wait()
		return nil, fmt.Errorf("native sandbox %s: %w", spec.ID, err)
	}
	files = nil
	s := &session{
		id: spec.ID, child: child, stdin: stdinW, stdout: stdoutR, stderr: stderrR, replies: replies, requests: requests,
		cg: cg, release: release, done: make(chan struct{}),
	}
	go s.waitLoop()
	return s, nil
}

// admit moves a forked child into its cgroup, sends the go-ahead with the
// command, and waits for the child's report. Until the go-ahead the child
// only waits: nothing of the session runs outside its cgroup.
func (b *Backend) admit(ctx context.Context, child *zygoteChild, cg *sessionCgroup, goAhead *os.File, command []byte) error {
	if cg != nil {
		pid, err := pidOfPidfd(child.pidfd)
		if err != nil {
			return err
		}
		if err := cg.add(pid); err != nil {
			return err
		}
	}
	// The child reads this as soon as it is forked, so a command larger
	// than the pipe's buffer does not block for long.
	_, err := goAhead.Write(append([]byte("g"), command...))
	goAhead.Close()
	if err != nil {
		return fmt.Errorf("go-ahead: %w", err)
	}
	return child.ready(ctx)
}

// mountPoint is a session mount's target and whether it is a directory.
type mountPoint struct {
	Target string `json:"target"`
	Dir    bool   `json:"dir"`
}

// detachMounts makes a detached copy of each mount's source, as the booted
// init binds it: read-only ones read-only, nosuid and nodev.
func detachMounts(mounts []sandbox.Mount) (_ []*os.File, err error) {
	var files []*os.File
	defer func() {
		if err != nil {
			for _, f := range files {
				f.Close()
			}
		}
	}()
	for _, m := range mounts {
		fd, err := unix.OpenTree(unix.AT_FDCWD, m.Source, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return nil, fmt.Errorf("mount %s: open_tree %s: %w", m.Target, m.Source, err)
		}
		files = append(files, os.NewFile(uintptr(fd), m.Source))
		if m.Writable {
			continue
		}
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			return nil, fmt.Errorf("mount %s: read-only: %w", m.Target, err)
		}
	}
	return files, nil
}

// fork asks the zygote for a child with the given descriptors and returns
// the child's pidfd.
func (z *zygote) fork(req []byte, fds ...*os.File) (*os.File, error) {
	rights := make([]int, len(fds))
	for i, f := range fds {
		rights[i] = int(f.Fd())
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.control == nil {
		return nil, errZygoteGone
	}
	conn := int(z.control.Fd())
	if err := unix.Sendmsg(conn, req, unix.UnixRights(rights...), nil, 0); err != nil {
		if errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET) {
			return nil, errZygoteGone
		}
		return nil, fmt.Errorf("asking the zygote to fork: %w", err)
	}
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(conn, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if errors.Is(err, unix.ECONNRESET) {
		return nil, errZygoteGone
	}
	if err != nil {
		return nil, fmt.Errorf("zygote reply: %w", err)
	}
	var reply struct {
		PID   int    `json:"pid"`
		Error string `json:"error"`
	}
	var pidfd *os.File
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
		if got, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(got) == 1 {
			pidfd = os.NewFile(uintptr(got[0]), "pidfd")
		}
	}
	if n == 0 {
		return nil, errZygoteGone
	}
	if err := json.Unmarshal(buf[:n], &reply); err != nil || reply.Error != "" || pidfd == nil {
		if pidfd != nil {
			pidfd.Close()
		}
		return nil, fmt.Errorf("zygote could not fork: %s %v", reply.Error, err)
	}
	return pidfd, nil
}

// pidOfPidfd returns the process's pid in codemode's pid namespace.
func pidOfPidfd(f *os.File) (int, error) {
	data, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || pid <= 0 {
				return 0, fmt.Errorf("pidfd names no live process (%q)", line)
			}
			return pid, nil
		}
	}
	return 0, errors.New("pidfd: no Pid in fdinfo")
}

// zygoteChild is a session's interpreter forked by a zygote. Its status
// pipe carries the child's setup report, then the zygote's record of its
// exit, then EOF.
type zygoteChild struct {
	pidfd  *os.File
	status *os.File
	lines  chan zygoteStatus
	once   sync.Once
}

type zygoteStatus struct {
	OK       bool    `json:"ok"`
	Error    string  `json:"error"`
	Landlock string  `json:"landlock"`
	Exit     *uint32 `json:"exit"`
}

func (c *zygoteChild) read() {
	c.once.Do(func() {
		c.lines = make(chan zygoteStatus, 2)
		go func() {
			defer close(c.lines)
			sc := bufio.NewScanner(c.status)
			for sc.Scan() {
				var st zygoteStatus
				if json.Unmarshal(sc.Bytes(), &st) == nil {
					c.lines <- st
				}
			}
		}()
	})
}

// ready waits for the child's setup report.
func (c *zygoteChild) ready(ctx context.Context) error {
	c.read()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case st, ok := <-c.lines:
		switch {
		case !ok:
			return errors.New("zygote child exited before reporting")
		case st.Exit != nil:
			return fmt.Errorf("zygote child %s before reporting", exitOf(syscall.WaitStatus(*st.Exit)))
		case !st.OK:
			return fmt.Errorf("zygote child setup: %s", st.Error)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("zygote child did not report within %s", startTimeout)
	}
}

// wait returns once the zygote reported the child's exit (or is gone).
func (c *zygoteChild) wait() (sandbox.Exit, error) {
	c.read()
	defer c.pidfd.Close()
	defer c.status.Close()
	for st := range c.lines {
		if st.Exit != nil {
			for range c.lines {
			}
			return exitOf(syscall.WaitStatus(*st.Exit)), nil
		}
	}
	// The zygote died first: its pid namespace, and with it the child's,
	// ended, which the kernel does by SIGKILL. Wait until the child is gone.
	fds := []unix.PollFd{{Fd: int32(c.pidfd.Fd()), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); !errors.Is(err, unix.EINTR) {
			break
		}
	}
	return sandbox.Exit{Signal: unix.SignalName(unix.SIGKILL), Code: 128 + int(unix.SIGKILL)}, nil
}

func (c *zygoteChild) kill() {
	unix.PidfdSendSignal(int(c.pidfd.Fd()), unix.SIGKILL, nil, 0)
}
