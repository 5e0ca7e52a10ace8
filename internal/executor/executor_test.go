package executor

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/artifacts"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/sandbox/linuxns"
	"github.com/codemode/codemode/internal/testenv"
	"github.com/codemode/codemode/internal/wire"
	"github.com/go-json-experiment/json/jsontext"
)

// CODEMODE_ZYGOTE=1 runs these tests with sessions forked from a zygote.
var backend = sync.OnceValue(func() *linuxns.Backend {
	return linuxns.New(&linuxns.Options{Zygote: os.Getenv("CODEMODE_ZYGOTE") == "1"})
})

func newManager(t testing.TB, opts Options) *Manager {
	t.Helper()
	testenv.NativePython(t)
	opts.Backend = backend()
	m := New(opts)
	t.Cleanup(m.Close)
	return m
}

func run(t testing.TB, m *Manager, session, code string) *Result {
	t.Helper()
	return m.Run(context.Background(), Request{Owner: "test", Session: session, Code: code})
}

func stdout(r *Result) string { return strings.Join(r.Stdout.Lines(), "\n") }

func TestSpareIsClaimedAndReplaced(t *testing.T) {
	m := newManager(t, Options{Spares: 1})
	waitSpares(t, m, 1)
	r := run(t, m, "a", "x = 1\nprint('a')")
	if r.Status != StatusSuccess || stdout(r) != "a" {
		t.Fatalf("first call from a spare: %+v", r)
	}
	waitSpares(t, m, 1) // replaced in the background
	r = run(t, m, "b", "print('x' in globals())")
	if stdout(r) != "False" {
		t.Fatalf("a spare leaked state between sessions: %q", stdout(r))
	}
	// The claimed spare answers RPCs for its session (memory needs the session's principal).
	r = run(t, m, "a", "print(x)")
	if stdout(r) != "1" {
		t.Fatalf("session a lost its state: %+v", r)
	}
}

// TestSparesArePreloaded: a session handed a spare finds the preload
// modules imported (and one not installed skipped), while an interpreter
// started for a waiting call does not import them: that call would wait.
func TestSparesArePreloaded(t *testing.T) {
	m := newManager(t, Options{Spares: 1, PreloadModules: []string{"colorsys", "no_such_module_cm"}})
	waitSpares(t, m, 1)
	check := "import sys; print('colorsys' in sys.modules, 'no_such_module_cm' in sys.modules)"
	r := run(t, m, "a", check)
	if r.Status != StatusSuccess || stdout(r) != "True False" || len(r.Stderr.Lines()) != 0 {
		t.Fatalf("first call of a session given a spare: %+v", r)
	}
	bare := newManager(t, Options{PreloadModules: []string{"colorsys"}})
	r = run(t, bare, "a", check)
	if r.Status != StatusSuccess || stdout(r) != "False False" {
		t.Fatalf("an interpreter started for a waiting call preloaded: %+v", r)
	}
}

// TestPreloadLeavesNoTrace: preloading matplotlib builds font caches; they
// go to /tmp, so the session's /workspace starts empty and its environment
// is the sandbox's own.
func TestPreloadLeavesNoTrace(t *testing.T) {
	m := newManager(t, Options{Spares: 1, PreloadModules: []string{"matplotlib.pyplot"}})
	waitSpares(t, m, 1)
	r := run(t, m, "a", "import os, sys\nprint('matplotlib.pyplot' in sys.modules, sys.modules.get('matplotlib') and sys.modules['matplotlib'].get_backend())\n"+
		"print(os.listdir('/workspace'), sorted(k for k in os.environ if k.startswith(('MPL', 'XDG'))))")
	if r.Status != StatusSuccess {
		t.Fatalf("%+v", r)
	}
	if stdout(r) == "False None\n[] []" {
		t.Skip("matplotlib is not installed for the sandbox's python")
	}
	if want := "True agg\n[] ['MPLBACKEND']"; stdout(r) != want {
		t.Fatalf("after preloading matplotlib: %q, want %q", stdout(r), want)
	}
}

func waitSpares(t testing.TB, m *Manager, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(m.spares) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d spares ready after 30s, want %d", len(m.spares), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSessionCapPerClient(t *testing.T) {
	m := newManager(t, Options{MaxSessions: 4, MaxClientSessions: 1})
	ok := m.Run(context.Background(), Request{Owner: "o1", Principal: "alice", Code: "1"})
	refused := m.Run(context.Background(), Request{Owner: "o2", Principal: "alice", Code: "1"})
	other := m.Run(context.Background(), Request{Owner: "o3", Principal: "bob", Code: "1"})
	if ok.Status != StatusSuccess || other.Status != StatusSuccess {
		t.Fatalf("ok=%+v other=%+v", ok, other)
	}
	if refused.Status != StatusError || !strings.Contains(refused.Error, "session limit of client alice") {
		t.Fatalf("second session of alice: %+v", refused)
	}
}

func TestCapture(t *testing.T) {
	c := newCapture(100, 1000)
	for i := 0; i < 50; i++ {
		c.write([]byte(fmt.Sprintf("%03d\n", i)))
	}
	out := c.output()
	if out.Total != 200 || len(out.Head) != 75 || len(out.Tail) != 25 || out.Omitted() != 100 {
		t.Fatalf("capture = head %d tail %d total %d", len(out.Head), len(out.Tail), out.Total)
	}
	if !strings.HasPrefix(string(out.Head), "000\n001\n") || !strings.HasSuffix(string(out.Tail), "049\n") {
		t.Fatalf("head %q tail %q", out.Head, out.Tail)
	}
	if all, partial := c.spilled(); len(all) != 200 || partial {
		t.Fatalf("spilled %d partial %v", len(all), partial)
	}
	// Whether a stream is spilled is the result's cut to decide (Manager.fit):
	// the spool holds everything either way.
	small := newCapture(100, 1000)
	small.write([]byte("hi\n"))
	if all, _ := small.spilled(); string(all) != "hi\n" {
		t.Fatalf("spooled %q", all)
	}
}

// BenchmarkNewSession measures the first call of a brand-new session, with
// and without a spare interpreter ready.
func BenchmarkNewSession(b *testing.B) {
	for _, spares := range []int{0, 1} {
		b.Run(fmt.Sprintf("spares=%d", spares), func(b *testing.B) {
			m := newManager(b, Options{Spares: spares})
			var durs []time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				if spares > 0 {
					waitSpares(b, m, spares)
				}
				b.StartTimer()
				t0 := time.Now()
				r := m.Run(context.Background(), Request{Owner: "bench", Session: fmt.Sprint("s", i), Code: "pass"})
				durs = append(durs, time.Since(t0))
				if r.Status != StatusSuccess {
					b.Fatalf("%+v", r)
				}
				b.StopTimer()
				m.CloseOwner("bench")
				b.StartTimer()
			}
			sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
			b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

type ctxKey struct{}

// recordingRouter answers every request with [] and records what the
// handler would see.
type recordingRouter struct {
	mu    sync.Mutex
	seen  []string
	value any
}

func (r *recordingRouter) Serve(ctx context.Context, req *hostrpc.Request) (jsontext.Value, *wire.RPCError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, req.Method+" "+req.Caller.Principal+"/"+req.Caller.Owner+"/"+req.Caller.Session)
	r.value = ctx.Value(ctxKey{})
	return jsontext.Value("[]"), nil
}

// TestRequestsCarryTheCallersContext checks that the code's requests reach
// the router naming their session and principal, with the run_python
// request's context values (the client, for approvals), but not its
// cancellation.
func TestRequestsCarryTheCallersContext(t *testing.T) {
	router := &recordingRouter{}
	m := newManager(t, Options{Router: router})
	ctx := context.WithValue(context.Background(), ctxKey{}, "the client")
	r := m.Run(ctx, Request{Owner: "conn-1", Session: "s", Principal: "alice", Code: "from mcp import runtime\nprint(runtime.list_servers_sync())"})
	if r.Status != StatusSuccess || stdout(r) != "()" {
		t.Fatalf("run: %+v", r)
	}
	if len(router.seen) != 1 || router.seen[0] != "list_servers alice/conn-1/s" || router.value != "the client" {
		t.Fatalf("router saw %v with value %v", router.seen, router.value)
	}
}

// TestProcessLimitIsNamed checks that hitting the process limit says which
// limit it was and which processes hold it, and that processes a call leaves
// running are reported at its end rather than silently counted against the
// next call.
func TestProcessLimitIsNamed(t *testing.T) {
	m := newManager(t, Options{Limits: sandbox.Limits{MemoryBytes: 512 << 20, PIDs: 16}, BootConfig: func() jsontext.Value { return jsontext.Value(`{"pids":16}`) }})
	r := run(t, m, "p", "import subprocess\nps = [subprocess.Popen(['sleep', '60']) for _ in range(2)]")
	if r.Status != StatusSuccess || !strings.Contains(strings.Join(r.Stderr.Lines(), "\n"), "note: 2 processes started in this session are still running (") ||
		!strings.Contains(strings.Join(r.Stderr.Lines(), "\n"), "sleep 60") {
		t.Fatalf("leftover processes not reported: %+v\nstderr: %s", r, strings.Join(r.Stderr.Lines(), "\n"))
	}
	r = run(t, m, "p", "import subprocess\nmore = [subprocess.Popen(['sleep', '60']) for _ in range(40)]")
	if r.Status != StatusError || !strings.Contains(r.Error, "the sandbox's process limit (16 processes and threads) was reached") ||
		!strings.Contains(r.Error, "other processes are running in this session") {
		t.Fatalf("process limit: %+v\nstderr: %s", r, strings.Join(r.Stderr.Lines(), "\n"))
	}
}

// TestFitSpillsWhatItCuts checks that a stream cut by Options.Fit (below
// OutputLimit) is kept in full as a session file and linked, and that the
// result is fitted again once the link is in.
func TestFitSpillsWhatItCuts(t *testing.T) {
	files, err := artifacts.New(artifacts.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	fits := 0
	fit := func(r *Result) bool {
		fits++
		if len(r.Stdout.Head) <= 100 {
			return false
		}
		r.Stdout = Output{Head: r.Stdout.Head[:50], Tail: r.Stdout.Head[len(r.Stdout.Head)-50:], Total: r.Stdout.Total}
		return true
	}
	m := newManager(t, Options{Artifacts: files, SpoolLimit: 1 << 20, Fit: fit})
	r := run(t, m, "f", "print('x' * 5000)")
	if r.Stdout.Omitted() != 5001-100 || len(r.Files) != 1 || r.Files[0].Size != 5001 || fits != 2 {
		t.Fatalf("omitted %d, files %+v, fits %d", r.Stdout.Omitted(), r.Files, fits)
	}
	if r = run(t, m, "f", "print('short')"); len(r.Files) != 0 {
		t.Fatalf("uncut output was spilled: %+v", r.Files)
	}
}

// slowHuman answers every request after wait, with the call's clock stopped
// when pause is set (as the policy gate does while a human decides).
type slowHuman struct {
	wait  time.Duration
	pause bool
}

func (h slowHuman) Serve(ctx context.Context, req *hostrpc.Request) (jsontext.Value, *wire.RPCError) {
	if h.pause {
		defer hostrpc.PauseTimeout(ctx)()
	}
	time.Sleep(h.wait)
	return jsontext.Value("[]"), nil
}

// TestTimeoutStopsWhileAHumanDecides checks that time spent waiting for an
// approval does not count against the call's timeout, and that it does
// without the pause.
func TestTimeoutStopsWhileAHumanDecides(t *testing.T) {
	code := "from mcp import runtime\nprint(runtime.list_servers_sync())"
	for _, tc := range []struct {
		pause bool
		want  string
	}{{true, StatusSuccess}, {false, StatusTimeout}} {
		m := newManager(t, Options{Router: slowHuman{wait: 2500 * time.Millisecond, pause: tc.pause}, DefaultTimeout: time.Second, MaxTimeout: time.Second, InterruptGrace: time.Second})
		if r := run(t, m, "h", code); r.Status != tc.want {
			t.Errorf("pause=%v: status %s, want %s (%+v)", tc.pause, r.Status, tc.want, r)
		}
	}
}

// TestSessionsReportMemory checks that a live native session says how much
// memory its sandbox uses (the console shows it), from its cgroup.
func TestSessionsReportMemory(t *testing.T) {
	m := newManager(t, Options{})
	if r := run(t, m, "m", "x = bytearray(64 << 20)"); r.Status != StatusSuccess {
		t.Fatalf("run: %+v", r)
	}
	infos := m.Sessions()
	if len(infos) != 1 {
		t.Fatalf("sessions = %+v", infos)
	}
	switch n := infos[0].MemoryBytes; {
	case n == -1:
		t.Skip("this host gives the native sandbox no memory cgroup; nothing to measure")
	case n < 64<<20:
		t.Errorf("a session holding 64 MiB reports %d bytes", n)
	}
}

// TestCloseWaitsForClosingConnections: a connection that closed just before
// shutdown has its sessions out of the map but still being killed; Close
// must not return before their sandboxes are gone.
func TestCloseWaitsForClosingConnections(t *testing.T) {
	m := New(Options{Backend: backend()})
	testenv.NativePython(t)
	if r := run(t, m, "a", "x = 1"); r.Status != StatusSuccess {
		t.Fatalf("run: %+v", r)
	}
	m.mu.Lock()
	in := m.sessions[key{"test", "a"}].interp()
	m.mu.Unlock()
	go m.CloseOwner("test")
	for deadline := time.Now().Add(10 * time.Second); ; {
		m.mu.Lock()
		n := len(m.sessions)
		m.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("CloseOwner did not take the session")
		}
		time.Sleep(time.Millisecond)
	}
	m.Close()
	select {
	case <-in.Dead():
	default:
		t.Fatal("Close returned while a closing connection's sandbox was still alive")
	}
}

// TestExistingAndClose: a session that must exist is refused when it does
// not, and closing one (with or without code) ends its sandbox and its state.
func TestExistingAndClose(t *testing.T) {
	m := newManager(t, Options{})
	ctx := context.Background()
	tests := []struct {
		name       string
		req        Request
		wantStatus string
		wantOut    string
		wantErr    string
		wantLive   bool
	}{
		{"missing handle refused", Request{Owner: "p", Session: "h", Existing: true, Code: "1"}, StatusError, "", "no such session \"h\"", false},
		{"created", Request{Owner: "p", Session: "h", Code: "x = 41"}, StatusSuccess, "", "", true},
		{"existing reached", Request{Owner: "p", Session: "h", Existing: true, Code: "print(x + 1)"}, StatusSuccess, "42", "", true},
		{"other owner cannot reach it", Request{Owner: "q", Session: "h", Existing: true, Code: "print(x)"}, StatusError, "", "no such session", true},
		{"runs then closes", Request{Owner: "p", Session: "h", Existing: true, Close: true, Code: "print(x)"}, StatusSuccess, "41", "", false},
		{"gone after close", Request{Owner: "p", Session: "h", Existing: true, Code: "1"}, StatusError, "", "no such session", false},
		{"named again starts afresh", Request{Owner: "p", Session: "h", Code: "print('x' in globals())"}, StatusSuccess, "False", "", true},
		{"close without code", Request{Owner: "p", Session: "h", Close: true}, StatusSuccess, "", "", false},
		{"close of nothing", Request{Owner: "p", Session: "h", Close: true}, StatusError, "", "no such session", false},
	}
	for _, tc := range tests {
		r := m.Run(ctx, tc.req)
		if r.Status != tc.wantStatus || stdout(r) != tc.wantOut || !strings.Contains(r.Error, tc.wantErr) {
			t.Errorf("%s: status %s out %q error %q", tc.name, r.Status, stdout(r), r.Error)
		}
		live := false
		for _, s := range m.Sessions() {
			if s.Owner == "p" && s.Name == "h" {
				live = true
			}
		}
		if live != tc.wantLive {
			t.Errorf("%s: live = %v, want %v", tc.name, live, tc.wantLive)
		}
	}
}

// TestEvictionAtTheCap: a new session that meets a cap closes its
// principal's least recently used idle evictable session; named sessions,
// busy ones and other principals' are never evicted.
func TestEvictionAtTheCap(t *testing.T) {
	m := newManager(t, Options{MaxSessions: 3})
	ctx := context.Background()
	call := func(req Request) *Result {
		t.Helper()
		req.Code = cmp.Or(req.Code, "1")
		return m.Run(ctx, req)
	}
	call(Request{Owner: "alice", Principal: "alice", Session: "h1", Evictable: true})
	call(Request{Owner: "alice", Principal: "alice", Session: "h2", Evictable: true})
	call(Request{Owner: "bob", Principal: "bob", Session: "named"})
	call(Request{Owner: "alice", Principal: "alice", Session: "h1", Code: "x = 1"}) // h2 is now the least recent
	if r := call(Request{Owner: "alice", Principal: "alice", Session: "h3", Evictable: true}); r.Status != StatusSuccess {
		t.Fatalf("alice's third handle: %+v", r)
	}
	if r := call(Request{Owner: "alice", Principal: "alice", Session: "h2", Existing: true}); !strings.Contains(r.Error, "no such session") {
		t.Errorf("the least recently used handle survived: %+v", r)
	}
	if r := call(Request{Owner: "alice", Principal: "alice", Session: "h1", Existing: true, Code: "print(x)"}); stdout(r) != "1" {
		t.Errorf("a more recent handle was evicted: %+v", r)
	}
	// Bob has no evictable session: at the cap he is refused, and alice's
	// handles are not his to evict.
	if r := call(Request{Owner: "bob", Principal: "bob", Session: "other"}); !strings.Contains(r.Error, "session limit reached") {
		t.Errorf("bob at the cap: %+v", r)
	}
	if !m.Live("alice", "h1") || !m.Live("alice", "h3") || !m.Live("bob", "named") {
		t.Errorf("sessions after the cap: %+v", m.Sessions())
	}
}
