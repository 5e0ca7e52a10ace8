package tooldocs

import "testing"

// BenchmarkSearch1000 measures one query over a 1,000-tool catalogue,
// cycling through the relevance queries (typos, prefixes, names, phrases).
func BenchmarkSearch1000(b *testing.B) {
	c := newCatalogOf(syntheticServers(b, 1000))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.Search(relevanceCases[i%len(relevanceCases)].query, DefaultSearchLimit, DetailSummary)
		i++
	}
}

// BenchmarkIndexBuild1000 measures building the catalogue and its index
// for 1,000 tools from scratch.
func BenchmarkIndexBuild1000(b *testing.B) {
	servers := syntheticServers(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		newCatalogOf(servers)
	}
}

// BenchmarkSetToolsUpdate measures replacing one server's tools in a
// 1,000-tool catalogue, the cost of a tools/list_changed refresh.
func BenchmarkSetToolsUpdate(b *testing.B) {
	servers := syntheticServers(b, 1000)
	c := newCatalogOf(servers)
	s := servers[0]
	b.ReportAllocs()
	for b.Loop() {
		c.SetTools(s.Name, s.Tools)
	}
}
