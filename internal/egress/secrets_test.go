package egress

import (
	"maps"
	"strings"
	"testing"
)

func TestParseSecretsFile(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]string
		err      string
	}{
		{"values verbatim", "A=x\nB = y=z # not a comment\r\n\n# comment\n  # indented comment\nC=\n",
			map[string]string{"A": "x", "B": " y=z # not a comment", "C": ""}, ""},
		{"empty file", "", map[string]string{}, ""},
		{"no equals", "A=1\nTOKEN\n", nil, "line 2: want NAME=VALUE"},
		{"bad name", "1A=x", nil, "line 1: want NAME=VALUE"},
		{"twice", "A=1\nA=2", nil, "line 2: A is given twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSecretsFile([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !maps.Equal(got, tc.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestParseSecret(t *testing.T) {
	values := map[string]string{"TOKEN": "value-of-the-token", "SHORT": "1234567"}
	lookup := func(n string) (string, bool) { v, ok := values[n]; return v, ok }
	if s, err := ParseSecret("TOKEN=*.example.com", lookup); err != nil || s.Value != "value-of-the-token" || s.Hosts.String() != "*.example.com" {
		t.Fatalf("got %+v, %v", s, err)
	}
	for in, want := range map[string]string{
		"TOKEN":            "want NAME=HOST_PATTERN",
		"TO-KEN=x.com":     "not an environment variable name",
		"TOKEN=bad host":   "egress secret TOKEN",
		"MISSING=x.com":    "neither the secrets file nor codemode's environment has a value for MISSING",
		"TOKEN=2130706433": "non-standard form",
		"SHORT=x.com":      "the value has 7 bytes; a secret needs at least 8",
	} {
		if _, err := ParseSecret(in, lookup); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSecret(%q) = %v, want %q", in, err, want)
		}
	}
}

// FuzzParseSecretsFile: whatever it accepts, every name is a variable name
// and every value a single line.
func FuzzParseSecretsFile(f *testing.F) {
	f.Add("A=1\n# c\nB=x=y\r\n")
	f.Add("=\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseSecretsFile([]byte(in))
		if err != nil {
			return
		}
		for k, v := range got {
			if !isEnvName(k) || strings.ContainsAny(v, "\n") {
				t.Fatalf("accepted %q=%q from %q", k, v, in)
			}
		}
	})
}
