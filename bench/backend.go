package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// backendResult holds sections 3 and 4 for one sandbox backend.
type backendResult struct {
	name    string
	missing string // why it was not measured
	failed  bool   // measuring it failed (missing says why)

	coldNoSpare, coldSpare sample // ms
	spareUsed, spareTries  int
	passP50, passP99       sample // ms, one value per round
	proxied, directCall    sample // µs, p50 per round
	ratio                  sample
	seq, gather, speedup   sample // ms, ms, ×
	cps, concP50, concP99  sample // calls/s, ms, ms per round
	concErrors             int

	cmIdle, cm16           mem // the codemode process
	sbIdle, sb16           mem // all sandbox processes
	sbIdleN, sb16N         int // sandboxes counted
	sessionStartAll        time.Duration
	refill                 time.Duration
	warmRounds, warmCalls  int
	proxyCalls, concRounds int
}

const (
	warmCalls   = 500
	proxyCalls  = 500
	concWorkers = 16
	concRound   = 2 * time.Second
)

// available says whether a backend's prerequisites are here ("" when they are).
func (h *harness) available(backend string) string {
	look := func(name string) string {
		if _, err := exec.LookPath(name); err != nil {
			return name + " is not installed"
		}
		return ""
	}
	switch backend {
	case "native":
		return ""
	case "podman", "gvisor":
		if m := look("podman"); m != "" {
			return m
		}
		if h.image == "" {
			return "no image (run scripts/testdeps.sh or pass --image)"
		}
		if err := exec.Command("podman", "image", "exists", h.image).Run(); err != nil {
			return "podman has no image " + h.image
		}
		if backend == "gvisor" {
			if fi, err := os.Stat(h.runsc); h.runsc == "" || err != nil || fi.Mode()&0o111 == 0 {
				return "no runsc binary (scripts/testdeps.sh builds it; or pass --oci-runtime)"
			}
		}
		return ""
	case "docker":
		if m := look(h.dockerCLI); m != "" {
			return m
		}
		if h.dockerHost == "" {
			return "no DOCKER_HOST (scripts/testdeps.sh starts a private dockerd)"
		}
		if out, err := exec.Command(h.dockerCLI, "-H", h.dockerHost, "image", "inspect", "--format", "{{.Id}}", h.image).CombinedOutput(); err != nil {
			return "docker (" + h.dockerHost + ") does not answer or has no image " + h.image + ": " + firstLine(string(out))
		}
		return ""
	}
	return "unknown backend"
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// backendResults is sections 3 and 4, one entry per backend asked for.
type backendResults []*backendResult

func (rs backendResults) markdown() string { return backendsMarkdown(rs) + "\n" + memoryMarkdown(rs) }

// goals: the per-backend targets of BENCHMARKS.md and the issue, for every
// backend that was measured.
func (rs backendResults) goals() []goal {
	var out []goal
	for _, r := range rs {
		if r.missing != "" {
			continue
		}
		out = append(out,
			goal{r.name + ": cold session start without a spare, p50", "≤ 30 ms", mmm(r.coldNoSpare, " ms"), r.coldNoSpare.median() <= 30},
			goal{r.name + ": cold session start with the spare ready, p50", "≤ 30 ms", mmm(r.coldSpare, " ms"), r.coldSpare.median() <= 30},
			goal{r.name + ": warm `run_python(\"pass\")` p50", "≤ 1 ms", mmm(r.passP50, " ms"), r.passP50.median() <= 1},
			goal{r.name + ": proxied / direct call", "≤ 1.3×", mmm(r.ratio, "×"), r.ratio.median() <= 1.3},
			goal{r.name + ": 32 calls, `asyncio.gather` vs one by one", "≥ 8×", mmm(r.speedup, "×"), r.speedup.median() >= 8},
		)
	}
	return out
}

func (h *harness) backends(ctx context.Context, names []string) backendResults {
	var out backendResults
	for _, name := range names {
		r := &backendResult{name: name}
		out = append(out, r)
		if r.missing = h.available(name); r.missing != "" {
			progress("backend %s: skipped: %s", name, r.missing)
			continue
		}
		progress("backend %s", name)
		settle("backend " + name)
		if err := h.measureBackend(ctx, r); err != nil {
			r.failed = true
			r.missing = "failed: " + firstLine(err.Error())
			progress("backend %s failed: %v", name, err)
		}
	}
	return out
}

func (h *harness) measureBackend(ctx context.Context, r *backendResult) error {
	// A: cold starts without a spare.
	p, err := h.startCodemode(ctx, cmOpts{backend: r.name, spares: 0})
	if err != nil {
		return err
	}
	for i := range h.reps {
		_, d, err := p.call(ctx, map[string]any{"code": "pass", "session": fmt.Sprint("cold", i)})
		if err != nil {
			p.close()
			return fmt.Errorf("cold starts without a spare: %w", err)
		}
		r.coldNoSpare = append(r.coldNoSpare, ms([]time.Duration{d})...)
	}
	p.close()
	// The spare's replacement starts when a session takes it; give it three
	// cold starts' time before the next new session.
	r.refill = max(time.Duration(3*r.coldNoSpare.median()*float64(time.Millisecond)), 500*time.Millisecond)

	// B: default spares, a Go MCP server configured.
	progress("backend %s: warm calls, proxied calls, gather", r.name)
	p, err = h.startCodemode(ctx, cmOpts{backend: r.name, spares: -1, servers: map[string]any{"tools": h.selfServer("tools", nil)}})
	if err != nil {
		return err
	}
	defer p.close()
	if err := p.py(ctx, "main", "await mcp_tools.echo(message='warm')", nil); err != nil {
		return fmt.Errorf("first proxied call: %w", err)
	}
	pass := map[string]any{"code": "pass", "session": "main"}
	for range 20 {
		if _, _, err := p.call(ctx, pass); err != nil {
			return fmt.Errorf("warm-up calls: %w", err)
		}
	}
	r.warmRounds, r.warmCalls = h.reps, warmCalls
	for range h.reps {
		var durs []time.Duration
		for range warmCalls {
			_, d, err := p.call(ctx, pass)
			if err != nil {
				return fmt.Errorf("warm calls: %w", err)
			}
			durs = append(durs, d)
		}
		s := ms(durs)
		r.passP50 = append(r.passP50, s.pct(0.50))
		r.passP99 = append(r.passP99, s.pct(0.99))
	}

	d, err := connectDirect(ctx, h.selfCommand("tools"), false)
	if err != nil {
		return fmt.Errorf("direct connection: %w", err)
	}
	defer d.cs.Close()
	for range 50 {
		if _, err := callText(ctx, d.cs, "echo", map[string]any{"message": "x"}); err != nil {
			return fmt.Errorf("direct warm-up calls: %w", err)
		}
	}
	r.proxyCalls = proxyCalls
	proxiedCode := fmt.Sprintf("import time, json\nfor _ in range(30): await mcp_tools.echo(message='x')\nt = []\n"+
		"for _ in range(%d):\n    t0 = time.perf_counter(); await mcp_tools.echo(message='x'); t.append(time.perf_counter() - t0)\n"+
		"t.sort(); print(json.dumps(t[len(t)//2] * 1e6))", proxyCalls)
	for range h.reps {
		var us float64
		if err := p.py(ctx, "main", proxiedCode, &us); err != nil {
			return fmt.Errorf("proxied calls: %w", err)
		}
		var durs []time.Duration
		for range proxyCalls {
			t0 := time.Now()
			if _, err := callText(ctx, d.cs, "echo", map[string]any{"message": "x"}); err != nil {
				return fmt.Errorf("direct calls: %w", err)
			}
			durs = append(durs, time.Since(t0))
		}
		direct := ms(durs).pct(0.5) * 1000
		r.proxied = append(r.proxied, us)
		r.directCall = append(r.directCall, direct)
		r.ratio = append(r.ratio, us/direct)
	}

	gatherCode := "import time, json, asyncio\n" +
		"t0 = time.perf_counter()\nfor _ in range(32): await mcp_tools.sleep(milliseconds=50)\nseq = time.perf_counter() - t0\n" +
		"t0 = time.perf_counter()\nawait asyncio.gather(*[mcp_tools.sleep(milliseconds=50) for _ in range(32)])\npar = time.perf_counter() - t0\n" +
		"print(json.dumps([seq * 1000, par * 1000]))"
	for range h.reps {
		var v [2]float64
		if err := p.py(ctx, "main", gatherCode, &v); err != nil {
			return fmt.Errorf("gather: %w", err)
		}
		r.seq = append(r.seq, v[0])
		r.gather = append(r.gather, v[1])
		r.speedup = append(r.speedup, v[0]/v[1])
	}

	// Cold starts that find a spare ready.
	progress("backend %s: cold starts with a spare (waiting %s for each refill)", r.name, r.refill.Round(time.Millisecond))
	for i := range h.reps {
		time.Sleep(r.refill)
		before := strings.Count(p.stderr.String(), "session started from a spare")
		_, d, err := p.call(ctx, map[string]any{"code": "pass", "session": fmt.Sprint("spare", i)})
		if err != nil {
			return fmt.Errorf("cold starts with a spare: %w", err)
		}
		r.coldSpare = append(r.coldSpare, ms([]time.Duration{d})...)
		r.spareTries++
		if strings.Count(p.stderr.String(), "session started from a spare") > before {
			r.spareUsed++
		}
	}
	p.close()

	// C: memory and 16 sessions at once.
	progress("backend %s: memory, %d sessions at once", r.name, concWorkers)
	return h.concurrency(ctx, r)
}

func (h *harness) concurrency(ctx context.Context, r *backendResult) error {
	// One stdio client may run 8 calls at once by default (the limit is per
	// client, on stdio too): allow the 16.
	p, err := h.startCodemode(ctx, cmOpts{backend: r.name, spares: -1, env: []string{fmt.Sprintf("CODEMODE_MAX_CLIENT_CALLS=%d", concWorkers)}})
	if err != nil {
		return err
	}
	defer p.close()
	time.Sleep(r.refill + time.Second) // the spare starts
	r.cmIdle = procMem(p.pid())
	r.sbIdle, r.sbIdleN = h.sandboxMem(p, r.name)

	var wg sync.WaitGroup
	errs := make(chan error, concWorkers)
	t0 := time.Now()
	for i := range concWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := p.call(ctx, map[string]any{"code": "pass", "session": fmt.Sprint("c", i)}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	r.sessionStartAll = time.Since(t0)
	close(errs)
	for err := range errs {
		return fmt.Errorf("starting %d sessions: %w", concWorkers, err)
	}
	time.Sleep(r.refill + time.Second)

	r.concRounds = h.reps
	for range r.concRounds {
		var mu sync.Mutex
		var durs []time.Duration
		deadline := time.Now().Add(concRound)
		start := time.Now()
		for i := range concWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				args := map[string]any{"code": "pass", "session": fmt.Sprint("c", i)}
				for time.Now().Before(deadline) {
					_, d, err := p.call(ctx, args)
					mu.Lock()
					if err != nil {
						r.concErrors++
					} else {
						durs = append(durs, d)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		el := time.Since(start)
		s := ms(durs)
		r.cps = append(r.cps, float64(len(durs))/el.Seconds())
		r.concP50 = append(r.concP50, s.pct(0.5))
		r.concP99 = append(r.concP99, s.pct(0.99))
	}
	time.Sleep(500 * time.Millisecond)
	r.cm16 = procMem(p.pid())
	r.sb16, r.sb16N = h.sandboxMem(p, r.name)
	return nil
}

// sandboxMem sums the memory of a codemode process's sandboxes: every
// process below it (sandbox inits and interpreters, or the engine CLI of
// each container) and, for container backends, the processes that run its
// containers (conmon or containerd-shim, runsc, the container's own). It
// returns the total and the number of sandboxes.
func (h *harness) sandboxMem(p *cmProc, backend string) (mem, int) {
	all := processes()
	set := map[int]bool{}
	for _, pid := range descendants(all, p.pid()) {
		set[pid] = true
	}
	n := 0
	if backend == "native" {
		isInit := func(pid int) bool { return strings.HasPrefix(all[pid].cmdline, "codemode-sandbox-init") }
		// A zygote (its init and template interpreter) is no session; the
		// sessions forked from it are, and its memory is theirs to share.
		isZygote := func(pid int) bool { return strings.Contains(all[pid].cmdline, "# codemode zygote:") }
		zygoteInits := map[int]bool{}
		for pid := range set {
			if isZygote(pid) && isInit(all[pid].ppid) {
				zygoteInits[all[pid].ppid] = true
			}
		}
		for pid := range set {
			switch {
			case isInit(pid) && !isInit(all[pid].ppid) && !zygoteInits[pid]:
				n++
			case isZygote(pid) && isZygote(all[pid].ppid):
				n++
			}
		}
	} else {
		ids := h.containerIDs(p, backend)
		n = len(ids)
		for _, proc := range all {
			for _, id := range ids {
				if strings.Contains(proc.cmdline, id) {
					set[proc.pid] = true
					for _, d := range descendants(all, proc.pid) {
						set[d] = true
					}
				}
			}
		}
	}
	var total mem
	for pid := range set {
		total = total.add(procMem(pid))
	}
	return total, n
}

// containerIDs lists the running containers of a codemode process (by the
// owner label the container backend sets).
func (h *harness) containerIDs(p *cmProc, backend string) []string {
	engine := []string{"podman"}
	if backend == "docker" {
		engine = []string{h.dockerCLI, "-H", h.dockerHost}
	}
	owner := fmt.Sprintf("%d-%s", p.pid(), processStart(p.pid()))
	out, err := exec.Command(engine[0], append(engine[1:], "ps", "-q", "--no-trunc", "--filter", "label=codemode.owner="+owner)...).Output()
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}

// processStart is field 22 of /proc/PID/stat (start time in clock ticks),
// as the container backend's owner label has it.
func processStart(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "0"
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) > 19 {
		return fields[19]
	}
	return "0"
}
