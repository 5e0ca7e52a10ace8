package seccomp

import "golang.org/x/sys/unix"

// native is the arm64 syscall table. AArch32 tasks report another audit
// arch, so no bit in the number needs checking.
func native() (table, error) {
	return table{
		audit: unix.AUDIT_ARCH_AARCH64,
		numbers: map[string]uint32{
			"clone": unix.SYS_CLONE, "clone3": unix.SYS_CLONE3, "mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2,
			"pivot_root": unix.SYS_PIVOT_ROOT, "chroot": unix.SYS_CHROOT, "unshare": unix.SYS_UNSHARE,
			"setns": unix.SYS_SETNS, "fsopen": unix.SYS_FSOPEN, "fsconfig": unix.SYS_FSCONFIG,
			"fsmount": unix.SYS_FSMOUNT, "fspick": unix.SYS_FSPICK, "move_mount": unix.SYS_MOVE_MOUNT,
			"open_tree": unix.SYS_OPEN_TREE, "mount_setattr": unix.SYS_MOUNT_SETATTR, "ptrace": unix.SYS_PTRACE,
			"process_vm_readv": unix.SYS_PROCESS_VM_READV, "process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
			"kcmp": unix.SYS_KCMP, "pidfd_getfd": unix.SYS_PIDFD_GETFD, "bpf": unix.SYS_BPF,
			"perf_event_open": unix.SYS_PERF_EVENT_OPEN, "userfaultfd": unix.SYS_USERFAULTFD,
			"keyctl": unix.SYS_KEYCTL, "add_key": unix.SYS_ADD_KEY, "request_key": unix.SYS_REQUEST_KEY,
			"io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER,
			"io_uring_register": unix.SYS_IO_URING_REGISTER, "init_module": unix.SYS_INIT_MODULE,
			"finit_module": unix.SYS_FINIT_MODULE, "delete_module": unix.SYS_DELETE_MODULE,
			"kexec_load": unix.SYS_KEXEC_LOAD, "kexec_file_load": unix.SYS_KEXEC_FILE_LOAD, "reboot": unix.SYS_REBOOT,
			"swapon": unix.SYS_SWAPON, "swapoff": unix.SYS_SWAPOFF, "syslog": unix.SYS_SYSLOG, "acct": unix.SYS_ACCT,
			"quotactl": unix.SYS_QUOTACTL, "settimeofday": unix.SYS_SETTIMEOFDAY,
			"clock_settime": unix.SYS_CLOCK_SETTIME, "clock_adjtime": unix.SYS_CLOCK_ADJTIME,
			"adjtimex": unix.SYS_ADJTIMEX, "sethostname": unix.SYS_SETHOSTNAME,
			"setdomainname": unix.SYS_SETDOMAINNAME, "vhangup": unix.SYS_VHANGUP, "nfsservctl": unix.SYS_NFSSERVCTL,
			"fanotify_init": unix.SYS_FANOTIFY_INIT, "lookup_dcookie": unix.SYS_LOOKUP_DCOOKIE,
			"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT, "name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT,
			"personality": unix.SYS_PERSONALITY,
		},
	}, nil
}
