package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// OwnerID names a process by pid and start time ("4242-918273"), so that a
// reused pid is never mistaken for a live owner. Container labels and
// codemode's private directories carry it. Without /proc (macOS) the start
// time reads as 0 ("4242-0") and only the owner's lock tells whether it
// runs.
func OwnerID(pid int) string {
	return strconv.Itoa(pid) + "-" + processStart(pid)
}

// An Owner is this process's claim to the containers and directories
// labelled with its OwnerID. It holds a lock on a file named after the ID
// in a per-user directory until Release; the kernel drops the lock when
// the process dies, however it dies, so other codemodes see a held lock as
// a live owner on every Unix.
type Owner struct {
	id   string
	dir  string
	file *os.File
}

// ClaimOwner claims this process's OwnerID for as long as the process runs
// (or until Release). A process may claim several times.
func ClaimOwner() (*Owner, error) {
	dir, err := ownerDir()
	if err != nil {
		return nil, err
	}
	return claimOwner(dir, OwnerID(os.Getpid()))
}

// OwnerAlive reports whether the process an OwnerID names still runs: it
// holds its owner lock, or (on Linux, where codemodes of other users and
// older versions hold none) /proc shows its pid with the recorded start
// time. A lock file its owner left behind is removed.
func OwnerAlive(id string) bool {
	dir, err := ownerDir()
	if err != nil {
		return processAlive(id)
	}
	return ownerAlive(dir, id)
}

// ownerDir holds the owners' lock files. It depends on the user only, not
// on a codemode's settings: every codemode of the user must check the
// same locks, since they share one container engine.
func ownerDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("owner lock: %w", err)
	}
	return filepath.Join(cache, "codemode", "owners"), nil
}

func claimOwner(dir, id string) (*Owner, error) {
	if !validOwnerID(id) {
		return nil, fmt.Errorf("owner lock: invalid owner id %q", id)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("owner lock: %w", err)
	}
	path := lockPath(dir, id)
	for {
		f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("owner lock: %w", err)
		}
		// Shared, so that claims of one process (each on its own
		// descriptor) coexist; a checker locks exclusively, for a moment.
		if err := flock(f, unix.LOCK_SH); err != nil {
			f.Close()
			return nil, fmt.Errorf("owner lock %s: %w", path, err)
		}
		// A checker may have removed the file as stale between the open and
		// the lock; a lock on a file nobody can find proves nothing.
		if samePath(f, path) {
			return &Owner{id: id, dir: dir, file: f}, nil
		}
		f.Close()
	}
}

// Release gives up the claim. The lock file goes once no other claim of
// this process holds it.
func (o *Owner) Release() error {
	err := o.file.Close()
	lockHeld(o.dir, o.id) // removes the file when no claim is left
	return err
}

func ownerAlive(dir, id string) bool {
	if !validOwnerID(id) {
		return false
	}
	return processAlive(id) || lockHeld(dir, id)
}

// lockHeld reports whether an owner holds id's lock. A lock file nobody
// holds was left by an owner that died: it is removed.
func lockHeld(dir, id string) bool {
	path := lockPath(dir, id)
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		// EWOULDBLOCK: an owner holds it. Any other failure is no proof
		// of death either, and taking an owner for dead removes its
		// containers.
		return true
	}
	// Only a checker holding the lock removes the file, and only the
	// owner's claim creates it, so path cannot change in between.
	if samePath(f, path) {
		os.Remove(path)
	}
	return false
}

func lockPath(dir, id string) string { return filepath.Join(dir, id+".lock") }

// validOwnerID accepts what OwnerID makes (digits and a dash): labels and
// directory names come from outside, and an ID becomes a file name.
func validOwnerID(id string) bool {
	return id != "" && strings.Trim(id, "0123456789-") == ""
}

func flock(f *os.File, how int) error {
	for {
		if err := unix.Flock(int(f.Fd()), how); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// samePath reports whether path still names the file f has open.
func samePath(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Stat(path)
	return err == nil && os.SameFile(fi, pi)
}

// processAlive reports whether /proc shows id's pid with id's start time.
func processAlive(id string) bool {
	pidStr, start, ok := strings.Cut(id, "-")
	pid, err := strconv.Atoi(pidStr)
	return ok && err == nil && pid > 0 && start != "0" && processStart(pid) == start
}

// processStart is a process's start time in clock ticks since boot ("0"
// when it does not exist or there is no /proc).
func processStart(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "0"
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return "0"
	}
	// pid (comm) state ppid ... starttime is the 22nd field.
	if fields := strings.Fields(s[i+2:]); len(fields) > 19 {
		return fields[19]
	}
	return "0"
}
