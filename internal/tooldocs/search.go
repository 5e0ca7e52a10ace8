package tooldocs

import (
	"math"
	"slices"
	"strings"
	"sync"
)

// Search limits, as in the reference's search_tool_docs.
const (
	DefaultSearchLimit = 5
	MaxSearchLimit     = 20
)

// ClampLimit clamps a requested result count to 1..MaxSearchLimit, the
// reference's max(1, min(20, limit)). Callers apply DefaultSearchLimit when
// the request names no limit.
func ClampLimit(limit int) int { return max(1, min(MaxSearchLimit, limit)) }

// Ranking parameters. The weights of the match kinds scale a query word's
// contribution when it matched an indexed word only approximately, so an
// exact match always beats a guess at the same tool.
const (
	k1 = 1.2 // BM25 term-frequency saturation

	prefixWeight  = 0.85 // "calend" → "calendar", scaled by sqrt(len ratio)
	synonymWeight = 0.6  // "show" → "list", "folder" → "directory"
	typo1Weight   = 0.7  // one edit: "serach" → "search"
	typo2Weight   = 0.45 // two edits, long words only
	// typoExactFactor damps typo matches of a word that also occurs as
	// typed: "list" is a real word, and "lint" or "last" are likely noise.
	typoExactFactor = 0.5

	// maxPrefixExpansions bounds the words a short prefix may stand for.
	maxPrefixExpansions = 40

	// A query that spells a tool's name ("create_issue", "createIssue",
	// "create issue") is almost certainly asking for that tool. The bonus
	// is a share of the best score the query could reach, so it outweighs
	// description noise without depending on the corpus size.
	wholeNameBonus = 0.6
	partNameBonus  = 0.35
	// literalNameBonus is added when the query is the name or alias as
	// written (ignoring case): "create_issue" prefers the tool of that
	// name over a createIssue elsewhere.
	literalNameBonus = 0.4
)

// Search ranks the tools of every server whose tools are known against query
// and returns the best at most ClampLimit(limit) doc entries, best first. An
// empty or blank query gives an empty result. detail is normalized with
// NormalizeDetail.
//
// Ranking is BM25F over the tool's name and alias, title, description,
// input parameter names and descriptions and its server's name and
// description (see fieldWeight). Query words match indexed words exactly
// after light stemming, as prefixes ("calend") and with typos (one edit for
// words of 4 to 7 letters, two from 8), each approximate kind weighing less
// than an exact match, and synonyms of common verbs and nouns count at a
// discount ("show" for "list", "folder" for "directory"). Tools matching
// more of the query's words rank higher, and a tool whose name the query
// spells ("create_issue", "createIssue", "create issue") gets a bonus.
// Ties are broken by server name, then tool name.
func (c *Catalog) Search(query string, limit int, detail string) []Doc {
	return c.SearchFiltered(query, limit, detail, nil)
}

// SearchFiltered is Search over the tools for which keep(server, tool)
// returns true (all when keep is nil), for callers that hide tools (the
// policy); the limit counts kept tools. keep gets real names, is called with
// the catalogue locked and must not call back into it.
func (c *Catalog) SearchFiltered(query string, limit int, detail string, keep func(server, tool string) bool) []Doc {
	detail = NormalizeDetail(detail)
	hits := c.search(query, ClampLimit(limit), keep)
	docs := make([]Doc, len(hits))
	for i := range hits {
		h := &hits[i]
		docs[i] = newDoc(&h.server, &h.server.Tools[h.doc], detail)
	}
	return docs
}

// hit is one ranked tool.
type hit struct {
	server ServerInfo
	doc    int32
	score  float64
}

// candidate is a hit while the catalogue is locked: it points at the entry
// instead of copying its ServerInfo for every tool that scores.
type candidate struct {
	e     *serverEntry
	doc   int32
	score float64
}

// better orders candidates: higher score, then server name, then tool name,
// then list position, so equal scores rank the same way on every run.
func (h *candidate) better(o *candidate) bool {
	if h.score != o.score {
		return h.score > o.score
	}
	if h.e.info.Name != o.e.info.Name {
		return h.e.info.Name < o.e.info.Name
	}
	if a, b := h.e.info.Tools[h.doc].Name, o.e.info.Tools[o.doc].Name; a != b {
		return a < b
	}
	return h.doc < o.doc
}

// expansion is one indexed term a query word stands for, with the weight
// of a full match on it (match-kind factor × IDF).
type expansion struct {
	stem   string
	weight float64
}

// scratch holds per-query buffers, pooled because searches are frequent
// and their buffers are the only allocation proportional to server size.
type scratch struct {
	scores  []float64
	best    []float64
	matched []uint16
	touched []int32
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// search scores every tool of the kept servers and returns the best limit
// hits, best first. Scores are BM25F sums over the query words, each word
// counting with its best expansion (see expand), scaled down for tools that
// match only some of the words, plus the name bonus.
func (c *Catalog) search(query string, limit int, keep func(server, tool string) bool) []hit {
	toks := appendTokens(nil, query, false)
	if len(toks) == 0 {
		// A query of nothing but stop words ("what is this") still means
		// something; better to match them than to return nothing.
		toks = appendTokens(nil, query, true)
	}
	if len(toks) == 0 {
		return []hit{}
	}
	forms := nameForms(query)
	literal := strings.TrimSpace(query)

	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.stats.docs == 0 {
		return []hit{}
	}
	exps := make([][]expansion, len(toks))
	var queryMax float64 // the best score a tool could reach
	for i, tk := range toks {
		exps[i] = c.expand(tk)
		best := 0.0
		for _, e := range exps[i] {
			best = max(best, e.weight)
		}
		queryMax += best * (k1 + 1)
	}
	var avg [numFields]float64
	for f := range avg {
		avg[f] = float64(c.stats.totals[f]) / float64(c.stats.docs)
	}

	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	top := make([]candidate, 0, limit+1)
	for _, e := range c.order {
		if e.seg == nil {
			continue
		}
		seg := e.seg
		n := len(seg.lengths)
		sc.scores = resize(sc.scores, n)
		sc.best = resize(sc.best, n)
		sc.matched = resize(sc.matched, n)
		for _, tokenExps := range exps {
			for _, ex := range tokenExps {
				for _, p := range seg.postings[ex.stem] {
					l := &seg.lengths[p.doc]
					tfw := 0.0
					for f := range numFields {
						if p.tf[f] == 0 {
							continue
						}
						norm := 1 - fieldB[f] + fieldB[f]*float64(l[f])/avg[f]
						tfw += fieldWeight[f] * float64(p.tf[f]) / norm
					}
					s := ex.weight * tfw * (k1 + 1) / (tfw + k1)
					if s > sc.best[p.doc] {
						if sc.best[p.doc] == 0 {
							sc.touched = append(sc.touched, p.doc)
						}
						sc.best[p.doc] = s
					}
				}
			}
			// A query word counts once per tool, with its best match.
			for _, d := range sc.touched {
				sc.scores[d] += sc.best[d]
				sc.matched[d]++
				sc.best[d] = 0
			}
			sc.touched = sc.touched[:0]
		}
		for fi, form := range forms {
			for _, d := range seg.names[form] {
				bonus := partNameBonus
				if fi == 0 {
					bonus = wholeNameBonus
					if t := &e.info.Tools[d]; strings.EqualFold(t.Name, literal) || strings.EqualFold(t.Alias, literal) {
						bonus += literalNameBonus
					}
				}
				sc.best[d] = max(sc.best[d], bonus*queryMax)
			}
		}
		for d := range n {
			s := sc.scores[d]
			if s > 0 {
				// Tools that match more of the query's words rank above
				// tools that match one of them very well.
				s *= 0.5 + 0.5*float64(sc.matched[d])/float64(len(toks))
			}
			s += sc.best[d]
			if s > 0 && (keep == nil || keep(e.info.Name, e.info.Tools[d].Name)) {
				top = pushTop(top, candidate{e: e, doc: int32(d), score: s}, limit)
			}
		}
		clear(sc.scores[:n])
		clear(sc.best[:n])
		clear(sc.matched[:n])
	}
	hits := make([]hit, len(top))
	for i, h := range top {
		hits[i] = hit{server: h.e.info, doc: h.doc, score: h.score}
	}
	return hits
}

// pushTop inserts h into top (sorted best first, at most limit long).
func pushTop(top []candidate, h candidate, limit int) []candidate {
	if len(top) == limit && !h.better(&top[len(top)-1]) {
		return top
	}
	i, _ := slices.BinarySearchFunc(top, &h, func(x candidate, h *candidate) int {
		if x.better(h) {
			return -1
		}
		return 1
	})
	top = slices.Insert(top, i, h)
	if len(top) > limit {
		top = top[:limit]
	}
	return top
}

// expand lists the indexed terms a query word stands for: its own stem,
// indexed words it is a prefix of, and indexed words within its typo
// budget (of the word as typed and of its stem, so "serached" still finds
// "search"). Each term keeps its best match weight, times its IDF.
//
// Preconditions: c.mu held.
func (c *Catalog) expand(tk token) []expansion {
	weights := make(map[string]float64)
	put := func(stem string, w float64) {
		if c.stats.df[stem] > 0 && w > weights[stem] {
			weights[stem] = w
		}
	}
	put(tk.stem, 1)
	_, exact := weights[tk.stem]
	typo := func(dist int) float64 {
		w := typo1Weight
		if dist > 1 {
			w = typo2Weight
		}
		if exact {
			w *= typoExactFactor
		}
		return w
	}
	if len(tk.surface) >= 3 {
		c.vocab.withPrefix(tk.surface, maxPrefixExpansions, func(w string) {
			put(stem(w), prefixWeight*math.Sqrt(float64(len(tk.surface))/float64(len(w))))
		})
	}
	for _, syn := range synonyms[tk.stem] {
		put(syn, synonymWeight)
	}
	c.vocab.similar(tk.surface, func(w string, dist int) { put(stem(w), typo(dist)) })
	if tk.stem != tk.surface {
		c.vocab.similar(tk.stem, func(w string, dist int) { put(stem(w), typo(dist)) })
	}
	out := make([]expansion, 0, len(weights))
	for s, w := range weights {
		out = append(out, expansion{stem: s, weight: w * c.idf(s)})
	}
	// Map order is random; a fixed order keeps floating-point sums, and so
	// rankings, identical across runs.
	slices.SortFunc(out, func(a, b expansion) int { return strings.Compare(a.stem, b.stem) })
	return out
}

// idf is BM25's inverse document frequency (the variant that stays
// positive for terms in more than half of the tools).
//
// Preconditions: c.mu held.
func (c *Catalog) idf(term string) float64 {
	n, df := float64(c.stats.docs), float64(c.stats.df[term])
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// nameForms returns the compact forms (see compact) under which query could
// name a tool: first the whole query ("read file", "create_issue"), then
// each white-space, "/" or "." separated part that is written like an
// identifier ("jira createIssue", "github/create_issue"). Plain words do not
// count as parts: "why is my query slow" is not asking for the tool "query".
func nameForms(query string) []string {
	forms := []string{compact(query)}
	for _, part := range strings.FieldsFunc(query, func(r rune) bool {
		return r == '/' || r == '.' || r == ':' || r == ',' || isSpace(r)
	}) {
		if !identifierLike(part) {
			continue
		}
		if f := compact(part); len(f) >= 3 && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	if forms[0] == "" {
		forms = forms[1:]
	}
	return forms
}

// identifierLike reports whether s contains "_" or "-" or changes from
// lower to upper case, as snake_case, kebab-case and camelCase names do.
func identifierLike(s string) bool {
	if strings.ContainsAny(s, "_-") {
		return true
	}
	for i := 1; i < len(s); i++ {
		if s[i-1] >= 'a' && s[i-1] <= 'z' && s[i] >= 'A' && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
