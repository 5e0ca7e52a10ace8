package policy

import (
	"path"
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"fs", "fs", true},
		{"fs", "fs2", false},
		{"", "", true},
		{"", "x", false},
		{"*", "", true},
		{"*", "a/b", true},
		{"write_*", "write_file", true},
		{"write_*", "read_file", false},
		{"*_file", "write_file", true},
		{"*a*b*", "xxaxxbxx", true},
		{"*a*b", "xxaxxbxxb", true},
		{"*a*b", "xxaxxbxxc", false},
		{"?", "é", true},
		{"??", "é", false},
		{"a?c", "a/c", true},
		{"db[0-9]", "db7", true},
		{"db[0-9]", "dbx", false},
		{"db[^0-9]", "dbx", true},
		{"db[^0-9]", "db1", false},
		{"[a-cx]", "x", true},
		{`\*`, "*", true},
		{`\*`, "a", false},
		{`[\]]`, "]", true},
		{"[*]", "*", true},
		{"[*]", "a", false},
		{"a*", "a", true},
		{"**", "anything/at/all", true},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Fatalf("compileGlob(%q): %v", tt.pattern, err)
		}
		if got := g.match(tt.name); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
	for _, bad := range []string{"[", "a[", "[]", "[^]", "[a-", "[a-]", "[-a]", `\`, `[\`, "[z", "a*[", "[\xff]"} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("compileGlob(%q) accepted a bad pattern", bad)
		}
	}
}

// FuzzGlob compares the matcher with path.Match on names without '/', where
// the two must agree, bad patterns included.
func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{
		{"write_*", "write_file"}, {"db[0-9]", "db7"}, {"[^a-c]?x", "dzx"}, {`\[*\]`, "[x]"},
		{"*a*a*a*b", "aaaaaaaaaab"}, {"[", "x"}, {"a[b-", "ab"}, {"[é-ü]", "ö"}, {"?", "\xff"}, {"[]a]", "]"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if strings.Contains(name, "/") {
			return
		}
		want, wantErr := path.Match(pattern, name)
		g, err := compileGlob(pattern)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("compileGlob(%q) error %v, path.Match error %v", pattern, err, wantErr)
		}
		if err != nil {
			return
		}
		if got := g.match(name); got != want {
			t.Fatalf("match(%q, %q) = %v, path.Match says %v", pattern, name, got, want)
		}
	})
}
