package sandboxtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/egress"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/pyruntime"
)

// egressProbe starts the runtime's real relay, then tries what sandboxed
// code would: an ordinary client through the proxy, a host off the
// allow-list, and raw sockets around the proxy.
const egressProbe = `
import json, socket, sys, types, urllib.request, urllib.error
relay = types.ModuleType("relay")
exec(compile(sys.stdin.read(), "egress.py", "exec"), relay.__dict__)
relay.start()
out = {}
def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return "%d %s" % (r.status, r.read().decode())
    except urllib.error.HTTPError as e:
        return "%d %s" % (e.code, e.read().decode())
    except OSError as e:
        return type(e).__name__ + " " + str(e)
out["allowed"] = fetch(URL + "/x")
out["not_listed"] = fetch("http://127.0.0.1:1/")
for name, addr in [("raw_host_port", ("127.0.0.1", PORT)), ("raw_public", ("192.0.2.1", 80))]:
    try:
        socket.create_connection(addr, timeout=5).close()
        out[name] = "connected"
    except OSError as e:
        out[name] = "blocked"
print(json.dumps(out))
`

// testEgress runs the egress relay inside the backend's sandbox: the proxy's
// socket, mounted from the host, is reachable from the sandbox's network
// namespace, and nothing else is.
func testEgress(t *testing.T, cfg Config) {
	if cfg.NoEgress != "" {
		t.Skip(cfg.NoEgress)
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "through the proxy") }))
	defer upstream.Close()
	hostPort := strings.TrimPrefix(upstream.URL, "http://")
	allow, err := egress.ParseList([]string{hostPort})
	if err != nil {
		t.Fatal(err)
	}
	p, err := egress.New(egress.Options{Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	link, err := p.Attach(t.Context(), "sandboxtest", func() (context.Context, hostrpc.Caller, bool) {
		return context.Background(), hostrpc.Caller{Principal: "test"}, true
	})
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	bundle, err := pyruntime.Load()
	if err != nil {
		t.Fatal(err)
	}
	code := fmt.Sprintf("URL = %q\nPORT = %s\n", upstream.URL, hostPort[strings.LastIndexByte(hostPort, ':')+1:]) + egressProbe
	spec := newSpec(cfg, t, code)
	spec.Mounts = append(spec.Mounts, link.Mounts()...)
	spec.Env = append(spec.Env, link.Env()...)
	r := runSpec(t, cfg, spec, []byte(bundle.Modules["_codemode.egress"]), 60*time.Second)
	var got map[string]string
	if err := json.Unmarshal(r.stdout, &got); err != nil {
		t.Fatalf("probe output %q (stderr %q): %v", r.stdout, r.stderr, err)
	}
	want := map[string]string{
		"allowed":       "200 through the proxy",
		"not_listed":    "403 codemode egress: 127.0.0.1:1 is not on the egress allow-list",
		"raw_host_port": "blocked",
		"raw_public":    "blocked",
	}
	for k, w := range want {
		if !strings.HasPrefix(got[k], w) {
			t.Errorf("%s: got %q, want %q", k, got[k], w)
		}
	}
}
