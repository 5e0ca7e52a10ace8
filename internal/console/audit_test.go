package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/activity"
	"github.com/codemode/codemode/internal/audit"
	"github.com/codemode/codemode/internal/executor"
	"github.com/codemode/codemode/internal/hostrpc"
)

// servers stands in for the downstream pool.
type servers map[string]string

func (s servers) Names() []string          { return []string{"fs", "web"} }
func (s servers) State(name string) string { return s[name] }

func TestAuditView(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	log, err := audit.Open(path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	for _, r := range []audit.Record{
		{Kind: audit.KindDecision, Principal: "alice", Server: "fs", Tool: "write_file", Decision: "ask", Approver: "console:alice"},
		{Kind: audit.KindCall, Principal: "alice", Server: "fs", Tool: "write_file", Outcome: audit.OutcomeOK},
		{Kind: audit.KindDecision, Principal: "bob", Server: "web", Tool: "fetch", Decision: "deny", Reason: "<b>no</b>", Outcome: audit.OutcomeDenied},
	} {
		if err := log.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	rec := activity.New(activity.Options{})
	c := New(Options{Recorder: rec, Audit: &AuditLog{Path: path, Sync: log.Sync}, Login: func(tok string) (Identity, bool) {
		id, ok := tokens[tok]
		return id, ok
	}})
	mux := http.NewServeMux()
	mux.Handle(Prefix, c)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	f := &fixture{srv: srv, rec: rec}
	view := func(token, q string) AuditView {
		t.Helper()
		res, err := f.client(t, token).Get(srv.URL + Prefix + "api/audit?q=" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var v AuditView
		if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		token, q string
		want     string // the records' seq, newest first
	}{
		{"alice-token-0123456789", "", "2,1"},
		{"bob-token-0123456789", "", "3"},
		{"admin-token-0123456789", "", "3,2,1"},
		{"admin-token-0123456789", "write_file+ok", "2"},
		{"admin-token-0123456789", "DENY", "3"},
		{"alice-token-0123456789", "web", ""},
	}
	for _, tc := range tests {
		v := view(tc.token, tc.q)
		var got []string
		for _, r := range v.Records {
			got = append(got, strconv.FormatUint(r.Seq, 10))
		}
		if strings.Join(got, ",") != tc.want || !v.Configured || !v.Verified {
			t.Errorf("%s q=%q: records %v, verified %v (%s); want %s", tc.token, tc.q, got, v.Verified, v.Status, tc.want)
		}
	}
	// A rewritten record breaks the chain, and the page says so.
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), `"ask"`, `"allow"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if v := view("admin-token-0123456789", ""); v.Verified || v.Status == "" || len(v.Records) != 3 {
		t.Errorf("tampered log: verified %v, status %q", v.Verified, v.Status)
	}
}

func TestServersView(t *testing.T) {
	rec := activity.New(activity.Options{})
	c := New(Options{Recorder: rec, Servers: servers{"fs": "running (14 tools)", "web": "crashed: exit 1"}, Login: func(tok string) (Identity, bool) {
		id, ok := tokens[tok]
		return id, ok
	}})
	mux := http.NewServeMux()
	mux.Handle(Prefix, c)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	f := &fixture{srv: srv, rec: rec}
	for _, p := range []string{"alice", "bob"} {
		ctx := rec.CallStarted(context.Background(), executor.CallInfo{Principal: p, Owner: p, Session: "default"})
		rec.Middleware(func(context.Context, *hostrpc.ToolCall) (any, error) {
			return nil, &hostrpc.Error{Kind: "server", Message: p + "-failure"}
		})(ctx, &hostrpc.ToolCall{Server: "web", Tool: "fetch"})
		rec.CallEnded(ctx, &executor.Result{Status: executor.StatusSuccess})
	}
	st, _ := f.state(t, f.client(t, "alice-token-0123456789"))
	want := []ServerView{{Name: "fs", State: "running (14 tools)", Errors: []string{}}, {Name: "web", State: "crashed: exit 1", Calls: 1, Errors: []string{"fetch: alice-failure"}}}
	got, _ := json.Marshal(st.Servers)
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) {
		t.Errorf("servers = %s, want %s", got, exp)
	}
}
