package toon

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting so hostile input cannot exhaust the stack; it is
// the limit encoding/json uses.
const maxDepth = 10000

// dedupThreshold is the member count from which duplicate detection switches
// from a linear scan to a map; most objects are far smaller.
const dedupThreshold = 16

// parser reads one JSON document into a value tree. It works on a string
// copy of the input so unescaped strings and keys are substrings of it and
// cost no allocation.
type parser struct {
	src   string
	pos   int
	depth int
	// keys and vals are a stack of the members of the containers being
	// parsed. A container copies its finished members out into slices of
	// exactly the right size, so each costs one allocation instead of a
	// series of growing appends.
	keys []string
	vals []value
	// rowKeys is the key slice of the previous object in the array being
	// parsed. An object with the same keys shares it, which saves memory
	// and allocations for the uniform rows that tabular form is made for.
	// Key slices are never modified, so a stale hint costs only a compare.
	rowKeys []string
}

// syntaxError reports malformed JSON with the byte offset where it was found.
type syntaxError struct {
	offset int
	msg    string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.offset, e.msg)
}

func parseJSON(src string) (value, error) {
	p := parser{src: src}
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return v, err
	}
	p.skipSpace()
	if p.pos != len(p.src) {
		return v, p.errorf("unexpected %s after top-level value", p.describe())
	}
	return v, nil
}

func (p *parser) errorf(format string, args ...any) error {
	return &syntaxError{offset: p.pos, msg: fmt.Sprintf(format, args...)}
}

// describe names the byte at the current position for error messages.
func (p *parser) describe() string {
	if p.pos >= len(p.src) {
		return "end of input"
	}
	return fmt.Sprintf("character %q", p.src[p.pos])
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() (value, error) {
	if p.pos >= len(p.src) {
		return value{}, p.errorf("unexpected end of input, want a value")
	}
	switch c := p.src[p.pos]; c {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"':
		s, err := p.string()
		return value{kind: kindString, text: s}, err
	case 't':
		return p.literal("true", trueValue)
	case 'f':
		return p.literal("false", falseValue)
	case 'n':
		return p.literal("null", nullValue)
	default:
		if c == '-' || isDigit(c) {
			return p.number()
		}
		return value{}, p.errorf("unexpected %s, want a value", p.describe())
	}
}

func (p *parser) literal(word string, v value) (value, error) {
	if !strings.HasPrefix(p.src[p.pos:], word) {
		return value{}, p.errorf("invalid literal, want %s", word)
	}
	p.pos += len(word)
	return v, nil
}

func (p *parser) number() (value, error) {
	n := scanNumber(p.src[p.pos:])
	if n == 0 {
		return value{}, p.errorf("invalid number")
	}
	lit := p.src[p.pos : p.pos+n]
	p.pos += n
	if isCanonical(lit) {
		// Most numbers in real payloads are written canonically already;
		// they stay substrings of the input.
		return value{kind: kindNumber, text: lit}, nil
	}
	buf, err := appendNumber(make([]byte, 0, n+8), lit)
	if err != nil {
		p.pos -= n
		return value{}, p.errorf("%v", err)
	}
	return value{kind: kindNumber, text: string(buf)}, nil
}

// isCanonical reports whether a scanned JSON number is already in the form
// appendNumber would produce: no exponent, no trailing fraction zero, not
// negative zero, and a magnitude in [1e-6, 1e21) unless it is 0. The JSON
// grammar already rules out leading zeros.
func isCanonical(lit string) bool {
	i := 0
	if lit[0] == '-' {
		i = 1
	}
	dot := -1
	for j := i; j < len(lit); j++ {
		switch lit[j] {
		case 'e', 'E':
			return false
		case '.':
			dot = j
		}
	}
	if dot < 0 {
		return len(lit)-i <= 21 && lit != "-0"
	}
	if lit[len(lit)-1] == '0' || dot-i > 21 {
		return false
	}
	if lit[i] != '0' {
		return true
	}
	// 0.000001 is the smallest magnitude written without an exponent.
	zeros := 0
	for j := dot + 1; lit[j] == '0'; j++ {
		zeros++
	}
	return zeros < 6
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errorf("nesting exceeds %d levels", maxDepth)
	}
	return nil
}

func (p *parser) array() (value, error) {
	if err := p.enter(); err != nil {
		return value{}, err
	}
	defer func() { p.depth-- }()
	p.pos++ // '['
	v := value{kind: kindArray}
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	start := len(p.vals)
	var prevKeys []string
	for {
		p.skipSpace()
		p.rowKeys = prevKeys
		item, err := p.value()
		if err != nil {
			return v, err
		}
		prevKeys = nil
		if item.kind == kindObject {
			prevKeys = item.keys
		}
		p.vals = append(p.vals, item)
		p.skipSpace()
		if p.pos >= len(p.src) {
			return v, p.errorf("unexpected end of input in array")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			v.items = p.popValues(start)
			return v, nil
		default:
			return v, p.errorf("unexpected %s in array, want ',' or ']'", p.describe())
		}
	}
}

// popValues moves vals[start:] into a new slice and shrinks the stack.
func (p *parser) popValues(start int) []value {
	items := make([]value, len(p.vals)-start)
	copy(items, p.vals[start:])
	clear(p.vals[start:])
	p.vals = p.vals[:start]
	return items
}

func (p *parser) object() (value, error) {
	if err := p.enter(); err != nil {
		return value{}, err
	}
	defer func() { p.depth-- }()
	rowKeys := p.rowKeys
	p.rowKeys = nil
	p.pos++ // '{'
	v := value{kind: kindObject}
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	kstart, vstart := len(p.keys), len(p.vals)
	// index maps names to stack positions once the object is large enough
	// for a linear duplicate scan to matter.
	var index map[string]int
	for {
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return v, p.errorf("unexpected %s in object, want a member name", p.describe())
		}
		key, err := p.string()
		if err != nil {
			return v, err
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return v, p.errorf("unexpected %s after member name, want ':'", p.describe())
		}
		p.pos++
		p.skipSpace()
		item, err := p.value()
		if err != nil {
			return v, err
		}
		// A repeated name keeps its first position and takes the last
		// value, as JSON.parse does; TOON decoders reject duplicate keys.
		dup := -1
		if index != nil {
			if i, ok := index[key]; ok {
				dup = i
			}
		} else {
			for i := kstart; i < len(p.keys); i++ {
				if p.keys[i] == key {
					dup = i
					break
				}
			}
		}
		if dup >= 0 {
			p.vals[vstart+dup-kstart] = item
		} else {
			p.keys = append(p.keys, key)
			p.vals = append(p.vals, item)
			if index != nil {
				index[key] = len(p.keys) - 1
			} else if len(p.keys)-kstart == dedupThreshold {
				index = make(map[string]int, 2*dedupThreshold)
				for i := kstart; i < len(p.keys); i++ {
					index[p.keys[i]] = i
				}
			}
		}
		p.skipSpace()
		if p.pos >= len(p.src) {
			return v, p.errorf("unexpected end of input in object")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			if keys := p.keys[kstart:]; slices.Equal(keys, rowKeys) {
				v.keys = rowKeys
			} else {
				v.keys = slices.Clone(keys)
			}
			clear(p.keys[kstart:])
			p.keys = p.keys[:kstart]
			v.items = p.popValues(vstart)
			return v, nil
		default:
			return v, p.errorf("unexpected %s in object, want ',' or '}'", p.describe())
		}
	}
}

// string parses a JSON string starting at the opening quote.
func (p *parser) string() (string, error) {
	start := p.pos + 1
	ascii := true
	for i := start; i < len(p.src); i++ {
		c := p.src[i]
		switch {
		case c == '"':
			s := p.src[start:i]
			if !ascii && !utf8.ValidString(s) {
				return "", p.invalidUTF8(start, i)
			}
			p.pos = i + 1
			return s, nil
		case c == '\\':
			return p.escapedString(start, i)
		case c < 0x20:
			p.pos = i
			return "", p.errorf("control character %#02x in string", c)
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	p.pos = len(p.src)
	return "", p.errorf("unterminated string")
}

func (p *parser) invalidUTF8(start, end int) error {
	for i := start; i < end; {
		r, n := utf8.DecodeRuneInString(p.src[i:end])
		if r == utf8.RuneError && n == 1 {
			p.pos = i
			break
		}
		i += n
	}
	return p.errorf("invalid UTF-8 in string")
}

// escapedString finishes a string whose first backslash is at esc; the bytes
// from start up to esc are plain.
func (p *parser) escapedString(start, esc int) (string, error) {
	var b strings.Builder
	b.Grow(esc - start + 16)
	b.WriteString(p.src[start:esc])
	i := esc
	for i < len(p.src) {
		c := p.src[i]
		switch {
		case c == '"':
			s := b.String()
			if !utf8.ValidString(s) {
				return "", p.invalidUTF8(start, i)
			}
			p.pos = i + 1
			return s, nil
		case c < 0x20:
			p.pos = i
			return "", p.errorf("control character %#02x in string", c)
		case c != '\\':
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(p.src) {
			break
		}
		switch e := p.src[i+1]; e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := hex4(p.src, i+2)
			if !ok {
				p.pos = i
				return "", p.errorf("invalid \\u escape in string")
			}
			i += 6
			if utf16.IsSurrogate(r) {
				// Only a high surrogate followed by an escaped low one
				// forms a character; anything else has no UTF-8 form.
				r2, ok := rune(0), false
				if r < 0xdc00 && i+1 < len(p.src) && p.src[i] == '\\' && p.src[i+1] == 'u' {
					r2, ok = hex4(p.src, i+2)
				}
				if !ok || r2 < 0xdc00 || r2 > 0xdfff {
					p.pos = i - 6
					return "", p.errorf("unpaired surrogate escape in string")
				}
				r = utf16.DecodeRune(r, r2)
				i += 6
			}
			b.WriteRune(r)
			continue
		default:
			p.pos = i
			return "", p.errorf("invalid escape '\\%c' in string", e)
		}
		i += 2
	}
	p.pos = len(p.src)
	return "", p.errorf("unterminated string")
}

// hex4 decodes the four hex digits at s[i:i+4].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
