package tooldocs

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Detail levels of doc entries.
const (
	DetailSummary = "summary"
	DetailFull    = "full"
)

// NormalizeDetail maps a requested detail level to DetailSummary or
// DetailFull: the value is lower-cased and anything other than "full"
// becomes "summary", as in the reference. Surrounding white space is
// ignored, which the reference does not do; no caller relies on " full"
// meaning summary.
func NormalizeDetail(detail string) string {
	if strings.EqualFold(strings.TrimSpace(detail), DetailFull) {
		return DetailFull
	}
	return DetailSummary
}

// Doc is one tool's doc entry as query_tool_docs and search_tool_docs return
// it. The field order is the reference's key order. Description is omitted
// when empty, InputSchema unless the detail level is "full".
type Doc struct {
	Server      string          `json:"server"`
	ServerAlias string          `json:"serverAlias"`
	Tool        string          `json:"tool"`
	ToolAlias   string          `json:"toolAlias"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// newDoc builds the doc entry of t on server s. detail must be normalized.
func newDoc(s *ServerInfo, t *ToolInfo, detail string) Doc {
	d := Doc{Server: s.Name, ServerAlias: s.Alias, Tool: t.Name, ToolAlias: t.Alias, Description: t.Description}
	if detail == DetailFull && !emptySchema(t.InputSchema) {
		d.InputSchema = t.InputSchema
	}
	return d
}

// emptySchema reports a schema the reference treats as absent: it reads the
// schema with Python's `or`, so null and {} count as missing.
func emptySchema(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	if raw[0] == '{' {
		return len(bytes.TrimSpace(raw[1:len(raw)-1])) == 0
	}
	return false
}

// Query returns doc entries like the reference's query_tool_docs: every tool
// of server when tool is nil, else the one tool it names. server matches a
// server's name or alias (exact first, then ignoring case); tool matches a
// tool's name or alias, exact first, then ignoring case. detail is
// normalized with NormalizeDetail.
//
// A missing server or tool gives a *NotFoundError whose message is the
// reference's ("Server 'x' is not available", "Tool 'x' not found for
// server y"); a configured server whose tools were never listed gives an
// error wrapping ErrToolsUnknown, so the caller can start it and retry.
func (c *Catalog) Query(server, tool *string, detail string) ([]Doc, error) {
	info, err := c.server(server)
	if err != nil {
		return nil, err
	}
	detail = NormalizeDetail(detail)
	if tool != nil {
		i := findTool(info.Tools, *tool)
		if i < 0 {
			return nil, &NotFoundError{Kind: ToolNotFound, Server: info.Name, Tool: *tool}
		}
		return []Doc{newDoc(&info, &info.Tools[i], detail)}, nil
	}
	docs := make([]Doc, len(info.Tools))
	for i := range info.Tools {
		docs[i] = newDoc(&info, &info.Tools[i], detail)
	}
	return docs, nil
}

// NotFoundKind says what a NotFoundError did not find.
type NotFoundKind int

// NotFoundError kinds.
const (
	ServerNotFound NotFoundKind = iota + 1
	ToolNotFound
)

// NotFoundError reports a server or tool that the catalogue does not hold.
// Its message is safe to show to the model.
type NotFoundError struct {
	Kind NotFoundKind
	// Server is the requested server for ServerNotFound and the name of the
	// server that was searched for ToolNotFound.
	Server string
	// Tool is the requested tool (ToolNotFound only).
	Tool string

	none bool // no server was given at all (Python None)
}

func (e *NotFoundError) Error() string {
	if e.Kind == ToolNotFound {
		return "Tool " + pyRepr(e.Tool) + " not found for server " + e.Server
	}
	if e.none {
		return "Server None is not available"
	}
	return "Server " + pyRepr(e.Server) + " is not available"
}

// ErrToolsUnknown is wrapped by errors about a server that is configured but
// whose tools have never been listed (it was not started yet).
var ErrToolsUnknown = errors.New("tools of server not known yet")

type toolsUnknownError struct{ server string }

func (e *toolsUnknownError) Error() string {
	return "Tools of server " + e.server + " are not known yet: the server has not been started"
}

func (e *toolsUnknownError) Unwrap() error { return ErrToolsUnknown }

// pyRepr quotes s the way Python's repr() quotes a str, because the
// reference builds its error messages with {x!r} and prompts or scripts may
// match on them: single quotes unless s contains a single quote and no
// double quote, backslash escapes for the quote, backslash and control
// characters, printable non-ASCII kept as is.
func pyRepr(s string) string {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b := make([]byte, 0, len(s)+2)
	b = append(b, quote)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			// Python strs cannot hold invalid UTF-8; show the byte as the
			// surrogate escape Python uses for undecodable input.
			b = append(b, `\udc`...)
			b = append(b, hex2(s[i])...)
		case r == rune(quote) || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r < 0x20 || r == 0x7f:
			b = append(b, `\x`...)
			b = append(b, hex2(byte(r))...)
		case r >= 0x80 && !pyPrintable(r):
			switch {
			case r < 0x100:
				b = append(b, `\x`...)
				b = append(b, hex2(byte(r))...)
			case r <= 0xffff:
				b = append(b, `\u`...)
				b = append(b, leftPad(strconv.FormatInt(int64(r), 16), 4)...)
			default:
				b = append(b, `\U`...)
				b = append(b, leftPad(strconv.FormatInt(int64(r), 16), 8)...)
			}
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(append(b, quote))
}

// pyPrintable approximates Python's str.isprintable for one non-ASCII rune:
// separators other than the space and the "Other" categories are escaped.
func pyPrintable(r rune) bool {
	return unicode.IsPrint(r) && !unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp, unicode.Cf)
}

func hex2(c byte) string { return leftPad(strconv.FormatUint(uint64(c), 16), 2) }

func leftPad(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return strings.Repeat("0", n-len(s)) + s
}
