//go:build !linux

package downstream

import "syscall"

// childProcAttr starts a server in a process group of its own. There is no
// parent-death signal outside Linux: only codemode's shutdown stops it.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
