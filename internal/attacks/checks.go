package attacks

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/codemode/codemode/internal/executor"
)

// Host-side checks, named in an attack's "check" header:
//
//	listener     the host's TCP, UDP and abstract unix listeners saw nothing
//	secrets      no planted secret is in anything the call returned
//	sentinels    host files the attack aims at (core_pattern, modprobe,
//	             the codemode, python and OCI runtime binaries) are unchanged
//	timeout      the call ended as a timeout, within timeout + grace
//	             (plus a hard allowance for a loaded machine)
//	bounded      the call ended within timeout + grace, whatever its status
//	stopped      the attack's busy processes beat into a heartbeat file in
//	             the data directory (heartbeat() in corpus/_lib.py) while
//	             they run; once the call has returned it must not grow
//	procs        the host's process count stayed within the pids limit
//	procs-after  no process of the sandbox's pid namespace outlives the
//	             session (the attack prints it: "PIDNS pid:[N]")
//	memory       the host's available memory dropped by at most the
//	             sandbox's memory, tmpfs and workspace limits
//	rss          codemode's own memory stayed bounded
//	output       output came back capped to the output limit
//	log          codemode's log grew by a bounded amount
//	died-ok      the program may end with the host killing the sandbox
//	exit=N       the call reports the program's real exit status N
//	datadir      the shared data directory holds no link to, or change of,
//	             the host's own files, and no device or setuid file
//	statedir     nothing was written outside the state directory's own
//	             places (no path traversal)

// Allowances: generous enough for a noisy machine and parallel attacks,
// far below what an unbounded attack reaches.
const (
	// timeoutSlack is a hard bound on top of timeout + grace. The call's
	// time includes booting the sandbox and killing it, which take many
	// seconds on a loaded 2-core machine (a podman container can take
	// longer to boot than the attack's whole timeout), so a tight bound
	// fails for load alone. Whether the timeout stopped the code is proven
	// by evidence instead (the "stopped" check); this bound still catches a
	// call that never ends.
	timeoutSlack = 60 * time.Second
	// stoppedWatch is how long the heartbeat must stay still after the
	// call has returned: busy processes beat every 0.1 s, so one that
	// still runs shows within it even when starved of CPU.
	stoppedWatch   = 2 * time.Second
	procsSlack     = 64
	memorySlack    = 1 << 30 // other tests may run next to the suite
	rssBound       = 256 << 20
	logBound       = 1 << 20
	procsAfterWait = 15 * time.Second
)

// observation is what the host recorded around one call.
type observation struct {
	hitsBefore   int64
	logBefore    int64
	sentinels    map[string]string
	procsBase    int
	memBase      int64
	rssBase      int64
	dataBefore   map[string]fileState
	rootBefore   map[string]fileState
	stopSampling chan struct{}
	sampled      sync.WaitGroup
	maxProcs     int
	minMem       int64
	maxRSS       int64
}

func (r *runner) observe(a Attack) *observation {
	o := &observation{hitsBefore: r.fx.hits(), logBefore: r.logBytes.count(), stopSampling: make(chan struct{})}
	if a.Has("sentinels") {
		o.sentinels = sentinels(r.settings.OCIRuntime)
	}
	if a.Has("datadir") {
		o.dataBefore = tree(r.fx.dataDir)
	}
	if a.Has("statedir") {
		o.rootBefore = tree(r.fx.root)
		removeTraversalTargets()
	}
	if a.Has("procs") || a.Has("memory") || a.Has("rss") {
		o.procsBase, o.memBase, o.rssBase = len(pids()), memAvailable(), ownRSS()
		o.maxProcs, o.minMem, o.maxRSS = o.procsBase, o.memBase, o.rssBase
		o.sampled.Add(1)
		go o.sample()
	}
	return o
}

func (o *observation) sample() {
	defer o.sampled.Done()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		o.maxProcs = max(o.maxProcs, len(pids()))
		o.minMem = min(o.minMem, memAvailable())
		o.maxRSS = max(o.maxRSS, ownRSS())
		select {
		case <-o.stopSampling:
			return
		case <-t.C:
		}
	}
}

func (o *observation) stop() {
	close(o.stopSampling)
	o.sampled.Wait()
}

// pidNamespace is the "PIDNS pid:[N]" an attack printed about itself.
func pidNamespace(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if ns, ok := strings.CutPrefix(l, "PIDNS "); ok {
			return strings.TrimSpace(ns)
		}
	}
	return ""
}

// survivors waits up to d for every host process in pid namespace ns to
// end, and describes those that did not. Matching on the namespace (not on
// new pids) keeps other work on the host, such as tests running in
// parallel, out of the count. Inside gVisor the namespace is the sentry's
// own, so no host process matches.
func survivors(ns string, d time.Duration) []string {
	if ns == "" {
		return nil
	}
	deadline := time.Now().Add(d)
	for {
		var left []string
		for pid := range pids() {
			if link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err == nil && link == ns {
				comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
				left = append(left, fmt.Sprintf("%d (%s)", pid, strings.TrimSpace(string(comm))))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			sort.Strings(left)
			return left
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// check applies the attack's host-side checks.
func (r *runner) check(a Attack, res *executor.Result, dur time.Duration, o *observation, j *judge) {
	s := r.settings
	bound := a.Timeout + s.InterruptGrace + timeoutSlack
	for _, c := range a.Checks {
		name, val, _ := strings.Cut(c, "=")
		switch name {
		case "listener":
			if n := r.fx.hits() - o.hitsBefore; n > 0 {
				j.escaped("the host's listeners saw %d connections or datagrams", n)
			} else {
				j.blocked("the host's listeners saw nothing")
			}
		case "secrets":
			if found := r.fx.found(allText(res)); len(found) > 0 {
				j.escaped("the result carries %s", strings.Join(found, ", "))
			}
		case "sentinels":
			after := sentinels(s.OCIRuntime)
			for p, h := range o.sentinels {
				if after[p] != h {
					j.escaped("host file %s changed", p)
				}
			}
		case "timeout":
			switch {
			case res.Status != executor.StatusTimeout:
				j.escaped("the call ended as %s, not as a timeout", res.Status)
			case dur > bound:
				j.escaped("the timeout took %s to stop the code (bound %s)", dur.Round(time.Millisecond), bound)
			default:
				j.blocked("stopped by the timeout after %s", dur.Round(100*time.Millisecond))
			}
		case "bounded":
			if dur > bound {
				j.escaped("the call took %s (bound %s)", dur.Round(time.Millisecond), bound)
			}
		case "procs":
			limit := s.PIDs
			if grew := o.maxProcs - o.procsBase; limit > 0 && grew > limit+procsSlack {
				j.escaped("the host's process count grew by %d (pids limit %d)", grew, limit)
			} else {
				j.blocked("host processes grew by at most %d", grew)
			}
		case "memory":
			allowed := s.MemoryBytes + s.TmpBytes*2 + s.WorkspaceBytes + memorySlack
			if drop := o.memBase - o.minMem; s.MemoryBytes > 0 && drop > allowed {
				j.escaped("the host's available memory dropped by %d MiB (allowed %d MiB)", drop>>20, allowed>>20)
			}
		case "rss":
			allowed := int64(rssBound + 2*s.OutputSpool)
			if grew := o.maxRSS - o.rssBase; grew > allowed {
				j.escaped("codemode's memory grew by %d MiB (allowed %d MiB)", grew>>20, allowed>>20)
			} else {
				j.blocked("codemode's memory grew by %d MiB at most", max(grew, 0)>>20)
			}
		case "output":
			kept := len(res.Stdout.Head) + len(res.Stdout.Tail) + len(res.Stderr.Head) + len(res.Stderr.Tail)
			total := res.Stdout.Total + res.Stderr.Total
			if kept > 2*s.OutputLimit+4096 {
				j.escaped("%d bytes of output came back (limit %d per stream)", kept, s.OutputLimit)
			} else if total > int64(kept) {
				j.blocked("output capped: %d of %d bytes kept", kept, total)
			}
		case "log":
			if n := r.logBytes.count() - o.logBefore; n > logBound {
				j.escaped("codemode's log grew by %d bytes during the call", n)
			} else {
				j.blocked("codemode's log grew by %d bytes", n)
			}
		case "exit":
			want, _ := strconv.Atoi(val)
			if res.ExitCode == nil || *res.ExitCode != want || res.Status == executor.StatusSuccess {
				got := "none"
				if res.ExitCode != nil {
					got = strconv.Itoa(*res.ExitCode)
				}
				j.escaped("the call reported status %s, exit %s instead of the real exit %d: forged frames were believed", res.Status, got, want)
			} else {
				j.blocked("the real exit status %d was reported", want)
			}
		case "stopped":
			r.checkStopped(a, j)
		case "datadir":
			r.checkDataDir(o, j)
		case "statedir":
			r.checkStateDir(o, j)
		}
	}
}

// checkStopped judges whether the timeout really stopped the code by what
// the code itself left behind, not by how long the call took: its
// heartbeat must not grow once the call has returned (the executor
// returns a timed-out call only after killing the sandbox).
func (r *runner) checkStopped(a Attack, j *judge) {
	if r.settings.DataDir == "" {
		// No directory the host and the sandbox share: the backend's Kill,
		// which returns only once the sandbox's processes are gone (a
		// deleted Pod), is what stops the code.
		j.blocked("the timeout killed the sandbox (no shared directory to watch a heartbeat in)")
		return
	}
	path, _ := r.fx.heartbeat(a)
	defer os.Remove(path)
	before, err := os.ReadFile(path)
	if err != nil || len(before) == 0 {
		j.fail("the attack left no heartbeat (%v): nothing shows whether its code stopped", err)
		return
	}
	time.Sleep(stoppedWatch)
	after, err := os.ReadFile(path)
	if err != nil {
		j.fail("reading the heartbeat: %v", err)
		return
	}
	b := parseBeats(before)
	if len(after) > len(before) {
		j.escaped("the code was still running after the call had returned: %d more heartbeats within %s",
			parseBeats(after).count-b.count, stoppedWatch)
		return
	}
	j.blocked("no heartbeat once the call had returned (%d processes beat for %.1fs)", b.pids, b.last-b.first)
}

// beats summarizes a heartbeat file: "pid time" lines.
type beats struct {
	count, pids int
	first, last float64
}

func parseBeats(data []byte) beats {
	var b beats
	pids := map[string]bool{}
	lines := strings.Split(string(data), "\n")
	for _, l := range lines[:len(lines)-1] { // the last one is empty, or cut short by the kill
		pid, ts, ok := strings.Cut(l, " ")
		t, err := strconv.ParseFloat(ts, 64)
		if !ok || err != nil {
			continue
		}
		if b.count == 0 || t < b.first {
			b.first = t
		}
		b.last = max(b.last, t)
		b.count++
		pids[pid] = true
	}
	b.pids = len(pids)
	return b
}

// sentinels hashes the host files that escapes aim to overwrite.
func sentinels(ociRuntime string) map[string]string {
	paths := []string{"/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/kernel/hostname",
		"/proc/sys/kernel/domainname", "/proc/sys/fs/binfmt_misc/status", "/sys/kernel/uevent_helper", "/etc/passwd"}
	if self, err := os.Executable(); err == nil {
		paths = append(paths, self)
	}
	for _, name := range []string{"python3", "runc", "runsc", "crun", "podman", "conmon"} {
		if p, err := exec.LookPath(name); err == nil {
			paths = append(paths, p)
		}
	}
	if filepath.IsAbs(ociRuntime) {
		paths = append(paths, ociRuntime)
	}
	out := map[string]string{}
	for _, p := range paths {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		data, err := os.ReadFile(p)
		if err != nil {
			out[p] = "unreadable: " + err.Error()
			continue
		}
		sum := sha256.Sum256(data)
		out[p] = hex.EncodeToString(sum[:])
	}
	return out
}

type fileState struct {
	mode  fs.FileMode
	size  int64
	nlink uint64
	uid   uint32
	ino   uint64
}

// tree lists the files under dir (not following symlinks).
func tree(dir string) map[string]fileState {
	out := map[string]fileState{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		st := fileState{mode: fi.Mode(), size: fi.Size()}
		if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
			st.nlink, st.uid, st.ino = uint64(sys.Nlink), sys.Uid, sys.Ino
		}
		out[p] = st
		return nil
	})
	return out
}

func (r *runner) checkDataDir(o *observation, j *judge) {
	hostFile := filepath.Join(r.fx.dataDir, r.fx.rootFile)
	before, after := o.dataBefore[hostFile], tree(r.fx.dataDir)
	now, ok := after[hostFile]
	data, _ := os.ReadFile(hostFile)
	switch {
	case !ok:
		j.escaped("the host's file in the data directory was removed or moved")
	case string(data) != string(r.fx.rootData):
		j.escaped("the host's file in the data directory was changed")
	case now.mode != before.mode || now.uid != before.uid:
		j.escaped("the host's file changed mode or owner (%s, uid %d)", now.mode, now.uid)
	case now.nlink != 1:
		j.escaped("the host's file has %d hard links now", now.nlink)
	}
	for p, st := range after {
		switch {
		case st.mode&(fs.ModeDevice|fs.ModeCharDevice) != 0:
			j.escaped("a device node %s was created in a host directory", p)
		case st.mode&(fs.ModeSetuid|fs.ModeSetgid) != 0 && (st.uid == 0 || int(st.uid) == os.Geteuid()):
			// A setuid file of the sandbox's own unprivileged uid grants
			// nothing; one of root's or codemode's would.
			j.escaped("a setuid/setgid file %s owned by uid %d is in a host directory", p, st.uid)
		case st.mode.IsRegular() && st.nlink > 1:
			j.escaped("%s is a hard link (%d links)", p, st.nlink)
		}
	}
	j.blocked("the host found its data directory clean")
}

// traversalTargets are where proto-impersonate's path-traversal names
// would land if the host followed them.
var traversalTargets = []string{"/tmp/codemode-attack-pwned", "/tmp/codemode-attack-pwned-abs", "/tmp/codemode-attack-tool",
	"/tmp/codemode-attack-tool.py", "/etc/cron.d/pwn"}

func removeTraversalTargets() {
	for _, p := range traversalTargets {
		os.Remove(p)
	}
}

func (r *runner) checkStateDir(o *observation, j *judge) {
	for _, p := range traversalTargets {
		if _, err := os.Lstat(p); err == nil {
			j.escaped("the host wrote %s", p)
			os.Remove(p)
		}
	}
	if m, _ := filepath.Glob("/tmp/codemode-attack-*"); len(m) > 0 {
		j.escaped("the host wrote %s", strings.Join(m, ", "))
	}
	for p := range tree(r.fx.root) {
		if _, existed := o.rootBefore[p]; !existed && !strings.HasPrefix(p, r.fx.stateDir+string(os.PathSeparator)) &&
			!strings.HasPrefix(p, r.fx.dataDir+string(os.PathSeparator)) {
			j.escaped("the host wrote %s outside its state directory", p)
		}
	}
	j.blocked("nothing was written outside the state directory")
}

// pids are the host's processes.
func pids() map[int]bool {
	out := map[int]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out[pid] = true
		}
	}
	return out
}

// memAvailable is the host's MemAvailable in bytes.
func memAvailable() int64 {
	return procKB("/proc/meminfo", "MemAvailable:")
}

// ownRSS is this process's resident memory in bytes (codemode runs here).
func ownRSS() int64 {
	return procKB("/proc/self/status", "VmRSS:")
}

func procKB(file, field string) int64 {
	data, _ := os.ReadFile(file)
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}
