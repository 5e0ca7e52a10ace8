package linuxns

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupPrefix starts the name of every cgroup codemode creates:
// codemode.<owner pid>.<session id>. The owner pid lets a later codemode
// process find and remove groups left by one that died.
const cgroupPrefix = "codemode."

// cgroupHost describes the cgroup hierarchies codemode can create groups in.
type cgroupHost struct {
	version int               // 1 or 2; 0 when no usable hierarchy was found
	v1      map[string]string // controller -> parent directory for our groups
	v2      string            // parent directory for our groups
	reason  string            // why limits fall back to rlimits, when version == 0
}

// cgroupLimits are the values written into a session's groups.
type cgroupLimits struct {
	memory int64
	pids   int
	cpus   float64
}

// detectCgroups finds where this process may create child groups with the
// memory and pids controllers. It prefers cgroup v2 when the v2 hierarchy
// carries those controllers, else v1 (hybrid hosts).
func detectCgroups(procSelf string) cgroupHost {
	mounts, err := parseCgroupMounts(filepath.Join(procSelf, "mountinfo"))
	if err != nil {
		return cgroupHost{reason: err.Error()}
	}
	own, err := parseOwnCgroups(filepath.Join(procSelf, "cgroup"))
	if err != nil {
		return cgroupHost{reason: err.Error()}
	}
	if root := mounts.v2; root != "" {
		parent := filepath.Join(root, own[""])
		if ctrls, err := os.ReadFile(filepath.Join(root, "cgroup.controllers")); err == nil &&
			hasFields(string(ctrls), "memory", "pids") && writableDir(parent) {
			return cgroupHost{version: 2, v2: parent}
		}
	}
	v1 := map[string]string{}
	for _, ctrl := range []string{"memory", "pids", "cpu"} {
		root, ok := mounts.v1[ctrl]
		if !ok {
			continue
		}
		parent := filepath.Join(root, own[ctrl])
		if writableDir(parent) {
			v1[ctrl] = parent
		}
	}
	if v1["memory"] != "" && v1["pids"] != "" {
		return cgroupHost{version: 1, v1: v1}
	}
	if os.Geteuid() != 0 {
		return cgroupHost{reason: "no writable cgroup with the memory and pids controllers (not root and no delegated cgroup v2 subtree)"}
	}
	return cgroupHost{reason: "no writable cgroup with the memory and pids controllers"}
}

func hasFields(s string, want ...string) bool {
	have := strings.Fields(s)
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func writableDir(dir string) bool {
	return syscall.Access(dir, 2 /* W_OK */) == nil
}

type cgroupMounts struct {
	v1 map[string]string // controller -> mount point
	v2 string
}

func parseCgroupMounts(mountinfo string) (m cgroupMounts, err error) {
	m.v1 = map[string]string{}
	data, err := os.ReadFile(mountinfo)
	if err != nil {
		return m, fmt.Errorf("reading %s: %w", mountinfo, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || len(fields) < sep+3 {
			continue
		}
		mountPoint, fstype, superOpts := fields[4], fields[sep+1], fields[len(fields)-1]
		switch fstype {
		case "cgroup2":
			if m.v2 == "" {
				m.v2 = mountPoint
			}
		case "cgroup":
			for _, opt := range strings.Split(superOpts, ",") {
				if _, dup := m.v1[opt]; !dup {
					m.v1[opt] = mountPoint
				}
			}
		}
	}
	return m, sc.Err()
}

// parseOwnCgroups maps controller ("" for v2) to this process's group path.
func parseOwnCgroups(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	own := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			own[""] = parts[2]
			continue
		}
		for _, ctrl := range strings.Split(parts[1], ",") {
			own[ctrl] = parts[2]
		}
	}
	return own, nil
}

// sessionCgroup is the set of groups of one session.
type sessionCgroup struct {
	version int
	dirs    map[string]string // controller ("" for v2) -> directory
}

// memoryBytes is the memory the session's processes use now (the memory
// controller's usage, page cache included).
func (c *sessionCgroup) memoryBytes() (int64, error) {
	dir, file := c.dirs[""], "memory.current"
	if c.version == 1 {
		dir, file = c.dirs["memory"], "memory.usage_in_bytes"
	}
	if dir == "" {
		return 0, errors.New("no memory cgroup")
	}
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

func (h cgroupHost) create(name string, lim cgroupLimits) (_ *sessionCgroup, err error) {
	cg := &sessionCgroup{version: h.version, dirs: map[string]string{}}
	defer func() {
		if err != nil {
			cg.destroy()
		}
	}()
	mkdir := func(ctrl, parent string) (string, error) {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return "", fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		cg.dirs[ctrl] = dir
		return dir, nil
	}
	switch h.version {
	case 2:
		if err := enableV2Controllers(h.v2); err != nil {
			return nil, err
		}
		dir, err := mkdir("", h.v2)
		if err != nil {
			return nil, err
		}
		if lim.memory > 0 {
			if err := writeCgroupFile(dir, "memory.max", strconv.FormatInt(lim.memory, 10)); err != nil {
				return nil, err
			}
			_ = writeCgroupFile(dir, "memory.swap.max", "0") // absent without swap accounting
		}
		if lim.pids > 0 {
			if err := writeCgroupFile(dir, "pids.max", strconv.Itoa(lim.pids)); err != nil {
				return nil, err
			}
		}
		if lim.cpus > 0 {
			quota := int64(lim.cpus * 100000)
			_ = writeCgroupFile(dir, "cpu.max", fmt.Sprintf("%d 100000", quota)) // cpu controller may be absent
		}
	case 1:
		for _, ctrl := range []string{"memory", "pids", "cpu"} {
			parent, ok := h.v1[ctrl]
			if !ok {
				continue
			}
			dir, err := mkdir(ctrl, parent)
			if err != nil {
				return nil, err
			}
			switch ctrl {
			case "memory":
				if lim.memory > 0 {
					if err := writeCgroupFile(dir, "memory.limit_in_bytes", strconv.FormatInt(lim.memory, 10)); err != nil {
						return nil, err
					}
					// memsw exists only with swap accounting; where it does, swap counts too.
					if _, err := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); err == nil {
						if err := writeCgroupFile(dir, "memory.memsw.limit_in_bytes", strconv.FormatInt(lim.memory, 10)); err != nil {
							return nil, err
						}
					}
					_ = writeCgroupFile(dir, "memory.swappiness", "0")
				}
			case "pids":
				if lim.pids > 0 {
					if err := writeCgroupFile(dir, "pids.max", strconv.Itoa(lim.pids)); err != nil {
						return nil, err
					}
				}
			case "cpu":
				if lim.cpus > 0 {
					if err := writeCgroupFile(dir, "cpu.cfs_period_us", "100000"); err != nil {
						return nil, err
					}
					if err := writeCgroupFile(dir, "cpu.cfs_quota_us", strconv.FormatInt(int64(lim.cpus*100000), 10)); err != nil {
						return nil, err
					}
				}
			}
		}
	default:
		return nil, errors.New("no usable cgroup hierarchy")
	}
	return cg, nil
}

// enableV2Controllers makes memory, pids (and cpu when available) usable in
// children of parent. A group that holds processes cannot delegate
// controllers, so when parent holds codemode itself, codemode first moves
// into a leaf group of its own.
func enableV2Controllers(parent string) error {
	data, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("reading cgroup.subtree_control: %w", err)
	}
	if hasFields(string(data), "memory", "pids") {
		return nil
	}
	want := "+memory +pids"
	if ctrls, err := os.ReadFile(filepath.Join(parent, "cgroup.controllers")); err == nil && hasFields(string(ctrls), "cpu") {
		want += " +cpu"
	}
	err = writeCgroupFile(parent, "cgroup.subtree_control", want)
	if errors.Is(err, syscall.EBUSY) {
		leaf := filepath.Join(parent, cgroupPrefix+strconv.Itoa(os.Getpid())+".host")
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating leaf cgroup for codemode: %w", err)
		}
		if err := writeCgroupFile(leaf, "cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
			return fmt.Errorf("moving codemode to its leaf cgroup: %w", err)
		}
		err = writeCgroupFile(parent, "cgroup.subtree_control", want)
	}
	if err != nil {
		return fmt.Errorf("enabling cgroup controllers in %s: %w", parent, err)
	}
	return nil
}

func writeCgroupFile(dir, file, value string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, file), err)
	}
	return nil
}

// add moves pid into every group of the session.
func (cg *sessionCgroup) add(pid int) error {
	for _, dir := range cg.dirs {
		if err := writeCgroupFile(dir, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// oomKilled reports whether the memory limit killed a process.
func (cg *sessionCgroup) oomKilled() bool {
	file, dir := "memory.oom_control", cg.dirs["memory"]
	if cg.version == 2 {
		file, dir = "memory.events", cg.dirs[""]
	}
	if dir == "" {
		return false
	}
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "oom_kill" && f[1] != "0" {
			return true
		}
	}
	return false
}

// killAll sends SIGKILL to every process left in the session's groups.
func (cg *sessionCgroup) killAll() {
	if cg.version == 2 {
		if writeCgroupFile(cg.dirs[""], "cgroup.kill", "1") == nil {
			return
		}
	}
	for _, dir := range cg.dirs {
		killProcsIn(dir)
	}
}

func killProcsIn(dir string) {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// destroy kills what is left and removes the groups. Removal is retried for
// a few seconds: a group stays busy until the kernel has finished tearing
// down its last task, which takes long for a large address space on a
// loaded machine.
func (cg *sessionCgroup) destroy() error {
	var errs []error
	for _, dir := range cg.dirs {
		var err error
		deadline := time.Now().Add(5 * time.Second)
		for i := 1; ; i++ {
			if err = os.Remove(dir); err == nil || errors.Is(err, fs.ErrNotExist) {
				err = nil
				break
			}
			if time.Now().After(deadline) {
				break
			}
			killProcsIn(dir)
			time.Sleep(time.Duration(min(i, 50)) * time.Millisecond)
		}
		if err != nil {
			procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			errs = append(errs, fmt.Errorf("removing cgroup %s (processes left: %q): %w", dir, strings.Fields(string(procs)), err))
		}
	}
	return errors.Join(errs...)
}

// sweepStaleCgroups removes groups left by codemode processes that no longer
// run. It returns the directories it removed.
func (h cgroupHost) sweepStale() []string {
	var parents []string
	switch h.version {
	case 2:
		parents = []string{h.v2}
	case 1:
		for _, p := range h.v1 {
			parents = append(parents, p)
		}
	}
	var removed []string
	for _, parent := range parents {
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			owner, ok := cgroupOwner(e.Name())
			if !e.IsDir() || !ok || processAlive(owner) {
				continue
			}
			cg := &sessionCgroup{version: h.version, dirs: map[string]string{"x": filepath.Join(parent, e.Name())}}
			cg.killAll()
			if cg.destroy() == nil {
				removed = append(removed, filepath.Join(parent, e.Name()))
			}
		}
	}
	return removed
}

func cgroupOwner(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, cgroupPrefix)
	if !ok {
		return 0, false
	}
	pidStr, _, _ := strings.Cut(rest, ".")
	pid, err := strconv.Atoi(pidStr)
	return pid, err == nil && pid > 0
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
