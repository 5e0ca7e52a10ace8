package cli

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/app"
	"github.com/codemode/codemode/internal/settings"
)

// The help texts list every backend of the table with its summary.
func TestHelpListsBackends(t *testing.T) {
	tests := []struct {
		args   []string
		stderr bool // the flag package prints -h to stderr
	}{
		{args: []string{"help"}},
		{args: []string{"--help"}},
		{args: []string{"serve", "-h"}, stderr: true},
		{args: []string{"run", "-h"}, stderr: true},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Run(t.Context(), tc.args, IO{Stdout: &stdout, Stderr: &stderr, Home: t.TempDir(), Cwd: t.TempDir()}); code != 0 {
				t.Fatalf("exit %d\nstderr: %s", code, stderr.String())
			}
			out := stdout.String()
			if tc.stderr {
				out = stderr.String()
			}
			for _, c := range app.BackendChoices() {
				if !strings.Contains(out, c.Name) || !strings.Contains(out, c.Summary) {
					t.Errorf("help lacks backend %s (%s):\n%s", c.Name, c.Summary, out)
				}
			}
		})
	}
}

// run is Run with a fresh home and working directory.
func run(t *testing.T, environ []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(t.Context(), args, IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Environ: environ, Home: t.TempDir(), Cwd: t.TempDir()})
	return code, out.String(), errOut.String()
}

// On/off settings are boolean flags: "--x" and "--x=false", and their
// variables take 1/true/0/false.
func TestBoolSettings(t *testing.T) {
	tests := []struct {
		args    []string
		environ []string
		want    map[string]string // setting -> "value from"
	}{
		{args: []string{"--pull", "--allow-weaker-sandbox", "--data-dir-writable=false"},
			want: map[string]string{"pull": "true flag --pull", "allow-weaker-sandbox": "true flag --allow-weaker-sandbox", "data-dir-writable": "false flag --data-dir-writable"}},
		{args: []string{"--disable-landlock", "--allow-unauthenticated=true"},
			want: map[string]string{"disable-landlock": "true flag --disable-landlock", "allow-unauthenticated": "true flag --allow-unauthenticated"}},
		{environ: []string{"CODEMODE_PULL=1", "CODEMODE_ALLOW_WEAKER_SANDBOX=true", "CODEMODE_DISABLE_LANDLOCK=0", "CODEMODE_DATA_DIR_WRITABLE=false"},
			want: map[string]string{"pull": "1 env CODEMODE_PULL", "allow-weaker-sandbox": "true env CODEMODE_ALLOW_WEAKER_SANDBOX",
				"disable-landlock": "0 env CODEMODE_DISABLE_LANDLOCK", "data-dir-writable": "false env CODEMODE_DATA_DIR_WRITABLE"}},
		// A flag beats the variable.
		{args: []string{"--pull=false"}, environ: []string{"CODEMODE_PULL=1"}, want: map[string]string{"pull": "false flag --pull"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(append(tc.args, tc.environ...), " "), func(t *testing.T) {
			code, stdout, stderr := run(t, tc.environ, append([]string{"config", "--json"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var sources []settings.Source
			if err := json.Unmarshal([]byte(stdout), &sources); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, s := range sources {
				got[s.Name] = s.Value + " " + s.From
			}
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("%s = %q, want %q", name, got[name], want)
				}
			}
		})
	}
	// A bool flag takes no value: what follows is the next argument.
	code, _, stderr := run(t, nil, "serve", "--allow-weaker-sandbox", "--http", "not-an-address", "--pull=maybe")
	if code == 0 || !strings.Contains(stderr, `invalid value "maybe" for flag --pull: want true or false`) || strings.Contains(stderr, "unexpected arguments") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
}

// Each command offers only the settings that apply to it; help lists every
// subcommand.
func TestHelpPerCommand(t *testing.T) {
	code, stdout, _ := run(t, nil, "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, c := range commands() {
		if !strings.Contains(stdout, "codemode "+c.usage[0][0]) {
			t.Errorf("--help lacks %s:\n%s", c.name, stdout)
		}
	}
	_, _, runHelp := run(t, nil, "run", "--help")
	_, _, serveHelp := run(t, nil, "serve", "--help")
	for _, flagName := range []string{"-http ", "-tokens ", "-max-sessions ", "-idle-timeout "} {
		if strings.Contains(runHelp, flagName) {
			t.Errorf("run --help offers %s", flagName)
		}
		if !strings.Contains(serveHelp, flagName) {
			t.Errorf("serve --help lacks %s", flagName)
		}
	}
	for _, flagName := range []string{"-timeout ", "-backend ", "-save-images ", "-allow-weaker-sandbox\n"} {
		if !strings.Contains(runHelp, flagName) {
			t.Errorf("run --help lacks %s:\n%s", flagName, runHelp)
		}
	}
}

func TestVersionNamesReleaseAndCommit(t *testing.T) {
	code, stdout, _ := run(t, nil, "version")
	if code != 0 || !regexp.MustCompile(`^codemode \S+ \(commit \S+.*, go1\.\d+`).MatchString(stdout) {
		t.Errorf("version = %q (exit %d)", stdout, code)
	}
}

// Started by a person at a terminal, serve says it waits for a client.
func TestServeSaysItWaitsAtATerminal(t *testing.T) {
	for _, interactive := range []bool{true, false} {
		var out, errOut bytes.Buffer
		// A runtime that does not exist stops serve right after the notice.
		Run(t.Context(), []string{"--backend", "podman", "--runtime", "/nonexistent/podman"},
			IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Home: t.TempDir(), Cwd: t.TempDir(), Interactive: interactive})
		if got := strings.Contains(errOut.String(), "waiting for an MCP client"); got != interactive {
			t.Errorf("interactive=%v: stderr %s", interactive, errOut.String())
		}
	}
}
