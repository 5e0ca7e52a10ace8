package tooldocs

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// stopwords are dropped from indexed text and queries. They carry no
// meaning for tool discovery ("query by sql", "send a message to a channel")
// but are frequent enough in descriptions to add noise to every score.
var stopwords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true,
	"be": true, "by": true, "can": true, "for": true, "from": true, "has": true,
	"have": true, "i": true, "if": true, "in": true, "into": true, "is": true,
	"it": true, "its": true, "me": true, "my": true, "of": true, "on": true,
	"or": true, "that": true, "the": true, "their": true, "them": true,
	"then": true, "there": true, "these": true, "this": true, "those": true,
	"to": true, "was": true, "were": true, "which": true, "will": true,
	"with": true, "you": true, "your": true, "how": true, "what": true,
	"when": true, "where": true, "who": true, "do": true, "does": true,
	"should": true, "would": true, "could": true, "want": true, "need": true,
	"some": true, "any": true, "all": true, "one": true, "given": true,
}

// token is one indexed or queried word: the lower-cased surface form, used
// for prefix and typo matching, and its stem, used for scoring.
type token struct {
	surface string
	stem    string
}

// splitWords appends to dst the lower-cased words of s. Words are runs of
// letters and digits, split further where camelCase or PascalCase changes
// case ("readFile" → read, file; "HTTPServer" → http, server) and between
// letters and digits ("oauth2" → oauth, 2), because tool and parameter
// names are written that way while queries are usually plain words.
func splitWords(dst []string, s string) []string {
	const (
		other = iota
		lower
		upper
		digit
	)
	class := func(r rune) int {
		switch {
		case r < utf8.RuneSelf:
			switch {
			case r >= 'a' && r <= 'z':
				return lower
			case r >= 'A' && r <= 'Z':
				return upper
			case r >= '0' && r <= '9':
				return digit
			}
			return other
		case unicode.IsUpper(r):
			return upper
		case unicode.IsLetter(r) || unicode.IsMark(r):
			return lower // caseless scripts behave like lower case
		case unicode.IsDigit(r):
			return digit
		}
		return other
	}
	start := -1
	prevClass := other
	emit := func(end int) {
		if start >= 0 && end > start {
			dst = append(dst, strings.ToLower(s[start:end]))
		}
		start = -1
	}
	for i, r := range s {
		c := class(r)
		if c == other {
			emit(i)
			prevClass = other
			continue
		}
		if start < 0 {
			start = i
			prevClass = c
			continue
		}
		switch {
		case c == digit && prevClass != digit, c != digit && prevClass == digit:
			emit(i)
			start = i
		case c == upper && prevClass == lower:
			emit(i)
			start = i
		case c == lower && prevClass == upper:
			// "HTTPServer": the upper-case letter before the first lower-case
			// one starts the next word.
			_, size := utf8.DecodeLastRuneInString(s[:i])
			if prev := i - size; prev > start {
				emit(prev)
				start = prev
			}
		}
		prevClass = c
	}
	emit(len(s))
	return dst
}

// appendTokens appends the tokens of s to dst: words (see splitWords)
// without stop words and single letters, each with its stem. With
// keepStop, stop words are kept; queries made only of stop words use it.
func appendTokens(dst []token, s string, keepStop bool) []token {
	var buf [32]string
	for _, w := range splitWords(buf[:0], s) {
		if !keepStop && stopwords[w] {
			continue
		}
		if len(w) == 1 && (w[0] < '0' || w[0] > '9') {
			continue
		}
		dst = append(dst, token{surface: w, stem: stem(w)})
	}
	return dst
}

// compact reduces a name or phrase to its lower-case letters and digits, so
// "create_issue", "createIssue" and "Create Issue" all compare equal.
func compact(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + ('a' - 'A'))
		case r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// stem is a small, conservative English suffix stripper. It only has to map
// the inflections that occur in tool vocabulary onto one form, identically
// for indexed text and queries ("issues"/"issue", "created"/"creating"/
// "create", "directories"/"directory", "branches"/"branch"); it does not
// have to produce real words. Non-ASCII words are left alone.
func stem(w string) string {
	if len(w) <= 3 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	n := len(w)
	switch {
	case strings.HasSuffix(w, "ies") && n > 4:
		w = w[:n-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:n-2]
	case strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"),
		strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "zes"):
		w = w[:n-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "s"):
		w = w[:n-1]
	}
	n = len(w)
	switch {
	case n >= 6 && strings.HasSuffix(w, "ing") && hasVowel(w[:n-3]):
		w = undouble(w[:n-3])
	case n >= 5 && strings.HasSuffix(w, "ed") && hasVowel(w[:n-2]):
		w = undouble(w[:n-2])
	}
	if n = len(w); n >= 5 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}

func hasVowel(s string) bool { return strings.ContainsAny(s, "aeiouy") }

// undouble drops one of two equal final consonants left by -ing/-ed
// ("running" → "run", "committed" → "commit"), except l, s and z, which
// stay doubled in the base word too ("pulled" → "pull"), and except when
// that would leave fewer than three letters ("added" → "add").
func undouble(w string) string {
	n := len(w)
	if n < 4 || w[n-1] != w[n-2] {
		return w
	}
	switch w[n-1] {
	case 'a', 'e', 'i', 'o', 'u', 'l', 's', 'z':
		return w
	}
	return w[:n-1]
}

// synonymGroups are words that tool descriptions and requests use
// interchangeably. Only the query side is expanded, with synonymWeight, so
// a tool that uses the requested word itself still ranks first.
var synonymGroups = [][]string{
	{"list", "show", "display", "enumerate"},
	{"get", "fetch", "retrieve", "lookup"},
	{"create", "make", "new", "add"},
	{"delete", "remove", "erase", "drop", "destroy"},
	{"update", "edit", "modify", "change"},
	{"search", "find", "lookup", "look"},
	{"send", "post"},
	{"issue", "ticket"},
	{"directory", "folder", "dir"},
	{"event", "meeting"},
	{"database", "db"},
	{"document", "doc"},
	{"message", "msg"},
}

// synonyms maps a stem to the stems of its synonyms.
var synonyms = func() map[string][]string {
	m := make(map[string][]string)
	for _, g := range synonymGroups {
		for _, w := range g {
			for _, o := range g {
				if o != w {
					m[stem(w)] = append(m[stem(w)], stem(o))
				}
			}
		}
	}
	return m
}()
