package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// tomlKeyLines maps every key of a TOML document to the line that defines
// it, by paths as error messages name them: "default",
// "limits.calls_per_minute", "rules[2]" (the [[rules]] header or the inline
// table), "rules[2].when". It only locates keys in a document that
// BurntSushi/toml has already accepted; on anything else it still returns,
// with whatever it found.
func tomlKeyLines(src string) map[string]int {
	s := &tomlScanner{src: src, li: newLineIndex([]byte(src)), lines: map[string]int{}, arrays: map[string]int{}}
	s.document()
	return s.lines
}

type tomlScanner struct {
	src    string
	pos    int
	li     lineIndex
	lines  map[string]int
	arrays map[string]int // resolved path of an array of tables -> entries so far
}

// maxTOMLDepth bounds the nesting the scanner follows.
const maxTOMLDepth = 64

func (s *tomlScanner) peek(off int) byte {
	if s.pos+off < len(s.src) {
		return s.src[s.pos+off]
	}
	return 0
}

func (s *tomlScanner) line() int { return s.li.line(s.pos) }

func (s *tomlScanner) record(path string, line int) {
	if _, ok := s.lines[path]; !ok {
		s.lines[path] = line
	}
}

func (s *tomlScanner) document() {
	prefix := ""
	for s.pos < len(s.src) {
		start := s.pos
		s.skipSpace(true)
		if s.pos >= len(s.src) {
			return
		}
		line := s.line()
		if s.peek(0) == '[' {
			array := s.peek(1) == '['
			s.pos++
			if array {
				s.pos++
			}
			s.skipSpace(false)
			segs := s.key()
			var path string
			if array && len(segs) > 0 {
				// The last segment names the array itself, not its latest entry.
				path = joinPath(s.resolve("", segs[:len(segs)-1]), segs[len(segs)-1])
			} else {
				path = s.resolve("", segs)
			}
			if array {
				n := s.arrays[path]
				s.arrays[path] = n + 1
				path = fmt.Sprintf("%s[%d]", path, n)
			}
			prefix = path
			s.record(prefix, line)
			s.skipLine()
		} else {
			path := s.resolve(prefix, s.key())
			s.record(path, line)
			s.skipSpace(false)
			if s.peek(0) == '=' {
				s.pos++
				s.value(path, 0)
			}
		}
		if s.pos == start {
			s.pos++
		}
	}
}

// resolve appends key segments to base, pointing a segment that names an
// array of tables at its latest entry, as TOML does.
func (s *tomlScanner) resolve(base string, segs []string) string {
	path := base
	for _, seg := range segs {
		path = joinPath(path, seg)
		if n, ok := s.arrays[path]; ok && n > 0 {
			path = fmt.Sprintf("%s[%d]", path, n-1)
		}
	}
	return path
}

// key reads a dotted key: bare or quoted segments separated by dots.
func (s *tomlScanner) key() []string {
	var segs []string
	for {
		s.skipSpace(false)
		switch c := s.peek(0); {
		case c == '"' || c == '\'':
			start := s.pos
			s.skipString()
			raw := s.src[start:s.pos]
			seg := strings.Trim(raw, `"'`)
			if c == '"' {
				if u, err := strconv.Unquote(raw); err == nil {
					seg = u
				}
			}
			segs = append(segs, seg)
		default:
			start := s.pos
			for s.pos < len(s.src) && isBareKeyByte(s.src[s.pos]) {
				s.pos++
			}
			if s.pos == start {
				return segs
			}
			segs = append(segs, s.src[start:s.pos])
		}
		s.skipSpace(false)
		if s.peek(0) != '.' {
			return segs
		}
		s.pos++
	}
}

func isBareKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// value skips a value, recording the keys of inline tables in it and the
// entries of arrays.
func (s *tomlScanner) value(path string, depth int) {
	s.skipSpace(false)
	if depth > maxTOMLDepth {
		s.skipLine()
		return
	}
	switch s.peek(0) {
	case '"', '\'':
		s.skipString()
	case '[':
		s.pos++
		for i := 0; ; i++ {
			start := s.pos
			s.skipSpace(true)
			if s.pos >= len(s.src) {
				return
			}
			if s.peek(0) == ']' {
				s.pos++
				return
			}
			item := fmt.Sprintf("%s[%d]", path, i)
			s.record(item, s.line())
			s.value(item, depth+1)
			s.skipSpace(true)
			if s.peek(0) == ',' {
				s.pos++
			} else if s.pos == start {
				s.pos++
			}
		}
	case '{':
		s.pos++
		for {
			start := s.pos
			s.skipSpace(false)
			if s.pos >= len(s.src) {
				return
			}
			if s.peek(0) == '}' {
				s.pos++
				return
			}
			line := s.line()
			key := joinPath(path, strings.Join(s.key(), "."))
			s.record(key, line)
			s.skipSpace(false)
			if s.peek(0) == '=' {
				s.pos++
				s.value(key, depth+1)
			}
			s.skipSpace(false)
			if s.peek(0) == ',' {
				s.pos++
			} else if s.pos == start {
				s.pos++
			}
		}
	default:
		// A scalar: numbers, booleans, dates (which may hold a space).
		for s.pos < len(s.src) && !strings.ContainsRune(",]}#\n", rune(s.src[s.pos])) {
			s.pos++
		}
	}
}

// skipString skips a basic, literal or multi-line string.
func (s *tomlScanner) skipString() {
	defer func() { s.pos = min(s.pos, len(s.src)) }() // an escape may step past the end
	q := s.peek(0)
	if s.peek(1) == q && s.peek(2) == q {
		s.pos += 3
		for s.pos < len(s.src) {
			if q == '"' && s.src[s.pos] == '\\' {
				s.pos += 2
				continue
			}
			if s.peek(0) == q && s.peek(1) == q && s.peek(2) == q {
				s.pos += 3
				// Up to two more quotes belong to the content.
				for range 2 {
					if s.peek(0) == q {
						s.pos++
					}
				}
				return
			}
			s.pos++
		}
		return
	}
	s.pos++
	for s.pos < len(s.src) && s.src[s.pos] != '\n' {
		c := s.src[s.pos]
		s.pos++
		if c == '\\' && q == '"' {
			s.pos++
		} else if c == q {
			return
		}
	}
}

// skipSpace skips blanks and comments, and newlines too when newlines is
// set.
func (s *tomlScanner) skipSpace(newlines bool) {
	for s.pos < len(s.src) {
		switch s.src[s.pos] {
		case ' ', '\t', '\r':
			s.pos++
		case '\n':
			if !newlines {
				return
			}
			s.pos++
		case '#':
			for s.pos < len(s.src) && s.src[s.pos] != '\n' {
				s.pos++
			}
		default:
			return
		}
	}
}

// skipLine skips to the end of the current line.
func (s *tomlScanner) skipLine() {
	for s.pos < len(s.src) && s.src[s.pos] != '\n' {
		s.pos++
	}
}
