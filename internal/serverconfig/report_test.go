package serverconfig

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// checkGolden compares got with testdata/<name>, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}

func loadReportFixture(t *testing.T) (*Result, string) {
	t.Helper()
	root := copyFixture(t, "report")
	env := fixtureEnv(root, "linux", map[string]string{"NOTES_TOKEN": "n-secret"})
	res, err := Load(t.Context(), env, Options{Explicit: []string{filepath.Join(root, "proj", "conf", "extra.json")}})
	if err != nil {
		t.Fatal(err)
	}
	return res, root
}

func TestWriteReport(t *testing.T) {
	res, root := loadReportFixture(t)
	state := func(name string) string {
		if name == "db" {
			return "running"
		}
		return "stopped"
	}
	var buf bytes.Buffer
	if err := res.WriteReport(&buf, state); err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(buf.String(), root, "$ROOT")
	checkGolden(t, "report.golden", []byte(got))
	for _, secret := range []string{"n-secret", "u:secret"} {
		if strings.Contains(got, secret) {
			t.Errorf("report shows secret %q", secret)
		}
	}

	// Without a state lookup there is no STATE column.
	buf.Reset()
	if err := res.WriteReport(&buf, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "STATE") {
		t.Errorf("report without state lookup has a STATE column:\n%s", buf.String())
	}
}

// TestResultJSON pins the JSON shape of codemode servers --json: lowercase
// keys, durations as strings, secrets redacted.
func TestResultJSON(t *testing.T) {
	res, root := loadReportFixture(t)
	data, err := json.MarshalIndent(res.Redacted(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(string(data), root, "$ROOT") + "\n"
	checkGolden(t, "report.json.golden", []byte(got))
	for _, secret := range []string{"n-secret", "u:secret"} {
		if strings.Contains(got, secret) {
			t.Errorf("redacted JSON shows secret %q", secret)
		}
	}
	// Redacted leaves the original alone.
	if s, _ := res.Server("notes"); s.Headers["Authorization"] != "Bearer n-secret" {
		t.Errorf("Redacted modified the result: %v", s.Headers)
	}
}
