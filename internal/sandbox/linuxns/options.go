package linuxns

import (
	"log/slog"
	"os"
)

// Options configure the backend. The zero value is usable.
type Options struct {
	// Rootfs is a directory holding a root filesystem (e.g. an unpacked
	// Python image). Empty means the host's /usr, /bin, /sbin and /lib*
	// with a generated minimal /etc.
	Rootfs string
	// InitBinary is the codemode executable to re-execute as the init
	// (default /proc/self/exe). Tests point it at a built codemode binary.
	InitBinary string
	// UIDBase is the first host uid given to sandboxes when codemode runs as
	// root; each live session gets its own uid from here on. Unprivileged
	// codemode maps the sandbox user to its own uid.
	UIDBase int
	// DisableLandlock turns off the Landlock layer (for kernels where it
	// misbehaves); the capabilities report says so.
	DisableLandlock bool
	// Zygote starts sessions whose command is `python [flags] -c code` by
	// forking a template interpreter that already imported Preload, instead
	// of booting Python each time; each child enters a sandbox of its own
	// before running anything of the session. Needs codemode to run as
	// root; otherwise, and for other commands, sessions boot as usual.
	Zygote bool
	// Preload are the modules a zygote imports, so that its children share
	// their pages.
	Preload []string
	// ZygoteWarm is Python code a zygote runs once after the imports, before
	// it forks: codemode's own code (never a session's), e.g. importing
	// codemode's runtime.
	ZygoteWarm string
	// ZygoteMemoryBytes bounds a zygote's own memory (default
	// DefaultMemoryBytes).
	ZygoteMemoryBytes int64
	Logger            *slog.Logger
}

// InitArg0 is the argv[0] with which codemode re-executes itself as the
// sandbox init. cmd/codemode checks it before anything else runs.
const InitArg0 = "codemode-sandbox-init"

// IsInit reports whether this process was started as a sandbox init.
func IsInit() bool { return len(os.Args) > 0 && os.Args[0] == InitArg0 }
