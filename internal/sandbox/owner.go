package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// OwnerID names a process by pid and start time ("4242-918273"), so that a
// reused pid is never mistaken for a live owner. Container labels and
// codemode's private directories carry it.
func OwnerID(pid int) string {
	return strconv.Itoa(pid) + "-" + processStart(pid)
}

// OwnerAlive reports whether the process an OwnerID names still runs.
func OwnerAlive(id string) bool {
	pidStr, start, ok := strings.Cut(id, "-")
	pid, err := strconv.Atoi(pidStr)
	return ok && err == nil && pid > 0 && start != "0" && processStart(pid) == start
}

// processStart is a process's start time in clock ticks since boot ("0"
// when it does not exist).
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
