package policy

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// errBadGlob is path.ErrBadPattern's counterpart.
var errBadGlob = errors.New("syntax error in pattern")

// glob is a compiled name pattern. The syntax is path.Match's (*, ?,
// [...] with ranges and ^ negation, \ escapes) and so are the results, with
// one difference on purpose: * and ? also match '/'. Server names are free
// text and MCP allows '/' in tool names, so a deny rule for "*" must not
// miss a name because it contains one.
type glob struct {
	source string // as written
	lit    string // globLiteral: the name, unescaped
	kind   globKind
	toks   []globTok
}

type globKind uint8

const (
	globLiteral globKind = iota // no metacharacters: equality
	globAll                     // only stars: matches every name
	globGeneral
)

type globTok struct {
	op     globOp
	lit    string      // opLit: bytes compared as they are, as path.Match does
	neg    bool        // opClass: [^...]
	ranges []runeRange // opClass
}

type globOp uint8

const (
	opLit   globOp = iota
	opAny          // ?: one rune
	opStar         // *: any run of bytes
	opClass        // [...]: one rune in (or, negated, not in) ranges
)

type runeRange struct{ lo, hi rune }

// compileGlob parses pattern, failing on what path.Match calls a bad
// pattern.
func compileGlob(pattern string) (*glob, error) {
	g := &glob{source: pattern}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			g.toks = append(g.toks, globTok{op: opLit, lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(pattern); {
		switch c := pattern[i]; c {
		case '*':
			flush()
			if n := len(g.toks); n == 0 || g.toks[n-1].op != opStar {
				g.toks = append(g.toks, globTok{op: opStar})
			}
			i++
		case '?':
			flush()
			g.toks = append(g.toks, globTok{op: opAny})
			i++
		case '\\':
			if i+1 >= len(pattern) {
				return nil, errBadGlob
			}
			lit.WriteByte(pattern[i+1])
			i += 2
		case '[':
			flush()
			tok, n, err := parseClass(pattern[i+1:])
			if err != nil {
				return nil, err
			}
			g.toks = append(g.toks, tok)
			i += 1 + n
		default:
			lit.WriteByte(c)
			i++
		}
	}
	flush()
	switch {
	case len(g.toks) == 0 || len(g.toks) == 1 && g.toks[0].op == opLit:
		g.kind = globLiteral
		if len(g.toks) == 1 {
			g.lit = g.toks[0].lit
		}
	case len(g.toks) == 1 && g.toks[0].op == opStar:
		g.kind = globAll
	default:
		g.kind = globGeneral
	}
	return g, nil
}

// parseClass parses what follows a '[' and returns the token and the
// number of bytes consumed, the closing ']' included.
func parseClass(s string) (globTok, int, error) {
	tok := globTok{op: opClass}
	i := 0
	if i < len(s) && s[i] == '^' {
		tok.neg = true
		i++
	}
	for {
		if i < len(s) && s[i] == ']' && len(tok.ranges) > 0 {
			return tok, i + 1, nil
		}
		lo, n, err := classRune(s[i:])
		if err != nil {
			return tok, 0, err
		}
		i += n
		hi := lo
		if i < len(s) && s[i] == '-' {
			if hi, n, err = classRune(s[i+1:]); err != nil {
				return tok, 0, err
			}
			i += 1 + n
		}
		tok.ranges = append(tok.ranges, runeRange{lo, hi})
	}
}

// classRune reads one possibly escaped rune of a class.
func classRune(s string) (rune, int, error) {
	if len(s) == 0 || s[0] == '-' || s[0] == ']' {
		return 0, 0, errBadGlob
	}
	skip := 0
	if s[0] == '\\' {
		skip = 1
		if len(s) == 1 {
			return 0, 0, errBadGlob
		}
	}
	r, n := utf8.DecodeRuneInString(s[skip:])
	if r == utf8.RuneError && n == 1 {
		return 0, 0, errBadGlob
	}
	return r, skip + n, nil
}

// match reports whether name matches the whole pattern.
func (g *glob) match(name string) bool {
	switch g.kind {
	case globLiteral:
		return name == g.lit
	case globAll:
		return true
	}
	// Greedy with backtracking to the last star: every other token consumes
	// a length fixed by its position, so earlier stars never need revisiting.
	toks := g.toks
	ti, ni := 0, 0
	starTi, starNi := -1, 0
	for {
		if ti < len(toks) && toks[ti].op == opStar {
			starTi, starNi = ti, ni
			ti++
			continue
		}
		if ti == len(toks) && ni == len(name) {
			return true
		}
		if ti < len(toks) {
			if n, ok := toks[ti].matchAt(name[ni:]); ok {
				ti++
				ni += n
				continue
			}
		}
		if starTi < 0 || starNi >= len(name) {
			return false
		}
		starNi++
		ti, ni = starTi+1, starNi
	}
}

// matchAt matches one non-star token at the start of s and returns the
// bytes it consumed.
func (t *globTok) matchAt(s string) (int, bool) {
	switch t.op {
	case opLit:
		return len(t.lit), strings.HasPrefix(s, t.lit)
	case opAny:
		if s == "" {
			return 0, false
		}
		_, n := utf8.DecodeRuneInString(s)
		return n, true
	case opClass:
		if s == "" {
			return 0, false
		}
		r, n := utf8.DecodeRuneInString(s)
		in := false
		for _, rg := range t.ranges {
			if rg.lo <= r && r <= rg.hi {
				in = true
				break
			}
		}
		return n, in != t.neg
	}
	return 0, false
}
