// Package seccomp is codemode's syscall policy, shared by every backend: the
// native backend loads it as a classic BPF filter, the container backends
// pass it to podman or docker as an OCI seccomp profile. It is a deny-list:
// Python, numpy and subprocesses need a broad set of ordinary syscalls,
// while the kernel surfaces an escape would use are few and well known. The
// engines' own default profiles are not used: podman's allows unshare,
// setns, mount, keyctl and ptrace.
package seccomp

// Syscall is a denied system call (x86_64 number).
type Syscall struct {
	Name string
	Nr   uint32
}

// Denied are refused with EPERM. clone is handled separately (only its
// namespace flags are refused) and clone3 gets ENOSYS so that glibc falls
// back to clone, whose flags a classic BPF filter can inspect (clone3
// passes them in memory).
var Denied = []Syscall{
	// mounts and namespaces
	{"mount", 165}, {"umount2", 166}, {"pivot_root", 155}, {"chroot", 161}, {"unshare", 272}, {"setns", 308},
	{"fsopen", 430}, {"fsconfig", 431}, {"fsmount", 432}, {"fspick", 433}, {"move_mount", 429}, {"open_tree", 428},
	{"mount_setattr", 442},
	// other processes' memory and descriptors
	{"ptrace", 101}, {"process_vm_readv", 310}, {"process_vm_writev", 311}, {"kcmp", 312}, {"pidfd_getfd", 438},
	// kernel attack surface
	{"bpf", 321}, {"perf_event_open", 298}, {"userfaultfd", 323}, {"keyctl", 250}, {"add_key", 248},
	{"request_key", 249}, {"io_uring_setup", 425}, {"io_uring_enter", 426}, {"io_uring_register", 427},
	// modules, kexec, the machine itself
	{"init_module", 175}, {"finit_module", 313}, {"delete_module", 176}, {"create_module", 174},
	{"get_kernel_syms", 177}, {"query_module", 178}, {"kexec_load", 246}, {"kexec_file_load", 320},
	{"reboot", 169}, {"swapon", 167}, {"swapoff", 168}, {"syslog", 103}, {"acct", 163}, {"quotactl", 179},
	{"settimeofday", 164}, {"clock_settime", 227}, {"clock_adjtime", 305}, {"adjtimex", 159},
	{"sethostname", 170}, {"setdomainname", 171}, {"vhangup", 153}, {"iopl", 172}, {"ioperm", 173},
	{"modify_ldt", 154}, {"nfsservctl", 180}, {"fanotify_init", 300}, {"lookup_dcookie", 212},
	// file handles bypass path checks; personality can re-enable legacy quirks
	{"open_by_handle_at", 304}, {"name_to_handle_at", 303}, {"personality", 135},
	// obsolete interfaces nobody needs
	{"uselib", 134}, {"ustat", 136}, {"sysfs", 139}, {"_sysctl", 156},
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
	nrClone  = 56
	nrClone3 = 435
	eperm    = 1
	enosys   = 38
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
