package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// warmResult is section 6 for one backend: what a new session costs a data
// user or an agent opening many sessions, each figure next to its baseline
// from the same run.
type warmResult struct {
	name    string
	missing string
	failed  bool

	coldImport        sample // ms: pandas+numpy+matplotlib imported by a fresh python in the session's sandbox
	firstCall         sample // ms: a new session's first call importing them and building a DataFrame (spare ready, preload on)
	firstCallNoPre    sample // ms: the same with preload off (the spare boots bare)
	spareUsed, tries  int
	tenSpare, tenBare sample // ms: p50 of ten new sessions' first `pass`, back to back (default spares / none)
	tenBareNoPre      sample // ms: the same without spares and preload (today's default without a spare)
	pssPerSession     float64
	rssPerSession     float64
	sessions          int // sandboxes counted for the memory figure
	proxied, direct   sample
	ratio             sample // proxied / direct, per round
	raw, forwarded    sample // µs: the minimal client's echo; the bare forwarder's (floor.go)
	floor, overFloor  sample // forwarded / direct and proxied / forwarded, per round
	passPre, passBare sample // ms: warm run_python("pass") p50 with preload on / off
	refill            time.Duration

	// The zygote (--zygote, native only): sessions forked from a template
	// interpreter that imported the preload modules, no spare.
	zygote                 bool
	tenZygote              sample
	pssZygote, rssZygote   float64
	sessionsZygote         int
	passZygote, passBooted sample // ms: warm `pass` p50, zygote on / off (preload on), alternating
	firstCallZygote        sample // ms: a new session's first data call, no spare
}

const (
	warmSessions = 10
	echoCalls    = 300
	dataImports  = "import pandas, numpy, matplotlib.pyplot"
)

// dataCall is a data user's first call.
const dataCall = dataImports + "\ndf = pandas.DataFrame({'a': numpy.arange(10)})\nprint(int(df.a.sum()))"

type warmResults []*warmResult

func (h *harness) warm(ctx context.Context, names []string) warmResults {
	var out warmResults
	for _, name := range names {
		r := &warmResult{name: name}
		out = append(out, r)
		if r.missing = h.available(name); r.missing != "" {
			continue
		}
		progress("warm sessions: backend %s", name)
		settle("warm sessions: backend " + name)
		if err := h.measureWarm(ctx, r); err != nil {
			r.failed = true
			r.missing = "failed: " + firstLine(err.Error())
			progress("warm sessions: backend %s failed: %v", name, err)
		}
	}
	return out
}

func (h *harness) measureWarm(ctx context.Context, r *warmResult) error {
	everything := npmServers("", "")[0]
	servers, err := h.configs([]npmServer{everything})
	if err != nil {
		return err
	}
	// Room for the sessions of every round (ended ones free their slot as
	// their interpreter exits, but not at once).
	// The zygote has rows of its own (measureZygote); these are without.
	more := []string{"CODEMODE_MAX_SESSIONS=128", "CODEMODE_ZYGOTE=false"}
	if r.name == "native" && h.rootfs != "" {
		// The host's Python may lack the data packages; the image's tree has them.
		more = append(more, "CODEMODE_ROOTFS="+h.rootfs)
	}
	p, err := h.startCodemode(ctx, cmOpts{backend: r.name, spares: -1, servers: servers, env: more})
	if err != nil {
		return err
	}
	defer p.close()
	// The baseline: a fresh interpreter importing the modules in the same
	// sandbox, as a subprocess of a session.
	coldCode := "import subprocess, sys, time, json\nt0 = time.perf_counter()\n" +
		"subprocess.run([sys.executable, '-I', '-c', " + fmt.Sprintf("%q", dataImports) + "], check=True)\n" +
		"print(json.dumps((time.perf_counter() - t0) * 1000))"
	for range h.reps {
		var v float64
		if err := p.py(ctx, "main", coldCode, &v); err != nil {
			return fmt.Errorf("cold import: %w", err)
		}
		r.coldImport = append(r.coldImport, v)
	}
	// A spare boots a sandbox and imports the modules: give it room.
	r.refill = max(time.Duration(3*r.coldImport.median()*float64(time.Millisecond)), time.Second)
	first := func(p *cmProc, prefix string, out *sample, count bool) error {
		for i := range h.reps {
			time.Sleep(r.refill)
			before := strings.Count(p.stderr.String(), "session started from a spare")
			_, d, err := p.call(ctx, map[string]any{"code": dataCall, "session": fmt.Sprint(prefix, i)})
			if err != nil {
				return fmt.Errorf("first data call: %w", err)
			}
			*out = append(*out, msOf(d))
			if count {
				r.tries++
				if strings.Count(p.stderr.String(), "session started from a spare") > before {
					r.spareUsed++
				}
			}
		}
		return nil
	}
	if err := first(p, "data", &r.firstCall, true); err != nil {
		return err
	}

	// Proxied echo from code against the direct SDK client, alternating.
	cmd, err := h.command(everything)
	if err != nil {
		return err
	}
	d, err := connectDirect(ctx, cmd, false)
	if err != nil {
		return fmt.Errorf("direct connection to server-everything: %w", err)
	}
	defer d.cs.Close()
	for range 30 {
		if _, err := callText(ctx, d.cs, "echo", map[string]any{"message": "x"}); err != nil {
			return fmt.Errorf("direct warm-up calls: %w", err)
		}
	}
	rawCmd, err := h.command(everything)
	if err != nil {
		return err
	}
	raw, err := startRaw(ctx, rawCmd)
	if err != nil {
		return fmt.Errorf("minimal client of server-everything: %w", err)
	}
	defer raw.stop()
	if _, err := raw.rawEchoP50(30); err != nil {
		return fmt.Errorf("minimal client's warm-up calls: %w", err)
	}
	echoCode := fmt.Sprintf("import time, json\nfor _ in range(30): await mcp_everything.echo(message='x')\nt = []\n"+
		"for _ in range(%d):\n    t0 = time.perf_counter(); await mcp_everything.echo(message='x'); t.append(time.perf_counter() - t0)\n"+
		"t.sort(); print(json.dumps(t[len(t)//2] * 1e6))", echoCalls)
	for range h.reps {
		var us float64
		if err := p.py(ctx, "main", echoCode, &us); err != nil {
			return fmt.Errorf("proxied echo: %w", err)
		}
		var durs []time.Duration
		for range echoCalls {
			t0 := time.Now()
			if _, err := callText(ctx, d.cs, "echo", map[string]any{"message": "x"}); err != nil {
				return fmt.Errorf("direct echo: %w", err)
			}
			durs = append(durs, time.Since(t0))
		}
		direct := ms(durs).pct(0.5) * 1000
		rawUS, err := raw.rawEchoP50(echoCalls)
		if err != nil {
			return fmt.Errorf("minimal client's echo: %w", err)
		}
		fwdUS, err := raw.forwardedEchoP50(ctx, h.python, echoCalls)
		if err != nil {
			return err
		}
		r.proxied, r.direct, r.ratio = append(r.proxied, us), append(r.direct, direct), append(r.ratio, us/direct)
		r.raw, r.forwarded = append(r.raw, rawUS), append(r.forwarded, fwdUS)
		r.floor, r.overFloor = append(r.floor, fwdUS/direct), append(r.overFloor, us/fwdUS)
	}
	// The baseline without preload, alive at the same time so the warm
	// `pass` rounds alternate between the two.
	// The same servers, so the warm `pass` baseline differs by preload only.
	bare, err := h.startCodemode(ctx, cmOpts{backend: r.name, spares: -1, servers: servers, env: append([]string{"CODEMODE_PRELOAD=none"}, more...)})
	if err != nil {
		return err
	}
	defer bare.close()
	if r.passPre, r.passBare, err = h.warmPass(ctx, p, bare); err != nil {
		return err
	}

	if r.tenSpare, err = h.tenSessions(ctx, p, "ten"); err != nil {
		return err
	}
	// Memory: codemode plus ten idle sessions that imported pandas.
	if r.sessions, r.pssPerSession, r.rssPerSession, err = h.tenPandas(ctx, p, r); err != nil {
		return err
	}

	if r.name == "native" {
		if err := h.measureZygote(ctx, r, p, more); err != nil {
			return fmt.Errorf("zygote: %w", err)
		}
	}
	p.close()

	// Baselines in the same run: preload off; no spare.
	err = first(bare, "data", &r.firstCallNoPre, false)
	bare.close()
	if err != nil {
		return err
	}
	for _, c := range []struct {
		env []string
		out *sample
	}{{nil, &r.tenBare}, {[]string{"CODEMODE_PRELOAD=none"}, &r.tenBareNoPre}} {
		p, err := h.startCodemode(ctx, cmOpts{backend: r.name, spares: 0, env: append(c.env, more...)})
		if err != nil {
			return err
		}
		*c.out, err = h.tenSessions(ctx, p, "bare")
		p.close()
		if err != nil {
			return err
		}
	}
	return nil
}

// tenPandas opens ten sessions that import pandas and returns the sandboxes
// counted and codemode's and their memory per sandbox (MiB).
func (h *harness) tenPandas(ctx context.Context, p *cmProc, r *warmResult) (n int, pss, rss float64, err error) {
	time.Sleep(r.refill)
	for i := range warmSessions {
		if _, _, err := p.call(ctx, map[string]any{"code": "import pandas", "session": fmt.Sprint("mem", i)}); err != nil {
			return 0, 0, 0, fmt.Errorf("memory sessions: %w", err)
		}
	}
	time.Sleep(r.refill)
	sb, n := h.sandboxMem(p, r.name)
	total := sb.add(procMem(p.pid()))
	// Every sandbox counts (the ten, the first session, the spare and
	// sessions of the last round still exiting), so divide by them all.
	n = max(n, 1)
	return n, mib(total.pss) / float64(n), mib(total.rss) / float64(n), nil
}

// measureZygote repeats the session figures with --zygote and no spare,
// next to p (zygote off, preload on) for the warm `pass` rounds.
func (h *harness) measureZygote(ctx context.Context, r *warmResult, p *cmProc, more []string) error {
	env := slices.DeleteFunc(slices.Clone(more), func(kv string) bool { return strings.HasPrefix(kv, "CODEMODE_ZYGOTE=") })
	z, err := h.startCodemode(ctx, cmOpts{backend: r.name, spares: 0, env: append(env, "CODEMODE_ZYGOTE=true")})
	if err != nil {
		return err
	}
	defer z.close()
	// The first session starts the zygote (a sandbox booting Python and
	// importing the modules, once per codemode process).
	if _, _, err := z.call(ctx, map[string]any{"code": "pass", "session": "main"}); err != nil {
		return err
	}
	all := processes()
	if !slices.ContainsFunc(descendants(all, z.pid()), func(pid int) bool { return strings.Contains(all[pid].cmdline, "# codemode zygote:") }) {
		return fmt.Errorf("codemode did not start a zygote (it needs root)")
	}
	r.zygote = true
	if r.passZygote, r.passBooted, err = h.warmPass(ctx, z, p); err != nil {
		return err
	}
	if r.tenZygote, err = h.tenSessions(ctx, z, "zten"); err != nil {
		return err
	}
	for i := range h.reps {
		_, d, err := z.call(ctx, map[string]any{"code": dataCall, "session": fmt.Sprint("zdata", i)})
		if err != nil {
			return fmt.Errorf("first data call: %w", err)
		}
		r.firstCallZygote = append(r.firstCallZygote, msOf(d))
	}
	r.sessionsZygote, r.pssZygote, r.rssZygote, err = h.tenPandas(ctx, z, r)
	return err
}

// tenSessions opens warmSessions new sessions back to back, reps times, and
// returns the p50 of their first `pass` per round.
func (h *harness) tenSessions(ctx context.Context, p *cmProc, prefix string) (sample, error) {
	var out sample
	for rep := range h.reps {
		var durs []time.Duration
		for i := range warmSessions {
			_, d, err := p.call(ctx, map[string]any{"code": "pass", "session": fmt.Sprintf("%s%d-%d", prefix, rep, i)})
			if err != nil {
				return nil, fmt.Errorf("ten new sessions: %w", err)
			}
			durs = append(durs, d)
		}
		out = append(out, ms(durs).pct(0.5))
		// End them so the next round does not hit the session limit.
		for i := range warmSessions {
			// The call reports the interpreter's end; the next one would start anew.
			p.call(ctx, map[string]any{"code": "import os; os._exit(0)", "session": fmt.Sprintf("%s%d-%d", prefix, rep, i)}) //nolint:errcheck
		}
	}
	return out, nil
}

// warmPass is the p50 of warm `pass` calls in one session of a and one of
// b, per round, the rounds alternating so both see the same machine.
func (h *harness) warmPass(ctx context.Context, a, b *cmProc) (sample, sample, error) {
	pass := map[string]any{"code": "pass", "session": "main"}
	for _, p := range []*cmProc{a, b} {
		for range 20 {
			if _, _, err := p.call(ctx, pass); err != nil {
				return nil, nil, fmt.Errorf("warm-up calls: %w", err)
			}
		}
	}
	var out [2]sample
	for range h.reps {
		for i, p := range []*cmProc{a, b} {
			var durs []time.Duration
			for range warmCalls {
				_, d, err := p.call(ctx, pass)
				if err != nil {
					return nil, nil, fmt.Errorf("warm calls: %w", err)
				}
				durs = append(durs, d)
			}
			out[i] = append(out[i], ms(durs).pct(0.5))
		}
	}
	return out[0], out[1], nil
}

func (rs warmResults) goals() []goal {
	var out []goal
	for _, r := range rs {
		if r.missing != "" {
			continue
		}
		rel := sample{}
		for i := range min(len(r.firstCall), len(r.coldImport)) {
			rel = append(rel, r.firstCall[i]/r.coldImport[i])
		}
		passRel := sample{}
		for i := range min(len(r.passPre), len(r.passBare)) {
			passRel = append(passRel, r.passPre[i]/r.passBare[i])
		}
		out = append(out,
			goal{r.name + ": new session's first pandas call / cold import in the sandbox", "≤ 0.10×",
				fmt.Sprintf("%s (%s ms against %s ms)", mmm(rel, "×"), num(r.firstCall.median()), num(r.coldImport.median())), rel.median() <= 0.10},
			goal{r.name + ": ten new sessions back to back, first-call p50, spare ready", "≤ 20 ms", mmm(r.tenSpare, " ms"), r.tenSpare.median() <= 20},
			goal{r.name + ": ten new sessions back to back, first-call p50, no spare", "≤ 20 ms", mmm(r.tenBare, " ms"), r.tenBare.median() <= 20},
			goal{r.name + ": codemode + ten idle sessions that imported pandas, PSS per session", "≤ 25 MiB", fmt.Sprintf("%.1f MiB", r.pssPerSession), r.pssPerSession <= 25},
			goal{r.name + ": 300 sequential `mcp_everything.echo` from code / direct SDK client", "≤ 1.3×", mmm(r.ratio, "×"), r.ratio.median() <= 1.3},
			goal{r.name + ": warm `run_python(\"pass\")` p50, preload on / off", "≤ 1× (no worse)",
				fmt.Sprintf("%s (%s ms against %s ms)", mmm(passRel, "×"), num(r.passPre.median()), num(r.passBare.median())), passRel.median() <= 1.05},
		)
		if r.zygote {
			zRel := sample{}
			for i := range min(len(r.passZygote), len(r.passBooted)) {
				zRel = append(zRel, r.passZygote[i]/r.passBooted[i])
			}
			out = append(out,
				goal{r.name + " --zygote: ten new sessions back to back, first-call p50, no spare", "≤ 20 ms", mmm(r.tenZygote, " ms"), r.tenZygote.median() <= 20},
				goal{r.name + " --zygote: codemode + ten idle sessions that imported pandas, PSS per session", "≤ 25 MiB", fmt.Sprintf("%.1f MiB", r.pssZygote), r.pssZygote <= 25},
				goal{r.name + " --zygote: warm `run_python(\"pass\")` p50, zygote on / off", "≤ 1× (no worse)",
					fmt.Sprintf("%s (%s ms against %s ms)", mmm(zRel, "×"), num(r.passZygote.median()), num(r.passBooted.median())), zRel.median() <= 1.05},
			)
		}
	}
	return out
}

func (rs warmResults) markdown() string {
	var b strings.Builder
	b.WriteString("### 6. Warm sessions: preload, spares, proxied calls\n\n")
	b.WriteString("A go-sdk client drives `codemode serve` over stdio with server-everything configured. **Cold import** runs `" + dataImports +
		"` in a fresh `python -I` started by a session inside its own sandbox (the baseline). **First data call** is a new session's first " +
		"`run_python` importing the same modules and building a DataFrame, timed by the client, with the spare ready (the harness waits " +
		"three cold imports, at least 1 s, before each). **Ten new sessions** open back to back, first call `pass`, p50 of the ten per round. " +
		"**Memory** is codemode plus every sandbox process after ten sessions ran `import pandas`, divided by the sandboxes counted (the ten, the first session, the spare). " +
		"**Echo** is 300 sequential `await mcp_everything.echo(message='x')` timed in Python (p50) against 300 calls of the go-sdk client " +
		"straight to the same server build, alternating rounds; in the same rounds, a minimal JSON-RPC client without an SDK and a **bare " +
		"forwarder** (bench/floor.go): the host's python3 sending 300 requests through a harness goroutine that only forwards each as an " +
		"echo to server-everything and the answer back, the processes and pipe hops of a proxied call without any of codemode's work: " +
		"the floor of any proxy on this machine.\n\n")
	h := []string{"measurement"}
	for _, r := range rs {
		h = append(h, r.name)
	}
	cell := func(label string, f func(*warmResult) string) []string {
		out := []string{label}
		for _, r := range rs {
			if r.missing != "" {
				out = append(out, "n/a ("+r.missing+")")
			} else {
				out = append(out, f(r))
			}
		}
		return out
	}
	rows := [][]string{
		cell("cold import in a subprocess of the sandbox (baseline)", func(r *warmResult) string { return mmm(r.coldImport, " ms") }),
		cell("new session's first data call, spare ready, preload on", func(r *warmResult) string {
			return fmt.Sprintf("%s; spare used %d/%d", mmm(r.firstCall, " ms"), r.spareUsed, r.tries)
		}),
		cell("the same, preload off (`CODEMODE_PRELOAD=none`)", func(r *warmResult) string { return mmm(r.firstCallNoPre, " ms") }),
		cell("ten new sessions, first `pass` p50, default spares, preload on", func(r *warmResult) string { return mmm(r.tenSpare, " ms") }),
		cell("ten new sessions, first `pass` p50, no spare, preload on", func(r *warmResult) string { return mmm(r.tenBare, " ms") }),
		cell("ten new sessions, first `pass` p50, no spare, preload off", func(r *warmResult) string { return mmm(r.tenBareNoPre, " ms") }),
		cell("codemode + ten idle pandas sessions, per session: PSS (RSS)", func(r *warmResult) string {
			return fmt.Sprintf("%.1f MiB (%.1f), %d sandboxes", r.pssPerSession, r.rssPerSession, r.sessions)
		}),
		cell("proxied `echo` from code, p50", func(r *warmResult) string { return mmm(r.proxied, " µs") }),
		cell("direct go-sdk `echo` to server-everything, p50", func(r *warmResult) string { return mmm(r.direct, " µs") }),
		cell("**ratio proxied / direct** (goal ≤ 1.3)", func(r *warmResult) string { return "**" + mmm(r.ratio, "×") + "**" }),
		cell("minimal JSON-RPC client (no SDK) `echo`, p50", func(r *warmResult) string { return mmm(r.raw, " µs") }),
		cell("bare forwarder: python3 → forwarding goroutine → server-everything, p50", func(r *warmResult) string { return mmm(r.forwarded, " µs") }),
		cell("floor: bare forwarder / direct", func(r *warmResult) string { return mmm(r.floor, "×") }),
		cell("codemode over the floor: proxied / bare forwarder", func(r *warmResult) string { return mmm(r.overFloor, "×") }),
		cell("warm `run_python(\"pass\")` p50, preload on", func(r *warmResult) string { return mmm(r.passPre, " ms") }),
		cell("warm `run_python(\"pass\")` p50, preload off", func(r *warmResult) string { return mmm(r.passBare, " ms") }),
	}
	zygote := func(f func(*warmResult) string) func(*warmResult) string {
		return func(r *warmResult) string {
			if !r.zygote {
				return "n/a"
			}
			return f(r)
		}
	}
	rows = append(rows,
		cell("`--zygote`, no spare: ten new sessions, first `pass` p50", zygote(func(r *warmResult) string { return mmm(r.tenZygote, " ms") })),
		cell("`--zygote`, no spare: new session's first data call", zygote(func(r *warmResult) string { return mmm(r.firstCallZygote, " ms") })),
		cell("`--zygote`: codemode + ten idle pandas sessions, per session: PSS (RSS)", zygote(func(r *warmResult) string {
			return fmt.Sprintf("%.1f MiB (%.1f), %d sessions", r.pssZygote, r.rssZygote, r.sessionsZygote)
		})),
		cell("`--zygote`: warm `run_python(\"pass\")` p50, zygote on", zygote(func(r *warmResult) string { return mmm(r.passZygote, " ms") })),
		cell("the same, zygote off (preload on, alternating rounds)", zygote(func(r *warmResult) string { return mmm(r.passBooted, " ms") })),
	)
	b.WriteString(table(h, "---:", rows))
	return b.String()
}
