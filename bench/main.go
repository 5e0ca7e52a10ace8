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
//  5. the scale curve with up to 100 servers and 5,000 synthetic tools.
//
// Run it with `make bench` (scripts/bench.sh), which installs what it needs
// first. See BENCHMARKS.md for the latest report.
package main

import (
	"bufio"
	"context"
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
	tok         *tokenizer
	reps        int

	// container backends
	image      string
	runsc      string
	dockerCLI  string
	dockerHost string

	notes []string // printed under the report
}

func main() {
	maybeServe()
	var (
		repo      = flag.String("repo", "", "repository root (default: found from the working directory)")
		cmBin     = flag.String("codemode", "", "codemode binary to measure (default: build ./cmd/codemode with CGO_ENABLED=0)")
		backends  = flag.String("backends", "native,podman,docker,gvisor", "sandbox backends to measure (missing ones are reported as such)")
		sections  = flag.String("sections", "context,task,backends,scale", "sections to run")
		reps      = flag.Int("reps", 5, "repetitions of each measurement")
		image     = flag.String("image", "", "container image for podman/docker/gvisor (default: CODEMODE_TEST_IMAGE of .cache/testdeps/env)")
		runsc     = flag.String("oci-runtime", "", "gVisor runsc path (default: CODEMODE_TEST_RUNSC of .cache/testdeps/env)")
		dockerH   = flag.String("docker-host", "", "DOCKER_HOST of the dockerd to use (default: that of .cache/testdeps/env)")
		outFile   = flag.String("out", "", "also write the report to this file")
		keepTmp   = flag.Bool("keep", false, "keep the scratch directory")
		command   = flag.String("command", "make bench", "the command line to print in the report")
		scaleMax  = flag.Int("scale-servers", 100, "largest number of synthetic servers in the scale curve")
		scaleEach = flag.Int("scale-tools", 50, "tools per synthetic server")
	)
	flag.Parse()
	start := time.Now()
	h := &harness{reps: max(*reps, 1)}
	var err error
	if h.repo, err = findRepo(*repo); err != nil {
		fatalf("%v", err)
	}
	if h.tmp, err = os.MkdirTemp("", "codemode-bench-"); err != nil {
		fatalf("%v", err)
	}
	if !*keepTmp {
		defer os.RemoveAll(h.tmp)
	}
	if h.self, err = os.Executable(); err != nil {
		fatalf("%v", err)
	}
	h.nodeModules = filepath.Join(h.repo, "testdeps", "node_modules")
	h.node = filepath.Join(h.nodeModules, ".bin", "node")
	if _, err := os.Stat(h.node); err != nil {
		fatalf("Node 22 is not installed in testdeps/ (run scripts/testdeps.sh): %v", err)
	}
	env := readEnvFile(filepath.Join(h.repo, ".cache", "testdeps", "env"))
	h.image = orDefault(*image, env["CODEMODE_TEST_IMAGE"])
	h.runsc = orDefault(*runsc, env["CODEMODE_TEST_RUNSC"])
	h.dockerHost = orDefault(*dockerH, env["DOCKER_HOST"])
	h.dockerCLI = "/usr/bin/docker" // Debian's client; /usr/local/bin/docker may be a newer CLI
	if docker := strings.Fields(env["CODEMODE_TEST_DOCKER"]); len(docker) > 0 {
		h.dockerCLI = docker[0]
	}

	h.codemode = *cmBin
	if h.codemode == "" {
		progress("building codemode (CGO_ENABLED=0)")
		h.codemode = filepath.Join(h.tmp, "codemode")
		build := exec.Command("go", "build", "-trimpath", "-o", h.codemode, "./cmd/codemode")
		build.Dir = h.repo
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fatalf("building codemode: %v\n%s", err, out)
		}
	}
	if h.tok, err = newTokenizer(h.node, h.nodeModules, h.tmp); err != nil {
		fatalf("%v", err)
	}
	defer h.tok.close()

	ctx := context.Background()
	want := map[string]bool{}
	for _, s := range strings.Split(*sections, ",") {
		want[strings.TrimSpace(s)] = true
	}
	loadBefore := loadavg()
	var body strings.Builder
	type section struct {
		name string
		run  func() string
	}
	var (
		ctxRes  *contextResult
		bk      []*backendResult
		scaleOK = *scaleMax
	)
	for _, s := range []section{
		{"context", func() string { ctxRes = h.contextEconomy(ctx); return ctxRes.markdown() }},
		{"task", func() string { return h.task(ctx) }},
		{"backends", func() string {
			bk = h.backends(ctx, splitList(*backends))
			return backendsMarkdown(bk) + "\n" + memoryMarkdown(bk)
		}},
		{"scale", func() string { return h.scale(ctx, scaleOK, *scaleEach) }},
	} {
		if !want[s.name] {
			continue
		}
		l0 := loadavg()
		t0 := time.Now()
		progress("== %s", s.name)
		md := s.run()
		fmt.Fprintf(&body, "%s\n_Section time %s; load average before %s, after %s._\n\n", md, time.Since(t0).Round(time.Second), l0, loadavg())
	}
	loadAfter := loadavg()

	var out strings.Builder
	fmt.Fprintf(&out, "## Harness run (`%s`)\n\n", *command)
	fmt.Fprintf(&out, "%s\n\n", h.machine())
	fmt.Fprintf(&out, "Run took %s; load average (1/5/15 min) before **%s**, after **%s** (2 cores: a load above 2 means the run competed for CPU). "+
		"Each cell is the median of the repetitions, with (min–max) across them; ratios are taken within one run.\n\n",
		time.Since(start).Round(time.Second), loadBefore, loadAfter)
	out.WriteString(body.String())
	if len(h.notes) > 0 {
		out.WriteString("Notes from this run:\n\n")
		for _, n := range h.notes {
			fmt.Fprintf(&out, "- %s\n", n)
		}
		out.WriteString("\n")
	}
	fmt.Print(out.String())
	if *outFile != "" {
		if err := os.WriteFile(*outFile, []byte(out.String()), 0o644); err != nil {
			fatalf("%v", err)
		}
	}
	progress("done in %s", time.Since(start).Round(time.Second))
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
	return fmt.Sprintf("Machine: %d × %s, %s RAM, %s, kernel %s, cgroup %s, running as uid %d. "+
		"Go %s (harness), Node %s (testdeps), codemode at commit %s%s, built with CGO_ENABLED=0. Date %s.",
		runtime.NumCPU(), cpu, memTotal, osName, strings.TrimSpace(string(kernel)), cg, os.Getuid(),
		strings.TrimPrefix(runtime.Version(), "go"), strings.TrimSpace(string(nodeV)), strings.TrimSpace(string(rev)), dirty,
		time.Now().UTC().Format("2006-01-02 15:04 UTC"))
}

// findRepo returns the module root of codemode.
func findRepo(dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return "", err
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

func now() time.Time { return time.Now() }

func sinceMS(t time.Time) float64 { return float64(time.Since(t)) / float64(time.Millisecond) }
