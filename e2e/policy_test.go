package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// policyFile is a fixture of testdata/policy, as a CODEMODE_POLICY setting.
func policyFile(name string) string {
	return "CODEMODE_POLICY=" + filepath.Join("testdata", "policy", name)
}

// policyServers configures the real filesystem server as "fs", rooted at a
// new directory holding other.txt and secret.txt, and the reference server
// as "everything". It returns the root and the CODEMODE_CONFIG setting.
func policyServers(t *testing.T) (root, config string) {
	t.Helper()
	root = t.TempDir()
	for name, content := range map[string]string{"other.txt": "other content", "secret.txt": "the secret"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, writeConfig(t, map[string]any{
		"fs":         npmServer(t, "@modelcontextprotocol/server-filesystem", root),
		"everything": npmServer(t, "@modelcontextprotocol/server-everything", "stdio"),
	})
}

// attempt runs one tool call in the sandbox and returns "ok <text>" or
// "<kind> <message>" of the MCPError it raised. call is a Python
// expression; ROOT names the filesystem server's root in it.
func (s *server) attempt(t *testing.T, root, call string, args ...any) string {
	t.Helper()
	code := fmt.Sprintf("import json\nROOT = %q\ntry:\n    r = await %s\n    out = 'ok ' + (r.text or '')\nexcept runtime.MCPError as e:\n    out = '%%s %%s' %% (e.kind, e)\nprint(json.dumps(out))", root, call)
	return decodeLine(t, s.stdoutOf(t, code))
}

func decodeLine(t *testing.T, stdout []string) string {
	t.Helper()
	var out string
	if len(stdout) != 1 || json.Unmarshal([]byte(stdout[0]), &out) != nil {
		t.Fatalf("want one JSON string, got %q", stdout)
	}
	return out
}

// startWithClient is startServer for a client of the test's own (one that
// answers elicitations, say).
func startWithClient(t *testing.T, client *mcp.Client, opts *mcp.ClientSessionOptions, env ...string) *server {
	t.Helper()
	cmd := exec.Command(codemodeBin, "serve")
	cmd.Env = append(baseEnv(t), env...)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 15 * time.Second}, opts)
	if err != nil {
		t.Fatalf("connecting to codemode: %v\nstderr:\n%s", err, stderr.String())
	}
	serverPIDs.Store(cmd.Process.Pid, true)
	s := &server{cs: cs, cmd: cmd, stderr: stderr}
	t.Cleanup(func() {
		s.cs.Close()
		if st := s.cmd.ProcessState; st == nil || !st.Exited() || st.ExitCode() != 0 {
			t.Errorf("codemode did not exit cleanly after stdin closed: %v", st)
		}
		if t.Failed() {
			t.Logf("codemode stderr:\n%s", s.stderr.String())
		}
	})
	return s
}

// TestPolicyDecisions drives testdata/policy/rules.toml against the real
// filesystem and reference servers: rules by glob and by CEL condition,
// first match wins, per-run limits, and what denials hide from discovery.
func TestPolicyDecisions(t *testing.T) {
	root, config := policyServers(t)
	s := startServer(t, config, policyFile("rules.toml"))

	for _, c := range []struct {
		name, call, want string
		notOnDisk        string // a file the call must not have created
	}{
		{name: "deny by glob", call: "mcp_fs.write_file(path=ROOT + '/new.txt', content='x')",
			want: "denied fs.write_file is denied by policy (rules[2], line 17): agents may not write files", notOnDisk: "new.txt"},
		{name: "deny by condition on the arguments", call: "mcp_fs.read_text_file(path=ROOT + '/secret.txt')",
			want: "denied fs.read_text_file is denied by policy (rules[3], line 23): secrets stay on the host"},
		{name: "condition false: the default allows", call: "mcp_fs.read_text_file(path=ROOT + '/other.txt')",
			want: "ok other content"},
		{name: "allow before a broader deny", call: "mcp_fs.list_allowed_directories()",
			want: "ok Allowed directories:\n" + root},
		{name: "the broader deny", call: "mcp_fs.list_directory(path=ROOT)",
			want: "denied fs.list_directory is denied by policy (rules[1], line 11): listing directories is off"},
		{name: "server-level deny: the server does not exist for code", call: "runtime.call_tool('everything', 'echo', {'message': 'hi'})",
			want: "unknown_server Unknown MCP server: everything (configured: fs)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := s.attempt(t, root, c.call); got != c.want {
				t.Errorf("%s\n got: %q\nwant: %q", c.call, got, c.want)
			}
			if c.notOnDisk != "" {
				if _, err := os.Stat(filepath.Join(root, c.notOnDisk)); !os.IsNotExist(err) {
					t.Errorf("%s exists (stat: %v): the denied call reached the server", c.notOnDisk, err)
				}
			}
		})
	}

	t.Run("max_calls_per_run", func(t *testing.T) {
		got := s.stdoutOf(t, "ROOT = "+fmt.Sprintf("%q", root)+"\nfor i in range(4):\n    try:\n        r = await mcp_fs.read_text_file(path=ROOT + '/other.txt')\n        print('ok', r.text)\n    except runtime.MCPError as e:\n        print(e.kind, e.server, e.tool, e)")
		if len(got) != 4 || !slices.Equal(got[:3], []string{"ok other content", "ok other content", "ok other content"}) ||
			!strings.HasPrefix(got[3], "limit fs read_text_file ") || !strings.Contains(got[3], "3") {
			t.Fatalf("4 calls with max_calls_per_run = 3: %q", got)
		}
		// The count is per run_python call.
		if got := s.attempt(t, root, "mcp_fs.read_text_file(path=ROOT + '/other.txt')"); got != "ok other content" {
			t.Fatalf("the next run_python call: %q", got)
		}
	})

	t.Run("unconditional denials are hidden", func(t *testing.T) {
		got := s.stdoutOf(t, "import json\nprint(json.dumps({\n"+
			"  'list_tools': [t['name'] for t in await runtime.list_tools('fs')],\n"+
			"  'list_tools_sync': [t['name'] for t in runtime.list_tools_sync('fs')],\n"+
			"  'describe_server': [t['name'] for t in runtime.describe_server('fs')['tools']],\n"+
			"  'query_tool_docs': [d['tool'] for d in await runtime.query_tool_docs('fs')],\n"+
			"  'search_tool_docs': [d['server'] + '.' + d['tool'] for d in await runtime.search_tool_docs('write a file or list a directory', limit=20)],\n"+
			"  'discovered_servers': list(runtime.discovered_servers()),\n"+
			"  'list_servers': list(await runtime.list_servers()),\n"+
			"  'globals': [n for n in globals() if n.startswith('mcp_') and n != 'mcp_servers'],\n"+
			"  'mcp_servers': list(mcp_servers),\n"+
			"}))")
		var d map[string][]string
		if len(got) != 1 || json.Unmarshal([]byte(got[0]), &d) != nil {
			t.Fatalf("discovery: %q", got)
		}
		hidden := []string{"write_file", "list_directory", "list_directory_with_sizes"}
		visible := []string{"list_allowed_directories", "read_text_file", "edit_file"}
		for _, key := range []string{"list_tools", "list_tools_sync", "describe_server", "query_tool_docs"} {
			for _, h := range hidden {
				if slices.Contains(d[key], h) {
					t.Errorf("%s shows the denied tool %s: %v", key, h, d[key])
				}
			}
			for _, v := range visible {
				if !slices.Contains(d[key], v) {
					t.Errorf("%s lacks the allowed tool %s: %v", key, v, d[key])
				}
			}
		}
		if len(d["search_tool_docs"]) == 0 {
			t.Errorf("search found nothing")
		}
		for _, hit := range d["search_tool_docs"] {
			if tool, ok := strings.CutPrefix(hit, "fs."); !ok || slices.Contains(hidden, tool) {
				t.Errorf("search shows the denied %s: %v", hit, d["search_tool_docs"])
			}
		}
		for _, key := range []string{"discovered_servers", "globals", "mcp_servers"} {
			if got := d[key]; len(got) != 1 || !strings.HasSuffix(got[0], "fs") {
				t.Errorf("%s = %v, want only fs (everything is denied)", key, got)
			}
		}
		// Searching started every server it could; the hidden one never starts.
		if slices.Contains(d["list_servers"], "everything") {
			t.Errorf("the hidden server was started: %v", d["list_servers"])
		}
		for _, call := range []string{"runtime.query_tool_docs('fs', 'write_file')", "runtime.list_tools('everything')"} {
			got := s.attempt(t, root, call)
			if !strings.HasPrefix(got, "unknown_") {
				t.Errorf("%s: %q, want an unknown tool or server", call, got)
			}
		}
	})
}

// auditRecord is the part of an audit log line the tests check.
type auditRecord struct {
	Seq      int            `json:"seq"`
	Kind     string         `json:"kind"`
	CallID   string         `json:"call_id"`
	Server   string         `json:"server"`
	Tool     string         `json:"tool"`
	Args     map[string]any `json:"args"`
	Decision string         `json:"decision"`
	Rule     string         `json:"rule"`
	Reason   string         `json:"reason"`
	Outcome  string         `json:"outcome"`
	Session  string         `json:"session"`
}

// TestPolicyAuditLog checks the records allowed, denied and limited calls
// leave, and that `codemode audit verify` holds the chain and finds an
// edited line.
func TestPolicyAuditLog(t *testing.T) {
	root, config := policyServers(t)
	logPath := filepath.Join(t.TempDir(), "audit.log")
	s := startServer(t, config, policyFile("rules.toml"), "CODEMODE_AUDIT_LOG="+logPath)
	got := s.stdoutOf(t, "ROOT = "+fmt.Sprintf("%q", root)+"\n"+
		"for call in [lambda: mcp_fs.read_text_file(path=ROOT + '/other.txt'), lambda: mcp_fs.read_text_file(path=ROOT + '/secret.txt'),\n"+
		"             lambda: mcp_fs.list_allowed_directories(), lambda: mcp_fs.read_text_file(path=ROOT + '/other.txt'),\n"+
		"             lambda: mcp_fs.read_text_file(path=ROOT + '/other.txt')]:\n"+
		"    try:\n        await call()\n        print('ok')\n    except runtime.MCPError as e:\n        print(e.kind)")
	if !slices.Equal(got, []string{"ok", "denied", "ok", "ok", "limit"}) {
		t.Fatalf("calls: %q", got)
	}
	// Closing the session ends codemode, which flushes the log.
	s.cs.Close()

	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var recs []auditRecord
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r auditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", len(recs)+1, err, sc.Bytes())
		}
		recs = append(recs, r)
	}
	type row struct{ kind, tool, decision, rule, outcome, file string }
	want := []row{
		{"decision", "read_text_file", "allow", "default", "", "other.txt"},
		{"call", "read_text_file", "allow", "default", "ok", ""},
		{"decision", "read_text_file", "deny", "rules[3]", "denied", "secret.txt"},
		{"decision", "list_allowed_directories", "allow", "rules[0]", "", ""},
		{"call", "list_allowed_directories", "allow", "rules[0]", "ok", ""},
		{"decision", "read_text_file", "allow", "default", "", "other.txt"},
		{"call", "read_text_file", "allow", "default", "ok", ""},
		{"decision", "read_text_file", "allow", "default", "limit", "other.txt"},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(recs), len(want), data)
	}
	for i, w := range want {
		r := recs[i]
		if r.Seq != i+1 || r.Kind != w.kind || r.Server != "fs" || r.Tool != w.tool || r.Decision != w.decision ||
			r.Rule != w.rule || r.Outcome != w.outcome || r.Session != "default" {
			t.Errorf("record %d = %+v, want %+v", i+1, r, w)
		}
		if path, _ := r.Args["path"].(string); w.file != "" && path != filepath.Join(root, w.file) {
			t.Errorf("record %d: args %v, want the path of %s", i+1, r.Args, w.file)
		}
		if w.kind == "call" && r.CallID != recs[i-1].CallID {
			t.Errorf("record %d: call_id %q is not its decision's %q", i+1, r.CallID, recs[i-1].CallID)
		}
	}
	if recs[2].Reason != "secrets stay on the host" {
		t.Errorf("the denial's reason: %q", recs[2].Reason)
	}

	verify := func() (string, int) {
		cmd := exec.Command(codemodeBin, "audit", "verify", logPath)
		cmd.Env = baseEnv(t)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	if out, code := verify(); code != 0 || !strings.HasPrefix(out, "ok: 8 records, seq 1..8") {
		t.Fatalf("audit verify of the log as written: exit %d\n%s", code, out)
	}
	// Turn the denial into an allow: the next line no longer follows it.
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines[2] = bytes.Replace(lines[2], []byte(`"decision":"deny"`), []byte(`"decision":"allow"`), 1)
	if err := os.WriteFile(logPath, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := verify(); code != 1 || !strings.Contains(out, logPath+":4: record does not follow line 3") {
		t.Fatalf("audit verify after editing line 3: exit %d\n%s", code, out)
	}
}

// elicitor answers the elicitations of a test client as told, and keeps
// the questions it was asked.
type elicitor struct {
	mu     sync.Mutex
	answer func(ctx context.Context) (*mcp.ElicitResult, error)
	asked  []*mcp.ElicitParams
}

func (e *elicitor) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	e.mu.Lock()
	e.asked = append(e.asked, req.Params)
	answer := e.answer
	e.mu.Unlock()
	return answer(ctx)
}

func (e *elicitor) set(answer func(ctx context.Context) (*mcp.ElicitResult, error)) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.answer = answer
	return len(e.asked)
}

func (e *elicitor) since(n int) []*mcp.ElicitParams {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.asked[n:])
}

func reply(action string, content map[string]any) func(context.Context) (*mcp.ElicitResult, error) {
	return func(context.Context) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: action, Content: content}, nil
	}
}

// startAnswering starts codemode for a client that answers elicitations
// as its elicitor says, speaking protocol (the SDK's newest when empty).
func startAnswering(t *testing.T, protocol string, env ...string) (*server, *elicitor) {
	t.Helper()
	e := &elicitor{}
	client := mcp.NewClient(&mcp.Implementation{Name: "policy-e2e", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: e.handle})
	return startWithClient(t, client, &mcp.ClientSessionOptions{ProtocolVersion: protocol}, env...), e
}

// TestPolicyAsk drives testdata/policy/ask.toml: a write asks the client's
// user through form elicitation, and goes ahead only on approval.
func TestPolicyAsk(t *testing.T) {
	root, config := policyServers(t)
	how := `to allow it without asking, add a rule with decision = "allow" for server "fs" and tool "write_file" to the policy file`

	t.Run("client that answers", func(t *testing.T) {
		// 2025-11-25: the newest protocol whose servers may send
		// elicitation/create in the middle of a tool call.
		s, e := startAnswering(t, "2025-11-25", config, policyFile("ask.toml"), "CODEMODE_APPROVAL_TIMEOUT=2s")

		for _, c := range []struct {
			name    string
			answer  func(context.Context) (*mcp.ElicitResult, error)
			file    string
			want    string
			written bool
		}{
			{name: "approved", answer: reply("accept", map[string]any{"approve": true}), file: "approved.txt",
				want: "ok Successfully wrote to " + filepath.Join(root, "approved.txt"), written: true},
			{name: "declined", answer: reply("decline", nil), file: "declined.txt",
				want: "denied the user did not approve fs.write_file (decline); " + how},
			{name: "accepted without approving", answer: reply("accept", map[string]any{"approve": false}), file: "unapproved.txt",
				want: "denied the user did not approve fs.write_file (decline); " + how},
			{name: "cancelled", answer: reply("cancel", nil), file: "cancelled.txt",
				want: "denied the user did not approve fs.write_file (cancel); " + how},
			{name: "no answer in time", file: "late.txt",
				answer: func(ctx context.Context) (*mcp.ElicitResult, error) { <-ctx.Done(); return nil, ctx.Err() },
				want:   "denied fs.write_file was not approved within 2s; " + how},
		} {
			t.Run(c.name, func(t *testing.T) {
				n := e.set(c.answer)
				path := filepath.Join(root, c.file)
				got := s.attempt(t, root, "mcp_fs.write_file(path=ROOT + '/"+c.file+"', content='hello')")
				if got != c.want {
					t.Errorf("got:  %q\nwant: %q", got, c.want)
				}
				asked := e.since(n)
				if len(asked) != 1 {
					t.Fatalf("asked %d times, want once", len(asked))
				}
				msg := asked[0].Message
				for _, part := range []string{`session "default"`, "fs.write_file", `"path":"` + path + `"`, `"content":"hello"`, "Policy: writes need a human."} {
					if !strings.Contains(msg, part) {
						t.Errorf("the question does not say %s: %q", part, msg)
					}
				}
				if _, err := os.Stat(path); (err == nil) != c.written {
					t.Errorf("%s written: %v, want %v", c.file, err == nil, c.written)
				}
			})
		}

		t.Run("approved for the rest of the session", func(t *testing.T) {
			n := e.set(reply("accept", map[string]any{"approve": true, "remember": true}))
			inSession := func(session, file string) string {
				t.Helper()
				res := s.call(t, map[string]any{"session": session, "code": fmt.Sprintf(
					"try:\n    await mcp_fs.write_file(path=%q, content='x')\n    print('ok')\nexcept runtime.MCPError as e:\n    print(e.kind)", filepath.Join(root, file))})
				return strings.Join(lines(structured(t, res)["stdout"]), "\n")
			}
			if got := inSession("remember", "r1.txt"); got != "ok" {
				t.Fatalf("first call: %q", got)
			}
			if got := inSession("remember", "r2.txt"); got != "ok" {
				t.Fatalf("second call: %q", got)
			}
			if asked := len(e.since(n)); asked != 1 {
				t.Fatalf("asked %d times for two calls after allow-for-session, want once", asked)
			}
			// Remembered for that session only.
			e.set(reply("decline", nil))
			if got := inSession("elsewhere", "r3.txt"); got != "denied" {
				t.Fatalf("another session: %q", got)
			}
			if asked := len(e.since(n)); asked != 2 {
				t.Fatalf("another session was not asked (%d questions in all)", asked)
			}
		})
	})

	t.Run("client without elicitation", func(t *testing.T) {
		s := startServer(t, config, policyFile("ask.toml"))
		got := s.attempt(t, root, "mcp_fs.write_file(path=ROOT + '/unasked.txt', content='hello')")
		want := "denied fs.write_file needs a human's approval, and this client cannot ask its user (no elicitation support); " + how
		if got != want {
			t.Errorf("got:  %q\nwant: %q", got, want)
		}
		if _, err := os.Stat(filepath.Join(root, "unasked.txt")); !os.IsNotExist(err) {
			t.Errorf("unasked.txt written (stat: %v)", err)
		}
	})
}

// TestPolicyReload rewrites the policy file under a running codemode: the
// new rules apply without a restart, the session keeps its variables, and
// a broken rewrite leaves the policy in force.
func TestPolicyReload(t *testing.T) {
	root, config := policyServers(t)
	policy := filepath.Join(t.TempDir(), "policy.toml")
	copyFixture := func(name string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join("testdata", "policy", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(policy, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFixture("reload-allow.toml")
	s := startServer(t, config, "CODEMODE_POLICY="+policy)
	read := "mcp_fs.read_text_file(path=ROOT + '/other.txt')"
	s.stdoutOf(t, "kept = 41")
	if got := s.attempt(t, root, read); got != "ok other content" {
		t.Fatalf("before the rewrite: %q", got)
	}

	copyFixture("reload-deny.toml")
	want := "denied fs.read_text_file is denied by policy (rules[0], line 2): reads are off now"
	deadline := time.Now().Add(15 * time.Second)
	for got := ""; got != want; {
		if time.Now().After(deadline) {
			t.Fatalf("15 s after the rewrite the read still gives %q", got)
		}
		time.Sleep(100 * time.Millisecond)
		got = s.attempt(t, root, read)
	}
	if got := s.stdoutOf(t, "print(kept + 1)\nprint('read_text_file' in [t['name'] for t in await runtime.list_tools('fs')])"); !slices.Equal(got, []string{"42", "False"}) {
		t.Fatalf("after the reload (kept + 1, read_text_file listed): %q", got)
	}

	copyFixture("broken.toml")
	deadline = time.Now().Add(15 * time.Second)
	for !strings.Contains(s.stderr.String(), "reload failed; the previous policy stays in force") {
		if time.Now().After(deadline) {
			t.Fatal("a broken rewrite was not reported")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := s.attempt(t, root, read); got != want {
		t.Fatalf("after a broken rewrite: %q, want the previous policy's %q", got, want)
	}

	// A reload that hides a whole server reaches the sessions started after
	// it: their runtime does not list the server or define its proxy.
	copyFixture("reload-hide.toml")
	deadline = time.Now().Add(15 * time.Second)
	for n := 0; ; n++ {
		res := s.call(t, map[string]any{"session": fmt.Sprintf("fresh-%d", n),
			"code": "print(sorted(runtime.discovered_servers()), 'mcp_everything' in globals())"})
		got := strings.Join(lines(structured(t, res)["stdout"]), "\n")
		if got == "['fs'] False" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("15 s after hiding everything, a new session still sees %q", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPolicyCommands runs codemode policy check, explain and init.
func TestPolicyCommands(t *testing.T) {
	starter := filepath.Join(t.TempDir(), "starter.toml")
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string // lines of the output, in order
	}{
		{name: "check a broken file", args: []string{"check", "testdata/policy/broken.toml"}, code: 1,
			want: []string{"policy: load testdata/policy/broken.toml: line 7: rules[0].decison: unknown key", "line 4: rules[0]: missing decision", "line 11: rules[1].when: Syntax error"}},
		{name: "check a valid file", args: []string{"check", "testdata/policy/rules.toml"}, code: 0,
			want: []string{"testdata/policy/rules.toml: ok; policy: default allow; 5 rules (4 deny); limits: 3 calls/run"}},
		{name: "explain a denial", args: []string{"explain", "testdata/policy/rules.toml", "--server", "fs", "--tool", "read_text_file", "--args", `{"path": "/srv/secret.txt"}`}, code: 0,
			want: []string{"decision: deny", "rule: rules[3] (line 23)", `  server "fs", tool "read_*", when args.path.endsWith("secret.txt"): deny`, "reason: secrets stay on the host"}},
		{name: "explain a hidden tool", args: []string{"explain", "testdata/policy/rules.toml", "--server", "fs", "--tool", "write_file"}, code: 0,
			want: []string{"decision: deny", "rule: rules[2] (line 17)", `  server "fs", tool "write_*": deny`, "reason: agents may not write files", "hidden: the tool is not shown to code"}},
		{name: "explain the default", args: []string{"explain", "testdata/policy/rules.toml", "--server", "fs", "--tool", "read_text_file", "--args", `{"path": "/srv/other.txt"}`}, code: 0,
			want: []string{"decision: allow", "rule: none matched, so the default (allow) applies"}},
		{name: "init writes the starter", args: []string{"init", starter}, code: 0},
		{name: "the starter checks", args: []string{"check", starter}, code: 0, want: []string{starter + ": ok; policy: "}},
		{name: "init never overwrites", args: []string{"init", starter}, code: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(codemodeBin, append([]string{"policy"}, c.args...)...)
			cmd.Env = baseEnv(t)
			out, err := cmd.Output()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s", code, c.code, out)
			}
			got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if len(got) < len(c.want) {
				t.Fatalf("output:\n%s\nwant lines starting with %q", out, c.want)
			}
			for i, w := range c.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("line %d = %q, want it to start with %q", i+1, got[i], w)
				}
			}
		})
	}
}

// TestPolicyAskLatestProtocol asks the user of a client that speaks the
// SDK's newest protocol (2026-07-28), where a server may no longer send
// elicitation/create while it serves a tool call (SEP-2322).
func TestPolicyAskLatestProtocol(t *testing.T) {
	root, config := policyServers(t)
	s, e := startAnswering(t, "", config, policyFile("ask.toml"), "CODEMODE_APPROVAL_TIMEOUT=5s")
	e.set(reply("accept", map[string]any{"approve": true}))
	got := s.attempt(t, root, "mcp_fs.write_file(path=ROOT + '/approved.txt', content='hello')")
	if want := "ok Successfully wrote to " + filepath.Join(root, "approved.txt"); got != want || len(e.since(0)) != 1 {
		t.Fatalf("asked %d times; got %q, want %q", len(e.since(0)), got, want)
	}
}

// TestPolicyAskForgetsOnReset: an approval remembered for a session ends
// with it; resetting the session asks again.
func TestPolicyAskForgetsOnReset(t *testing.T) {
	root, config := policyServers(t)
	s, e := startAnswering(t, "2025-11-25", config, policyFile("ask.toml"))
	e.set(reply("accept", map[string]any{"approve": true, "remember": true}))
	write := func(file string, reset bool) string {
		t.Helper()
		res := s.call(t, map[string]any{"reset": reset, "code": fmt.Sprintf(
			"try:\n    await mcp_fs.write_file(path=%q, content='x')\n    print('ok')\nexcept runtime.MCPError as e:\n    print(e.kind)", filepath.Join(root, file))})
		return strings.Join(lines(structured(t, res)["stdout"]), "\n")
	}
	if got := write("before.txt", false); got != "ok" || len(e.since(0)) != 1 {
		t.Fatalf("approved and remembered: %q after %d questions", got, len(e.since(0)))
	}
	e.set(reply("decline", nil))
	if got := write("after-reset.txt", true); got != "denied" || len(e.since(0)) != 2 {
		t.Fatalf("after a reset: %q after %d questions, want denied after a second question", got, len(e.since(0)))
	}
}
