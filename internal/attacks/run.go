package attacks

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode/codemode/internal/app"
	"github.com/codemode/codemode/internal/executor"
	"github.com/codemode/codemode/internal/sandbox/seccomp"
	"github.com/codemode/codemode/internal/settings"
	"github.com/go-json-experiment/json"
)

// Verdict is the outcome of one attack on one backend.
type Verdict string

const (
	Blocked Verdict = "blocked"
	// Contained: the attack's call succeeded inside gVisor's user-space
	// kernel, which is not the host's (the attack's gvisor header says why).
	Contained Verdict = "contained"
	Escaped   Verdict = "escaped"
	// Failed: the suite could not tell (no verdict, broken fixture); a
	// failure of the suite, not of the sandbox, but CI fails on it too.
	Failed Verdict = "error"
)

// Result is one attack's outcome on one backend.
type Result struct {
	Attack   string
	Category string
	Backend  string
	Verdict  Verdict
	How      string // how it was blocked, or what got out
	Duration time.Duration
}

// Options configure one run of the suite against one backend.
type Options struct {
	// Settings are codemode's settings; Backend (and Image, Runtime,
	// OCIRuntime, Rootfs, limits) pick what is attacked. The suite points
	// StateDir and DataDir at its fixtures.
	Settings settings.Settings
	Environ  []string // codemode's environment (os.Environ())
	Attacks  []Attack // default: the whole corpus
	// Parallel is how many parallel-safe attacks run at once (default 4);
	// the others run alone afterwards, so host-wide counts stay exact.
	Parallel int
	TempDir  string    // where the fixtures go (default os.TempDir())
	Log      io.Writer // codemode's own log (default: discarded); its volume is checked
	OnResult func(Result)
}

// Run runs the attacks against one backend and returns their results in
// corpus order. An error means the suite could not run at all.
//
// Run plants a secret in this process's environment for its duration (it
// is codemode's environment, which no sandbox may see).
func Run(ctx context.Context, opts Options) ([]Result, error) {
	attacks := opts.Attacks
	if attacks == nil {
		var err error
		if attacks, err = Corpus(); err != nil {
			return nil, err
		}
	}
	tmp := opts.TempDir
	if tmp == "" {
		tmp = os.TempDir()
	}
	fx, err := newFixtures(tmp)
	if err != nil {
		return nil, err
	}
	defer fx.close()

	envSecret := fx.secret("codemode's own environment variable")
	prev, had := os.LookupEnv(secretEnv)
	os.Setenv(secretEnv, envSecret)
	defer func() {
		if had {
			os.Setenv(secretEnv, prev)
		} else {
			os.Unsetenv(secretEnv)
		}
	}()
	environ := append(slices.Clone(opts.Environ), secretEnv+"="+envSecret, "HOME="+fx.home)

	s := opts.Settings
	s.StateDir = fx.stateDir
	if b, err := app.NewBackend(s.Backend, s, opts.Environ, slog.New(slog.DiscardHandler)); err != nil || app.MountBlocker(b) == "" {
		// The data directory is attacked wherever the backend can mount it.
		s.DataDir, s.DataWritable = fx.dataDir, true
	}
	// Egress is on wherever the backend can carry it, so the whole corpus
	// runs against sandboxes that have a way out: the echo fixture and any
	// name resolving to loopback are allowed by name, a secret is bound to
	// a host that does not exist.
	egress := app.EgressBlocker(s, environ) == ""
	if egress {
		s.EgressAllow = []string{fmt.Sprintf("127.0.0.1:%d", fx.egressPort), "localhost:*", egressSecretHost}
		s.EgressSecrets = []string{egressSecretEnv + "=" + egressSecretHost, fmt.Sprintf("%s=127.0.0.1:%d", egressEchoSecretEnv, fx.egressPort)}
		environ = append(environ, egressSecretEnv+"="+fx.egressToken, egressEchoSecretEnv+"="+fx.egressEchoToken)
	}
	s.Spares = 0 // no interpreter starts behind the process counts' back
	parallel := opts.Parallel
	if parallel <= 0 {
		parallel = 4
	}
	s.MaxSessions = max(s.MaxSessions, parallel+4)
	s.MaxClientSessions = 0
	logOut := opts.Log
	if logOut == nil {
		logOut = io.Discard
	}
	logBytes := &countingWriter{w: logOut}
	log := slog.New(slog.NewTextHandler(logBytes, &slog.HandlerOptions{Level: slog.LevelInfo}))
	self, _ := os.Executable()
	a, err := app.New(ctx, s, app.Inputs{Environ: environ, Home: fx.home, Cwd: fx.root,
		ConfigFiles: []string{fx.config}, Self: []string{self}}, log)
	if err != nil {
		return nil, fmt.Errorf("attacks: starting codemode: %w", err)
	}
	defer a.Close()

	r := &runner{app: a, fx: fx, settings: s, logBytes: logBytes, backend: a.Backend.Name(), egress: egress}
	r.host, err = r.hostInfo(environ)
	if err != nil {
		return nil, err
	}
	victimSecret := fx.secret("another session's files and memory")
	if res := a.Executor.Run(ctx, executor.Request{Owner: "victim", Principal: "victim", Code: fx.victimSetup(victimSecret),
		Timeout: 60 * time.Second}); res.Status != executor.StatusSuccess {
		return nil, fmt.Errorf("attacks: setting up the victim session: %s: %s %s", res.Status, res.Error, lines(res.Stderr))
	}
	defer a.Executor.CloseOwner("victim")

	results := make([]Result, len(attacks))
	record := func(i int, res Result) {
		results[i] = res
		if opts.OnResult != nil {
			opts.OnResult(res)
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	var recordMu sync.Mutex
	for i, at := range attacks {
		if !at.Parallel {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res := r.attack(ctx, at)
			recordMu.Lock()
			record(i, res)
			recordMu.Unlock()
		}()
	}
	wg.Wait()
	for i, at := range attacks {
		if !at.Parallel {
			record(i, r.attack(ctx, at))
		}
	}
	return results, ctx.Err()
}

type runner struct {
	app      *app.App
	fx       *fixtures
	settings settings.Settings
	host     string // the HOST = ... prelude
	logBytes *countingWriter
	backend  string
	egress   bool       // sandboxes have the egress proxy (HOST["egress"])
	victimMu sync.Mutex // victim checks run one at a time
	seq      atomic.Int64
}

// hostInfo is the HOST dictionary the attack programs read: the fixtures
// they may aim at and the limits in force.
func (r *runner) hostInfo(environ []string) (string, error) {
	s, fx := r.settings, r.fx
	host := map[string]any{
		"backend":         r.backend,
		"home":            fx.home,
		"state_dir":       fx.stateDir,
		"config_file":     fx.config,
		"markers":         fx.markers,
		"data_dir":        sandboxDataDir,
		"data_root_file":  fx.rootFile,
		"env_secret_name": secretEnv,
		"host_ips":        hostIPs(),
		"host_pid":        os.Getpid(),
		"tcp_port":        fx.tcpPort,
		"udp_port":        fx.udpPort,
		"abstract":        fx.abstract,
		"docker_socket":   dockerSocket(environ),
		"machine_id":      machineID(),
		"upstream":        upstreamName,
		"victim_key":      fx.victimKey,
		"victim_files":    fx.victimFiles,
		"seccomp_denied":  seccomp.Denied,
		"egress":          nil,
		"pod_network":     podNetwork(r.backend),
		"limits": map[string]any{"memory": s.MemoryBytes, "pids": s.PIDs, "cpus": s.CPUs,
			"tmp": s.TmpBytes, "workspace": s.WorkspaceBytes},
	}
	if r.egress {
		host["egress"] = map[string]any{"port": fx.egressPort, "secret_env": egressSecretEnv, "secret_host": egressSecretHost,
			"echo_secret_env": egressEchoSecretEnv}
	}
	data, err := json.Marshal(host)
	if err != nil {
		return "", err
	}
	quoted, err := json.Marshal(string(data))
	if err != nil {
		return "", err
	}
	// A JSON string is a valid Python string literal.
	return "import json as _json\nHOST = _json.loads(" + string(quoted) + ")\ndel _json\n", nil
}

func (r *runner) program(a Attack) string {
	host := r.host
	if a.Has("stopped") {
		inside := "/tmp/heartbeat" // no data directory: the beats stay in the sandbox
		if r.settings.DataDir != "" {
			_, inside = r.fx.heartbeat(a)
		}
		host += "HEARTBEAT = " + strconv.Quote(inside) + "\n"
	}
	return host + library() + "\n# --- " + a.File + "\n" + a.Source
}

// attack runs one attack in a fresh session of its own and judges it from
// the program's verdict and the host-side checks.
func (r *runner) attack(ctx context.Context, a Attack) Result {
	// Each attack is a client of its own (owner and principal), so one
	// attack's saved memory cannot pass for another's finding.
	if a.Need("data-dir") && r.settings.DataDir == "" {
		return Result{Attack: a.Name, Category: a.Category, Backend: r.backend, Verdict: Blocked,
			How: "no data directory: codemode refuses --data-dir on this backend (" + app.MountBlocker(r.app.Backend) + ")"}
	}
	n := r.seq.Add(1)
	owner, principal := fmt.Sprintf("attack-%d-%s", n, a.Name), fmt.Sprintf("attacker-%d", n)
	j := &judge{attack: a, backend: r.backend}
	obs := r.observe(a)
	start := time.Now()
	res := r.app.Executor.Run(ctx, executor.Request{Owner: owner, Principal: principal, Code: r.program(a), Timeout: a.Timeout})
	dur := time.Since(start)
	obs.stop()
	j.program(res)
	r.check(a, res, dur, obs, j)

	// Whatever the attack did, codemode must go on serving this client.
	next := r.app.Executor.Run(ctx, executor.Request{Owner: owner, Principal: principal, Code: "print('alive')", Timeout: 30 * time.Second})
	if next.Status != executor.StatusSuccess || !strings.Contains(lines(next.Stdout), "alive") {
		j.escaped("codemode could not run the next call (%s: %s)", next.Status, next.Error)
	}
	if a.Need("victim") {
		r.checkVictim(ctx, j)
	}
	r.app.Executor.CloseOwner(owner)
	if a.Has("procs-after") {
		ns := pidNamespace(lines(res.Stdout))
		switch left := survivors(ns, procsAfterWait); {
		case ns == "":
			j.fail("the attack did not print its pid namespace (PIDNS line)")
		case len(left) > 0:
			j.escaped("%d processes of the sandbox's pid namespace outlived the session: %s", len(left), strings.Join(left, ", "))
		default:
			j.blocked("no process of the sandbox's pid namespace outlived the session")
		}
	}
	v, how := j.verdict()
	return Result{Attack: a.Name, Category: a.Category, Backend: r.backend, Verdict: v, How: how, Duration: dur}
}

func (r *runner) checkVictim(ctx context.Context, j *judge) {
	r.victimMu.Lock()
	defer r.victimMu.Unlock()
	res := r.app.Executor.Run(ctx, executor.Request{Owner: "victim", Principal: "victim", Code: r.fx.checkVictim(), Timeout: 30 * time.Second})
	out := lines(res.Stdout)
	switch {
	case res.Status != executor.StatusSuccess:
		j.fail("the victim session could not be checked: %s %s", res.Error, lines(res.Stderr))
	case !strings.Contains(out, "memory True"):
		j.escaped("the victim client's memory was changed")
	case strings.Contains(out, "victim_tool") || strings.Contains(out, "attack_persist"):
		j.escaped("the attacker's saved tool appears among the victim client's")
	default:
		j.blocked("the victim client's memory and tools are untouched")
	}
}

// podNetwork reports whether the backend's sandboxes have a network
// interface of their own, isolated by a NetworkPolicy (Kubernetes Pods).
func podNetwork(backend string) bool {
	b, ok := app.LookupBackend(backend)
	return ok && b.Expect.PodNetwork
}

// judge collects what the program and the host saw.
type judge struct {
	attack     Attack
	backend    string
	escapes    []string // host checks and the program
	programEsc bool     // the program itself reported an escape
	hows       []string
	fails      []string
}

func (j *judge) escaped(format string, args ...any) {
	j.escapes = append(j.escapes, fmt.Sprintf(format, args...))
}
func (j *judge) blocked(format string, args ...any) {
	j.hows = append(j.hows, fmt.Sprintf(format, args...))
}
func (j *judge) fail(format string, args ...any) {
	j.fails = append(j.fails, fmt.Sprintf(format, args...))
}

// program reads the program's VERDICT line.
func (j *judge) program(res *executor.Result) {
	out := lines(res.Stdout)
	verdict := ""
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "VERDICT "); ok {
			verdict = v
		}
	}
	switch {
	case strings.HasPrefix(verdict, "escaped "):
		j.programEsc = true
		j.escaped("%s", strings.TrimPrefix(verdict, "escaped "))
	case strings.HasPrefix(verdict, "blocked "):
		j.blocked("%s", strings.TrimPrefix(verdict, "blocked "))
	case j.attack.Has("died-ok") && res.StateLost: // the executor marks every sandbox death
		j.blocked("the host ended the sandbox (%s)", firstLine(res.Error))
	case j.attack.Has("timeout") && res.Status == executor.StatusTimeout:
		// judged by the timeout check
	case verdict != "":
		j.fail("%s", verdict)
	default:
		j.fail("no verdict (status %s: %s; stderr: %s)", res.Status, firstLine(res.Error), tail(lines(res.Stderr), 300))
	}
}

func (j *judge) verdict() (Verdict, string) {
	switch {
	case len(j.escapes) > 0 && j.backend == "gvisor" && j.attack.Gvisor != "" && j.programEsc && len(j.escapes) == 1:
		return Contained, strings.TrimPrefix(j.attack.Gvisor, "contained: ") + " (inside gVisor: " + j.escapes[0] + ")"
	case len(j.escapes) > 0:
		return Escaped, strings.Join(j.escapes, "; ")
	case len(j.fails) > 0:
		return Failed, strings.Join(j.fails, "; ")
	}
	return Blocked, strings.Join(j.hows, "; ")
}

// lines is the kept text of an output (head and tail).
func lines(o executor.Output) string {
	return strings.Join(o.Lines(), "\n")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

type countingWriter struct {
	mu sync.Mutex
	w  io.Writer
	n  int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += int64(len(p))
	return c.w.Write(p)
}

func (c *countingWriter) count() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// allText is everything a result hands back to the model.
func allText(res *executor.Result) []byte {
	var b bytes.Buffer
	for _, o := range []executor.Output{res.Stdout, res.Stderr} {
		b.Write(o.Head)
		b.Write(o.Tail)
	}
	b.WriteString(res.Error)
	for _, n := range res.Notes {
		b.WriteString(n)
	}
	for _, f := range res.Files {
		b.WriteString(f.Name)
	}
	return b.Bytes()
}
