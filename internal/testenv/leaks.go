package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/sandbox"
)

// Resources is a count of what a test could leave behind on the host:
// this process's children, descriptors, cgroups and containers, mounts and
// temp dirs. Only what this process owns is counted (other test packages
// run next to it), except mounts, which sandboxes never leave on the host.
type Resources struct {
	Children   []string
	FDs        int
	Cgroups    []string
	Mounts     []string
	TempDirs   []string
	Containers map[string][]string // engine command -> container ids
}

// HostResources counts the host's resources now; engines are container
// engine command lines (e.g. Podman(t)) whose containers are counted.
func HostResources(t testing.TB, engines ...[]string) Resources {
	t.Helper()
	r := Resources{Containers: map[string][]string{}}
	self := os.Getpid()
	r.Children = Children()
	fds, _ := os.ReadDir("/proc/self/fd")
	r.FDs = len(fds)
	// The native backend names its cgroups codemode.<pid>.<session>.
	mine := "codemode." + strconv.Itoa(self) + ".*"
	for _, pattern := range []string{"/sys/fs/cgroup/*/" + mine, "/sys/fs/cgroup/" + mine, "/sys/fs/cgroup/*/*/" + mine} {
		m, _ := filepath.Glob(pattern)
		r.Cgroups = append(r.Cgroups, m...)
	}
	r.Mounts = Mounts()
	tmp, _ := filepath.Glob(filepath.Join(os.TempDir(), "codemode*"))
	// The container engine's working directory is kept on purpose
	// (container.engineDir): a container may outlive its codemode.
	engineDir := filepath.Join(os.TempDir(), "codemode-engine-"+strconv.Itoa(os.Getuid()))
	r.TempDirs = slices.DeleteFunc(tmp, func(d string) bool { return d == engineDir })
	for _, argv := range engines {
		out, err := exec.Command(argv[0], append(argv[1:], "ps", "-a", "-q", "--no-trunc", "--filter", "label=codemode.owner="+sandbox.OwnerID(self))...).Output()
		if err != nil {
			t.Fatalf("listing containers with %s: %v", strings.Join(argv, " "), err)
		}
		r.Containers[strings.Join(argv, " ")] = strings.Fields(string(out))
	}
	return r
}

// Children lists this process's live child processes as "pid (comm)".
func Children() []string {
	var out []string
	self := strconv.Itoa(os.Getpid())
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		// pid (comm) state ppid ...
		if f := strings.Fields(s[i+2:]); len(f) > 1 && f[1] == self && f[0] != "Z" {
			out = append(out, s[:i+1])
		}
	}
	return out
}

// Mounts are the host's mount points, except those container engines,
// runsc and the test cluster create and keep on their own.
func Mounts() []string {
	data, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := f[4]
		// The test cluster's kubelet and containerd mount Pods' volumes,
		// root filesystems and network namespaces under its state
		// directory (scripts/kube-up.sh), on their own schedule.
		if strings.Contains(mp, "/containers/") || strings.Contains(mp, "/docker") || strings.HasPrefix(mp, "/run/netns") ||
			strings.HasPrefix(mp, "/run/runsc/") || strings.Contains(mp, "/overlay") || strings.Contains(mp, "/.cache/kube/run/") {
			continue
		}
		out = append(out, mp)
	}
	slices.Sort(out)
	return out
}

// CheckNoLeaks fails the test if the host holds more than it did at
// before, waiting a little for asynchronous cleanup to finish.
func CheckNoLeaks(t testing.TB, before Resources, engines ...[]string) {
	t.Helper()
	var problems []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		after := HostResources(t, engines...)
		problems = before.compare(after)
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	for _, p := range problems {
		t.Error("leak: " + p)
	}
}

func (b Resources) compare(a Resources) []string {
	var out []string
	out = append(out, added("child process", b.Children, a.Children)...)
	if a.FDs > b.FDs {
		out = append(out, fmt.Sprintf("%d open descriptors, %d before", a.FDs, b.FDs))
	}
	out = append(out, added("cgroup", b.Cgroups, a.Cgroups)...)
	out = append(out, added("mount", b.Mounts, a.Mounts)...)
	out = append(out, added("temp dir", b.TempDirs, a.TempDirs)...)
	for engine, ids := range a.Containers {
		out = append(out, added("container of "+engine, b.Containers[engine], ids)...)
	}
	return out
}

func added(what string, before, after []string) []string {
	var out []string
	for _, x := range after {
		if !slices.Contains(before, x) {
			out = append(out, what+" "+x)
		}
	}
	return out
}
