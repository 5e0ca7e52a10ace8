// Package seccomp is codemode's syscall policy, shared by every backend: the
// native backend loads it as a classic BPF filter, the container backends
// pass it to podman or docker as an OCI seccomp profile. It is a deny-list:
// Python, numpy and subprocesses need a broad set of ordinary syscalls,
// while the kernel surfaces an escape would use are few and well known. The
// engines' own default profiles are not used: podman's allows unshare,
// setns, mount, keyctl and ptrace.
//
// The policy names syscalls; their numbers differ per architecture and come
// from golang.org/x/sys/unix for the architecture the filter is built for
// (x86_64 and arm64).
package seccomp

import "fmt"

// Denied are refused with EPERM. clone is handled separately (only its
// namespace flags are refused) and clone3 gets ENOSYS so that glibc falls
// back to clone, whose flags a classic BPF filter can inspect (clone3
// passes them in memory).
var Denied = []string{
	// mounts and namespaces
	"mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
	"mount_setattr",
	// other processes' memory and descriptors
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	// kernel attack surface
	"bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key",
	"request_key", "io_uring_setup", "io_uring_enter", "io_uring_register",
	// modules, kexec, the machine itself
	"init_module", "finit_module", "delete_module", "create_module",
	"get_kernel_syms", "query_module", "kexec_load", "kexec_file_load",
	"reboot", "swapon", "swapoff", "syslog", "acct", "quotactl",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"sethostname", "setdomainname", "vhangup", "iopl", "ioperm",
	"modify_ldt", "nfsservctl", "fanotify_init", "lookup_dcookie",
	// file handles bypass path checks; personality can re-enable legacy quirks
	"open_by_handle_at", "name_to_handle_at", "personality",
	// obsolete interfaces nobody needs
	"uselib", "ustat", "sysfs", "_sysctl",
}

// arch is what the policy knows about an architecture besides syscall
// numbers.
type arch struct {
	oci string // the architecture's name in OCI seccomp profiles
	// absent are Denied syscalls the architecture never had (arm64 uses the
	// generic syscall table, without x86's legacy entries): nothing to refuse.
	absent []string
}

// archFor returns the policy's view of a GOARCH. Only the native ABI of
// each is covered: a compat ABI (i386 and x32 on x86_64, AArch32 on arm64)
// would give syscall numbers other meanings, so it is refused outright.
func archFor(goarch string) (arch, error) {
	switch goarch {
	case "amd64":
		return arch{oci: "SCMP_ARCH_X86_64"}, nil
	case "arm64":
		return arch{oci: "SCMP_ARCH_AARCH64", absent: []string{
			"create_module", "get_kernel_syms", "query_module", "iopl", "ioperm",
			"modify_ldt", "uselib", "ustat", "sysfs", "_sysctl",
		}}, nil
	}
	return arch{}, fmt.Errorf("seccomp: architecture %s not supported (amd64 and arm64 are)", goarch)
}

// Clone flags that create namespaces. CLONE_NEWTIME (0x80) is left out on
// purpose: in clone(2) that bit is part of the exit signal.
const (
	cloneNewNS     = 0x00020000
	cloneNewCgroup = 0x02000000
	cloneNewUTS    = 0x04000000
	cloneNewIPC    = 0x08000000
	cloneNewUser   = 0x10000000
	cloneNewPID    = 0x20000000
	cloneNewNet    = 0x40000000
)

var namespaceFlags = []uint64{cloneNewNS, cloneNewCgroup, cloneNewUTS, cloneNewIPC, cloneNewUser, cloneNewPID, cloneNewNet}

// NamespaceCloneFlags is the union of namespaceFlags.
const NamespaceCloneFlags = cloneNewNS | cloneNewCgroup | cloneNewUTS | cloneNewIPC | cloneNewUser | cloneNewPID | cloneNewNet

const (
	eperm  = 1
	enosys = 38
)

// Summary describes the policy for capability reports.
func Summary() string {
	return "deny-list of " + itoa(len(Denied)) + " syscalls (mount, namespaces, ptrace, bpf, keyctl, io_uring, perf, modules, kexec, ...), namespace flags refused on clone, clone3 answered ENOSYS"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
