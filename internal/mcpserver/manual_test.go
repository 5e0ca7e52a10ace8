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

// TestManualNetwork: the manual tells the model whether code has a network,
// and to which hosts.
func TestManualNetwork(t *testing.T) {
	tests := []struct {
		egress []string
		want   string
	}{
		{nil, "everything else is read-only. No network.\n"},
		{[]string{"pypi.org", "10.0.0.0/8:5432"}, "- Network: only HTTP(S), through codemode's proxy (HTTP_PROXY and HTTPS_PROXY are set, so urllib, requests, pip and curl use it), to these hosts: pypi.org, 10.0.0.0/8:5432. Other hosts get HTTP 403.\n"},
	}
	for _, tc := range tests {
		if got := Manual(ManualInfo{Egress: tc.egress}); !strings.Contains(got, tc.want) {
			t.Errorf("Manual with egress %v lacks %q", tc.egress, tc.want)
		}
	}
}

// TestToolDescriptionNetwork: the description the model sees says "no
// network" only when there is none.
func TestToolDescriptionNetwork(t *testing.T) {
	if d := description(false); !strings.Contains(d, "no network") {
		t.Errorf("without egress: %q", d)
	}
	if d := description(true); strings.Contains(d, "no network") || !strings.Contains(d, "network: allowed hosts only") {
		t.Errorf("with egress: %q", d)
	}
}
