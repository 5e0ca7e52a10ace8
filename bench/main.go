// Command codemode-bench is codemode's benchmark harness: it builds the
// codemode binary, drives it with the official go-sdk MCP client over stdio
// next to the real npm MCP servers (Node 22 from testdeps/), and prints one
// Markdown report on stdout (progress goes to stderr):
//
//  1. context economy: tokens of codemode's tools/list against the five
//     real servers listed directly, growing from 1 to 5 servers;
//  2. one multi-step task done as direct tool calls and as one run_python;
//  3. latency and throughput per sandbox backend;
//  4. memory;
//  5. the scale curve with up to 100 servers and 5,000 synthetic tools;
//  6. warm sessions: preloaded data packages, spares, ten sessions back to
//     back, memory per pandas session, proxied calls to server-everything.
//
// Run it with `make bench` (scripts/bench.sh), which installs what it needs
// first. See BENCHMARKS.md for the latest report.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

type harness struct {
	repo        string
	tmp         string
	codemode    string // the binary under test
	self        string // this binary (downstream servers)
	node        string // Node 22 from testdeps
	nodeModules string
	python      string // the host's python3 (the bare forwarder's client)
	tok         *tokenizer
	reps        int

	// container backends
	image string
	runsc string
	// rootfs is the native backend's root with the data packages (the
	// image's tree), for the warm-sessions section.
	rootfs     string
	dockerCLI  string
	dockerHost string

	notes []string // printed under the report
}

// options are the command-line flags.
type options struct {
	repo, codemode, backends, sections, image, runsc, dockerHost, out, command string
	reps, scaleServers, scaleTools                                             int
	keep                                                                       bool
}

func main() {
	maybeServe()
	var o options
	flag.StringVar(&o.repo, "repo", "", "repository root (default: found from the working directory)")
	flag.StringVar(&o.codemode, "codemode", "", "codemode binary to measure (default: build ./cmd/codemode with CGO_ENABLED=0)")
	flag.StringVar(&o.backends, "backends", "native,podman,docker,gvisor", "sandbox backends to measure (missing ones are reported as such)")
	flag.StringVar(&o.sections, "sections", strings.Join(sectionNames, ","), "sections to run")
	flag.IntVar(&o.reps, "reps", 5, "repetitions of each measurement")
	flag.StringVar(&o.image, "image", "", "container image for podman/docker/gvisor (default: CODEMODE_TEST_IMAGE of .cache/testdeps/env)")
	flag.StringVar(&o.runsc, "oci-runtime", "", "gVisor runsc path (default: CODEMODE_TEST_RUNSC of .cache/testdeps/env)")
	flag.StringVar(&o.dockerHost, "docker-host", "", "DOCKER_HOST of the dockerd to use (default: that of .cache/testdeps/env)")
	flag.StringVar(&o.out, "out", "", "also write the report to this file")
	flag.BoolVar(&o.keep, "keep", false, "keep the scratch directory")
	flag.StringVar(&o.command, "command", "make bench", "the command line to print in the report")
	flag.IntVar(&o.scaleServers, "scale-servers", 100, "largest number of synthetic servers in the scale curve (1, 10, 100, ...)")
	flag.IntVar(&o.scaleTools, "scale-tools", 50, "tools per synthetic server")
	flag.Parse()
	if err := run(o); err != nil {
		fatalf("%v", err)
	}
}

var sectionNames = []string{"context", "task", "backends", "scale", "warm"}

// errSectionsFailed ends a run whose report is out but incomplete.
var errSectionsFailed = errors.New("some sections failed (see the report)")

func run(o options) error {
	start := time.Now()
	want := map[string]bool{}
	for _, s := range splitList(o.sections) {
		if !slices.Contains(sectionNames, s) {
			return fmt.Errorf("unknown section %q (have %s)", s, strings.Join(sectionNames, ", "))
		}
		want[s] = true
	}
	h := &harness{reps: max(o.reps, 1)}
	var err error
	if h.repo, err = findRepo(o.repo); err != nil {
		return err
	}
	if h.tmp, err = os.MkdirTemp("", "codemode-bench-"); err != nil {
		return fmt.Errorf("creating the scratch directory: %w", err)
	}
	if o.keep {
		progress("scratch directory: %s", h.tmp)
	} else {
		defer os.RemoveAll(h.tmp)
	}
	if h.self, err = os.Executable(); err != nil {
		return fmt.Errorf("finding the harness binary: %w", err)
	}
	h.nodeModules = filepath.Join(h.repo, "testdeps", "node_modules")
	h.node = filepath.Join(h.nodeModules, ".bin", "node")
	if _, err := os.Stat(h.node); err != nil {
		return fmt.Errorf("finding Node 22 in testdeps/ (run scripts/testdeps.sh): %w", err)
	}
	if h.python, err = exec.LookPath("python3"); err != nil {
		return fmt.Errorf("finding python3: %w", err)
	}
	env := readEnvFile(filepath.Join(h.repo, ".cache", "testdeps", "env"))
	h.image = orDefault(o.image, env["CODEMODE_TEST_IMAGE"])
	h.runsc = orDefault(o.runsc, env["CODEMODE_TEST_RUNSC"])
	h.rootfs = env["CODEMODE_TEST_ROOTFS"]
	h.dockerHost = orDefault(o.dockerHost, env["DOCKER_HOST"])
	h.dockerCLI = "/usr/bin/docker" // Debian's client; /usr/local/bin/docker may be a newer CLI
	if docker := strings.Fields(env["CODEMODE_TEST_DOCKER"]); len(docker) > 0 {
		h.dockerCLI = docker[0]
	}

	h.codemode = o.codemode
	if h.codemode == "" {
		progress("building codemode (CGO_ENABLED=0)")
		h.codemode = filepath.Join(h.tmp, "codemode")
		build := exec.Command("go", "build", "-trimpath", "-o", h.codemode, "./cmd/codemode")
		build.Dir = h.repo
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("building codemode: %w\n%s", err, out)
		}
	}
	if h.tok, err = newTokenizer(h.node, h.nodeModules, h.tmp); err != nil {
		return fmt.Errorf("starting the tokenizer: %w", err)
	}
	defer h.tok.close()

	ctx := context.Background()
	rep := &report{command: o.command, machine: h.machine(), loadBefore: loadavg()}
	failed := false
	for _, s := range []struct {
		name string
		run  func() (result, error)
	}{
		{"context", func() (result, error) { return h.contextEconomy(ctx) }},
		{"task", func() (result, error) { return h.task(ctx) }},
		{"backends", func() (result, error) {
			rs := h.backends(ctx, splitList(o.backends))
			// A backend that is not installed is only reported; one that
			// fails fails the run.
			for _, r := range rs {
				failed = failed || r.failed
			}
			return rs, nil
		}},
		{"scale", func() (result, error) { return h.scale(ctx, o.scaleServers, o.scaleTools) }},
		{"warm", func() (result, error) {
			rs := h.warm(ctx, splitList(o.backends))
			for _, r := range rs {
				failed = failed || r.failed
			}
			return rs, nil
		}},
	} {
		if !want[s.name] {
			continue
		}
		sr := sectionRun{name: s.name}
		sr.waited, sr.busy = waitIdle(idleLimit)
		sr.load0 = loadavg()
		t0 := time.Now()
		progress("== %s", s.name)
		// A failed section is reported and the others still run: one broken
		// server should not cost the whole run.
		sr.res, sr.err = s.run()
		if sr.err != nil {
			sr.res = nil // a typed nil pointer otherwise
			failed = true
			progress("section %s failed: %v", s.name, sr.err)
		}
		sr.took, sr.load1 = time.Since(t0), loadavg()
		rep.sections = append(rep.sections, sr)
	}
	rep.loadAfter, rep.took, rep.notes = loadavg(), time.Since(start), h.notes

	md := rep.markdown()
	fmt.Print(md)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(md), 0o644); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	}
	progress("done in %s", time.Since(start).Round(time.Second))
	if failed {
		return errSectionsFailed
	}
	return nil
}

func (h *harness) note(format string, args ...any) {
	h.notes = append(h.notes, fmt.Sprintf(format, args...))
}

// machine describes where the run happened.
func (h *harness) machine() string {
	cpu := "?"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	memTotal := "?"
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				var kb int
				fmt.Sscan(f[1], &kb)
				memTotal = fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	osName := "?"
	if data, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				osName = strings.Trim(v, `"`)
			}
		}
	}
	nodeV, _ := exec.Command(h.node, "--version").Output()
	rev, _ := exec.Command("git", "-C", h.repo, "rev-parse", "--short", "HEAD").Output()
	dirty := ""
	if st, _ := exec.Command("git", "-C", h.repo, "status", "--porcelain", "--untracked-files=no").Output(); len(st) > 0 {
		dirty = " with uncommitted changes"
	}
	cg := "v1 (hybrid)"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		cg = "v2"
	}
	return fmt.Sprintf("Machine: %d × %s, %s RAM, %s, kernel %s, cgroup %s%s, running as uid %d. "+
		"Go %s (harness), Node %s (testdeps), codemode at commit %s%s, built with CGO_ENABLED=0. Date %s.",
		runtime.NumCPU(), cpu, memTotal, osName, strings.TrimSpace(string(kernel)), cg, haltPolling(), os.Getuid(),
		strings.TrimPrefix(runtime.Version(), "go"), strings.TrimSpace(string(nodeV)), strings.TrimSpace(string(rev)), dirty,
		time.Now().UTC().Format("2006-01-02 15:04 UTC"))
}

// haltPolling describes a KVM guest's halt polling, which sets what waking
// an idle vCPU costs: a process woken there waits for the hypervisor to
// run the vCPU again unless the guest polled for work first. Every
// cross-process hop of a tool call may be such a wake-up (section 6).
func haltPolling() string {
	data, err := os.ReadFile("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
	if err != nil {
		return ""
	}
	ns := strings.TrimSpace(string(data))
	if ns == "0" {
		return ", guest halt polling off (haltpoll.guest_halt_poll_ns=0)"
	}
	return ", guest halt polling up to " + ns + " ns"
}

// findRepo returns the module root of codemode.
func findRepo(dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return "", fmt.Errorf("finding the repository: %w", err)
		}
	}
	dir, _ = filepath.Abs(dir)
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(data), "module github.com/codemode/codemode\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no codemode checkout at or above %s (use --repo)", dir)
		}
	}
}

// readEnvFile reads `export NAME='value'` lines (scripts/testdeps.sh's env file).
func readEnvFile(path string) map[string]string {
	out := map[string]string{}
	data, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "export "))
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out[strings.TrimSpace(k)] = v
	}
	return out
}

func orDefault(v, d string) string {
	if v != "" {
		return v
	}
	return d
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "codemode-bench: "+format+"\n", args...)
	os.Exit(1)
}
