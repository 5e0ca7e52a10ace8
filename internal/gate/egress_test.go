package gate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/approval"
	"github.com/codemode/codemode/internal/audit"
	"github.com/codemode/codemode/internal/egress"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/policy"
)

const egressPolicy = `
[[rules]]
server = "net"
when = 'args.path == "/forbidden"'
decision = "deny"
reason = "not this path"
[[rules]]
server = "net"
when = 'args.path == "/ask"'
decision = "ask"
`

// TestGovernEgress drives a real egress proxy through the gate: the policy
// decides each request by host and path, an ask with no one to ask is a
// refusal, and every request is one audit record and one observation.
func TestGovernEgress(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "payload") }))
	defer upstream.Close()
	host := strings.TrimPrefix(upstream.URL, "http://")
	p, err := policy.Parse([]byte(egressPolicy), "toml")
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "audit.log")
	log, err := audit.Open(logPath, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		host, decision string
		in             int64
	}
	var observed []seen
	g := New(Options{Policy: fixed{p}, Audit: log, Approver: approval.New(approval.Options{}),
		EgressObserve: func(h, d string, in, _ int64) { observed = append(observed, seen{h, d, in}) }})
	allow, _ := egress.ParseList([]string{host})
	px, err := egress.New(egress.Options{Allow: allow, Governor: g, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	link, err := px.Attach(t.Context(), "sb", func() (context.Context, hostrpc.Caller, bool) {
		return context.Background(), hostrpc.Caller{Principal: "alice", Session: "s1"}, true
	})
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	sock := filepath.Join(link.Mounts()[0].Source, "proxy.sock")
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: egress.RelayAddr}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}

	tests := []struct {
		url      string
		status   int
		body     string
		decision string
		host     string
	}{
		{upstream.URL + "/ok", 200, "payload", "allow", host},
		{upstream.URL + "/forbidden", 403, "requests to 127.0.0.1 are denied by policy (rules[0], line 2): not this path", "deny", host},
		{upstream.URL + "/ask", 403, "net.127.0.0.1 needs a human's approval", "deny", host},
		{"http://10.0.0.1/", 403, "10.0.0.1:80 is not on the egress allow-list", "deny", EgressUnlisted},
	}
	for _, tc := range tests {
		resp, err := client.Get(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.body) {
			t.Errorf("%s: %d %q, want %d with %q", tc.url, resp.StatusCode, b, tc.status, tc.body)
		}
	}
	link.Close()
	log.Close()
	if len(observed) != len(tests) {
		t.Fatalf("observed %v, want one per request", observed)
	}
	for i, tc := range tests {
		if o := observed[i]; o.host != tc.host || o.decision != tc.decision || (tc.status == 200) != (o.in > 0) {
			t.Errorf("observation %d = %+v, want host %s decision %s", i, o, tc.host, tc.decision)
		}
	}
	f, _ := os.Open(logPath)
	defer f.Close()
	var recs []audit.Record
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	want := []struct{ tool, decision, outcome string }{
		{"127.0.0.1", "allow", "ok"}, {"127.0.0.1", "deny", "denied"}, {"127.0.0.1", "ask", "denied"}, {"10.0.0.1", "deny", "denied"},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d audit records, want %d: %+v", len(recs), len(want), recs)
	}
	for i, w := range want {
		r := recs[i]
		if r.Kind != audit.KindEgress || r.Server != "net" || r.Tool != w.tool || r.Decision != w.decision || r.Outcome != w.outcome || r.Principal != "alice" {
			t.Errorf("record %d = %+v, want %+v", i, r, w)
		}
	}
	if recs[0].BytesIn != int64(len("payload")) || string(recs[0].Args) != `{"method":"GET","path":"/ok","port":`+upstream.URL[strings.LastIndex(upstream.URL, ":")+1:]+`}` {
		t.Errorf("allowed record: bytes_in %d, args %s", recs[0].BytesIn, recs[0].Args)
	}
}
