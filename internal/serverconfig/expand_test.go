package serverconfig

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"HOME": "/home/u", "TOKEN": "t0k", "EMPTY": "", "NESTED": "${TOKEN}"}
	x := &expander{
		lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
		predefined: map[string]string{
			"userHome": "/home/u", "workspaceFolder": "/p/app", "workspaceFolderBasename": "app",
			"pathSeparator": "/", "/": "/",
		},
	}
	tests := []struct {
		name string
		in   string
		bare bool
		want string
		ex   expansion
	}{
		{name: "no variables", in: "plain text", want: "plain text"},
		{name: "braced", in: "Bearer ${TOKEN}", want: "Bearer t0k"},
		{name: "undefined", in: "a${NOPE}b", want: "ab", ex: expansion{undefined: []string{"NOPE"}}},
		{name: "undefined once", in: "${NOPE}${NOPE}", want: "", ex: expansion{undefined: []string{"NOPE"}}},
		{name: "default when unset", in: "${NOPE:-fallback}", want: "fallback"},
		{name: "default when empty", in: "${EMPTY:-fallback}", want: "fallback"},
		{name: "default unused", in: "${TOKEN:-fallback}", want: "t0k"},
		{name: "empty default", in: "${NOPE:-}", want: ""},
		{name: "nested default", in: "${NOPE:-${TOKEN}}", want: "t0k"},
		{name: "nested undefined default", in: "${NOPE:-x${ALSO}}", want: "x", ex: expansion{undefined: []string{"ALSO"}}},
		{name: "values are not re-expanded", in: "${NESTED}", want: "${TOKEN}"},
		{name: "vscode env", in: "${env:TOKEN}", want: "t0k"},
		{name: "vscode env undefined", in: "${env:NOPE}", want: "", ex: expansion{undefined: []string{"NOPE"}}},
		{name: "predefined", in: "${workspaceFolder}${/}${workspaceFolderBasename}.db", want: "/p/app/app.db"},
		{name: "user home", in: "${userHome}/x", want: "/home/u/x"},
		{name: "input", in: "${input:api-key}", want: "", ex: expansion{inputs: []string{"${input:api-key}"}}},
		{name: "unsupported prefix", in: "${command:pick}", want: "", ex: expansion{unsupported: []string{"${command:pick}"}}},
		{name: "bare not expanded by default", in: "$TOKEN", want: "$TOKEN"},
		{name: "bare expanded", in: "$TOKEN/$NOPE!", bare: true, want: "t0k/!", ex: expansion{undefined: []string{"NOPE"}}},
		{name: "lone dollar", in: "cost $5 $", bare: true, want: "cost $5 $"},
		{name: "unterminated", in: "x${TOKEN", want: "x${TOKEN"},
		{name: "not a name", in: "${1ABC} ${a b}", want: "${1ABC} ${a b}"},
		{name: "too deep kept literally", in: "${A:-${A:-${A:-${A:-${A:-${A:-${A:-${A:-${A:-x}}}}}}}}}",
			want: "${A:-x}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ex expansion
			got := x.expand(tc.in, tc.bare, &ex)
			if got != tc.want {
				t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if diff := cmp.Diff(tc.ex, ex, cmp.AllowUnexported(expansion{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("expand(%q) unresolved (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestExpandTilde(t *testing.T) {
	tests := []struct{ in, want string }{
		{"~", "/home/u"},
		{"~/bin/server", "/home/u/bin/server"},
		{"~/dir/", "/home/u/dir/"},
		{"~other/x", "~other/x"},
		{"a/~/b", "a/~/b"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := expandTilde(tc.in, "/home/u"); got != tc.want {
			t.Errorf("expandTilde(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := expandTilde("~/x", ""); got != "~/x" {
		t.Errorf("expandTilde without home = %q, want it unchanged", got)
	}
}

// TestExpansionInEntries checks which fields are expanded, with what, and
// that ~ is expanded only where documented.
func TestExpansionInEntries(t *testing.T) {
	env := Env{Home: "/home/u", Cwd: "/p", Vars: map[string]string{"BIN": "~/bin/srv", "TOK": "t", "PORT": "8080"}}
	ec := &entryContext{env: env, x: &expander{lookup: env.lookup}}
	raw := map[string]any{
		"command": "${BIN}",
		"args":    []any{"--port=${PORT}", "~/data", "x~/y", "${MISSING}"},
		"env":     map[string]any{"TOKEN": "${TOK}", "DIR": "~/keep"},
		"cwd":     "~/work/${PORT}",
	}
	d := decodeEntry("srv", raw, ec)
	want := Server{
		Name: "srv", Transport: TransportStdio, Command: "/home/u/bin/srv",
		Args: []string{"--port=8080", "/home/u/data", "x~/y", ""},
		Env:  map[string]string{"TOKEN": "t", "DIR": "~/keep"},
		Cwd:  "/home/u/work/8080",
	}
	if d.skip != "" {
		t.Fatalf("skipped: %s %s", d.skip, d.detail)
	}
	if diff := cmp.Diff(want, d.server); diff != "" {
		t.Errorf("server (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"MISSING"}, d.undefined); diff != "" {
		t.Errorf("undefined (-want +got):\n%s", diff)
	}

	remote := map[string]any{
		"type":    "http",
		"url":     "https://${HOST:-h.example}/mcp?port=${PORT}",
		"headers": map[string]any{"Authorization": "Bearer ${TOK}"},
	}
	d = decodeEntry("r", remote, ec)
	wantRemote := Server{
		Name: "r", Transport: TransportHTTP, URL: "https://h.example/mcp?port=8080",
		Headers: map[string]string{"Authorization": "Bearer t"},
	}
	if diff := cmp.Diff(wantRemote, d.server); diff != "" {
		t.Errorf("remote server (-want +got):\n%s", diff)
	}
}

func TestParseDotenv(t *testing.T) {
	in := "# comment\n\nexport A=1\nB = two words \nC='single $x'\nD=\"dq \\\"q\\\" \\n\"\nE=v # note\nF=\n"
	got, err := parseDotenv([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "1", "B": "two words", "C": "single $x", "D": "dq \"q\" \n", "E": "v", "F": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseDotenv (-want +got):\n%s", diff)
	}
	if _, err := parseDotenv([]byte("A=1\nnot a pair\n")); err == nil || err.Error() != "line 2: want KEY=value" {
		t.Errorf("parseDotenv(bad line) error = %v", err)
	}
}

func TestOAuthEntry(t *testing.T) {
	env := Env{Vars: map[string]string{"SECRET": "s3"}}
	ec := &entryContext{env: env, x: &expander{lookup: env.lookup}}
	tests := []struct {
		name  string
		oauth any
		want  *OAuth
		skip  string // part of the reason the entry is skipped
	}{
		{name: "none"},
		{name: "pre-registered", oauth: map[string]any{"clientId": "cid", "clientSecret": "${SECRET}", "scopes": []any{"read", "write"}},
			want: &OAuth{ClientID: "cid", ClientSecret: "s3", Scopes: []string{"read", "write"}}},
		{name: "scopes only", oauth: map[string]any{"scopes": []any{"read"}}, want: &OAuth{Scopes: []string{"read"}}},
		{name: "not an object", oauth: "cid", skip: "oauth: want an object"},
		{name: "bad scopes", oauth: map[string]any{"scopes": "read"}, skip: "oauth.scopes: want a list of strings"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := map[string]any{"url": "https://h.example/mcp"}
			if tc.oauth != nil {
				raw["oauth"] = tc.oauth
			}
			d := decodeEntry("r", raw, ec)
			if tc.skip != "" {
				if !strings.Contains(d.detail, tc.skip) {
					t.Fatalf("skip = %q %q, want %q", d.skip, d.detail, tc.skip)
				}
				return
			}
			if d.skip != "" {
				t.Fatalf("skipped: %s %s", d.skip, d.detail)
			}
			if diff := cmp.Diff(tc.want, d.server.OAuth); diff != "" {
				t.Errorf("oauth (-want +got):\n%s", diff)
			}
		})
	}
}
