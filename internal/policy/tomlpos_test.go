package policy

import (
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestTOMLKeyLines(t *testing.T) {
	src := `# [[rules]] in a comment
default = "allow" # when = 'x'
"quoted" = 1
dotted.key = 2

[[rules]]
server = "fs"
when = '''
[[rules]]
when = "not a key"
'''
decision = """
deny"""

[[ rules ]]   # second entry
tool = "a#b" # a # in a string
reason = "say \"hi\" [x]"
decision = "ask"

[limits]
max_calls_per_run = 1

[[other]]
x = [
  { a = 1, b = [2, 3] },
  { c = 1979-05-27 07:32:00Z },
]
inline = { d = 4, e = { f = 5 } }

[[other.sub]]
g = 6
`
	want := map[string]int{
		"default": 2, "quoted": 3, "dotted.key": 4,
		"rules[0]": 6, "rules[0].server": 7, "rules[0].when": 8, "rules[0].decision": 12,
		"rules[1]": 15, "rules[1].tool": 16, "rules[1].reason": 17, "rules[1].decision": 18,
		"limits": 20, "limits.max_calls_per_run": 21,
		"other[0]": 23, "other[0].x": 24, "other[0].x[0]": 25, "other[0].x[0].a": 25, "other[0].x[0].b[1]": 25,
		"other[0].x[1].c": 26, "other[0].inline.e.f": 28,
		"other[0].sub[0]": 30, "other[0].sub[0].g": 31,
	}
	got := tomlKeyLines(src)
	for k, line := range want {
		if got[k] != line {
			t.Errorf("line of %s = %d, want %d", k, got[k], line)
		}
	}
	for k := range got {
		if strings.Contains(k, "not a key") || k == "rules[2]" || strings.HasPrefix(k, "rules[0].when.") {
			t.Errorf("found %q inside a string", k)
		}
	}
	if _, err := toml.Decode(src, new(map[string]any)); err != nil {
		t.Fatalf("the test document is not valid TOML: %v", err)
	}
}

var indexRE = regexp.MustCompile(`\[\d+\]`)

// FuzzTOMLKeyLines: on any input the scanner ends without panicking, and on
// a document toml accepts it finds every key the decoder saw (by their
// plain names: quoted keys with escapes are left out).
func FuzzTOMLKeyLines(f *testing.F) {
	for _, s := range []string{
		"a = 1\n[[r]]\nb = 'x'\n[[r]]\nc = \"\"\"\n[[r]]\n\"\"\"\n",
		"x = [ {a = 1}, {b = [1, {c = 2}]} ]\n",
		"[t]\n'q' = 1\n\"p\" . k = 2 # c\n",
		"s = '''a'''''\nt = \"\"\"b\"\"\"\"\"\nu = 1\n",
		"[[a.b]]\n[[a.b]]\nc = 1\n",
		"a = \"\\\\\"\nb = 1\n",
	} {
		f.Add(s)
	}
	bare := regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	f.Fuzz(func(t *testing.T, src string) {
		lines := tomlKeyLines(src)
		md, err := toml.Decode(src, new(map[string]any))
		if err != nil {
			return
		}
		found := map[string]bool{}
		for k := range lines {
			found[indexRE.ReplaceAllString(k, "")] = true
		}
	keys:
		for _, k := range md.Keys() {
			for _, seg := range k {
				if !bare.MatchString(seg) {
					continue keys
				}
			}
			if name := strings.Join(k, "."); !found[name] {
				t.Fatalf("key %q not found; scanner saw %v", name, lines)
			}
		}
	})
}
