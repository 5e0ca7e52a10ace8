package attacks

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/settings"
)

func TestPidNamespaceAndSurvivors(t *testing.T) {
	self, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	if got := pidNamespace("noise\nPIDNS " + self + "\nVERDICT blocked x\n"); got != self {
		t.Fatalf("pidNamespace = %q, want %q", got, self)
	}
	if got := pidNamespace("no namespace here\n"); got != "" {
		t.Fatalf("pidNamespace = %q, want none", got)
	}
	// This test's own namespace holds (at least) this process: the check
	// must see it, or it could never see a survivor.
	left := survivors(self, 0)
	if !slices.ContainsFunc(left, func(s string) bool { return strings.HasPrefix(s, fmt.Sprintf("%d ", os.Getpid())) }) {
		t.Fatalf("survivors(%s) = %v, want this process among them", self, left)
	}
	if left := survivors("pid:[1]", 0); len(left) != 0 {
		t.Fatalf("survivors of a namespace nobody is in = %v", left)
	}
}

// TestCheckStopped: the "stopped" check tells code that still runs after
// its call returned from code that was stopped, by its heartbeat alone.
func TestCheckStoppedWithoutDataDir(t *testing.T) {
	// A backend that cannot mount the data directory (kubernetes): the
	// sandbox's Kill is the evidence, and no heartbeat is looked for.
	r := &runner{fx: &fixtures{dataDir: t.TempDir()}}
	j := &judge{attack: Attack{Name: "res-test", Checks: []string{"stopped"}}}
	r.checkStopped(j.attack, j)
	if v, how := j.verdict(); v != Blocked || !strings.Contains(how, "killed the sandbox") {
		t.Fatalf("verdict = %s %q", v, how)
	}
}

func TestCheckStopped(t *testing.T) {
	tests := []struct {
		name    string
		beats   string // the file when the call returns ("" = none)
		running bool   // the code goes on beating
		want    Verdict
		how     string
	}{
		{name: "stopped", beats: "7 100.000\n8 100.100\n7 105.250\n", want: Blocked, how: "2 processes beat for 5.2s"},
		{name: "cut short by the kill", beats: "7 100.000\n7 101.500\n8 10", want: Blocked, how: "1 processes beat for 1.5s"},
		{name: "still running", beats: "7 100.000\n", running: true, want: Escaped, how: "still running after the call had returned"},
		{name: "no heartbeat", want: Failed, how: "no heartbeat"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := &runner{fx: &fixtures{dataDir: dir}, settings: settings.Settings{DataDir: dir}}
			a := Attack{Name: "res-test", Checks: []string{"stopped"}}
			path, inside := r.fx.heartbeat(a)
			if inside != "/workspace/data/heartbeat-res-test" {
				t.Fatalf("heartbeat inside the sandbox = %q", inside)
			}
			if tc.beats != "" {
				if err := os.WriteFile(path, []byte(tc.beats), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			stop := make(chan struct{})
			defer close(stop)
			if tc.running {
				go func() {
					for {
						select {
						case <-stop:
							return
						case <-time.After(100 * time.Millisecond):
							f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
							if err != nil {
								return
							}
							fmt.Fprintf(f, "7 %.3f\n", float64(time.Now().UnixMilli())/1000)
							f.Close()
						}
					}
				}()
			}
			j := &judge{attack: a}
			r.checkStopped(a, j)
			v, how := j.verdict()
			if v != tc.want || !strings.Contains(how, tc.how) {
				t.Fatalf("verdict = %s %q, want %s with %q", v, how, tc.want, tc.how)
			}
		})
	}
}
