package settings

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// load loads with a registry whose backends stand in for app's table,
// which this package cannot import.
func load(flags map[string]string, env Env) (Settings, []Source, error) {
	return NewRegistry([]Choice{{Name: "auto"}, {Name: "native"}, {Name: "podman"}}).Load(flags, env)
}

func TestLoadPrecedence(t *testing.T) {
	env := Env{Home: "/home/u", Vars: map[string]string{
		"MCP_BRIDGE_TIMEOUT": "45", "CODEMODE_TIMEOUT": "50s", // CODEMODE_* wins over MCP_BRIDGE_*
		"MCP_BRIDGE_MEMORY": "1g", "MCP_BRIDGE_PIDS": "200", "MCP_BRIDGE_OUTPUT_MODE": "TOON",
		"MCP_BRIDGE_LOG_LEVEL": "debug", "MCP_BRIDGE_STATE_DIR": "~/state",
	}}
	s, sources, err := load(map[string]string{"pids": "300"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if s.Timeout != 50*time.Second || s.MemoryBytes != 1<<30 || s.PIDs != 300 || s.OutputMode != "toon" ||
		s.LogLevel != slog.LevelDebug || s.StateDir != "/home/u/state" || s.MaxTimeout != 120*time.Second {
		t.Fatalf("settings = %+v", s)
	}
	from := map[string]string{}
	for _, src := range sources {
		from[src.Name] = src.From
	}
	for name, want := range map[string]string{"timeout": "env CODEMODE_TIMEOUT", "pids": "flag --pids", "memory": "env MCP_BRIDGE_MEMORY", "max-timeout": "default"} {
		if from[name] != want {
			t.Errorf("source of %s = %q, want %q", name, from[name], want)
		}
	}
}

func TestDefaults(t *testing.T) {
	s, _, err := load(nil, Env{Home: "/h", Vars: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Timeout != 30*time.Second || s.MaxTimeout != 120*time.Second || s.MaxSessions != 16 || s.IdleTimeout != 10*time.Minute ||
		s.OutputLimit != 64<<10 || s.MemoryBytes != 512<<20 || s.PIDs != 128 || s.Backend != "auto" || s.StateDir != "/h/.local/state/codemode" ||
		s.Image != "python:3.12-slim" || s.ContainerUser != "65534:65534" {
		t.Fatalf("defaults = %+v", s)
	}
	s, _, _ = load(nil, Env{Home: "/h", Vars: map[string]string{"XDG_STATE_HOME": "/xdg"}})
	if s.StateDir != "/xdg/codemode" {
		t.Errorf("state dir with XDG_STATE_HOME = %q", s.StateDir)
	}
}

func TestBadValuesNameTheVariable(t *testing.T) {
	tests := []struct {
		flags map[string]string
		vars  map[string]string
		want  string
	}{
		{vars: map[string]string{"MCP_BRIDGE_TIMEOUT": "soon"}, want: `invalid value "soon" for MCP_BRIDGE_TIMEOUT: want a duration such as 30 or 30s`},
		{vars: map[string]string{"MCP_BRIDGE_MEMORY": "lots"}, want: `invalid value "lots" for MCP_BRIDGE_MEMORY: want a size such as 512m`},
		{vars: map[string]string{"MCP_BRIDGE_PIDS": "-3"}, want: `for MCP_BRIDGE_PIDS: want a non-negative integer`},
		{vars: map[string]string{"MCP_BRIDGE_OUTPUT_MODE": "xml"}, want: `for MCP_BRIDGE_OUTPUT_MODE: want one of compact, toon`},
		{vars: map[string]string{"CODEMODE_BACKEND": "vm"}, want: `for CODEMODE_BACKEND: want one of auto, native`},
		{flags: map[string]string{"cpus": "many"}, want: `for flag --cpus: want a non-negative number`},
		{flags: map[string]string{"nope": "1"}, want: `unknown setting "nope"`},
		{vars: map[string]string{"MCP_BRIDGE_TIMEOUT": "200"}, want: "max-timeout (2m0s) must not be below timeout (3m20s)"},
		{vars: map[string]string{"CODEMODE_MAX_SESSIONS": "0"}, want: "max-sessions must be at least 1"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			_, _, err := load(tc.flags, Env{Home: "/h", Vars: tc.vars})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load() error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"30": 30 * time.Second, "30s": 30 * time.Second, "1.5": 1500 * time.Millisecond, "2m": 2 * time.Minute, "0": 0} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "3x", "1e20"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) succeeded", bad)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"65536": 65536, "64k": 64 << 10, "64KiB": 64 << 10, "512m": 512 << 20, "512MB": 512 << 20, "1g": 1 << 30, "1.5g": 3 << 29, "10b": 10} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "m", "-1k", "1t", "9999999999g"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) succeeded", bad)
		}
	}
}

// The backend setting accepts exactly the choices the registry was given.
func TestBackendChoices(t *testing.T) {
	choices := []Choice{{Name: "auto", Summary: "the first that works"}, {Name: "alpha", Summary: "one"}, {Name: "beta"}}
	tests := []struct {
		name    string
		choices []Choice
		value   string // "" = the default
		want    string
		wantErr string
	}{
		{name: "default", choices: choices, want: "auto"},
		{name: "a choice", choices: choices, value: "beta", want: "beta"},
		{name: "any case", choices: choices, value: "Alpha", want: "alpha"},
		{name: "unknown", choices: choices, value: "gamma", wantErr: `invalid value "gamma" for flag --backend: want one of auto, alpha, beta`},
		{name: "no choices", choices: nil, value: "alpha", wantErr: `invalid value "alpha" for flag --backend`},
		{name: "default not among them", choices: choices[1:], wantErr: `invalid value "auto" for default: want one of alpha, beta`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			flags := map[string]string{}
			if tc.value != "" {
				flags["backend"] = tc.value
			}
			s, _, err := NewRegistry(tc.choices).Load(flags, Env{Home: "/h"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load(backend=%q) error = %v, want %q", tc.value, err, tc.wantErr)
				}
				return
			}
			if err != nil || s.Backend != tc.want {
				t.Fatalf("Load(backend=%q) = %q, %v; want %q", tc.value, s.Backend, err, tc.want)
			}
		})
	}
	reg := NewRegistry(choices)
	if got := reg.Choices("backend"); len(got) != 3 || got[0] != choices[0] || got[2] != choices[2] {
		t.Errorf("Choices(backend) = %v, want %v", got, choices)
	}
	if got := reg.Choices("timeout"); got != nil {
		t.Errorf("Choices(timeout) = %v, want nil (any duration)", got)
	}
}

func TestCatalogList(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want []string
	}{
		{"", nil},
		{"a.json", []string{"a.json"}},
		{" a.json, ,https://registry.example.com ,", []string{"a.json", "https://registry.example.com"}},
	} {
		s, _, err := load(nil, Env{Home: "/home/u", Vars: map[string]string{"CODEMODE_CATALOG": tt.raw, "CODEMODE_NPM_PREFIX": "~/npm"}})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(s.Catalogs, "|") != strings.Join(tt.want, "|") || len(s.Catalogs) != len(tt.want) || s.NPMPrefix != "/home/u/npm" {
			t.Errorf("CODEMODE_CATALOG=%q: catalogs %q, npm prefix %q", tt.raw, s.Catalogs, s.NPMPrefix)
		}
	}
}

func TestPreloadList(t *testing.T) {
	for _, tt := range []struct {
		raw  string // "" = unset
		want []string
	}{
		{"", []string{"numpy", "pandas", "matplotlib.pyplot"}},
		{"none", nil},
		{" None ", nil},
		{"polars, ,scipy.stats", []string{"polars", "scipy.stats"}},
	} {
		vars := map[string]string{}
		if tt.raw != "" {
			vars["CODEMODE_PRELOAD"] = tt.raw
		}
		s, _, err := load(nil, Env{Home: "/h", Vars: vars})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(s.Preload, "|") != strings.Join(tt.want, "|") || len(s.Preload) != len(tt.want) {
			t.Errorf("CODEMODE_PRELOAD=%q: preload %q, want %q", tt.raw, s.Preload, tt.want)
		}
	}
}
