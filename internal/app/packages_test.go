package app

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/sandbox/linuxns"
	"github.com/codemode/codemode/internal/settings"
	"github.com/codemode/codemode/internal/testenv"
)

func TestFormatPackages(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`[["numpy","1.24.2"],["pandas","1.5.3"]]`, "numpy 1.24.2, pandas 1.5.3"},
		{`[]`, "none beyond the standard library"},
	} {
		got, err := formatPackages([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("formatPackages(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := formatPackages([]byte("Traceback")); err == nil {
		t.Error("garbage accepted")
	}
}

// TestProbeListsWhatSessionsImport runs the probe in a real native sandbox
// and checks it against what the host's Python can import (the native
// backend sees the host's /usr).
func TestProbeListsWhatSessionsImport(t *testing.T) {
	testenv.NativePython(t)
	s, _, err := SettingsRegistry().Load(nil, settings.Env{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var p packageList
	if err := p.probe(context.Background(), linuxns.New(nil), s); err != nil {
		t.Fatal(err)
	}
	line := p.get()
	if line == "" {
		t.Fatal("no package line")
	}
	if exec.Command("python3", "-c", "import numpy").Run() == nil && !strings.Contains(line, "numpy ") {
		t.Errorf("numpy is importable on the host but not listed: %s", line)
	}
}
