package mcpserver

import "testing"

// TestSessionless: requests are routed by the revision they ask for; only
// 2026-07-28 and later go to the stateless handler (versions are dates and
// order as strings), and a request without the header (initialize) is
// stateful.
func TestSessionless(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    bool
	}{
		{"", false},
		{"2024-11-05", false},
		{"2025-06-18", false},
		{"2025-11-25", false},
		{"2026-07-28", true},
		{"2027-01-01", true},
	} {
		if got := sessionless(tc.version); got != tc.want {
			t.Errorf("sessionless(%q) = %v, want %v", tc.version, got, tc.want)
		}
	}
}

// TestNewHandle: minted handles are valid session names, recognised as
// handles, and never repeat.
func TestNewHandle(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		h := newHandle()
		if !handle.MatchString(h) || !sessionName.MatchString(h) || seen[h] {
			t.Fatalf("handle %q: handle %v, session name %v, repeated %v", h, handle.MatchString(h), sessionName.MatchString(h), seen[h])
		}
		seen[h] = true
	}
	for _, name := range []string{"work", "h-1", "h-" + "0123456789abcdef0123456789ABCDEF", "default"} {
		if handle.MatchString(name) {
			t.Errorf("%q taken for a handle: a name the client chose would be refused when not live", name)
		}
	}
}
