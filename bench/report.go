package main

import (
	"fmt"
	"strings"
	"time"
)

// goal is one target of the issue or BENCHMARKS.md against this run.
type goal struct {
	what, target, result string
	met                  bool
}

// result is what a section hands to the report.
type result interface {
	markdown() string
	goals() []goal
}

// sectionRun is one section as it ran.
type sectionRun struct {
	name         string
	res          result // nil when it failed
	err          error
	took         time.Duration
	load0, load1 string
	waited       time.Duration // for idle CPUs before it started (waitIdle)
	busy         float64       // the CPUs' busy share when it started, -1 if unknown
}

// report is the whole Markdown output.
type report struct {
	command, machine      string
	took                  time.Duration
	loadBefore, loadAfter string
	sections              []sectionRun
	notes                 []string
}

func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Harness run (`%s`)\n\n", r.command)
	fmt.Fprintf(&b, "%s\n\n", r.machine)
	fmt.Fprintf(&b, "Run took %s; load average (1/5/15 min) before **%s**, after **%s** (2 cores: a load above 2 means the run competed for CPU). "+
		"Each cell is the median of the repetitions, with (min–max) across them; ratios are taken within one run.\n\n",
		r.took.Round(time.Second), r.loadBefore, r.loadAfter)
	var goals []goal
	for _, s := range r.sections {
		if s.res != nil {
			goals = append(goals, s.res.goals()...)
		}
	}
	if len(goals) > 0 {
		b.WriteString("### Goals\n\n")
		b.WriteString("Targets are those the issues and the core tables set; each result is the median with (min–max), from the sections below.\n\n")
		b.WriteString(goalsMarkdown(goals))
		b.WriteString("\n")
	}
	for _, s := range r.sections {
		if s.err != nil {
			fmt.Fprintf(&b, "### Section %s failed\n\n```\n%s\n```\n", s.name, s.err)
		} else {
			b.WriteString(s.res.markdown())
		}
		fmt.Fprintf(&b, "\n_Section time %s; it started after %s waiting for idle CPUs (%s); load average before %s, after %s._\n\n",
			s.took.Round(time.Second), s.waited.Round(100*time.Millisecond), busyText(s.busy), s.load0, s.load1)
	}
	if len(r.notes) > 0 {
		b.WriteString("Notes from this run:\n\n")
		for _, n := range r.notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func goalsMarkdown(gs []goal) string {
	var rows [][]string
	for _, g := range gs {
		rows = append(rows, []string{g.what, g.target, g.result, metStr(g.met)})
	}
	return table([]string{"goal", "target", "this run", "met"}, "---", rows)
}

func metStr(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**missed**"
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// table renders rows of cells under a header.
func table(header []string, align string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for i := range header {
		if i == 0 {
			b.WriteString("---|")
		} else {
			b.WriteString(align + "|")
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

func backendHeader(rs []*backendResult, first string) []string {
	h := []string{first}
	for _, r := range rs {
		h = append(h, r.name)
	}
	return h
}

// row makes a table row: one cell per backend, "n/a" where it was not measured.
func row(label string, rs []*backendResult, cell func(*backendResult) string) []string {
	out := []string{label}
	for _, r := range rs {
		if r.missing != "" {
			out = append(out, "n/a")
		} else {
			out = append(out, cell(r))
		}
	}
	return out
}

func backendsMarkdown(rs []*backendResult) string {
	var b strings.Builder
	b.WriteString("### 3. Latency and throughput per sandbox backend\n\n")
	b.WriteString("A go-sdk client drives `codemode serve` over stdio. The downstream server for proxied calls is the test suite's Go MCP server " +
		"(`internal/downstream/downstreamtest`, tools `echo` and `sleep`), run by codemode for the proxied calls and by a go-sdk client of the harness " +
		"for the direct ones. podman and gVisor use podman with runc / runsc, docker the private dockerd of `scripts/testdeps.sh`; the container " +
		"backends run the Python image that script builds, the native backend the host's `/usr`.\n\n")
	var rows [][]string
	rows = append(rows,
		row("cold session start, no spare (`CODEMODE_SPARES=0`), first `pass` of a new session", rs, func(r *backendResult) string { return mmm(r.coldNoSpare, " ms") }),
		row("cold session start, spare ready (default `CODEMODE_SPARES=1`)", rs, func(r *backendResult) string {
			return fmt.Sprintf("%s; spare used %d/%d", mmm(r.coldSpare, " ms"), r.spareUsed, r.spareTries)
		}),
		row("warm `run_python(\"pass\")` over MCP stdio, p50", rs, func(r *backendResult) string { return mmm(r.passP50, " ms") }),
		row("warm `run_python(\"pass\")` over MCP stdio, p99", rs, func(r *backendResult) string { return mmm(r.passP99, " ms") }),
		row("proxied `echo` call from Python (`await mcp_tools.echo`), p50", rs, func(r *backendResult) string { return mmm(r.proxied, " µs") }),
		row("direct go-sdk `echo` call to the same server, p50", rs, func(r *backendResult) string { return mmm(r.directCall, " µs") }),
		row("**ratio proxied / direct** (goal ≤ 1.3)", rs, func(r *backendResult) string { return "**" + mmm(r.ratio, "×") + "**" }),
		row("32 × `sleep(50 ms)` one by one", rs, func(r *backendResult) string { return mmm(r.seq, " ms") }),
		row("32 × `sleep(50 ms)` with `asyncio.gather`", rs, func(r *backendResult) string { return mmm(r.gather, " ms") }),
		row("**gather speed-up** (goal ≥ 8×)", rs, func(r *backendResult) string { return "**" + mmm(r.speedup, "×") + "**" }),
		row("16 sessions at once: 16 sessions started together, wall", rs, func(r *backendResult) string {
			return num(float64(r.sessionStartAll.Microseconds())/1000) + " ms"
		}),
		row("16 sessions at once: `pass` calls per second", rs, func(r *backendResult) string { return mmm(r.cps, "/s") }),
		row("16 sessions at once: call latency p50", rs, func(r *backendResult) string { return mmm(r.concP50, " ms") }),
		row("16 sessions at once: call latency p99", rs, func(r *backendResult) string {
			s := mmm(r.concP99, " ms")
			if r.concErrors > 0 {
				s += fmt.Sprintf(" (%d errors)", r.concErrors)
			}
			return s
		}),
	)
	b.WriteString(table(backendHeader(rs, "measurement"), "---:", rows))
	var missing []string
	var how string
	for _, r := range rs {
		if r.missing != "" {
			missing = append(missing, fmt.Sprintf("**%s**: %s", r.name, r.missing))
		} else if how == "" {
			how = fmt.Sprintf("Repetitions: cold starts %d per mode (the spare case waits three no-spare cold starts' time, at least 500 ms, between "+
				"sessions so the replacement spare is ready; \"spare used\" counts the sessions codemode's log says started from a spare); warm calls "+
				"%d rounds of %d after 20 warm-up calls (p50 and p99 per round); proxied and direct %d rounds of %d calls each, alternating, "+
				"after 30 and 50 warm-up calls; gather %d rounds; 16 sessions: %d rounds of %s, each of 16 goroutines calling `pass` in its own "+
				"session on one MCP connection (with `CODEMODE_MAX_CLIENT_CALLS=16`: the default limit of 8 concurrent calls per client applies to stdio too).", len(r.coldNoSpare), r.warmRounds, r.warmCalls, len(r.proxied), r.proxyCalls, len(r.seq),
				r.concRounds, concRound)
		}
	}
	if how != "" {
		b.WriteString("\n" + how + "\n")
	}
	if len(missing) > 0 {
		b.WriteString("\nNot measured: " + strings.Join(missing, "; ") + ".\n")
	}
	return b.String()
}

func memoryMarkdown(rs []*backendResult) string {
	var b strings.Builder
	b.WriteString("### 4. Memory\n\n")
	b.WriteString("Resident memory from `/proc/PID/smaps_rollup`: RSS, with PSS (shared pages split among the processes mapping them) in " +
		"parentheses. \"Sandbox\" counts every process below codemode (sandbox inits and interpreters, or one engine CLI per container) plus, " +
		"for container backends, the processes running its containers (conmon or containerd-shim, runsc's sentry and gofer, the container's own); " +
		"the engine daemons (dockerd, containerd) are not counted. Idle means started, with the one spare interpreter ready and no session.\n\n")
	mb := func(m mem) string { return fmt.Sprintf("%.1f MiB (%.1f)", mib(m.rss), mib(m.pss)) }
	rows := [][]string{
		row("codemode process, idle", rs, func(r *backendResult) string { return mb(r.cmIdle) }),
		row("codemode process, 16 sessions (after the load above)", rs, func(r *backendResult) string { return mb(r.cm16) }),
		row("sandboxes, idle (the spare)", rs, func(r *backendResult) string { return fmt.Sprintf("%s, %d sandbox(es)", mb(r.sbIdle), r.sbIdleN) }),
		row("sandboxes, 16 sessions", rs, func(r *backendResult) string { return fmt.Sprintf("%s, %d sandboxes", mb(r.sb16), r.sb16N) }),
		row("**per idle session** (sandboxes with 16 sessions / their count)", rs, func(r *backendResult) string {
			if r.sb16N == 0 {
				return "–"
			}
			return "**" + mb(mem{r.sb16.rss / r.sb16N, r.sb16.pss / r.sb16N}) + "**"
		}),
		row("codemode + sandboxes, 16 sessions", rs, func(r *backendResult) string { return mb(r.cm16.add(r.sb16)) }),
	}
	b.WriteString(table(backendHeader(rs, "resident memory"), "---:", rows))
	return b.String()
}

// busyText says how busy the CPUs were when a section started.
func busyText(busy float64) string {
	if busy < 0 {
		return "their load unknown"
	}
	return fmt.Sprintf("%.0f %% busy then", busy*100)
}
