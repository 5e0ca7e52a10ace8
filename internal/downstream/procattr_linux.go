package downstream

import "syscall"

// childProcAttr starts a server in a process group of its own; the kernel
// also kills it if codemode dies without stopping it.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
