// Package sandbox defines how codemode runs untrusted code. A Backend starts
// Sessions; a Session is one isolated, long-lived process tree whose stdio
// carries the wire protocol (see internal/wire).
//
// Implementations live in subpackages (linuxns, container) and must all pass
// the shared suite in sandboxtest. This package must not import the MCP SDK,
// the wire protocol or the Python runtime: backends run a command, they do
// not know what it speaks.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// A Backend creates isolated sessions on this host. Its methods are safe for
// concurrent use.
type Backend interface {
	// Name is a stable lower-kebab-case id used in config, logs and doctor
	// output ("native", "podman", "docker", "gvisor").
	Name() string

	// Probe reports whether this host can run the backend and which
	// protections it will actually enforce. It has no lasting side effects.
	// A non-nil error means the backend is unusable here.
	Probe(ctx context.Context) (Capabilities, error)

	// Start launches a new session from spec and returns once its command is
	// running. If Start fails or ctx ends first, everything it created is
	// removed.
	Start(ctx context.Context, spec Spec) (Session, error)
}

// A Session is one running sandbox.
type Session interface {
	// ID is the session's unique id (spec.ID).
	ID() string

	// Stdin writes to the command's standard input. Closing it is the polite
	// way to ask the command to exit.
	Stdin() io.WriteCloser

	// Stdout reads the command's standard output. Reads return EOF once the
	// sandbox has exited (or been killed) and its output is drained.
	Stdout() io.Reader

	// Stderr carries the sandbox's own diagnostics (the command's stderr and
	// the backend's setup messages), for logs only.
	Stderr() io.Reader

	// Wait blocks until the sandbox has exited and its resources (processes,
	// cgroups, containers, temporary files) are released. It may be called
	// several times and concurrently; all calls return the same result.
	Wait(ctx context.Context) (Exit, error)

	// Kill stops every process of the session now and releases its
	// resources. It is idempotent and safe to call concurrently with any
	// other method. It returns after the session's processes are gone.
	Kill(ctx context.Context) error
}

// Spec describes one session.
type Spec struct {
	ID      string   // unique, [a-zA-Z0-9_.-], used in names and labels
	Command []string // argv inside the sandbox; argv[0] is looked up in the sandbox's PATH
	Env     []string // exact environment; nothing is inherited from the host
	Dir     string   // working directory inside the sandbox (default /workspace)
	Limits  Limits
	Mounts  []Mount
	Labels  map[string]string // recorded where the backend can (container labels)
}

// Limits bound what a session may use. Zero means the backend's default.
type Limits struct {
	MemoryBytes    int64   // memory (and swap) ceiling for the whole session
	PIDs           int     // processes and threads
	CPUs           float64 // CPU share, e.g. 1.5
	NoFile         int     // open files per process
	TmpBytes       int64   // size of the /tmp tmpfs
	WorkspaceBytes int64   // size of the /workspace tmpfs
}

// Mount makes a host directory visible inside the sandbox.
type Mount struct {
	Source   string // absolute host path
	Target   string // absolute sandbox path
	Writable bool   // read-only unless set
	// Sockets: code inside connects to Unix sockets under Target (the
	// egress proxy's). gVisor refuses that unless told, and then needs its
	// own loopback for the relay that listens there.
	Sockets bool
}

// Exit describes how a sandbox ended.
type Exit struct {
	Code      int    // exit status of the command (128+n when killed by signal n)
	Signal    string // signal that ended the command, if any
	OOMKilled bool   // the memory limit was hit
	Killed    bool   // ended by Kill
	// Detached: the sandbox lives on, but another codemode process
	// reattached to it (see Reattacher), so this one's connection ended.
	Detached bool
}

func (e Exit) String() string {
	switch {
	case e.Detached:
		return "taken over by another codemode process"
	case e.Killed:
		return "killed"
	case e.OOMKilled:
		return "killed at the memory limit"
	case e.Signal != "":
		return fmt.Sprintf("terminated by %s", e.Signal)
	default:
		return fmt.Sprintf("exited with code %d", e.Code)
	}
}

// A Direct session has two more pipes for the requests of a thread that
// waits for their answer (a tool call from code): its command writes them
// at DirectRequestFD and reads the answers at DirectReplyFD. Beside the
// channel on stdio, such a request is answered by the host's goroutine
// that reads it, and the answer wakes the thread that waits for it: no
// goroutine started per request, no hand-off through the runtime's
// channel thread. Optional; nil pipes when the session has none.
type Direct interface {
	DirectPipes() (requests io.Reader, replies io.WriteCloser)
}

// The command's descriptors of a Direct session's pipes.
const (
	DirectReplyFD   = 3
	DirectRequestFD = 4
)

// A Reattacher is a Backend whose sandboxes outlive the codemode process
// that started them (Kubernetes Pods), so that any replica can serve a
// session. Optional.
type Reattacher interface {
	// Reattach connects to the running sandbox started with a Spec whose
	// Labels include all of labels, and returns ErrNotFound when there is
	// none. Its command was started by another Start and keeps its state;
	// the returned Session's Stdout first repeats the first wire message
	// frame the command ever wrote (the runtime's ready message), then
	// carries what it writes from now on. A process already connected to
	// that sandbox is disconnected: its Session's Wait returns an Exit with
	// Detached set, and its Kill only drops its connection.
	Reattach(ctx context.Context, labels map[string]string) (Session, error)
}

// A Lasting session belongs to a Reattacher backend: its sandbox can be
// relabelled after start (a spare handed to a session, so Reattach finds
// it by its session's labels) and left running when this process lets go
// of it (shutdown), for another process to reattach.
type Lasting interface {
	Relabel(ctx context.Context, labels map[string]string) error
	// Detach drops this process's connection and leaves the sandbox
	// running; afterwards Wait returns an Exit with Detached set.
	Detach(ctx context.Context) error
}

// LabelLasting in a Spec's Labels ("true") marks a sandbox whose session
// outlives the process that started it (a named session or a handle): a
// Reattacher backend keeps it when that process is gone.
const LabelLasting = "codemode.dev/durable"

// ErrNotFound reports that no sandbox matches.
var ErrNotFound = errors.New("sandbox: no such sandbox")

// Capabilities reports what a backend enforces on this host.
type Capabilities struct {
	Backend     string       // Backend.Name()
	Engine      string       // e.g. "linux namespaces (cgroup v1)", "podman 4.3.1 (runc)"
	Protections []Protection // in a stable order
	Notes       []string     // facts an operator should know (fallbacks, quirks)
}

// Protection is one isolation property and how it is enforced.
type Protection struct {
	Name     string `json:"name"` // stable id, see the Protection* constants
	Enforced bool   `json:"enforced"`
	How      string `json:"how"` // e.g. "cgroup v1 memory.limit_in_bytes", "RLIMIT_AS", "not available: ..."
}

// Protection names shared by all backends.
const (
	ProtUser        = "unprivileged-user" // runs as uid/gid 65534, no host root
	ProtNoCaps      = "no-capabilities"
	ProtNoNewPrivs  = "no-new-privileges"
	ProtSeccomp     = "seccomp"
	ProtLandlock    = "landlock"
	ProtReadOnlyFS  = "read-only-root"
	ProtNoNetwork   = "no-network"
	ProtPIDIsolated = "pid-namespace"
	ProtMemoryLimit = "memory-limit"
	ProtPIDsLimit   = "pids-limit"
	ProtCPULimit    = "cpu-limit"
	ProtHostHidden  = "host-files-hidden"
)

// Protection returns the named protection, if reported.
func (c Capabilities) Protection(name string) (Protection, bool) {
	for _, p := range c.Protections {
		if p.Name == name {
			return p, true
		}
	}
	return Protection{}, false
}

// Missing returns the names in want that c does not enforce.
func (c Capabilities) Missing(want []string) []string {
	var out []string
	for _, name := range want {
		if p, ok := c.Protection(name); !ok || !p.Enforced {
			out = append(out, name)
		}
	}
	return out
}

// Summary is a one-line description for logs.
func (c Capabilities) Summary() string {
	var on, off []string
	for _, p := range c.Protections {
		if p.Enforced {
			on = append(on, p.Name)
		} else {
			off = append(off, p.Name)
		}
	}
	s := c.Engine + "; enforced: " + strings.Join(on, ",")
	if len(off) > 0 {
		s += "; NOT enforced: " + strings.Join(off, ",")
	}
	return s
}

// A Diagnoser explains, check by check, what a backend needs from this host
// and how to fix what is missing (for `codemode doctor`). Optional.
type Diagnoser interface {
	Diagnose(ctx context.Context) []Check
}

// Check is one diagnostic: what was checked, whether it is fine, what was
// found, and the exact fix when it is not.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Errors callers branch on.
var (
	// ErrUnsupported means the backend cannot run on this host.
	ErrUnsupported = errors.New("sandbox backend not supported on this host")
)

// MemoryReader is implemented by sessions that can say how much memory they
// use now (the console shows it); it is optional.
type MemoryReader interface {
	MemoryBytes() (int64, error)
}
