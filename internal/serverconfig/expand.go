package serverconfig

import (
	"path/filepath"
	"slices"
	"strings"
)

// expander substitutes variables in configuration strings.
//
// Recognised forms (a superset of what Claude Code, Cursor, VS Code, Windsurf
// and Gemini CLI document for their files):
//
//	${NAME}            environment variable NAME
//	${NAME:-default}   NAME if set and non-empty, else default (itself expanded)
//	${env:NAME}        environment variable NAME (VS Code, Cursor, Windsurf)
//	${userHome}, ${workspaceFolder}, ${workspaceFolderBasename},
//	${pathSeparator}, ${/}
//	                   VS Code's predefined variables; the workspace is the
//	                   working directory
//	$NAME              environment variable NAME, only where bare is set
//	                   (Gemini CLI's env values)
//
// ${input:ID} (a VS Code prompt) and other ${prefix:...} forms cannot be
// resolved without the editor; they expand to "" and are reported so that the
// entry can be skipped. An undefined variable expands to "" and is reported.
// Anything else, including a '$' not followed by a recognised form or an
// unterminated "${", is kept literally.
type expander struct {
	lookup     func(name string) (string, bool)
	predefined map[string]string
}

// expansion collects what one or more expand calls could not resolve.
type expansion struct {
	undefined   []string // variable names, in order of first use
	inputs      []string // ${input:...} references
	unsupported []string // other ${prefix:...} references
}

func (e *expansion) addUndefined(name string) {
	if !slices.Contains(e.undefined, name) {
		e.undefined = append(e.undefined, name)
	}
}

// maxExpandDepth bounds nested defaults such as ${A:-${B:-${C}}}.
const maxExpandDepth = 8

func (x *expander) expand(s string, bare bool, ex *expansion) string {
	return x.expandDepth(s, bare, ex, 0)
}

func (x *expander) expandDepth(s string, bare bool, ex *expansion, depth int) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			end := closingBrace(s, i+2)
			if end < 0 || depth >= maxExpandDepth {
				// Unterminated or too deeply nested: keep the rest as is.
				b.WriteString(s[i:])
				break
			}
			b.WriteString(x.resolve(s[i+2:end], ex, depth))
			i = end + 1
			continue
		}
		if bare && i+1 < len(s) && isNameStart(s[i+1]) {
			j := i + 2
			for j < len(s) && isNameChar(s[j]) {
				j++
			}
			b.WriteString(x.variable(s[i+1:j], ex))
			i = j
			continue
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// closingBrace returns the index of the '}' that closes a "${" whose body
// starts at s[start], counting nested "${", or -1.
func closingBrace(s string, start int) int {
	depth := 1
	for j := start; j < len(s); j++ {
		switch {
		case s[j] == '$' && j+1 < len(s) && s[j+1] == '{':
			depth++
			j++
		case s[j] == '}':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// resolve returns the value of one ${...} body.
func (x *expander) resolve(body string, ex *expansion, depth int) string {
	if v, ok := x.predefined[body]; ok {
		return v
	}
	if isName(body) {
		return x.variable(body, ex)
	}
	if name, def, ok := strings.Cut(body, ":-"); ok && isName(name) {
		if v, ok := x.lookup(name); ok && v != "" {
			return v
		}
		return x.expandDepth(def, false, ex, depth+1)
	}
	if prefix, rest, ok := strings.Cut(body, ":"); ok && isName(prefix) {
		switch prefix {
		case "env":
			if isName(rest) {
				return x.variable(rest, ex)
			}
		case "input":
			ex.inputs = append(ex.inputs, "${"+body+"}")
			return ""
		}
		ex.unsupported = append(ex.unsupported, "${"+body+"}")
		return ""
	}
	return "${" + body + "}"
}

func (x *expander) variable(name string, ex *expansion) string {
	if v, ok := x.lookup(name); ok {
		return v
	}
	ex.addUndefined(name)
	return ""
}

func isName(s string) bool {
	if s == "" || !isNameStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isNameChar(s[i]) {
			return false
		}
	}
	return true
}

func isNameStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isNameChar(c byte) bool { return isNameStart(c) || '0' <= c && c <= '9' }

// expandTilde replaces a leading "~" or "~/" with home. Other forms such as
// "~user" are kept.
func expandTilde(s, home string) string {
	if home == "" {
		return s
	}
	if s == "~" {
		return home
	}
	if strings.HasPrefix(s, "~/") {
		return strings.TrimSuffix(home, string(filepath.Separator)) + string(filepath.Separator) + s[2:]
	}
	return s
}
