package tooldocs

import (
	"encoding/json"
	"sort"
)

// field is one indexed part of a tool's text.
type field int

const (
	fieldName       field = iota // tool name and alias
	fieldTitle                   // title, or annotations.title
	fieldDesc                    // description
	fieldParam                   // input parameter names
	fieldParamDesc               // input parameter descriptions and titles
	fieldServer                  // server name and alias
	fieldServerDesc              // server description
	numFields
)

// fieldWeight is how much one occurrence in a field counts (BM25F). A word
// in the tool's name says most about what it does; a title is a curated
// summary; the description is long and chatty; parameter names tell what a
// tool takes ("query by sql"); the server's own words apply to every one of
// its tools and so mostly break ties ("github create issue" vs jira).
var fieldWeight = [numFields]float64{
	fieldName:       3.0,
	fieldTitle:      2.0,
	fieldDesc:       1.0,
	fieldParam:      1.2,
	fieldParamDesc:  0.4,
	fieldServer:     1.0,
	fieldServerDesc: 0.3,
}

// fieldB is BM25's length normalization per field. Names and titles are
// all short, so their length says little; long descriptions do dilute.
var fieldB = [numFields]float64{
	fieldName:       0.3,
	fieldTitle:      0.3,
	fieldDesc:       0.75,
	fieldParam:      0.5,
	fieldParamDesc:  0.75,
	fieldServer:     0,
	fieldServerDesc: 0.5,
}

// posting records one tool's occurrences of a term, per field.
type posting struct {
	doc int32
	tf  [numFields]uint16
}

// segment is the search index of one server's tools. It is immutable once
// built; the catalogue swaps whole segments when a server's tools change.
type segment struct {
	postings map[string][]posting // stem → postings in doc order
	lengths  [][numFields]uint16  // per doc: terms per field
	totals   [numFields]int64     // sum of lengths
	words    []string             // distinct surface words, for the vocabulary
	names    map[string][]int32   // compact name or alias → docs
}

// corpusStats are the collection-wide BM25 statistics, kept as sums over
// segments so a segment can be added or removed without touching others.
// Integer sums make the result independent of update order.
type corpusStats struct {
	docs   int
	totals [numFields]int64
	df     map[string]int // docs containing the stem in any field
}

func (s *corpusStats) add(seg *segment) {
	s.docs += len(seg.lengths)
	for f := range s.totals {
		s.totals[f] += seg.totals[f]
	}
	for term, ps := range seg.postings {
		s.df[term] += len(ps)
	}
}

func (s *corpusStats) remove(seg *segment) {
	s.docs -= len(seg.lengths)
	for f := range s.totals {
		s.totals[f] -= seg.totals[f]
	}
	for term, ps := range seg.postings {
		if n := s.df[term] - len(ps); n > 0 {
			s.df[term] = n
		} else {
			delete(s.df, term)
		}
	}
}

// schemaText is the part of an input schema that is indexed.
type schemaText struct {
	Properties map[string]struct {
		Title       string `json:"title"`
		Description string `json:"description"`
	} `json:"properties"`
}

// annotationTitle is the part of tool annotations that is indexed.
type annotationTitle struct {
	Title string `json:"title"`
}

// buildSegment indexes the tools of one server.
func buildSegment(s ServerInfo) *segment {
	seg := &segment{
		postings: make(map[string][]posting),
		lengths:  make([][numFields]uint16, len(s.Tools)),
		names:    make(map[string][]int32),
	}
	words := make(map[string]bool)

	// The server's own text is the same for every tool.
	serverToks := appendTokens(nil, s.Name, false)
	serverToks = appendNew(serverToks, appendTokens(nil, s.Alias, false))
	serverDescToks := appendTokens(nil, s.Description, false)

	var (
		toks  [numFields][]token
		tf    = make(map[string]*[numFields]uint16)
		order []string // terms of the current doc in first-seen order
	)
	for i := range s.Tools {
		t := &s.Tools[i]
		for f := range toks {
			toks[f] = toks[f][:0]
		}
		toks[fieldName] = appendTokens(toks[fieldName], t.Name, false)
		toks[fieldName] = appendNew(toks[fieldName], appendTokens(nil, t.Alias, false))
		title := t.Title
		if title == "" && len(t.Annotations) > 0 {
			var a annotationTitle
			if json.Unmarshal(t.Annotations, &a) == nil {
				title = a.Title
			}
		}
		toks[fieldTitle] = appendTokens(toks[fieldTitle], title, false)
		toks[fieldDesc] = appendTokens(toks[fieldDesc], t.Description, false)
		if len(t.InputSchema) > 0 {
			var sc schemaText
			if json.Unmarshal(t.InputSchema, &sc) == nil {
				// Map order is random; sort so the index is reproducible.
				props := make([]string, 0, len(sc.Properties))
				for p := range sc.Properties {
					props = append(props, p)
				}
				sort.Strings(props)
				for _, p := range props {
					toks[fieldParam] = appendTokens(toks[fieldParam], p, false)
					d := sc.Properties[p]
					toks[fieldParamDesc] = appendTokens(toks[fieldParamDesc], d.Title, false)
					toks[fieldParamDesc] = appendTokens(toks[fieldParamDesc], d.Description, false)
				}
			}
		}
		toks[fieldServer] = append(toks[fieldServer], serverToks...)
		toks[fieldServerDesc] = append(toks[fieldServerDesc], serverDescToks...)

		clear(tf)
		order = order[:0]
		for f := range toks {
			seg.lengths[i][f] = uint16(min(len(toks[f]), 1<<16-1))
			seg.totals[f] += int64(seg.lengths[i][f])
			for _, tk := range toks[f] {
				words[tk.surface] = true
				c := tf[tk.stem]
				if c == nil {
					c = new([numFields]uint16)
					tf[tk.stem] = c
					order = append(order, tk.stem)
				}
				if c[f] < 1<<16-1 {
					c[f]++
				}
			}
		}
		for _, term := range order {
			seg.postings[term] = append(seg.postings[term], posting{doc: int32(i), tf: *tf[term]})
		}
		for _, n := range []string{compact(t.Name), compact(t.Alias)} {
			if n != "" && !containsDoc(seg.names[n], int32(i)) {
				seg.names[n] = append(seg.names[n], int32(i))
			}
		}
	}
	seg.words = make([]string, 0, len(words))
	for w := range words {
		seg.words = append(seg.words, w)
	}
	sort.Strings(seg.words)
	return seg
}

// appendNew appends the tokens of extra whose surface form is not in dst
// yet: a tool's alias mostly repeats its name and should not count twice.
func appendNew(dst, extra []token) []token {
	for _, e := range extra {
		dup := false
		for _, d := range dst {
			if d.surface == e.surface {
				dup = true
				break
			}
		}
		if !dup {
			dst = append(dst, e)
		}
	}
	return dst
}

func containsDoc(docs []int32, d int32) bool {
	return len(docs) > 0 && docs[len(docs)-1] == d
}
