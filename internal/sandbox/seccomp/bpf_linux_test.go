package seccomp

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The table has a number for exactly the policy's syscalls that exist on
// this architecture, and the BPF program knows the right audit arch.
func TestNativeTable(t *testing.T) {
	a, err := archFor(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := native()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"clone", "clone3"}
	for _, name := range Denied {
		if !slices.Contains(a.absent, name) {
			want = append(want, name)
		}
	}
	got := make([]string, 0, len(tab.numbers))
	for name := range tab.numbers {
		got = append(got, name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("table names = %v\nwant %v", got, want)
	}
	audit := map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}
	if tab.audit != audit[runtime.GOARCH] {
		t.Errorf("audit arch = %#x, want %#x", tab.audit, audit[runtime.GOARCH])
	}
	if NamespaceCloneFlags != unix.CLONE_NEWUSER|unix.CLONE_NEWNS|unix.CLONE_NEWPID|unix.CLONE_NEWNET|unix.CLONE_NEWIPC|unix.CLONE_NEWUTS|unix.CLONE_NEWCGROUP {
		t.Error("namespace flags wrong")
	}
}

// seccompData is struct seccomp_data as the filter reads it. bpf.VM loads
// words big-endian where the kernel loads them in host order, so each word
// is written big-endian here: the program sees the values the kernel would
// give it.
func seccompData(nr, arch uint32, arg0 uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[seccompDataNrOff:], nr)
	binary.BigEndian.PutUint32(b[seccompDataArchOff:], arch)
	binary.BigEndian.PutUint32(b[seccompDataArg0LowOff:], uint32(arg0))
	return b
}

// Runs the program for this architecture on the syscalls it must refuse,
// answer ENOSYS, kill for, and let through.
func TestProgram(t *testing.T) {
	p, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	insns := make([]bpf.Instruction, len(p))
	for i, in := range p {
		insns[i] = bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}.Disassemble()
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatal(err)
	}
	tab, _ := native()
	a, _ := archFor(runtime.GOARCH)
	const (
		allow = unix.SECCOMP_RET_ALLOW
		kill  = unix.SECCOMP_RET_KILL_PROCESS
		deny  = unix.SECCOMP_RET_ERRNO | eperm
		noSys = unix.SECCOMP_RET_ERRNO | enosys
	)
	// A compat ABI of this machine: its own audit arch, its own numbers.
	compat := map[string]uint32{"amd64": unix.AUDIT_ARCH_I386, "arm64": unix.AUDIT_ARCH_ARM}[runtime.GOARCH]
	type call struct {
		name string
		nr   uint32
		arch uint32
		arg0 uint64
		want uint32
	}
	calls := []call{
		{"getpid", unix.SYS_GETPID, tab.audit, 0, allow},
		{"openat", unix.SYS_OPENAT, tab.audit, 0, allow},
		{"clone for a thread", tab.numbers["clone"], tab.audit, unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND, allow},
		{"clone for fork", tab.numbers["clone"], tab.audit, uint64(unix.SIGCHLD), allow},
		{"clone3", tab.numbers["clone3"], tab.audit, 0, noSys},
		{"getpid of a compat ABI", unix.SYS_GETPID, compat, 0, kill},
	}
	if tab.abiBit != 0 {
		calls = append(calls, call{"getpid of x32", tab.abiBit | unix.SYS_GETPID, tab.audit, 0, kill})
	}
	for _, f := range namespaceFlags {
		calls = append(calls, call{fmt.Sprintf("clone with %#x", f), tab.numbers["clone"], tab.audit, f | uint64(unix.SIGCHLD), deny})
	}
	for _, name := range Denied {
		if !slices.Contains(a.absent, name) {
			calls = append(calls, call{name, tab.numbers[name], tab.audit, 0, deny})
		}
	}
	for _, c := range calls {
		got, err := vm.Run(seccompData(c.nr, c.arch, c.arg0))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if uint32(got) != c.want {
			t.Errorf("%s: filter returned %#x, want %#x", c.name, got, c.want)
		}
	}
}
