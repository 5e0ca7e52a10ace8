package tooldocs

import (
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// pythonKeywords are the hard keywords of Python 3 (keyword.kwlist). Soft
// keywords (match, case, type, _) are valid identifiers and stay usable.
var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true,
	"assert": true, "async": true, "await": true, "break": true, "class": true,
	"continue": true, "def": true, "del": true, "elif": true, "else": true,
	"except": true, "finally": true, "for": true, "from": true, "global": true,
	"if": true, "import": true, "in": true, "is": true, "lambda": true,
	"nonlocal": true, "not": true, "or": true, "pass": true, "raise": true,
	"return": true, "try": true, "while": true, "with": true, "yield": true,
}

// IsPythonKeyword reports whether s is a (hard) Python keyword and therefore
// cannot be used as an attribute, parameter or module name.
func IsPythonKeyword(s string) bool { return pythonKeywords[s] }

// defaultToolIdentifier replaces a tool name that sanitizes to nothing.
const defaultToolIdentifier = "tool"

// defaultServerAlias replaces a server name that sanitizes to nothing.
const defaultServerAlias = "server"

// SanitizeIdentifier turns a tool name into the alias under which the
// sandbox exposes it, with the reference's rules: surrounding white space is
// stripped, every run of characters outside [0-9A-Za-z_] becomes one "_",
// the result is lower-cased (so "readFile" becomes "readfile"), an empty
// result becomes "tool", a leading digit gets a "_" prefix and a Python
// keyword gets a "_" suffix. The result is always a valid Python identifier
// that is not a keyword, and SanitizeIdentifier is idempotent.
func SanitizeIdentifier(name string) string {
	return unkeyword(sanitize(trimPythonSpace(name), defaultToolIdentifier, false))
}

// sanitize replaces runs of characters outside [0-9A-Za-z_] by "_" and
// lower-cases; an empty result becomes the default empty, and a leading
// digit gets a "_" prefix. With lowerFirst the input is lower-cased before the
// replacement, which is the server-alias order: Python's str.lower maps a few
// non-ASCII letters (the Kelvin sign, for one) to ASCII ones, and the
// reference lower-cases server names before replacing, but tool names after.
func sanitize(s, empty string, lowerFirst bool) string {
	if lowerFirst {
		// Python lower-cases U+0130 to "i" plus a combining dot, which then
		// becomes "_"; Go's ToLower drops the dot.
		s = strings.ToLower(strings.ReplaceAll(s, "\u0130", "i\u0307"))
	}
	var b strings.Builder
	b.Grow(len(s) + 1)
	inRun := false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
			inRun = false
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + ('a' - 'A'))
			inRun = false
		default:
			if !inRun {
				b.WriteByte('_')
				inRun = true
			}
		}
	}
	out := b.String()
	if out == "" {
		out = empty
	}
	if out[0] >= '0' && out[0] <= '9' {
		out = "_" + out
	}
	return out
}

// unkeyword appends "_" to a Python keyword.
func unkeyword(s string) string {
	if IsPythonKeyword(s) {
		return s + "_"
	}
	return s
}

// trimPythonSpace strips what Python's str.strip() strips. Go's
// unicode.IsSpace misses the ASCII separators U+001C..U+001F, which Python
// treats as white space; keeping them would add a "_" to the alias.
func trimPythonSpace(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
	})
}

// uniqueAlias returns base if taken reports it free, else the first free of
// base_2, base_3, … — the reference's collision rule for both server and
// tool aliases.
func uniqueAlias(base string, taken func(string) bool) string {
	if !taken(base) {
		return base
	}
	for i := 2; ; i++ {
		alias := base + "_" + strconv.Itoa(i)
		if !taken(alias) {
			return alias
		}
	}
}

// toolAliases assigns aliases to the tools of one server in list order.
// Duplicates get _2, _3, … as in the reference; unlike the reference, a
// suffixed alias that collides with another tool's own alias (tools "a", "a"
// and "a_2") is suffixed again, so every alias maps to exactly one tool.
func toolAliases(names []string) []string {
	used := make(map[string]bool, len(names))
	out := make([]string, len(names))
	for i, n := range names {
		a := uniqueAlias(SanitizeIdentifier(n), func(s string) bool { return used[s] })
		used[a] = true
		out[i] = a
	}
	return out
}

// reservedServerAliases can never be server aliases. The sandbox binds every
// server's proxy to mcp_<alias> next to the dict mcp_servers, so a server
// aliased "servers" would overwrite that dict.
var reservedServerAliases = []string{"servers"}

// Aliases assigns server aliases. An alias is given once, on first use of a
// server name, and stays the same for the life of the registry even if the
// server is removed and added again, so code written against mcp_<alias>
// keeps working. It is safe for concurrent use.
type Aliases struct {
	mu       sync.Mutex
	byName   map[string]string
	used     map[string]bool
	reserved map[string]bool
}

// NewAliases returns an empty registry. Reserved names are never handed out
// as aliases (a server that would get one gets the next suffixed form);
// "servers" is always reserved.
func NewAliases(reserved ...string) *Aliases {
	a := &Aliases{
		byName:   make(map[string]string),
		used:     make(map[string]bool),
		reserved: make(map[string]bool),
	}
	for _, r := range reservedServerAliases {
		a.reserved[r] = true
	}
	for _, r := range reserved {
		a.reserved[r] = true
	}
	return a
}

// For returns the alias of the server called name, assigning one on first
// use: the name is lower-cased, every run of characters outside [a-z0-9_]
// becomes "_", an empty result becomes "server", a leading digit gets a "_"
// prefix and a Python keyword a "_" suffix (the reference skips that last
// step, which breaks import mcp.servers.<alias>). An alias already taken by
// another server, or reserved, becomes alias_2, alias_3, ….
func (a *Aliases) For(name string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if alias, ok := a.byName[name]; ok {
		return alias
	}
	// The keyword suffix applies to the unsuffixed form only: "class"
	// becomes class_, a second "Class" class_2 (not class__2).
	base := sanitize(name, defaultServerAlias, true)
	taken := func(s string) bool { return a.used[s] || a.reserved[s] }
	alias := unkeyword(base)
	if taken(alias) {
		alias = uniqueAlias(base, func(s string) bool { return s == base || taken(s) })
	}
	a.byName[name] = alias
	a.used[alias] = true
	return alias
}

// Lookup returns the alias already assigned to name, without assigning one.
func (a *Aliases) Lookup(name string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	alias, ok := a.byName[name]
	return alias, ok
}

// ServerAliasBase is the alias a server called name gets when nothing
// collides with it (see Aliases.For). Unlike tool aliases, server names are
// not stripped first: the reference does not strip them either.
func ServerAliasBase(name string) string {
	return unkeyword(sanitize(name, defaultServerAlias, true))
}
