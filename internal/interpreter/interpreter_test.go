package interpreter

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/sandbox/linuxns"
	"github.com/codemode/codemode/internal/testenv"
	"github.com/codemode/codemode/internal/wire"
	"github.com/go-json-experiment/json/jsontext"
)

var backend = sync.OnceValue(func() *linuxns.Backend { return linuxns.New(nil) })

func start(t testing.TB, opts Options) *Interpreter {
	t.Helper()
	testenv.NativePython(t)
	opts.Backend = backend()
	if opts.Spec.ID == "" {
		opts.Spec.ID = "it-" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-")
	}
	opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	in, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	t.Cleanup(func() { in.Kill(context.Background()) })
	return in
}

type collected struct {
	mu             sync.Mutex
	stdout, stderr strings.Builder
}

func (c *collected) fn(s Stream, d []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s == Stderr {
		c.stderr.Write(d)
	} else {
		c.stdout.Write(d)
	}
}

func execWait(t *testing.T, in *Interpreter, code string) (CellResult, *collected) {
	t.Helper()
	var out collected
	c, err := in.Exec(ExecRequest{Code: code, Output: out.fn})
	if err != nil {
		t.Fatalf("Exec(%q) = %v", code, err)
	}
	select {
	case <-c.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("cell %q did not finish", code)
	}
	return c.Result(), &out
}

func TestExecOutcomes(t *testing.T) {
	in := start(t, Options{})
	tests := []struct {
		code, status, stdout, errSub string
		exit                         int
	}{
		{"x = 41\nprint('hi')", wire.StatusOK, "hi\n", "", 0},
		{"x + 1", wire.StatusOK, "42\n", "", 0},
		{"raise ValueError('boom')", wire.StatusError, "", "ValueError: boom", 1},
		{"import sys; sys.exit(3)", wire.StatusExit, "", "SystemExit: 3", 3},
	}
	for _, tc := range tests {
		r, out := execWait(t, in, tc.code)
		if r.Status != tc.status || r.ExitCode != tc.exit || out.stdout.String() != tc.stdout || !strings.Contains(r.Error, tc.errSub) {
			t.Errorf("%q: result %+v stdout %q", tc.code, r, out.stdout.String())
		}
	}
}

func TestOutputStreamsWhileRunning(t *testing.T) {
	in := start(t, Options{})
	got := make(chan string, 10)
	c, err := in.Exec(ExecRequest{Code: "import time\nprint('early', flush=True)\ntime.sleep(2)\nprint('late')", Output: func(s Stream, d []byte) { got <- string(d) }})
	if err != nil {
		t.Fatal(err)
	}
	var early string
	for early != "early\n" {
		select {
		case chunk := <-got:
			early += chunk
		case <-c.Done():
			t.Fatalf("cell finished before its first line arrived (%q): output is not streamed", early)
		}
	}
	<-c.Done()
}

func TestInterrupt(t *testing.T) {
	in := start(t, Options{})
	c, err := in.Exec(ExecRequest{Code: "while True: pass"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := c.Interrupt(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("interrupt ignored")
	}
	if r := c.Result(); r.Status != wire.StatusInterrupted {
		t.Fatalf("result %+v", r)
	}
	if r, _ := execWait(t, in, "1"); r.Status != wire.StatusOK {
		t.Fatalf("after interrupt: %+v", r)
	}
}

func TestDeathIsReported(t *testing.T) {
	in := start(t, Options{})
	r, _ := execWait(t, in, "import os; os._exit(5)")
	if !r.Died || r.Exit.Code != 5 {
		t.Fatalf("result %+v, want Died with code 5", r)
	}
	select {
	case <-in.Dead():
	default:
		t.Fatal("interpreter not marked dead")
	}
	if _, err := in.Exec(ExecRequest{Code: "1"}); err != ErrDead {
		t.Fatalf("Exec after death = %v, want ErrDead", err)
	}
}

func TestOutputBetweenCellsGoesToNextCell(t *testing.T) {
	in := start(t, Options{})
	execWait(t, in, "import threading, time\nthreading.Thread(target=lambda: (time.sleep(0.3), print('background', flush=True))).start()")
	time.Sleep(800 * time.Millisecond)
	_, out := execWait(t, in, "print('next')")
	if got := out.stdout.String(); got != "background\nnext\n" {
		t.Fatalf("stdout %q", got)
	}
}

func TestRPC(t *testing.T) {
	in := start(t, Options{RPC: func(ctx context.Context, method string, params jsontext.Value) (jsontext.Value, *wire.RPCError) {
		if method == "echo" {
			return params, nil
		}
		return nil, &wire.RPCError{Kind: "unknown", Message: "no such method " + method}
	}})
	// Talk to the host the way mcp.runtime does, through the session's RPC client.
	r, out := execWait(t, in, "import mcp.runtime as rt\nprint(rt._session.rpc.call('echo', {'a': [1, 2]}))\ntry:\n    rt._session.rpc.call('nope', {})\nexcept Exception as e:\n    print(type(e).__name__, e)")
	if r.Status != wire.StatusOK {
		t.Fatalf("result %+v stderr %q", r, out.stderr.String())
	}
	if got := out.stdout.String(); got != "{'a': [1, 2]}\nMCPError no such method nope\n" {
		t.Fatalf("stdout %q", got)
	}
}

// On the native backend (sandbox.Direct) a call a thread waits for goes
// over the direct pipes, which the host serves on their own goroutine (the
// calls would hang otherwise), and the gathered calls the event loop waits
// for go over the channel.
func TestDirectRPC(t *testing.T) {
	in := start(t, Options{RPC: func(ctx context.Context, method string, params jsontext.Value) (jsontext.Value, *wire.RPCError) {
		return params, nil
	}})
	r, out := execWait(t, in, "import asyncio, mcp.runtime as rt\nc = rt._session.rpc\nchannel = []\n"+
		"through = c._call_via_channel\nc._call_via_channel = lambda m, p: channel.append(p) or through(m, p)\n"+
		"print((c._direct.requests, c._direct.replies), [c.call('echo', i) for i in range(3)], await c.acall('echo', 3))\n"+
		"print(await asyncio.gather(*[c.acall('echo', i) for i in range(4, 8)]), channel)")
	if r.Status != wire.StatusOK {
		t.Fatalf("result %+v stderr %q", r, out.stderr.String())
	}
	want := fmt.Sprintf("(%d, %d) [0, 1, 2] 3\n[4, 5, 6, 7] []\n", sandbox.DirectRequestFD, sandbox.DirectReplyFD)
	if got := out.stdout.String(); got != want {
		t.Fatalf("stdout %q, want %q", got, want)
	}
}

// A sandbox that writes anything but RPCs to its direct request pipe is
// killed: nothing it sends afterwards can be trusted.
func TestDirectPipeProtocolError(t *testing.T) {
	in := start(t, Options{})
	c, err := in.Exec(ExecRequest{Code: fmt.Sprintf("import os\nos.write(%d, b'garbage that is no frame')\nimport time\ntime.sleep(30)", sandbox.DirectRequestFD)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the sandbox lives on after writing garbage to its direct pipe")
	}
	if r := c.Result(); !r.Died {
		t.Fatalf("cell result %+v, want the sandbox dead", r)
	}
}

func TestPing(t *testing.T) {
	in := start(t, Options{})
	if d, err := in.Ping(t.Context()); err != nil || d <= 0 {
		t.Fatalf("Ping() = %v, %v", d, err)
	}
}

func TestBootFailureIsReported(t *testing.T) {
	_, err := Start(t.Context(), Options{Backend: backend(), Spec: sandbox.Spec{ID: "it-nopython"}, Python: "no-such-python"})
	if err == nil || !strings.Contains(err.Error(), "no-such-python not found") {
		t.Fatalf("Start with a missing interpreter = %v", err)
	}
}
