package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestToolSchema(t *testing.T) {
	s := startServer(t)
	res, err := s.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "run_python" {
		t.Fatalf("tools = %+v, want exactly run_python", res.Tools)
	}
	tool := res.Tools[0]
	if !strings.Contains(tool.Description, "runtime.capability_summary()") {
		t.Errorf("description %q does not point to runtime.capability_summary()", tool.Description)
	}
	schema, _ := tool.InputSchema.(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	for _, name := range []string{"code", "servers", "timeout", "session", "reset", "close"} {
		if _, ok := props[name]; !ok {
			t.Errorf("schema lacks %q: %v", name, schema)
		}
	}
	timeout, _ := props["timeout"].(map[string]any)
	if timeout["type"] != "integer" || timeout["minimum"] != 1.0 || timeout["maximum"] != 120.0 || timeout["default"] != 30.0 {
		t.Errorf("timeout schema = %v, want integer 1..120 default 30", timeout)
	}
	if req, _ := schema["required"].([]any); len(req) != 1 || req[0] != "code" {
		t.Errorf("required = %v, want [code]", schema["required"])
	}
	// The whole entry is what every prompt pays for; bench/ counts real
	// tokens, this keeps the size from creeping.
	data, _ := json.Marshal(tool)
	if len(data) > 1000 {
		t.Errorf("tools/list entry is %d bytes, want at most 1000: %s", len(data), data)
	}
}

func TestSchemaFollowsSettings(t *testing.T) {
	s := startServer(t, "MCP_BRIDGE_TIMEOUT=10s", "MCP_BRIDGE_MAX_TIMEOUT=60")
	res, err := s.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	timeout := res.Tools[0].InputSchema.(map[string]any)["properties"].(map[string]any)["timeout"].(map[string]any)
	if timeout["default"] != 10.0 || timeout["maximum"] != 60.0 {
		t.Fatalf("timeout schema = %v, want default 10 max 60", timeout)
	}
	r := s.call(t, map[string]any{"code": "1", "timeout": 61})
	if st := structured(t, r); st["status"] != "validation_error" {
		t.Fatalf("timeout 61 with max 60: %v", st)
	}
}

func TestResults(t *testing.T) {
	s := startServer(t)
	tests := []struct {
		name       string
		code       string
		status     string
		exitCode   any // float64, or nil for absent
		text       []string
		notText    []string
		stdout     []string
		stderrHas  []string
		errorField string
	}{
		{name: "success", code: "print('a\\n\\nb')\nprint('()')\nprint('   ')", status: "success", exitCode: 0.0,
			text: []string{"a\n\nb\n()\n   "}, stdout: []string{"a", "", "b", "()", "   "}},
		{name: "no output", code: "x = 1", status: "success", exitCode: 0.0, text: []string{"Success (no output)"}},
		{name: "echo last expression", code: "21 * 2", status: "success", exitCode: 0.0, stdout: []string{"42"}},
		{name: "None not echoed", code: "None", status: "success", text: []string{"Success (no output)"}},
		{name: "exception", code: "def f():\n    raise ValueError('boom')\nprint('before')\nf()", status: "error", exitCode: 1.0,
			text:    []string{"status: error", "exit: 1", "before", "stderr:", "ValueError: boom", `File "<cell-`, "line 4, in <module>", "line 2, in f"},
			notText: []string{"/codemode/", "_codemode", "error: "}, stderrHas: []string{"Traceback (most recent call last):"}, errorField: "ValueError: boom"},
		{name: "sys.exit(3)", code: "import sys\nprint('bye')\nsys.exit(3)", status: "error", exitCode: 3.0,
			text: []string{"status: error", "exit: 3", "bye"}, errorField: "Sandbox exited with code 3"},
		{name: "sys.exit(0)", code: "import sys; sys.exit(0)", status: "success", exitCode: 0.0},
		{name: "syntax error", code: "x = (", status: "error", exitCode: 1.0, text: []string{"SyntaxError"}, notText: []string{"Traceback"}},
		{name: "input sees EOF", code: "input()", status: "error", errorField: "EOFError: EOF when reading a line"},
		{name: "stderr", code: "import sys; print('warn', file=sys.stderr)", status: "success", text: []string{"stderr:\nwarn"}},
		{name: "os.write and subprocess output", code: "import os, subprocess\n_ = os.write(1, b'raw\\n')\n_ = subprocess.run(['echo', 'child'])", status: "success", stdout: []string{"raw", "child"}},
		{name: "top-level await", code: "import asyncio\nawait asyncio.sleep(0.01)\n'awaited'", status: "success", stdout: []string{"'awaited'"}},
		{name: "exception chain keeps user frames only", code: "try:\n    1/0\nexcept ZeroDivisionError as e:\n    raise RuntimeError('wrapped') from e", status: "error",
			text: []string{"ZeroDivisionError", "direct cause", "RuntimeError: wrapped"}, notText: []string{"/codemode/"}},
		{name: "sandbox user", code: "import os; print(os.getuid(), os.getgid(), os.getcwd())", status: "success", stdout: []string{"65534 65534 /workspace"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := s.run(t, tc.code)
			st := structured(t, res)
			txt := text(res)
			if st["status"] != tc.status {
				t.Fatalf("status = %v, want %s; text:\n%s", st["status"], tc.status, txt)
			}
			if res.IsError != (tc.status != "success") {
				t.Errorf("isError = %v for status %s", res.IsError, tc.status)
			}
			if tc.exitCode != nil && st["exitCode"] != tc.exitCode {
				t.Errorf("exitCode = %v, want %v", st["exitCode"], tc.exitCode)
			}
			if st["summary"] == nil || st["summary"] == "" {
				t.Errorf("summary missing: %v", st)
			}
			for _, want := range tc.text {
				if !strings.Contains(txt, want) {
					t.Errorf("text lacks %q:\n%s", want, txt)
				}
			}
			for _, bad := range tc.notText {
				if strings.Contains(txt, bad) {
					t.Errorf("text contains %q:\n%s", bad, txt)
				}
			}
			if tc.stdout != nil {
				if got := lines(st["stdout"]); !slices.Equal(got, tc.stdout) {
					t.Errorf("stdout = %q, want %q", got, tc.stdout)
				}
			}
			for _, want := range tc.stderrHas {
				if !strings.Contains(strings.Join(lines(st["stderr"]), "\n"), want) {
					t.Errorf("stderr lacks %q: %v", want, st["stderr"])
				}
			}
			if tc.errorField != "" && st["error"] != tc.errorField {
				t.Errorf("error = %v, want %q", st["error"], tc.errorField)
			}
		})
	}
}

func TestValidation(t *testing.T) {
	s := startServer(t)
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "Missing 'code' argument"},
		{map[string]any{"code": "   "}, "Missing 'code' argument"},
		{map[string]any{"code": 5}, "Missing 'code' argument"},
		{map[string]any{"code": "1", "servers": "x"}, "'servers' must be a list"},
		{map[string]any{"code": "1", "timeout": "five"}, "'timeout' must be an integer"}, // a quoted number ("5") is accepted
		{map[string]any{"code": "1", "timeout": 1.5}, "'timeout' must be an integer"},
		{map[string]any{"code": "1", "timeout": 0}, "'timeout' must be between 1 and 120 seconds"},
		{map[string]any{"code": "1", "timeout": 121}, "'timeout' must be between 1 and 120 seconds"},
		{map[string]any{"code": "1", "session": "../x"}, "'session' must be"},
		{map[string]any{"code": "1", "reset": "yes"}, "'reset' must be a boolean"},
		{map[string]any{"code": "1", "timout": 5}, "unknown argument(s) 'timout'"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			res := s.call(t, tc.args)
			st := structured(t, res)
			if st["status"] != "validation_error" || !res.IsError {
				t.Fatalf("status = %v isError = %v, want validation_error", st["status"], res.IsError)
			}
			if e, _ := st["error"].(string); !strings.HasPrefix(e, tc.want) {
				t.Errorf("error = %q, want prefix %q", e, tc.want)
			}
			if txt := text(res); !strings.HasPrefix(txt, "status: validation_error\n"+tc.want) {
				t.Errorf("text = %q", txt)
			}
		})
	}
}

func TestSessionState(t *testing.T) {
	s := startServer(t)
	s.run(t, "import math\ncounter = 41\ndef bump(n=1):\n    global counter\n    counter += n\n    return counter")
	if got := lines(structured(t, s.run(t, "bump()"))["stdout"]); !slices.Equal(got, []string{"42"}) {
		t.Fatalf("state not kept: %q", got)
	}
	if got := lines(structured(t, s.run(t, "print(math.pi > 3, counter)"))["stdout"]); !slices.Equal(got, []string{"True 42"}) {
		t.Fatalf("imports not kept: %q", got)
	}
	res := s.call(t, map[string]any{"code": "counter", "reset": true})
	if st := structured(t, res); st["status"] != "error" || !strings.Contains(st["error"].(string), "NameError") {
		t.Fatalf("after reset: %v", st)
	}
	// Named sessions are separate.
	s.call(t, map[string]any{"code": "where = 'a'", "session": "a"})
	s.call(t, map[string]any{"code": "where = 'b'", "session": "b"})
	if got := lines(structured(t, s.call(t, map[string]any{"code": "where", "session": "a"}))["stdout"]); !slices.Equal(got, []string{"'a'"}) {
		t.Fatalf("session a sees %q", got)
	}
	if st := structured(t, s.call(t, map[string]any{"code": "1", "session": "b"})); st["session"] != "b" {
		t.Fatalf("session field = %v", st["session"])
	}
}

func TestTimeout(t *testing.T) {
	s := startServer(t)
	s.run(t, "kept = 'still here'")
	// The loop keeps how long it has run: the session survives the
	// interrupt, so the next call can tell when the code was stopped,
	// free of the time calls spend outside the sandbox on a loaded machine.
	res := s.call(t, map[string]any{"code": "import time\nt0 = time.monotonic()\nprint('spinning', flush=True)\nwhile True: ran = time.monotonic() - t0", "timeout": 2})
	st := structured(t, res)
	if st["status"] != "timeout" || st["timeoutSeconds"] != 2.0 || st["error"] != "Execution timed out after 2s" {
		t.Fatalf("timeout result = %v", st)
	}
	if txt := text(res); !strings.HasPrefix(txt, "status: timeout\nspinning") || !strings.Contains(txt, "error: Execution timed out after 2s") {
		t.Errorf("text = %q", txt)
	}
	// The interrupt kept the session alive, and came on time: well before
	// the default 30s timeout.
	got := lines(structured(t, s.run(t, "print(kept)\nprint(ran)"))["stdout"])
	if len(got) != 2 || got[0] != "still here" {
		t.Fatalf("after timeout: %q", got)
	}
	if ran, err := strconv.ParseFloat(got[1], 64); err != nil || ran > 10 {
		t.Errorf("the code ran for %s s under a 2 s timeout", got[1])
	}
}

func TestTimeoutInterruptsBlockingCalls(t *testing.T) {
	s := startServer(t)
	s.run(t, "kept = 2")
	for _, code := range []string{"import time\ntime.sleep(100)", "import asyncio\nawait asyncio.sleep(100)", "import threading\nthreading.Event().wait()"} {
		res := s.call(t, map[string]any{"code": code, "timeout": 1})
		st := structured(t, res)
		if st["status"] != "timeout" || st["stateLost"] != nil {
			t.Fatalf("%q: %v (want a timeout that keeps the session)", code, st)
		}
		if got := lines(structured(t, s.run(t, "kept"))["stdout"]); !slices.Equal(got, []string{"2"}) {
			t.Fatalf("after %q: %q", code, got)
		}
	}
}

func TestTimeoutKillsStubbornCode(t *testing.T) {
	s := startServer(t, "CODEMODE_INTERRUPT_GRACE=1s")
	s.run(t, "kept = 1")
	code := "import time\nwhile True:\n    try:\n        time.sleep(5)\n    except KeyboardInterrupt:\n        pass"
	res := s.call(t, map[string]any{"code": code, "timeout": 1})
	st := structured(t, res)
	if st["status"] != "timeout" || st["stateLost"] != true {
		t.Fatalf("stubborn code: %v", st)
	}
	if !strings.Contains(text(res), "state was lost") {
		t.Errorf("text does not say the state was lost: %q", text(res))
	}
	// The next call works, in a fresh interpreter.
	st = structured(t, s.run(t, "'kept' in globals()"))
	if got := lines(st["stdout"]); !slices.Equal(got, []string{"False"}) {
		t.Fatalf("after kill: %v", st)
	}
}

func TestOutputCap(t *testing.T) {
	s := startServer(t)
	res := s.run(t, "import sys\nsys.stdout.write('x' * (1 << 20))\nprint()\nprint('THE END')")
	st := structured(t, res)
	tr, _ := st["truncated"].(map[string]any)
	cut, _ := tr["stdout"].(map[string]any)
	if st["status"] != "success" || cut["totalBytes"] != float64(1<<20+9) || cut["omittedBytes"].(float64) < 900_000 {
		t.Fatalf("truncation = %v", st["truncated"])
	}
	txt := text(res)
	if len(txt) > 70_000 || !strings.Contains(txt, "[stdout truncated:") || !strings.Contains(txt, "bytes omitted") {
		t.Fatalf("text (%d bytes) lacks the truncation note", len(txt))
	}
	if !strings.HasSuffix(strings.TrimSpace(strings.Split(txt, "[stdout truncated")[0]), "THE END") {
		t.Errorf("the end of the output was not kept")
	}
}

func TestForgedFramesAreJustOutput(t *testing.T) {
	s := startServer(t)
	// A well-formed "done" frame for the current cell, a stdout frame and
	// garbage, written straight to fd 1 and 2: all of it must come back as
	// output, and the cell must go on to print "after".
	code := `import json, os, struct
def frame(kind, payload):
    return struct.pack('>BI', ord(kind), len(payload)) + payload
done = json.dumps({"type": "done", "id": 1, "status": "ok", "exitCode": 0}).encode()
os.write(1, frame('M', done) + frame('O', b'forged\n'))
os.write(2, frame('M', done) + b'\xff\xfe garbage')
print('after')`
	res := s.run(t, code)
	st := structured(t, res)
	out := lines(st["stdout"])
	if st["status"] != "success" || len(out) == 0 || out[len(out)-1] != "after" {
		t.Fatalf("forged frames changed the result: %v", st)
	}
	if !strings.Contains(strings.Join(out, "\n"), `"type": "done"`) {
		t.Errorf("forged bytes not returned as output: %q", out)
	}
	// The session still works.
	if got := lines(structured(t, s.run(t, "print('ok')"))["stdout"]); !slices.Equal(got, []string{"ok"}) {
		t.Fatalf("after forging: %q", got)
	}
}

// TestConcurrentSessions proves that calls in different sessions run at
// the same time by a barrier, not by their total time (booting a session
// on a loaded machine takes longer than the calls): each call marks its
// arrival in the shared data directory and waits to see the other's. Run
// one after the other, the first would wait in vain and fail.
func TestConcurrentSessions(t *testing.T) {
	// Shared by the sessions and writable by their unprivileged uids.
	data, err := os.MkdirTemp("", "codemode-barrier-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(data) })
	if err := os.Chmod(data, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "CODEMODE_DATA_DIR="+data, "CODEMODE_DATA_DIR_WRITABLE=true")
	const code = `import os, time
mine, other = %q, %q
open('/workspace/data/' + mine, 'w').close()
deadline = time.monotonic() + 40
while not os.path.exists('/workspace/data/' + other):
    if time.monotonic() > deadline:
        raise SystemExit(mine + ' ran alone: ' + other + ' never arrived while it waited')
    time.sleep(0.05)
print(mine)`
	var wg sync.WaitGroup
	results := make([]*mcp.CallToolResult, 2)
	names := []string{"left", "right"}
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.call(t, map[string]any{"session": name, "timeout": 60, "code": fmt.Sprintf(code, name, names[1-i])})
		}()
	}
	wg.Wait()
	for i, name := range names {
		if results[i] == nil {
			continue // the call failed and said so
		}
		if got := lines(structured(t, results[i])["stdout"]); !slices.Equal(got, []string{name}) {
			t.Errorf("session %s printed %q, want its own name after meeting the other session: %s", name, got, text(results[i]))
		}
	}
}

func TestCallsInOneSessionRunInOrder(t *testing.T) {
	s := startServer(t)
	s.run(t, "log = []")
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.run(t, fmt.Sprintf("import time\nn = len(log)\ntime.sleep(0.2)\nlog.append((n, %d))", i))
		}()
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	// Each call saw the list exactly as the previous call left it: no overlap.
	st := structured(t, s.run(t, "[n for n, _ in log]"))
	if got := lines(st["stdout"]); !slices.Equal(got, []string{"[0, 1, 2, 3]"}) {
		t.Fatalf("calls overlapped: %v", got)
	}
}

func TestSessionLimit(t *testing.T) {
	s := startServer(t, "CODEMODE_MAX_SESSIONS=2")
	for _, name := range []string{"one", "two"} {
		if st := structured(t, s.call(t, map[string]any{"code": "1", "session": name})); st["status"] != "success" {
			t.Fatalf("session %s: %v", name, st)
		}
	}
	st := structured(t, s.call(t, map[string]any{"code": "1", "session": "three"}))
	if st["status"] != "error" || !strings.Contains(st["error"].(string), "session limit reached (2 sessions in use)") {
		t.Fatalf("third session: %v", st)
	}
	if st := structured(t, s.call(t, map[string]any{"code": "1", "session": "one"})); st["status"] != "success" {
		t.Fatalf("existing session after refusal: %v", st)
	}
}

func TestIdleTimeout(t *testing.T) {
	s := startServer(t, "CODEMODE_IDLE_TIMEOUT=1s")
	s.run(t, "x = 1")
	time.Sleep(2500 * time.Millisecond)
	st := structured(t, s.run(t, "'x' in globals()"))
	if got := lines(st["stdout"]); !slices.Equal(got, []string{"False"}) {
		t.Fatalf("idle session kept its state: %v", st)
	}
	if !strings.Contains(s.stderr.String(), "session expired after idle timeout") {
		t.Errorf("idle expiry not logged")
	}
}

func TestCapabilitiesResource(t *testing.T) {
	s := startServer(t, "MCP_BRIDGE_MEMORY=300m")
	list, err := s.cs.ListResources(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Resources) != 1 {
		t.Fatalf("resources = %+v", list.Resources)
	}
	r := list.Resources[0]
	if r.URI != "resource://mcp-server-code-execution-mode/capabilities" || r.Name != "code-execution-capabilities" || r.MIMEType != "text/markdown" {
		t.Fatalf("resource = %+v", r)
	}
	read, err := s.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: r.URI})
	if err != nil {
		t.Fatal(err)
	}
	c := read.Contents[0]
	// No size is listed: the document is live (the policy in force, the
	// packages once probed), so a listed size could be stale.
	if c.MIMEType != r.MIMEType || r.Size != 0 {
		t.Errorf("read mimeType %q size %d, listed %q %d", c.MIMEType, len(c.Text), r.MIMEType, r.Size)
	}
	for _, want := range []string{"memory 300 MiB", "128 processes", "30s by default", "no-network: enforced", "runtime.capability_summary()"} {
		if !strings.Contains(c.Text, want) {
			t.Errorf("capabilities text lacks %q:\n%s", want, c.Text)
		}
	}
	// The same text is the in-sandbox manual.
	st := structured(t, s.run(t, "print(runtime.capability_summary())"))
	if diff := cmp.Diff(strings.TrimRight(c.Text, "\n"), strings.TrimRight(strings.Join(lines(st["stdout"]), "\n"), "\n")); diff != "" {
		t.Errorf("capability_summary() differs from the resource (-resource +printed):\n%s", diff)
	}
	if _, err := s.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "resource://nope"}); err == nil {
		t.Error("unknown resource read succeeded")
	}
}
