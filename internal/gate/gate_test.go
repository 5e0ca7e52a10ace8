package gate

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/approval"
	"github.com/codemode/codemode/internal/audit"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/peer"
	"github.com/codemode/codemode/internal/policy"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const testPolicy = `
default = "allow"
[[rules]]
server = "fs"
tool = "read_*"
when = 'args.path.endsWith("secret.txt")'
decision = "deny"
reason = "secrets stay put"
[[rules]]
server = "fs"
tool = "write_*"
decision = "ask"
reason = "writes need a human"
redact = true
[[rules]]
server = "fs"
tool = "delete_*"
decision = "deny"
reason = "never delete"
[[rules]]
server = "vault"
decision = "deny"
[limits]
max_calls_per_run = 3
`

type fixed struct{ p *policy.Policy }

func (f fixed) Current() *policy.Policy { return f.p }

type setup struct {
	gate    *Gate
	call    hostrpc.ToolCaller
	reached []string
	logPath string
	log     *audit.Log
}

func newSetup(t *testing.T) *setup {
	t.Helper()
	p, err := policy.Parse([]byte(testPolicy), "toml")
	if err != nil {
		t.Fatal(err)
	}
	s := &setup{logPath: filepath.Join(t.TempDir(), "audit.log")}
	s.log, err = audit.Open(s.logPath, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.log.Close() })
	s.gate = New(Options{Policy: fixed{p}, Audit: s.log, Approver: approval.New(approval.Options{})})
	s.call = hostrpc.Chain(func(_ context.Context, c *hostrpc.ToolCall) (any, error) {
		s.reached = append(s.reached, c.Server+"."+c.Tool)
		return "done", nil
	}, s.gate.Middleware)
	return s
}

func toolCall(server, tool, args string) *hostrpc.ToolCall {
	var a map[string]jsontext.Value
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		panic(err)
	}
	return &hostrpc.ToolCall{Caller: hostrpc.Caller{Principal: "alice", Session: "s1"}, Server: server, Tool: tool, Arguments: a}
}

func answering(approve bool) context.Context {
	return peer.With(context.Background(), &peer.Peer{ClientName: "tester", Elicit: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": approve}}, nil
	}})
}

func TestDecisions(t *testing.T) {
	tests := []struct {
		name     string
		ctx      context.Context
		call     *hostrpc.ToolCall
		wantKind string // "" = allowed
		wantMsg  string
	}{
		{"allowed by default", context.Background(), toolCall("fs", "read_file", `{"path":"notes.txt"}`), "", ""},
		{"denied by CEL on arguments", context.Background(), toolCall("fs", "read_file", `{"path":"/x/secret.txt"}`), "denied", "fs.read_file is denied by policy (rules[0], line 3): secrets stay put"},
		{"denied by glob", context.Background(), toolCall("fs", "delete_file", `{}`), "denied", "never delete"},
		{"server-level deny", context.Background(), toolCall("vault", "get", `{}`), "denied", "vault.get is denied by policy (rules[3]"},
		{"ask approved", answering(true), toolCall("fs", "write_file", `{"path":"a"}`), "", ""},
		{"ask declined", answering(false), toolCall("fs", "write_file", `{"path":"a"}`), "denied", "the user did not approve fs.write_file"},
		{"ask without elicitation", context.Background(), toolCall("fs", "write_file", `{"path":"a"}`), "denied", "cannot ask its user"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSetup(t)
			res, err := s.call(WithRun(tc.ctx), tc.call)
			if tc.wantKind == "" {
				if err != nil || res != "done" || len(s.reached) != 1 {
					t.Fatalf("allowed call: %v %v, reached %v", res, err, s.reached)
				}
				return
			}
			w := hostrpc.ToWire(err)
			if err == nil || w.Kind != tc.wantKind || !strings.Contains(w.Message, tc.wantMsg) {
				t.Fatalf("error %+v, want kind %s containing %q", w, tc.wantKind, tc.wantMsg)
			}
			if len(s.reached) != 0 {
				t.Fatalf("a refused call reached the server: %v", s.reached)
			}
		})
	}
}

func TestLimitPerRun(t *testing.T) {
	s := newSetup(t)
	ctx := WithRun(context.Background())
	for i := range 3 {
		if _, err := s.call(ctx, toolCall("fs", "read_file", `{"path":"a"}`)); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	_, err := s.call(ctx, toolCall("fs", "read_file", `{"path":"a"}`))
	if w := hostrpc.ToWire(err); err == nil || w.Kind != "limit" {
		t.Fatalf("4th call in a run: %v", err)
	}
	// A denied call does not spend the budget of the next run.
	ctx = WithRun(context.Background())
	s.call(ctx, toolCall("fs", "delete_file", `{}`))
	for i := range 3 {
		if _, err := s.call(ctx, toolCall("fs", "read_file", `{"path":"a"}`)); err != nil {
			t.Fatalf("new run, call %d: %v", i, err)
		}
	}
}

func TestAuditRecords(t *testing.T) {
	s := newSetup(t)
	ctx := WithRun(context.Background())
	s.call(ctx, toolCall("fs", "read_file", `{"path":"notes.txt"}`))
	s.call(ctx, toolCall("fs", "delete_file", `{"path":"x"}`))
	s.call(WithRun(answering(true)), toolCall("fs", "write_file", `{"path":"a","content":"secret stuff"}`))
	if err := s.log.Sync(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		line := strings.Join([]string{r.Kind, r.Server + "." + r.Tool, r.Decision, r.Rule, r.Outcome, r.Approver}, " ")
		if r.ArgsSHA256 != "" {
			line += " redacted"
		}
		if strings.Contains(sc.Text(), "secret stuff") {
			t.Errorf("redacted arguments in the log: %s", sc.Text())
		}
		got = append(got, line)
	}
	want := []string{
		"decision fs.read_file allow default  ",
		"call fs.read_file allow default ok ",
		"decision fs.delete_file deny rules[2] denied ",
		"decision fs.write_file ask rules[1]  client:tester redacted",
		"call fs.write_file ask rules[1] ok client:tester redacted",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	rep, err := audit.VerifyFile(s.logPath)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %s", err, rep)
	}
}

func TestVisibility(t *testing.T) {
	s := newSetup(t)
	for _, tc := range []struct {
		server, tool string
		hidden       bool
	}{
		{"fs", "delete_file", true},
		{"fs", "read_file", false}, // denied only for some arguments
		{"fs", "write_file", false},
		{"vault", "get", true},
	} {
		if got := s.gate.ToolHidden(tc.server, tc.tool); got != tc.hidden {
			t.Errorf("ToolHidden(%s, %s) = %v, want %v", tc.server, tc.tool, got, tc.hidden)
		}
	}
	if !s.gate.ServerHidden("vault") || s.gate.ServerHidden("fs") {
		t.Errorf("ServerHidden: vault %v, fs %v", s.gate.ServerHidden("vault"), s.gate.ServerHidden("fs"))
	}
}

func TestDecidedSeesTheCallsContext(t *testing.T) {
	p, err := policy.Parse([]byte(testPolicy), "toml")
	if err != nil {
		t.Fatal(err)
	}
	type key struct{}
	var got []string
	g := New(Options{Policy: fixed{p}, Decided: func(ctx context.Context, d policy.Decision) {
		got = append(got, ctx.Value(key{}).(string)+" "+d.Effect.String()+" "+d.Rule.Label)
	}})
	call := hostrpc.Chain(func(context.Context, *hostrpc.ToolCall) (any, error) { return "done", nil }, g.Middleware)
	ctx := context.WithValue(WithRun(context.Background()), key{}, "call-1")
	call(ctx, toolCall("fs", "read_file", `{"path":"a"}`))
	call(ctx, toolCall("fs", "delete_file", `{}`))
	if want := "call-1 allow default,call-1 deny rules[2]"; strings.Join(got, ",") != want {
		t.Errorf("decided %v, want %s", got, want)
	}
}
