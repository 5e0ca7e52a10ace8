package tooldocs

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"readFile", []string{"read", "file"}},
		{"read_file", []string{"read", "file"}},
		{"list-events", []string{"list", "events"}},
		{"fs.read", []string{"fs", "read"}},
		{"HTTPServer", []string{"http", "server"}},
		{"XMLHttpRequest", []string{"xml", "http", "request"}},
		{"oauth2Token", []string{"oauth", "2", "token"}},
		{"getV2Users", []string{"get", "v", "2", "users"}},
		{"ID", []string{"id"}},
		{"données_clé", []string{"données", "clé"}},
		{"Éditer", []string{"éditer"}},
		{"  ", nil},
		{"", nil},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, splitWords(nil, tc.in)); diff != "" {
			t.Errorf("splitWords(%q) mismatch (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestStem(t *testing.T) {
	t.Parallel()
	// Each group must share one stem.
	groups := [][]string{
		{"issue", "issues"},
		{"create", "creates", "created", "creating"},
		{"update", "updated", "updating", "updates"},
		{"list", "lists", "listing", "listed"},
		{"directory", "directories"},
		{"branch", "branches"},
		{"search", "searches", "searching", "searched"},
		{"commit", "commits", "committed"},
		{"pull", "pulls", "pulled"},
		{"run", "running"},
		{"add", "added", "adding"},
		{"message", "messages"},
		{"table", "tables"},
		{"address", "addresses"},
	}
	for _, g := range groups {
		for _, w := range g[1:] {
			if stem(w) != stem(g[0]) {
				t.Errorf("stem(%q) = %q, stem(%q) = %q, want equal", w, stem(w), g[0], stem(g[0]))
			}
		}
	}
	// And these must stay apart or intact.
	for w, want := range map[string]string{
		"status": "status", "analysis": "analysis", "string": "string", "sql": "sql",
		"need": "need", "café": "café", "file": "file", "files": "file",
	} {
		if got := stem(w); got != want {
			t.Errorf("stem(%q) = %q, want %q", w, got, want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		max  int
		want int
	}{
		{"search", "search", 2, 0},
		{"serach", "search", 2, 1}, // swap
		{"isues", "issues", 2, 1},  // insertion
		{"issuess", "issues", 2, 1},
		{"sarch", "search", 2, 1},
		{"seerch", "search", 2, 1}, // substitution
		{"obsrevatoins", "observations", 2, 2},
		{"kitten", "sitting", 5, 3},
		{"kitten", "sitting", 2, 3}, // cut off at max+1
		{"a", "abcdef", 2, 3},
		{"", "ab", 2, 2},
		{"café", "cafe", 1, 1},
	}
	for _, tc := range tests {
		if got := editDistance(tc.a, tc.b, tc.max); got != tc.want {
			t.Errorf("editDistance(%q, %q, %d) = %d, want %d", tc.a, tc.b, tc.max, got, tc.want)
		}
	}
}

// TestVocabSimilarMatchesScan checks the deletion index against a plain
// scan of the vocabulary with the same distance function.
func TestVocabSimilarMatchesScan(t *testing.T) {
	t.Parallel()
	c := newCatalogOf(syntheticServers(t, 1000))
	v := c.vocab
	rng := rand.New(rand.NewPCG(1, 2))
	letters := []rune("abcdefghijklmnopqrstuvwxyz")
	mutate := func(w string) string {
		rs := []rune(w)
		for range 1 + rng.IntN(2) {
			switch i := rng.IntN(len(rs) + 1); rng.IntN(4) {
			case 0: // insert
				rs = slices.Insert(rs, i, letters[rng.IntN(len(letters))])
			case 1: // delete
				if i < len(rs) {
					rs = slices.Delete(rs, i, i+1)
				}
			case 2: // substitute
				if i < len(rs) {
					rs[i] = letters[rng.IntN(len(letters))]
				}
			case 3: // swap
				if i+1 < len(rs) {
					rs[i], rs[i+1] = rs[i+1], rs[i]
				}
			}
		}
		return string(rs)
	}
	for range 500 {
		q := mutate(v.sorted[rng.IntN(len(v.sorted))])
		k := maxEdits(q)
		var want []string
		for _, w := range v.sorted {
			if w != q && len([]rune(w)) >= minTypoLen && editDistance(q, w, k) <= k {
				want = append(want, w)
			}
		}
		var got []string
		v.similar(q, func(w string, dist int) {
			if d := editDistance(q, w, k); d != dist {
				t.Errorf("similar(%q) reported %q at distance %d, want %d", q, w, dist, d)
			}
			got = append(got, w)
		})
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("similar(%q) mismatch (-scan +index):\n%s", q, diff)
		}
	}
}

func TestVocabEmptiesOnRemoval(t *testing.T) {
	t.Parallel()
	fixture := loadFixture(t)
	c := newCatalogOf(fixture)
	for _, s := range fixture {
		c.RemoveServer(s.Name)
	}
	v := c.vocab
	if len(v.refs) != 0 || len(v.sorted) != 0 || len(v.ids) != 0 || len(v.deletes) != 0 {
		t.Errorf("vocabulary not empty after removing every server: %d refs, %d sorted, %d ids, %d deletion keys",
			len(v.refs), len(v.sorted), len(v.ids), len(v.deletes))
	}
	if c.stats.docs != 0 || len(c.stats.df) != 0 || c.stats.totals != [numFields]int64{} {
		t.Errorf("corpus statistics not empty: %+v", c.stats)
	}
}
