// Package container runs sandboxes as podman or docker containers (also
// with gVisor's runsc as the OCI runtime), behind the same sandbox.Backend
// contract as the native backend. Every session is one long-lived
// `run -i` (an exec per call costs 75-150 ms); containers are named and
// labelled with their owner, killed and removed by name on timeout, reset,
// idle expiry and shutdown, and the ones left by a codemode process that
// died are removed at startup. The hardened profile of the reference project
// is the default, plus codemode's own seccomp profile (the engines' default
// profiles allow unshare, mount, keyctl and ptrace) and explicit ulimits
// (engines' defaults fail where CAP_SYS_RESOURCE is missing).
package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codemode/codemode/internal/pipe"
	"github.com/codemode/codemode/internal/sandbox"
)

// Options configure a Backend.
type Options struct {
	// Name is the backend's name: "podman", "docker" or "gvisor".
	Name string
	// Command is the engine CLI and its global flags, e.g. ["podman"] or
	// ["/usr/bin/docker", "-H", "unix:///run/docker.sock"]. The default is
	// the Name's engine (podman for gvisor) found in PATH.
	Command []string
	// Env is the engine CLI's environment (DOCKER_HOST, XDG_RUNTIME_DIR...).
	Env []string
	// OCIRuntime selects the OCI runtime: "" (the engine's default; runc
	// instead of crun where crun cannot run), a name ("runc", "crun",
	// "runsc") or a path. gvisor defaults to "runsc".
	OCIRuntime string
	// Image holds python3 (default python:3.12-slim).
	Image string
	// User is "uid:gid" inside the container (default 65534:65534).
	User string
	// StateDir keeps the seccomp profile file the engine reads.
	StateDir string
	// Pull fetches a missing image before the first session (never inside a
	// call). Off by default where no registry is reachable.
	Pull   bool
	Logger *slog.Logger
}

// Backend is a container sandbox backend.
type Backend struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	eng      *engine // resolved lazily: Probe and Start share it
	caps     sandbox.Capabilities
	useInit  bool
	rlimits  bool   // only ulimits bound sessions (runConfig.rlimitsOnly)
	runtime  string // OCI runtime flag value actually used
	profile  string // seccomp profile path
	prepared bool
	owner    string // label identifying this codemode process
	machine  string // the podman machine codemode started, to stop at Close
}

var _ sandbox.Backend = (*Backend)(nil)

// New returns a container backend; nothing runs until Probe or Start.
func New(opts *Options) *Backend {
	b := &Backend{}
	if opts != nil {
		b.opts = *opts
	}
	if b.opts.Name == "" {
		b.opts.Name = string(Podman)
	}
	if b.opts.Image == "" {
		b.opts.Image = "python:3.12-slim"
	}
	if b.opts.User == "" {
		b.opts.User = "65534:65534"
	}
	if b.opts.Name == "gvisor" && b.opts.OCIRuntime == "" {
		b.opts.OCIRuntime = "runsc"
	}
	if b.opts.Env == nil {
		b.opts.Env = os.Environ()
	}
	b.log = b.opts.Logger
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	b.owner = sandbox.OwnerID(os.Getpid())
	return b
}

// Name implements sandbox.Backend.
func (b *Backend) Name() string { return b.opts.Name }

// Labels every container carries; the owner names the codemode process.
const (
	labelManaged = "codemode"
	labelOwner   = "codemode.owner"
	labelSession = "codemode.session"
)

// resolve finds the engine and its kind.
func (b *Backend) resolve(ctx context.Context) (*engine, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.eng != nil {
		return b.eng, nil
	}
	command := b.opts.Command
	if len(command) == 0 {
		name := b.opts.Name
		if name == "gvisor" {
			name = string(Podman)
			if _, err := exec.LookPath(name); err != nil {
				name = string(Docker)
			}
		}
		path, err := exec.LookPath(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not installed (or not in PATH)", errNoEngine, name)
		}
		command = []string{path}
	} else if _, err := exec.LookPath(command[0]); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errNoEngine, command[0], err)
	}
	kind, err := detectKind(ctx, command, b.opts.Env)
	if err != nil {
		return nil, err
	}
	e := &engine{kind: kind, command: command, env: b.opts.Env}
	if dir, err := engineDir(); err == nil {
		e.dir = dir
	} else {
		b.log.Warn("no working directory of codemode's for the engine; its files may land in the current one", "error", err)
	}
	if kind == Podman && goruntime.GOOS == "linux" && !hasSystemd() {
		// No systemd: podman must not try to create systemd scopes or
		// write events to the journal.
		e.command = append(append([]string{}, command...), "--cgroup-manager", "cgroupfs", "--events-backend", "file")
	}
	b.eng = e
	return e, nil
}

// engineDir is the engine CLI's working directory: this user's, under the
// temporary directory (the engine may run as another user, rootless podman
// behind a wrapper, who can enter it but not write there), made once and
// kept, since a container may outlive any codemode process. One that is not
// a directory of this user's with that mode is not used.
func engineDir() (string, error) {
	dir := filepath.Join(os.TempDir(), "codemode-engine-"+strconv.Itoa(os.Getuid()))
	if err := os.Mkdir(dir, 0o711); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() {
		return "", fmt.Errorf("%s is not a directory of uid %d", dir, os.Getuid())
	}
	if fi.Mode().Perm() != 0o711 { // a umask narrowed it
		if err := os.Chmod(dir, 0o711); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func hasSystemd() bool {
	_, err := os.Stat("/run/systemd/system")
	return err == nil
}

// Close stops the podman machine if codemode started it; a machine that was
// already running is left alone.
func (b *Backend) Close() error {
	b.mu.Lock()
	e, name := b.eng, b.machine
	b.machine = ""
	b.mu.Unlock()
	if name == "" || e == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := e.output(ctx, "machine", "stop", name)
	return err
}

// Start implements sandbox.Backend.
func (b *Backend) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Session, error) {
	if len(spec.Command) == 0 {
		return nil, errors.New("container sandbox: empty command")
	}
	if err := b.prepare(ctx); err != nil {
		return nil, err
	}
	b.mu.Lock()
	e, rc := b.eng, runConfig{init: b.useInit, rlimitsOnly: b.rlimits, runtime: b.runtime, profile: b.profile}
	b.mu.Unlock()
	// podman passes descriptors into the container (--preserve-fds), so
	// sessions get the direct pipes (sandbox.Direct); docker cannot, and
	// runsc does not take the flag.
	rc.direct = e.kind == Podman && !b.isGVisor(rc.runtime)
	name := "codemode-" + strconv.Itoa(os.Getpid()) + "-" + spec.ID
	args := b.runArgs(spec, name, rc)
	cmd := e.cmd(context.Background(), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Pipes of our own, not Cmd's: Wait closes Cmd's pipes when the CLI
	// exits, which would cut off output still buffered in them.
	var files []*os.File
	newPipe := func(open func() (r, w *os.File, err error)) (r, w *os.File, err error) {
		r, w, err = open()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	stdinR, stdin, err1 := newPipe(os.Pipe)
	stdout, stdoutW, err2 := newPipe(os.Pipe)
	stderr, stderrW, err3 := newPipe(os.Pipe)
	var replyR, replyW, requestR, requestW *os.File
	var err4, err5, err6 error
	var replies *pipe.Writer
	var requests *pipe.Reader
	if rc.direct {
		replyR, replyW, err4 = newPipe(pipe.New) // written on every tool call
		requestR, requestW, err5 = newPipe(os.Pipe)
		if err4 == nil && err5 == nil {
			replies, requests, err6 = pipe.Ends(replyW, requestR)
		}
	}
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	if rc.direct {
		cmd.ExtraFiles = []*os.File{replyR, requestW} // sandbox.DirectReplyFD and DirectRequestFD in the container
	}
	err := cmd.Start()
	for _, f := range []*os.File{stdinR, stdoutW, stderrW, replyR, requestW} {
		if f != nil {
			f.Close() // the CLI holds its own copies now
		}
	}
	if err != nil {
		for _, f := range []*os.File{stdin, stdout, stderr, replyW, requestR} {
			if f != nil {
				f.Close()
			}
		}
		return nil, fmt.Errorf("%s sandbox %s: starting %s: %w", b.Name(), spec.ID, e.command[0], err)
	}
	s := &session{id: spec.ID, name: name, eng: e, cmd: cmd, stdin: stdin, stdout: stdout, stderr: stderr,
		replies: replies, requests: requests, exited: make(chan struct{}), done: make(chan struct{}), log: b.log}
	go s.waitLoop()
	return s, nil
}

// runConfig is what Probe settled about how to run containers here.
type runConfig struct {
	init bool
	// direct: the CLI passes the direct pipes, its descriptors 3 and 4,
	// into the container (podman's --preserve-fds).
	direct bool
	// rlimitsOnly: the engine ignores --memory, --pids-limit and --cpus
	// (rootless on cgroup v1), so only ulimits bound the session.
	rlimitsOnly      bool
	runtime, profile string
}

// runArgs builds `run`: the reference project's hardened profile plus
// seccomp, ulimits, names and labels.
func (b *Backend) runArgs(spec sandbox.Spec, name string, rc runConfig) []string {
	lim := spec.Limits
	mem := lim.MemoryBytes
	if mem == 0 {
		mem = 512 << 20
	}
	pids := lim.PIDs
	if pids == 0 {
		pids = 128
	}
	nofile := lim.NoFile
	if nofile == 0 {
		nofile = 1024
	}
	tmp, work := lim.TmpBytes, lim.WorkspaceBytes
	if tmp == 0 {
		tmp = 64 << 20
	}
	if work == 0 {
		work = 128 << 20
	}
	args := []string{"run", "-i", "--name", name,
		"--label", labelManaged + "=1", "--label", labelOwner + "=" + b.owner, "--label", labelSession + "=" + spec.ID,
		"--network", "none", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--user", b.opts.User, "--ulimit", fmt.Sprintf("nofile=%d:%d", nofile, nofile),
		"--tmpfs", fmt.Sprintf("/tmp:rw,noexec,nosuid,nodev,size=%d,mode=1777%s", tmp, b.tmpfsExtra()),
		"--tmpfs", fmt.Sprintf("/workspace:rw,noexec,nosuid,nodev,size=%d,mode=1777%s", work, b.tmpfsExtra()),
		"--workdir", orDefault(spec.Dir, "/workspace"), "--pull", "never", "--hostname", "sandbox",
	}
	gvisor := b.isGVisor(rc.runtime)
	if !gvisor && rc.profile != "" {
		args = append(args, "--security-opt", "seccomp="+rc.profile)
	}
	memory := []string{"--memory", strconv.FormatInt(mem, 10), "--memory-swap", strconv.FormatInt(mem, 10)}
	switch {
	case rc.rlimitsOnly:
		// The cgroup flags would only print a warning into every session's
		// stderr. RLIMIT_NPROC at the limit itself is the one process bound
		// left; RLIMIT_DATA caps each process's memory, not the session's.
		args = append(args, "--ulimit", fmt.Sprintf("nproc=%d:%d", pids, pids), "--ulimit", fmt.Sprintf("data=%d:%d", mem, mem))
	case gvisor:
		// gVisor's processes are host stub processes: a tight pids cgroup
		// kills the whole sandbox, while RLIMIT_NPROC, which the sentry
		// enforces per sandbox, fails fork cleanly.
		args = append(append(args, memory...), "--pids-limit", strconv.Itoa(max(pids*8, 1024)), "--ulimit", fmt.Sprintf("nproc=%d:%d", pids, pids))
	default:
		args = append(append(args, memory...), "--pids-limit", strconv.Itoa(pids), "--ulimit", fmt.Sprintf("nproc=%d:%d", pids*2, pids*2))
	}
	if lim.CPUs > 0 && !rc.rlimitsOnly {
		args = append(args, "--cpus", strconv.FormatFloat(lim.CPUs, 'f', -1, 64))
	}
	if rc.runtime != "" {
		args = append(args, "--runtime", rc.runtime)
	}
	if rc.init {
		args = append(args, "--init")
	}
	if rc.direct {
		args = append(args, "--preserve-fds", "2")
	}
	for _, kv := range spec.Env {
		args = append(args, "--env", kv)
	}
	for k, v := range spec.Labels {
		if k == labelManaged || k == labelOwner {
			// Whose container this is decides who may remove it: only
			// this backend says.
			continue
		}
		args = append(args, "--label", k+"="+v)
	}
	sockets := false
	for _, m := range spec.Mounts {
		opt := "ro"
		if m.Writable {
			opt = "rw"
		}
		args = append(args, "--volume", m.Source+":"+m.Target+":"+opt)
		sockets = sockets || m.Sockets
	}
	if gvisor && sockets && b.podman() {
		// runsc connects to host Unix sockets only with host-uds=open, and
		// only they are mounted in (read-only), so nothing else opens.
		// Its network=none is a netstack with lo alone, where the egress
		// relay listens; podman's empty namespace gives gVisor no lo at all.
		args = append(args, "--runtime-flag", "host-uds=open", "--runtime-flag", "network=none")
	}
	args = append(args, b.opts.Image)
	return append(args, spec.Command...)
}

// tmpfsExtra keeps podman from copying the image's directory (and its
// root-only permissions) into the tmpfs, which would make it unwritable for
// the sandbox user.
func (b *Backend) tmpfsExtra() string {
	if b.eng != nil && b.eng.kind == Podman {
		return ",notmpcopyup"
	}
	return ""
}

// NoEgress is why gVisor under docker cannot use the egress proxy: runsc
// refuses connections to the host's Unix sockets, through which the proxy
// is reached, unless started with --host-uds=open, and docker passes no
// per-container runtime flags (podman does, so gVisor under podman can).
const NoEgress = "gVisor (runsc) under docker refuses connections to host Unix sockets, through which the egress proxy is reached (docker cannot pass runsc --host-uds=open per container; gVisor under podman can)"

// EgressBlocker says why this backend's sandboxes cannot reach the egress
// proxy, or "" when they can.
func (b *Backend) EgressBlocker() string {
	if b.isGVisor(b.opts.OCIRuntime) && !b.podman() {
		return NoEgress
	}
	return ""
}

// podman reports whether the engine is podman: from the resolved engine,
// else from the command's name.
func (b *Backend) podman() bool {
	b.mu.Lock()
	e := b.eng
	b.mu.Unlock()
	if e != nil {
		return e.kind == Podman
	}
	if len(b.opts.Command) == 0 {
		// resolve prefers podman for gvisor when it is installed.
		_, err := exec.LookPath(string(Podman))
		return b.opts.Name != string(Docker) && err == nil
	}
	k, _ := kindByName(b.opts.Command[0])
	return k == Podman
}

func (b *Backend) isGVisor(runtime string) bool {
	return b.opts.Name == "gvisor" || strings.Contains(filepath.Base(runtime), "runsc")
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

type session struct {
	id, name string
	eng      *engine
	cmd      *exec.Cmd
	stdin    *os.File
	stdout   *os.File
	stderr   *os.File
	// The direct pipes (sandbox.Direct), podman only: the write end of the
	// container's sandbox.DirectReplyFD and the read end of its DirectRequestFD.
	replies  *pipe.Writer
	requests *pipe.Reader
	log      *slog.Logger

	killOnce sync.Once
	killed   bool
	mu       sync.Mutex
	exited   chan struct{} // the run CLI has ended
	done     chan struct{} // and the container is removed
	exit     sandbox.Exit
	err      error
}

func (s *session) ID() string            { return s.id }
func (s *session) Stdin() io.WriteCloser { return s.stdin }
func (s *session) Stdout() io.Reader     { return s.stdout }
func (s *session) Stderr() io.Reader     { return s.stderr }

// DirectPipes implements sandbox.Direct.
func (s *session) DirectPipes() (io.Reader, io.WriteCloser) {
	if s.replies == nil {
		return nil, nil
	}
	return s.requests, s.replies
}

// waitLoop waits for the run CLI, reads the container's end state, and
// removes it.
func (s *session) waitLoop() {
	err := s.cmd.Wait()
	close(s.exited)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	exit := sandbox.Exit{}
	st, ierr := s.eng.inspect(ctx, s.name)
	switch {
	case ierr == nil:
		exit.Code, exit.OOMKilled = st.ExitCode, st.OOMKilled
		if st.Running {
			// The CLI died but the container did not (killing the client
			// leaves the container running): remove it.
			exit.Code = 137
		}
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			exit.Code = ee.ExitCode()
		}
	}
	if exit.Code > 128 && exit.Code < 160 {
		exit.Signal = syscall.Signal(exit.Code - 128).String()
	}
	if rerr := s.eng.remove(ctx, s.name); rerr != nil {
		s.err = fmt.Errorf("removing container %s: %w", s.name, rerr)
	}
	s.mu.Lock()
	exit.Killed = s.killed
	s.exit = exit
	s.mu.Unlock()
	s.stdin.Close()
	if s.replies != nil {
		s.replies.Close()
	}
	close(s.done)
}

// awaitContainer returns once the session's container exists, the run CLI
// has ended, or ctx is done.
func (s *session) awaitContainer(ctx context.Context) {
	for {
		if ok, _ := s.eng.exists(ctx, s.name); ok {
			return
		}
		select {
		case <-s.exited:
			return
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
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

// Kill implements sandbox.Session: the container is removed by name (the
// CLI process alone would leave it running), then the CLI is reaped.
func (s *session) Kill(ctx context.Context) error {
	s.killOnce.Do(func() {
		select {
		case <-s.done:
			return
		default:
		}
		s.mu.Lock()
		s.killed = true
		s.mu.Unlock()
		rmCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Killed right after Start, the engine may still be creating the
		// container: removing by name would find nothing, and killing the
		// CLI then could leave a container that the engine goes on to
		// create with nobody left to remove it. So the container must exist
		// first, or the CLI have ended without one.
		s.awaitContainer(rmCtx)
		if err := s.eng.remove(rmCtx, s.name); err != nil {
			s.log.Warn("removing container", "container", s.name, "error", err)
		}
		// The CLI may still be attaching or already gone; end it either way
		// (not once reaped: its process group id may be reused).
		select {
		case <-s.exited:
		default:
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("killing container %s: %w", s.name, ctx.Err())
	}
}
