package mcpserver

import (
	"strings"
	"testing"
)

func TestManualNamesPreloadedModules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		preload []string
		want    string // "" = no preload line
	}{
		{"data packages", []string{"numpy", "pandas", "matplotlib.pyplot"}, "imported in a new session (when installed), so importing them costs nothing: numpy, pandas, matplotlib.pyplot."},
		{"none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Manual(ManualInfo{Preload: tc.preload})
			has := strings.Contains(m, "Already imported in a new session")
			if tc.want == "" && has || tc.want != "" && !strings.Contains(m, tc.want) {
				t.Fatalf("manual with preload %v:\n%s", tc.preload, m)
			}
		})
	}
}
