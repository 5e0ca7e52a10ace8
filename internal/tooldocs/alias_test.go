package tooldocs

import (
	"fmt"
	"regexp"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSanitizeIdentifier(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"camelCase is lower-cased", "readFile", "readfile"},
		{"snake_case kept", "read_file", "read_file"},
		{"kebab-case", "list-events", "list_events"},
		{"dots and slashes", "fs.read/file", "fs_read_file"},
		{"run of separators is one underscore", "a - b", "a_b"},
		{"surrounding space stripped", "  search issues \t", "search_issues"},
		{"python space stripped", "\x1cname\x1f", "name"},
		{"keyword", "class", "class_"},
		{"keyword after lower-casing", "Import", "import_"},
		{"capitalized constant is not a keyword after lower-casing", "None", "none"},
		{"soft keyword is fine", "match", "match"},
		{"leading digit", "3d_render", "_3d_render"},
		{"only digits", "42", "_42"},
		{"empty", "", "tool"},
		{"blank", "   ", "tool"},
		{"only symbols", "!!!", "_"},
		{"non-ASCII letters replaced", "lire_fichier_é", "lire_fichier__"},
		{"non-ASCII run", "données", "donn_es"},
		{"leading separator kept", "-rf", "_rf"},
		{"underscore only", "_", "_"},
		{"invalid UTF-8", "a\xffb", "a_b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := SanitizeIdentifier(tc.in); got != tc.want {
				t.Errorf("SanitizeIdentifier(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestToolAliasesDuplicates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"distinct", []string{"read_file", "writeFile"}, []string{"read_file", "writefile"}},
		{"case duplicates", []string{"readFile", "read_file", "READFILE", "readfile"}, []string{"readfile", "read_file", "readfile_2", "readfile_3"}},
		{"separator duplicates", []string{"get-user", "get.user", "get user"}, []string{"get_user", "get_user_2", "get_user_3"}},
		{"keyword duplicates", []string{"class", "Class"}, []string{"class_", "class__2"}},
		{"suffix clash is suffixed again", []string{"a_2", "a", "a"}, []string{"a_2", "a", "a_3"}},
		{"later own alias clashes with suffix", []string{"a", "a", "a_2"}, []string{"a", "a_2", "a_2_2"}},
		{"empty names", []string{"", ""}, []string{"tool", "tool_2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, toolAliases(tc.in)); diff != "" {
				t.Errorf("toolAliases(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestServerAliases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		names []string // registered in order
		want  []string
	}{
		{"plain", []string{"github"}, []string{"github"}},
		{"lower-cased and separators", []string{"My-Server.v2"}, []string{"my_server_v2"}},
		{"not stripped", []string{" files "}, []string{"_files_"}},
		{"empty", []string{""}, []string{"server"}},
		{"only symbols become one underscore", []string{"@@"}, []string{"_"}},
		{"leading digit", []string{"1password"}, []string{"_1password"}},
		{"keyword", []string{"class"}, []string{"class_"}},
		{"keyword collision", []string{"class", "Class"}, []string{"class_", "class_2"}},
		{"collision", []string{"my-server", "my_server", "My Server"}, []string{"my_server", "my_server_2", "my_server_3"}},
		{"servers is reserved", []string{"servers", "Servers"}, []string{"servers_2", "servers_3"}},
		{"non-ASCII", []string{"café"}, []string{"caf_"}},
		{"Kelvin sign lower-cases to k", []string{"\u212a8s"}, []string{"k8s"}},
		{"dotted capital I lower-cases like Python", []string{"\u0130d"}, []string{"i_d"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := NewAliases()
			var got []string
			for _, n := range tc.names {
				got = append(got, a.For(n))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("aliases of %q mismatch (-want +got):\n%s", tc.names, diff)
			}
		})
	}
}

func TestAliasesStableAndReserved(t *testing.T) {
	t.Parallel()
	a := NewAliases("runtime")
	if got := a.For("runtime"); got != "runtime_2" {
		t.Errorf("For(runtime) = %q, want runtime_2 (reserved)", got)
	}
	first := a.For("my-server")
	if got := a.For("my_server"); got != "my_server_2" {
		t.Errorf("For(my_server) = %q, want my_server_2", got)
	}
	if got := a.For("my-server"); got != first {
		t.Errorf("second For(my-server) = %q, want %q", got, first)
	}
	if got, ok := a.Lookup("my_server"); !ok || got != "my_server_2" {
		t.Errorf("Lookup(my_server) = %q, %v, want my_server_2, true", got, ok)
	}
	if _, ok := a.Lookup("unknown"); ok {
		t.Error("Lookup(unknown) found an alias that was never assigned")
	}

	// A removed and re-added server keeps its alias in a catalogue.
	c := NewCatalog(a)
	c.AddServer("x-y", "")
	c.AddServer("x_y", "")
	c.RemoveServer("x-y")
	c.AddServer("x-y", "")
	s, _ := c.Server("x-y")
	if s.Alias != "x_y" {
		t.Errorf("re-added server alias = %q, want x_y", s.Alias)
	}
}

func TestAliasesConcurrent(t *testing.T) {
	t.Parallel()
	a := NewAliases()
	const n = 50
	var wg sync.WaitGroup
	got := make([][]string, 4)
	for g := range got {
		wg.Go(func() {
			for i := range n {
				got[g] = append(got[g], a.For(fmt.Sprintf("srv-%d", i%10)))
			}
		})
	}
	wg.Wait()
	seen := make(map[string]string)
	for _, list := range got {
		for i, alias := range list {
			name := fmt.Sprintf("srv-%d", i%10)
			if prev, ok := seen[name]; ok && prev != alias {
				t.Fatalf("server %s got aliases %q and %q", name, prev, alias)
			}
			seen[name] = alias
		}
	}
	if len(seen) != 10 {
		t.Errorf("%d servers got aliases, want 10", len(seen))
	}
}

var pyIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func FuzzSanitizeIdentifier(f *testing.F) {
	for _, s := range []string{
		"", " ", "readFile", "read_file", "list-events", "class", "Class", "None", "3d", "_",
		"a\xffb", "données", "\u212a", "  spaced  ", "\x1c\x1f", "import", "a--b__c", "😀tool",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := SanitizeIdentifier(s)
		if !pyIdentifier.MatchString(got) {
			t.Fatalf("SanitizeIdentifier(%q) = %q, not a Python identifier", s, got)
		}
		if IsPythonKeyword(got) {
			t.Fatalf("SanitizeIdentifier(%q) = %q, a Python keyword", s, got)
		}
		if again := SanitizeIdentifier(got); again != got {
			t.Fatalf("SanitizeIdentifier not idempotent: %q → %q → %q", s, got, again)
		}
	})
}

func FuzzServerAlias(f *testing.F) {
	for _, s := range []string{"", "github", "My Server", "servers", "class", "1password", "\u0130", "\u212a", "a\xff"} {
		f.Add(s, "other")
	}
	f.Fuzz(func(t *testing.T, first, second string) {
		a := NewAliases()
		x, y := a.For(first), a.For(second)
		for _, alias := range []string{x, y} {
			if !pyIdentifier.MatchString(alias) || IsPythonKeyword(alias) || alias == "servers" {
				t.Fatalf("aliases of %q, %q = %q, %q: %q is unusable", first, second, x, y, alias)
			}
		}
		if (first == second) != (x == y) {
			t.Fatalf("aliases of %q, %q = %q, %q: equal iff the names are", first, second, x, y)
		}
	})
}
