package serverconfig

import (
	"errors"
	"fmt"
)

// stripJSONC turns JSON with comments (JSONC, as VS Code, Cursor and Gemini CLI
// accept in their settings files) into plain JSON. Line comments, block
// comments, trailing commas before '}' or ']' and a leading UTF-8 byte order
// mark are replaced with spaces; newlines inside comments are kept. The result
// therefore has the same length and the same line structure as src, so offsets
// in JSON syntax errors still point at the right place in the original file.
// Text inside strings is never touched. Valid JSON comes back unchanged.
//
// The only error is an unterminated block comment.
func stripJSONC(src []byte) ([]byte, error) {
	out := make([]byte, len(src))
	copy(out, src)
	if len(out) >= 3 && out[0] == 0xEF && out[1] == 0xBB && out[2] == 0xBF {
		out[0], out[1], out[2] = ' ', ' ', ' '
	}
	// lastComma is the offset of a ',' seen outside strings with only
	// whitespace and comments after it so far, or -1.
	lastComma := -1
	for i := 0; i < len(out); {
		switch c := out[i]; {
		case c == '"':
			lastComma = -1
			i = skipString(out, i)
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for i < len(out) && out[i] != '\n' {
				out[i] = ' '
				i++
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			start := i
			out[i], out[i+1] = ' ', ' '
			i += 2
			for {
				if i+1 >= len(out) {
					line, col := lineCol(src, start)
					return nil, fmt.Errorf("line %d, column %d: %w", line, col, errUnterminatedComment)
				}
				if out[i] == '*' && out[i+1] == '/' {
					out[i], out[i+1] = ' ', ' '
					i += 2
					break
				}
				if out[i] != '\n' && out[i] != '\r' {
					out[i] = ' '
				}
				i++
			}
		case c == ',':
			lastComma = i
			i++
		case c == '}' || c == ']':
			if lastComma >= 0 {
				out[lastComma] = ' '
			}
			lastComma = -1
			i++
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		default:
			lastComma = -1
			i++
		}
	}
	return out, nil
}

var errUnterminatedComment = errors.New("unterminated /* comment")

// skipString returns the offset just after the JSON string that starts at
// b[i] == '"', or len(b) when the string is not terminated.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// lineCol converts a byte offset in b into a 1-based line and column.
func lineCol(b []byte, off int) (line, col int) {
	if off > len(b) {
		off = len(b)
	}
	line, col = 1, 1
	for _, c := range b[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}
