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
	"github.com/codemode/codemode/internal/policy"
)

const addPolicy = `
[[add]]
name = "io.example/blocked"
decision = "deny"
reason = "not this one"
[[add]]
registry = "npm"
source = "*/trusted.json"
decision = "allow"
`

func persist(r AddRequest) AddRequest {
	r.Persist = true
	return r
}

func TestDecideAdd(t *testing.T) {
	p, err := policy.Parse([]byte(addPolicy), "toml")
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "audit.log")
	log, err := audit.Open(logPath, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	g := New(Options{Policy: fixed{p}, Audit: log, Approver: approval.New(approval.Options{})})
	req := func(name, registry, source string, catalogued bool) AddRequest {
		return AddRequest{Caller: hostrpc.Caller{Principal: "alice", Session: "s1"},
			AddInput: policy.AddInput{Name: name, Registry: registry, Source: source, Catalogued: catalogued}}
	}
	tests := []struct {
		name     string
		ctx      context.Context
		req      AddRequest
		wantKind string // "" = allowed
		wantMsg  string
	}{
		{"allowed by rule", context.Background(), req("io.example/memory", "npm", "/etc/trusted.json", true), "", ""},
		{"denied by name", context.Background(), req("io.example/blocked", "npm", "/etc/trusted.json", true), "denied", "adding io.example/blocked is denied by policy (add[0], line 2): not this one"},
		{"not catalogued", context.Background(), req("io.example/nowhere", "", "", false), "not_found", "in no catalog"},
		{"default ask approved", answering(true), req("io.example/memory", "pypi", "/etc/trusted.json", true), "", ""},
		{"default ask declined", answering(false), req("io.example/memory", "npm", "/etc/other.json", true), "denied", "the user did not approve add the MCP server io.example/memory"},
		{"ask without elicitation", context.Background(), req("io.example/memory", "oci", "/etc/trusted.json", true), "denied", "[[add]] rule"},
		{"persist asks though allowed", context.Background(), persist(req("io.example/memory", "npm", "/etc/trusted.json", true)), "denied", "keep it in codemode's config file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := g.DecideAdd(tc.ctx, tc.req)
			if tc.wantKind == "" {
				if err != nil {
					t.Fatalf("DecideAdd: %v", err)
				}
				return
			}
			w := hostrpc.ToWire(err)
			if err == nil || w.Kind != tc.wantKind || !strings.Contains(w.Message, tc.wantMsg) {
				t.Fatalf("error %+v, want kind %s containing %q", w, tc.wantKind, tc.wantMsg)
			}
		})
	}
	if err := log.Sync(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(logPath)
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
		got = append(got, strings.Join([]string{r.Kind, r.Server, r.Decision, r.Rule, r.Outcome, r.Approver}, " "))
	}
	want := []string{
		"add io.example/memory allow add[1] ok ",
		"add io.example/blocked deny add[0] denied ",
		"add io.example/nowhere deny catalog denied ",
		"add io.example/memory ask add_default ok client:tester",
		"add io.example/memory ask add_default denied client:tester",
		"add io.example/memory ask add_default denied ",
		"add io.example/memory ask add[1] denied ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
