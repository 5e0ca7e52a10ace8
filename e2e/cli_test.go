package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/testenv"
)

// The command line a person types: run passes arguments as sys.argv, takes
// a --timeout above max-timeout and on/off flags without a value, writes
// shown images with --save-images; version names the release and commit;
// connect edits a client's file.
func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "args.py")
	if err := os.WriteFile(script, []byte("import sys\nprint(sys.argv)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	images := filepath.Join(dir, "images")
	home := t.TempDir()
	tests := []struct {
		args   []string
		stdout string // regexp
	}{
		{args: []string{"run", script, "a b", "--x"}, stdout: regexp.QuoteMeta("['" + script + "', 'a b', '--x']\n")},
		{args: []string{"run", "-c", "import sys; print(sys.argv)", "1", "2"}, stdout: regexp.QuoteMeta("['-c', '1', '2']\n")},
		{args: []string{"run", "-c", "import sys; print(sys.argv)"}, stdout: regexp.QuoteMeta("['-c']\n")},
		{args: []string{"run", "--timeout", "121", "-c", "print('ok')"}, stdout: "^ok\n$"},
		{args: []string{"run", "--allow-weaker-sandbox", "-c", "print(1)"}, stdout: "^1\n$"},
		{args: []string{"run", "--save-images", images, "-c",
			"import base64; show_image(base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=='))"}, stdout: "^$"},
		{args: []string{"connect", "cursor"}, stdout: "added codemode .* to " + regexp.QuoteMeta(filepath.Join(home, ".cursor", "mcp.json"))},
		{args: []string{"connect", "--list"}, stdout: `cursor +connected +` + regexp.QuoteMeta(filepath.Join(home, ".cursor", "mcp.json"))},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command(codemodeBin, tc.args...)
			cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\nstderr: %s", err, stderr.String())
			}
			if !regexp.MustCompile(tc.stdout).MatchString(stdout.String()) {
				t.Errorf("stdout %q, want %q\nstderr: %s", stdout.String(), tc.stdout, stderr.String())
			}
		})
	}
	if entries, _ := os.ReadDir(images); len(entries) != 1 || filepath.Ext(entries[0].Name()) != ".png" {
		t.Errorf("--save-images wrote %v", entries)
	}
}

// A release build names its version and commit, stamped as
// scripts/release.sh stamps them.
func TestVersionStamped(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "codemode")
	build := exec.Command("go", "build", "-o", bin, "-ldflags",
		"-X github.com/codemode/codemode/internal/app.Version=v9.8.7 -X github.com/codemode/codemode/internal/app.Commit=0123456789abcdef0123", "./cmd/codemode")
	build.Dir = testenv.RepoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !regexp.MustCompile(`^codemode v9\.8\.7 \(commit 0123456789ab, go1\.\d+`).Match(out) {
		t.Errorf("version = %q, %v", out, err)
	}
}
