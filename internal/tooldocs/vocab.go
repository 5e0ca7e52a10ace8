package tooldocs

import (
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Typo tolerance. A query word of at least minTypoLen runes may differ from
// an indexed word by one edit (insertion, deletion, substitution or swap of
// two neighbours), one of at least longTypoLen runes by two. Shorter words
// must match exactly or as a prefix: one edit away from a three-letter word
// there is nearly always another unrelated word ("sql": "sol", "sum", "ssl").
const (
	minTypoLen  = 4
	longTypoLen = 8
)

// maxEdits is the typo budget of a query word.
func maxEdits(word string) int {
	switch n := utf8.RuneCountInString(word); {
	case n >= longTypoLen:
		return 2
	case n >= minTypoLen:
		return 1
	}
	return 0
}

// vocab is the set of surface words of all indexed tools, reference-counted
// per server segment so one server's update only touches its own words.
// It answers the two lookups that make queries forgiving: words starting
// with a prefix (a sorted slice, merged on change) and words within the
// typo budget (a deletion-neighbourhood index).
//
// The deletion index maps every string obtained by deleting up to k runes
// of a word to the words it came from. Two words are within k edits only if
// some deletion of each, of at most k runes, is the same string, so a query
// looks up its own deletions and verifies the few candidates with a real
// distance computation instead of scanning the vocabulary. Words of at
// least longTypoLen runes need deletions of two runes; shorter indexed words
// can only meet a two-edit query after at most one deletion of their own.
// Keys are 64-bit hashes of the deletions rather than the strings: that
// saves building tens of thousands of strings per index build, and a hash
// collision only adds a candidate that the distance check then rejects.
type vocab struct {
	refs map[string]int

	sorted  []string
	added   []string        // words that appeared since the last settle
	removed map[string]bool // words that disappeared since the last settle

	ids     map[string]int32 // word → id in words
	words   []string         // id → word; "" for a free id
	free    []int32
	deletes map[uint64][]int32 // deletion hash → ids
}

func newVocab() *vocab {
	return &vocab{
		refs:    make(map[string]int),
		removed: make(map[string]bool),
		ids:     make(map[string]int32),
		deletes: make(map[uint64][]int32),
	}
}

// add counts one more segment that uses word.
func (v *vocab) add(word string) {
	v.refs[word]++
	if v.refs[word] > 1 {
		return
	}
	if v.removed[word] {
		delete(v.removed, word) // removed and re-added before settling
	} else {
		v.added = append(v.added, word)
	}
	var id int32
	if n := len(v.free); n > 0 {
		id = v.free[n-1]
		v.free = v.free[:n-1]
		v.words[id] = word
	} else {
		id = int32(len(v.words))
		v.words = append(v.words, word)
	}
	v.ids[word] = id
	forDeletions([]rune(word), func(h uint64) {
		list := v.deletes[h]
		if n := len(list); n > 0 && list[n-1] == id {
			return // the same deletion reached twice ("issues" minus either s)
		}
		v.deletes[h] = append(list, id)
	})
}

// remove counts one segment fewer that uses word.
func (v *vocab) remove(word string) {
	n := v.refs[word] - 1
	if n > 0 {
		v.refs[word] = n
		return
	}
	delete(v.refs, word)
	if i := slices.Index(v.added, word); i >= 0 {
		v.added = slices.Delete(v.added, i, i+1)
	} else {
		v.removed[word] = true
	}
	id := v.ids[word]
	delete(v.ids, word)
	v.words[id] = ""
	v.free = append(v.free, id)
	forDeletions([]rune(word), func(h uint64) {
		list := slices.DeleteFunc(v.deletes[h], func(x int32) bool { return x == id })
		if len(list) == 0 {
			delete(v.deletes, h)
		} else {
			v.deletes[h] = list
		}
	})
}

// settle brings the sorted word list up to date by merging, which is
// linear in the vocabulary, instead of re-sorting it. Callers hold the
// catalogue's write lock, so searches (read lock) never modify the vocab.
func (v *vocab) settle() {
	if len(v.added) == 0 && len(v.removed) == 0 {
		return
	}
	if len(v.removed) > 0 {
		v.sorted = slices.DeleteFunc(v.sorted, func(w string) bool { return v.removed[w] })
		clear(v.removed)
	}
	if len(v.added) > 0 {
		sort.Strings(v.added)
		merged := make([]string, 0, len(v.sorted)+len(v.added))
		i, j := 0, 0
		for i < len(v.sorted) && j < len(v.added) {
			if v.sorted[i] < v.added[j] {
				merged = append(merged, v.sorted[i])
				i++
			} else {
				merged = append(merged, v.added[j])
				j++
			}
		}
		merged = append(merged, v.sorted[i:]...)
		merged = append(merged, v.added[j:]...)
		v.sorted = merged
		v.added = v.added[:0]
	}
}

// withPrefix calls fn for up to limit words that start with prefix and are
// longer than it, in lexical order.
func (v *vocab) withPrefix(prefix string, limit int, fn func(word string)) {
	i := sort.SearchStrings(v.sorted, prefix)
	for ; i < len(v.sorted) && limit > 0; i++ {
		w := v.sorted[i]
		if !strings.HasPrefix(w, prefix) {
			return
		}
		if len(w) > len(prefix) {
			fn(w)
			limit--
		}
	}
}

// similar calls fn for every indexed word other than word itself within the
// typo budget of word, with its distance. Each word is reported once.
func (v *vocab) similar(word string, fn func(w string, dist int)) {
	k := maxEdits(word)
	if k == 0 {
		return
	}
	rs := []rune(word)
	var seen []int32 // few candidates: a slice beats a map
	check := func(h uint64) {
		for _, id := range v.deletes[h] {
			if slices.Contains(seen, id) {
				continue
			}
			seen = append(seen, id)
			w := v.words[id]
			if w == word || utf8.RuneCountInString(w) < minTypoLen {
				continue
			}
			if dist := editDistance(word, w, k); dist <= k {
				fn(w, dist)
			}
		}
	}
	check(hashSkip(rs, -1, -1))
	for i := range rs {
		check(hashSkip(rs, i, -1))
		if k < 2 {
			continue
		}
		for j := i + 1; j < len(rs); j++ {
			check(hashSkip(rs, i, j))
		}
	}
}

// forDeletions calls fn with the hash of word itself and of every string
// obtained by deleting one rune of it (words of at least minTypoLen runes;
// shorter words are never typo targets) and two runes (words of at least
// longTypoLen runes). The same string may be reported more than once.
func forDeletions(rs []rune, fn func(uint64)) {
	fn(hashSkip(rs, -1, -1))
	if len(rs) < minTypoLen {
		return
	}
	for i := range rs {
		if i > 0 && rs[i] == rs[i-1] {
			continue // deleting either of two equal neighbours gives the same string
		}
		fn(hashSkip(rs, i, -1))
		if len(rs) < longTypoLen {
			continue
		}
		for j := i + 1; j < len(rs); j++ {
			fn(hashSkip(rs, i, j))
		}
	}
}

// hashSkip is the FNV-1a hash of rs without the runes at positions i and j
// (-1 for none).
func hashSkip(rs []rune, i, j int) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for p, r := range rs {
		if p == i || p == j {
			continue
		}
		for r != 0 {
			h ^= uint64(r & 0xff)
			h *= prime
			r >>= 8
		}
		h ^= 0xff // rune separator, so multi-byte runes cannot alias
		h *= prime
	}
	return h
}

// editDistance is the optimal-string-alignment distance between a and b
// (Levenshtein plus swaps of adjacent runes, the most common typo), cut off
// at limit: any result above limit is reported as limit+1.
func editDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > limit || -d > limit {
		return limit + 1
	}
	// Three rolling rows: the swap rule looks two rows back.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
			rowMin = min(rowMin, v)
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(rb)], limit+1)
}
