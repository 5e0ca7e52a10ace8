package toon

import (
	"unicode"
	"unicode/utf8"
)

// needsQuotes reports whether the string value s must be written quoted when
// delim is the delimiter in force (§7.2, §11.1).
func needsQuotes(s string, delim byte) bool {
	if s == "" {
		return true
	}
	// Leading or trailing whitespace would be trimmed by decoders. ASCII
	// space is the common case; controls are caught by the scan below.
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return true
	}
	if s[0] >= utf8.RuneSelf {
		if r, _ := utf8.DecodeRuneInString(s); isEdgeSpace(r) {
			return true
		}
	}
	if s[len(s)-1] >= utf8.RuneSelf {
		if r, _ := utf8.DecodeLastRuneInString(s); isEdgeSpace(r) {
			return true
		}
	}
	switch s {
	case "true", "false", "null":
		return true
	}
	// "-" would read as a list marker.
	if s[0] == '-' {
		return true
	}
	if looksNumeric(s) {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ':', '"', '\\', '[', ']', '{', '}', delim:
			return true
		default:
			if c < 0x20 {
				return true
			}
		}
	}
	return false
}

// isEdgeSpace reports whether r counts as whitespace at the edge of a
// string: Unicode White_Space, plus U+FEFF, which JavaScript's trim (used by
// the reference decoder) also strips. The set is the union of the two
// readings of "whitespace", so a decoder that trims either way keeps the
// string intact.
func isEdgeSpace(r rune) bool {
	return unicode.IsSpace(r) || r == '\ufeff'
}

// looksNumeric reports whether s matches §7.2's numeric-like pattern
// /^-?\d+(?:\.\d+)?(?:e[+-]?\d+)?$/i, which also covers leading zeros
// ("05"). A string starting with "-" is quoted before this is asked.
func looksNumeric(s string) bool {
	i := 0
	if s[0] == '-' {
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == start {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// appendString appends the string value s, quoted only if it must be.
func appendString(dst []byte, s string, delim byte) []byte {
	if needsQuotes(s, delim) {
		return appendQuoted(dst, s)
	}
	return append(dst, s...)
}

// appendKey appends an object key or field name (§7.3).
func appendKey(dst []byte, k string) []byte {
	if isUnquotedKey(k) {
		return append(dst, k...)
	}
	return appendQuoted(dst, k)
}

// isUnquotedKey reports whether k matches ^[A-Za-z_][A-Za-z0-9_.]*$.
func isUnquotedKey(k string) bool {
	if k == "" || !isIdentStart(k[0]) {
		return false
	}
	for i := 1; i < len(k); i++ {
		if c := k[i]; !isIdentStart(c) && !isDigit(c) && c != '.' {
			return false
		}
	}
	return true
}

// isIdentifierSegment reports whether k may take part in key folding:
// ^[A-Za-z_][A-Za-z0-9_]*$ (§1.9).
func isIdentifierSegment(k string) bool {
	if k == "" || !isIdentStart(k[0]) {
		return false
	}
	for i := 1; i < len(k); i++ {
		if c := k[i]; !isIdentStart(c) && !isDigit(c) {
			return false
		}
	}
	return true
}

func isIdentStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

const hexDigits = "0123456789abcdef"

// appendQuoted appends s in double quotes, escaped per the encoder column of
// §7.1: backslash, quote, \n, \r, \t, other C0 controls as lowercase \u00XX,
// and everything else literally.
func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	last := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[last:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		last = i + 1
	}
	dst = append(dst, s[last:]...)
	return append(dst, '"')
}
