package e2e

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tinyWheel builds a pure-Python wheel of one module, as a build backend
// would: the files, their METADATA and WHEEL, and a RECORD of hashes.
func tinyWheel(t *testing.T, name, version, source string) (file string, data []byte) {
	t.Helper()
	dist := name + "-" + version + ".dist-info/"
	files := []struct{ path, body string }{
		{name + "/__init__.py", source},
		{dist + "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"},
		{dist + "WHEEL", "Wheel-Version: 1.0\nGenerator: codemode-e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		w, err := zw.Create(f.path)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.body))
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.path, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString(dist + "RECORD,,\n")
	w, _ := zw.Create(dist + "RECORD")
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return name + "-" + version + "-py3-none-any.whl", buf.Bytes()
}

// TestEgress runs ordinary clients in the native sandbox against loopback
// servers standing in for the internet: what the allow-list names works
// (urllib, curl, requests, pip from a PEP 503 index, HTTPS with a secret
// swapped in),
// what it does not is a 403 that says how to allow it, raw sockets find no
// route, the policy governs each request (and allows the API host by its
// [egress] table) and the audit log records it.
func TestEgress(t *testing.T) {
	const realToken = "e2e-real-token-9d2b"
	wheelName, wheel := tinyWheel(t, "codemode_tinypkg", "0.1", "GREETING = 'installed from the loopback index'\n")
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello from loopback") })
	mux.HandleFunc("/forbidden", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "policy let this through") })
	mux.HandleFunc("/simple/codemode-tinypkg/", func(w http.ResponseWriter, r *http.Request) {
		sum := sha256.Sum256(wheel)
		fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/files/%s#sha256=%x">%s</a></body></html>`, wheelName, sum, wheelName)
	})
	mux.HandleFunc("/files/"+wheelName, func(w http.ResponseWriter, r *http.Request) { w.Write(wheel) })
	plain := httptest.NewServer(mux)
	defer plain.Close()
	// The HTTPS API checks the token without echoing it.
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "authorized=%v", r.Header.Get("Authorization") == "Bearer "+realToken)
	}))
	defer api.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "must not be reached") }))
	defer other.Close()

	dir := t.TempDir()
	// codemode verifies the API's certificate against its trust store: here
	// the test server's own CA.
	roots := filepath.Join(dir, "roots.pem")
	os.WriteFile(roots, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}), 0o644)
	policyPath := filepath.Join(dir, "policy.toml")
	hostOf := func(s *httptest.Server) string { u, _ := url.Parse(s.URL); return u.Host }
	// The plain server is allowed by the setting, the API by the policy file.
	os.WriteFile(policyPath, []byte("[[rules]]\nserver = \"net\"\nwhen = 'args.path == \"/forbidden\"'\ndecision = \"deny\"\nreason = \"not this path\"\n"+
		"[egress]\nallow = [\""+hostOf(api)+"\"]\n"), 0o644)
	auditPath := filepath.Join(dir, "audit.jsonl")
	// The token's value comes from the secrets file, which the environment
	// (with a wrong value under the same name) does not override.
	secretsFile := filepath.Join(dir, "secrets.env")
	os.WriteFile(secretsFile, []byte("# the API's token\nAPI_TOKEN="+realToken+"\n"), 0o600)
	s := startServer(t, "CODEMODE_EGRESS_ALLOW="+hostOf(plain), "CODEMODE_EGRESS_SECRET=API_TOKEN="+hostOf(api),
		"CODEMODE_EGRESS_SECRETS_FILE="+secretsFile, "API_TOKEN=not-the-token", "SSL_CERT_FILE="+roots,
		"CODEMODE_POLICY="+policyPath, "CODEMODE_AUDIT_LOG="+auditPath)

	code := fmt.Sprintf(`
import json, os, socket, subprocess, sys, urllib.request, urllib.error
out = {}
def fetch(url, headers={}):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=20) as r:
            return "%%d %%s" %% (r.status, r.read().decode())
    except urllib.error.HTTPError as e:
        return "%%d %%s" %% (e.code, e.read().decode())
out["urllib"] = fetch(%[1]q + "/hello")
out["curl"] = subprocess.run(["curl", "-sS", %[1]q + "/hello"], capture_output=True, text=True).stdout
out["not_listed"] = fetch(%[2]q + "/")
out["policy"] = fetch(%[1]q + "/forbidden")
out["secret_env"] = os.environ["API_TOKEN"]
out["https_secret"] = fetch(%[3]q + "/", {"Authorization": "Bearer " + os.environ["API_TOKEN"]})
out["curl_https_secret"] = subprocess.run(["curl", "-sS", "-H", "Authorization: Bearer " + os.environ["API_TOKEN"], %[3]q + "/"], capture_output=True, text=True).stdout
try:
    import requests
except ImportError:  # pip's vendored copy: the same library
    from pip._vendor import requests
r = requests.get(%[1]q + "/hello", timeout=20)
out["requests"] = "%%d %%s" %% (r.status_code, r.text)
r = requests.get(%[3]q + "/", headers={"Authorization": "Bearer " + os.environ["API_TOKEN"]}, timeout=20)
out["requests_https_secret"] = "%%d %%s" %% (r.status_code, r.text)
for name, addr in [("raw_listed", (%[4]q, %[5]d)), ("raw_public", ("192.0.2.1", 80))]:
    try:
        socket.create_connection(addr, timeout=5).close()
        out[name] = "connected"
    except OSError as e:
        out[name] = type(e).__name__
pip = subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-cache-dir",
    "--index-url", %[1]q + "/simple/", "--target", "/tmp/pkgs", "codemode-tinypkg"], capture_output=True, text=True)
out["pip"] = pip.returncode
out["pip_log"] = (pip.stdout + pip.stderr)[-600:]
sys.path.insert(0, "/tmp/pkgs")
import codemode_tinypkg
out["import"] = codemode_tinypkg.GREETING
print(json.dumps(out))
`, plain.URL, other.URL, api.URL, "127.0.0.1", plain.Listener.Addr().(*net.TCPAddr).Port)
	tools, err := s.cs.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != 1 || !strings.Contains(tools.Tools[0].Description, "network: allowed hosts only") {
		t.Errorf("with egress on, the tool description must not say there is no network: %+v, %v", tools, err)
	}
	stdout := s.stdoutOf(t, code)
	var got map[string]any
	if len(stdout) != 1 || json.Unmarshal([]byte(stdout[0]), &got) != nil {
		t.Fatalf("want one JSON line, got %q", stdout)
	}
	want := map[string]string{
		"urllib":                "200 hello from loopback",
		"curl":                  "hello from loopback",
		"requests":              "200 hello from loopback",
		"requests_https_secret": "200 authorized=true",
		"not_listed":            "403 codemode egress: " + hostOf(other) + " is not on the egress allow-list; to allow it, start codemode with --egress-allow " + hostOf(other),
		"policy":                "403 codemode egress: requests to 127.0.0.1 are denied by policy (rules[0], line 1): not this path",
		"https_secret":          "200 authorized=true",
		"curl_https_secret":     "authorized=true",
		"raw_listed":            "ConnectionRefusedError",
		"raw_public":            "OSError",
		"import":                "installed from the loopback index",
	}
	for k, w := range want {
		if g, _ := got[k].(string); !strings.HasPrefix(g, w) {
			t.Errorf("%s: got %q, want %q", k, g, w)
		}
	}
	if got["pip"] != float64(0) {
		t.Errorf("pip install failed: %v", got["pip_log"])
	}
	if env, _ := got["secret_env"].(string); env == realToken || !strings.HasPrefix(env, "codemode-secret-") {
		t.Errorf("the sandbox's API_TOKEN is %q, want a placeholder", env)
	}
	if strings.Contains(stdout[0], realToken) {
		t.Errorf("the real token reached the sandbox's output")
	}
	s.cs.Close()
	s.cmd.Wait()
	if strings.Contains(s.stderr.String(), realToken) {
		t.Errorf("the real token is in codemode's logs")
	}
	log, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), realToken) {
		t.Errorf("the real token is in the audit log")
	}
	var egress, denied, withBytes int
	sc := bufio.NewScanner(bytes.NewReader(log))
	for sc.Scan() {
		var rec struct {
			Kind, Server, Tool, Decision, Outcome string
			BytesIn                               int64 `json:"bytes_in"`
		}
		json.Unmarshal(sc.Bytes(), &rec)
		if rec.Kind != "egress" {
			continue
		}
		egress++
		if rec.Decision == "deny" {
			denied++
		}
		if rec.BytesIn > 0 {
			withBytes++
		}
		if rec.Server != "net" || rec.Tool == "" {
			t.Errorf("egress record without server net and a host: %s", sc.Text())
		}
	}
	if egress < 8 || denied < 2 || withBytes < 5 {
		t.Errorf("audit log: %d egress records, %d denied, %d with bytes in; want at least 8, 2, 5:\n%s", egress, denied, withBytes, log)
	}
}
