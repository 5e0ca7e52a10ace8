package tooldocs

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSearchEmptyQuery(t *testing.T) {
	t.Parallel()
	c := newCatalogOf(loadFixture(t))
	for _, q := range []string{"", "   ", "\t\n", "!!! ???", "x"} {
		docs := c.Search(q, 5, "summary")
		if docs == nil || len(docs) != 0 {
			t.Errorf("Search(%q) = %#v, want an empty, non-nil list", q, docs)
		}
		if b, _ := json.Marshal(docs); string(b) != "[]" {
			t.Errorf("Search(%q) marshals to %s, want []", q, b)
		}
	}
	if docs := NewCatalog(nil).Search("anything", 5, ""); len(docs) != 0 {
		t.Errorf("Search on an empty catalogue = %v", docs)
	}
}

func TestSearchLimit(t *testing.T) {
	t.Parallel()
	c := newCatalogOf(loadFixture(t))
	tests := []struct{ limit, want int }{
		{-3, 1}, {0, 1}, {1, 1}, {5, 5}, {20, 20}, {21, 20}, {1000, 20},
	}
	for _, tc := range tests {
		// "list" matches far more than 20 tools.
		if got := len(c.Search("list", tc.limit, "")); got != tc.want {
			t.Errorf("Search(list, limit %d) returned %d docs, want %d", tc.limit, got, tc.want)
		}
		if got := ClampLimit(tc.limit); got != tc.want {
			t.Errorf("ClampLimit(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
}

func TestSearchDetail(t *testing.T) {
	t.Parallel()
	c := newCatalogOf(loadFixture(t))
	full := c.Search("query by sql", 1, "Full")
	if len(full) != 1 || !strings.Contains(string(full[0].InputSchema), `"sql"`) {
		t.Errorf("Search(detail full) = %+v, want the input schema", full)
	}
	summary := c.Search("query by sql", 1, "anything")
	if len(summary) != 1 || summary[0].InputSchema != nil {
		t.Errorf("Search(detail anything) = %+v, want no input schema", summary)
	}
}

func TestSearchRanking(t *testing.T) {
	t.Parallel()
	c := newCatalogOf(loadFixture(t))
	tests := []struct {
		name, query string
		want        []string // leading results, in order
	}{
		{"exact tool name wins", "query", []string{"postgres/query"}},
		{"snake_case name", "create_issue", []string{"github/create_issue", "jira/createIssue"}},
		{"literal name beats compact match", "createIssue", []string{"jira/createIssue", "github/create_issue"}},
		{"server word breaks the tie", "jira create issue", []string{"jira/createIssue"}},
		{"server word breaks the tie the other way", "github create issue", []string{"github/create_issue"}},
		{"camelCase query", "searchNodes", []string{"memory/search_nodes"}},
		{"kebab-case query", "find-free-slots", []string{"calendar/find-free-slots"}},
		{"typo", "direcotry tree", []string{"filesystem/directory_tree"}},
		{"two typos in a long word", "obsrevatoins delete", []string{"memory/delete_observations"}},
		{"prefix", "calend", []string{"calendar/list-calendars"}},
		{"parameter name", "thread_ts", []string{"slack/slack_get_thread_replies", "slack/slack_reply_to_thread"}},
		{"synonym", "remove relations", []string{"memory/delete_relations"}},
		{"stemming", "listing commits", []string{"github/list_commits"}},
		{"title", "read-only sql", []string{"postgres/query"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			docs := c.Search(tc.query, len(tc.want), "")
			var got []string
			for _, d := range docs {
				got = append(got, d.Server+"/"+d.Tool)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Search(%q) mismatch (-want +got):\n%s", tc.query, diff)
			}
		})
	}
}

func TestSearchTieBreak(t *testing.T) {
	t.Parallel()
	c := NewCatalog(nil)
	same := []Tool{{Name: "zeta", Description: "Frobnicate a widget."}, {Name: "alpha", Description: "Frobnicate a widget."}}
	c.SetTools("b-server", same)
	c.SetTools("a-server", same)
	var got []string
	for _, d := range c.Search("frobnicate", 10, "") {
		got = append(got, d.Server+"/"+d.Tool)
	}
	want := []string{"a-server/alpha", "a-server/zeta", "b-server/alpha", "b-server/zeta"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tie order mismatch (-want +got):\n%s", diff)
	}
}

func TestSearchFiltered(t *testing.T) {
	t.Parallel()
	c := newCatalogOf(loadFixture(t))
	docs := c.SearchFiltered("create issue", 20, "", func(s, _ string) bool { return s == "jira" })
	if len(docs) == 0 {
		t.Fatal("SearchFiltered(jira) found nothing")
	}
	for _, d := range docs {
		if d.Server != "jira" {
			t.Errorf("SearchFiltered(jira) returned %s/%s", d.Server, d.Tool)
		}
	}
	// Hiding the best hit leaves the rest, still limit-long.
	all := c.Search("create issue", 3, "")
	best := all[0]
	kept := c.SearchFiltered("create issue", 3, "", func(s, tool string) bool { return s != best.Server || tool != best.Tool })
	if len(kept) != 3 || kept[0].Server+"/"+kept[0].Tool != all[1].Server+"/"+all[1].Tool {
		t.Errorf("hiding %s/%s: got %v, want the next hits", best.Server, best.Tool, kept)
	}
	for _, d := range kept {
		if d.Server == best.Server && d.Tool == best.Tool {
			t.Errorf("hidden tool %s/%s returned", d.Server, d.Tool)
		}
	}
}

// TestIncrementalIndexMatchesFresh checks that a catalogue that went through
// additions, replacements, description changes and removals ranks exactly
// like one built from scratch with the final state: per-server updates must
// leave no trace in the corpus statistics or the vocabulary.
func TestIncrementalIndexMatchesFresh(t *testing.T) {
	t.Parallel()
	fixture := loadFixture(t)
	byName := make(map[string]fixtureServer)
	for _, s := range fixture {
		byName[s.Name] = s
	}

	inc := NewCatalog(nil)
	for _, s := range fixture {
		inc.AddServer(s.Name, "old "+s.Description)
	}
	for _, s := range slices.Backward(fixture) {
		inc.SetTools(s.Name, s.Tools)
	}
	inc.SetTools("github", byName["github"].Tools[:3])
	inc.SetTools("slack", nil)
	inc.RemoveServer("memory")
	inc.SetTools("extra", byName["jira"].Tools)
	inc.RemoveServer("extra")
	for _, s := range fixture {
		inc.AddServer(s.Name, s.Description)
	}
	inc.SetTools("github", byName["github"].Tools)
	inc.SetTools("slack", byName["slack"].Tools)
	inc.SetTools("memory", byName["memory"].Tools)

	fresh := newCatalogOf(fixture)

	if inc.stats.docs != fresh.stats.docs || inc.stats.totals != fresh.stats.totals {
		t.Errorf("stats: incremental %d docs %v, fresh %d docs %v", inc.stats.docs, inc.stats.totals, fresh.stats.docs, fresh.stats.totals)
	}
	if diff := cmp.Diff(fresh.stats.df, inc.stats.df); diff != "" {
		t.Errorf("document frequencies differ (-fresh +incremental):\n%s", diff)
	}
	if diff := cmp.Diff(fresh.vocab.sorted, inc.vocab.sorted); diff != "" {
		t.Errorf("vocabularies differ (-fresh +incremental):\n%s", diff)
	}
	for _, tc := range relevanceCases {
		if diff := cmp.Diff(hitList(fresh.search(tc.query, 10, nil)), hitList(inc.search(tc.query, 10, nil))); diff != "" {
			t.Errorf("Search(%q) differs (-fresh +incremental):\n%s", tc.query, diff)
		}
	}
}

func hitList(hits []hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = fmt.Sprintf("%s/%s %.12g", h.server.Name, h.server.Tools[h.doc].Name, h.score)
	}
	return out
}

// TestCatalogConcurrent exercises updates, searches and queries in parallel;
// run with -race.
func TestCatalogConcurrent(t *testing.T) {
	t.Parallel()
	fixture := loadFixture(t)
	c := newCatalogOf(fixture)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 30 {
				s := fixture[(w+i)%len(fixture)]
				switch i % 3 {
				case 0:
					c.SetTools(s.Name, s.Tools[:len(s.Tools)/2])
				case 1:
					c.AddServer(s.Name, fmt.Sprintf("description %d", i))
				case 2:
					c.SetTools(s.Name, s.Tools)
				}
			}
		})
	}
	for w := range 4 {
		wg.Go(func() {
			for i := range 60 {
				tc := relevanceCases[(w*7+i)%len(relevanceCases)]
				c.Search(tc.query, 5, "full")
				c.Query(&tc.server, nil, "summary")
				c.Servers()
			}
		})
	}
	wg.Wait()
	for _, s := range fixture {
		c.SetTools(s.Name, s.Tools)
		c.AddServer(s.Name, s.Description)
	}
	fresh := newCatalogOf(fixture)
	if diff := cmp.Diff(fresh.stats.df, c.stats.df); diff != "" {
		t.Errorf("document frequencies after concurrent updates differ (-fresh +got):\n%s", diff)
	}
}

// FuzzSearch runs arbitrary queries over the realistic catalogue: no
// panics, at most the limit, no duplicates, and the same answer twice.
func FuzzSearch(f *testing.F) {
	for _, tc := range relevanceCases {
		f.Add(tc.query, 5)
	}
	for _, q := range []string{"", "\xff\xfe", "ÉDITER fichiers", "a_b-c.d/e:f", "𝔰𝔢𝔞𝔯𝔠𝔥", "İstanbul", "x y z", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"} {
		f.Add(q, 20)
	}
	c := newCatalogOf(loadFixture(f))
	f.Fuzz(func(t *testing.T, query string, limit int) {
		docs := c.Search(query, limit, "summary")
		if len(docs) > ClampLimit(limit) {
			t.Fatalf("Search(%q, %d) returned %d docs", query, limit, len(docs))
		}
		seen := make(map[string]bool)
		for _, d := range docs {
			key := d.Server + "/" + d.Tool
			if seen[key] {
				t.Fatalf("Search(%q) returned %s twice", query, key)
			}
			seen[key] = true
		}
		if diff := cmp.Diff(docs, c.Search(query, limit, "summary")); diff != "" {
			t.Fatalf("Search(%q) not deterministic:\n%s", query, diff)
		}
	})
}
