package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHost(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, value string // "" = no such file: not a KVM guest
		wantOK      bool
		want        string // in the halt-polling check's detail; "" = no such check
	}{
		{"not a KVM guest", "", false, ""},
		{"halt polling off", "0\n", false, "off:"},
		{"halt polling on", "200000\n", true, "200µs"},
		{"unreadable value", "many\n", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if tc.value != "" {
				if err := os.WriteFile(path, []byte(tc.value), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			checks := Host(t.Context(), path)
			if len(checks) == 0 || checks[0].Name != "process wake-up" || !checks[0].OK || !strings.Contains(checks[0].Detail, "p50 of 200") {
				t.Fatalf("wake-up check: %+v", checks)
			}
			if tc.want == "" {
				if len(checks) != 1 {
					t.Fatalf("checks %+v, want the wake-up check alone", checks)
				}
				return
			}
			if len(checks) != 2 {
				t.Fatalf("checks %+v", checks)
			}
			c := checks[1]
			if c.Name != "guest halt polling" || c.OK != tc.wantOK || !strings.Contains(c.Detail, tc.want) || (!c.OK && !strings.Contains(c.Fix, path)) {
				t.Fatalf("halt-polling check %+v", c)
			}
		})
	}
}
