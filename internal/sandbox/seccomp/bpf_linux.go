package seccomp

import (
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// table is the syscall numbering of the architecture codemode is built for
// (one file per architecture, from golang.org/x/sys/unix).
type table struct {
	audit uint32 // AUDIT_ARCH_* that seccomp_data.arch holds for the native ABI
	// abiBit, when set in a syscall number, marks another ABI that shares
	// the native audit arch (x32 on x86_64); 0 when there is none.
	abiBit  uint32
	numbers map[string]uint32 // every syscall the policy names that exists here
}

// Program returns the policy as a classic BPF program for this
// architecture. It pins the architecture (a foreign arch or the x32 ABI
// would give syscall numbers other meanings) and kills the process on a
// mismatch.
func Program() ([]unix.SockFilter, error) {
	a, err := archFor(runtime.GOARCH)
	if err != nil {
		return nil, err
	}
	t, err := native()
	if err != nil {
		return nil, err
	}
	return program(a, t)
}

func program(a arch, t table) ([]unix.SockFilter, error) {
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	nr := func(name string) (uint32, error) {
		n, ok := t.numbers[name]
		if !ok {
			return 0, fmt.Errorf("seccomp: no syscall number for %s on %s", name, runtime.GOARCH)
		}
		return n, nil
	}
	clone, err := nr("clone")
	if err != nil {
		return nil, err
	}
	clone3, err := nr("clone3")
	if err != nil {
		return nil, err
	}
	deny := uint32(unix.SECCOMP_RET_ERRNO | eperm)
	noSys := uint32(unix.SECCOMP_RET_ERRNO | enosys)
	p := []unix.SockFilter{
		ld(seccompDataArchOff), jeq(t.audit, 1, 0), ret(unix.SECCOMP_RET_KILL_PROCESS),
		ld(seccompDataNrOff),
	}
	if t.abiBit != 0 {
		p = append(p, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: t.abiBit, Jt: 0, Jf: 1},
			ret(unix.SECCOMP_RET_KILL_PROCESS))
	}
	p = append(p,
		jeq(clone3, 0, 1), ret(noSys),
		jeq(clone, 0, 3), ld(seccompDataArg0LowOff),
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: NamespaceCloneFlags, Jt: 0, Jf: 1}, ret(deny),
		ld(seccompDataNrOff),
	)
	for _, name := range Denied {
		if slices.Contains(a.absent, name) {
			continue
		}
		n, err := nr(name)
		if err != nil {
			return nil, err
		}
		p = append(p, jeq(n, 0, 1), ret(deny))
	}
	return append(p, ret(unix.SECCOMP_RET_ALLOW)), nil
}

// Offsets in struct seccomp_data; arg0's low half comes first on the
// little-endian architectures the policy covers.
const (
	seccompDataNrOff      = 0
	seccompDataArchOff    = 4
	seccompDataArg0LowOff = 16
)

// Install loads the filter on every thread of the calling process (TSYNC),
// so the caller and everything it starts are covered.
func Install() error {
	p, err := Program()
	if err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC|unix.SECCOMP_FILTER_FLAG_SPEC_ALLOW, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return fmt.Errorf("seccomp(SET_MODE_FILTER): %w", errno)
	}
	return nil
}
