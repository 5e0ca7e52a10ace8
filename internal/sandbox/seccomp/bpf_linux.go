package seccomp

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	auditArchX86_64 = 0xc000003e
	x32SyscallBit   = 0x40000000

	seccompRetKillProcess = 0x80000000
	seccompRetErrno       = 0x00050000
	seccompRetAllow       = 0x7fff0000

	seccompSetModeFilter  = 1
	seccompFlagTsync      = 1
	seccompFlagSpecAllow  = 4
	seccompDataNrOff      = 0
	seccompDataArchOff    = 4
	seccompDataArg0LowOff = 16
)

// Program returns the policy as a classic BPF program. It pins the
// architecture (a foreign arch or the x32 ABI would give syscall numbers
// other meanings) and kills the process on a mismatch.
func Program() []unix.SockFilter {
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	deny := uint32(seccompRetErrno | eperm)
	noSys := uint32(seccompRetErrno | enosys)
	p := []unix.SockFilter{
		ld(seccompDataArchOff), jeq(auditArchX86_64, 1, 0), ret(seccompRetKillProcess),
		ld(seccompDataNrOff),
		{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: x32SyscallBit, Jt: 0, Jf: 1}, ret(seccompRetKillProcess),
		jeq(nrClone3, 0, 1), ret(noSys),
		jeq(nrClone, 0, 3), ld(seccompDataArg0LowOff),
		{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: NamespaceCloneFlags, Jt: 0, Jf: 1}, ret(deny),
		ld(seccompDataNrOff),
	}
	for _, s := range Denied {
		p = append(p, jeq(s.Nr, 0, 1), ret(deny))
	}
	return append(p, ret(seccompRetAllow))
}

// Install loads the filter on every thread of the calling process (TSYNC),
// so the caller and everything it starts are covered.
func Install() error {
	if runtime.GOARCH != "amd64" {
		return fmt.Errorf("seccomp filter: architecture %s not supported", runtime.GOARCH)
	}
	p := Program()
	prog := unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, seccompSetModeFilter, seccompFlagTsync|seccompFlagSpecAllow,
		uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return fmt.Errorf("seccomp(SET_MODE_FILTER): %w", errno)
	}
	return nil
}
