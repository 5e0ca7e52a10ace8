package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/go-json-experiment/json/jsontext"
	"go.yaml.in/yaml/v3"
)

// node is a parsed document value with the line it starts on. The three
// formats are read into this one shape so that checking keys, types and
// values, and locating errors, is written once.
type node struct {
	kind   nodeKind
	line   int
	b      bool
	i      int64
	f      float64
	s      string
	items  []*node
	fields []field // maps, in document order
}

type field struct {
	key  string
	line int
	val  *node
}

type nodeKind uint8

const (
	kindNull nodeKind = iota
	kindBool
	kindInt
	kindFloat
	kindString
	kindList
	kindMap
	kindOther // dates, times, tagged YAML values: nothing a policy uses
)

func (k nodeKind) String() string {
	return [...]string{"null", "a boolean", "an integer", "a number", "a string", "a list", "a table", "a date, time or tagged value"}[k]
}

// lineIndex turns byte offsets into 1-based line numbers.
type lineIndex []int // offsets where lines start

func newLineIndex(data []byte) lineIndex {
	idx := lineIndex{0}
	for i, c := range data {
		if c == '\n' {
			idx = append(idx, i+1)
		}
	}
	return idx
}

func (li lineIndex) line(off int) int {
	return sort.Search(len(li), func(i int) bool { return li[i] > off })
}

// parseJSONTree reads a JSON document. Duplicate names are errors.
func parseJSONTree(data []byte) (*node, error) {
	li := newLineIndex(data)
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	root, err := readJSON(dec, li)
	if err == nil {
		if _, err = dec.ReadToken(); err == io.EOF {
			return root, nil
		} else if err == nil {
			err = errors.New("unexpected data after the top-level value")
		}
	}
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		msg := se.Err.Error()
		if errors.Is(se.Err, io.ErrUnexpectedEOF) {
			msg = "unexpected end of file"
		}
		return nil, &Error{Line: li.line(int(se.ByteOffset)), Msg: msg}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
		return nil, &Error{Line: len(li), Msg: "unexpected end of file"}
	}
	return nil, &Error{Line: li.line(int(dec.InputOffset())), Msg: err.Error()}
}

func readJSON(dec *jsontext.Decoder, li lineIndex) (*node, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	// A token never spans lines, so its last byte gives its line.
	n := &node{line: li.line(int(dec.InputOffset()) - 1)}
	switch tok.Kind() {
	case 'n':
		n.kind = kindNull
	case 't', 'f':
		n.kind, n.b = kindBool, tok.Bool()
	case '"':
		n.kind, n.s = kindString, tok.String()
	case '0':
		raw := tok.String()
		if i, err := strconv.ParseInt(raw, 10, 64); err == nil {
			n.kind, n.i = kindInt, i
		} else {
			f, _ := tok.Float() // out of range gives ±Inf, which no setting accepts
			n.kind, n.f = kindFloat, f
		}
	case '[':
		n.kind = kindList
		for dec.PeekKind() != ']' {
			item, err := readJSON(dec, li)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, item)
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
	case '{':
		n.kind = kindMap
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			f := field{key: tok.String(), line: li.line(int(dec.InputOffset()) - 1)}
			if f.val, err = readJSON(dec, li); err != nil {
				return nil, err
			}
			n.fields = append(n.fields, f)
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// parseYAMLTree reads a single-document YAML file. Anchors and aliases are
// refused: a policy has no use for them, and expanding them is how small
// documents become huge ones.
func parseYAMLTree(data []byte) (*node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return &node{kind: kindMap, line: 1}, nil
		}
		return nil, yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		if err != nil {
			return nil, yamlError(err)
		}
		return nil, &Error{Line: extra.Line, Msg: "a policy is one YAML document; found another"}
	}
	return fromYAML(&doc)
}

// yamlError moves the line yaml.v3 puts in its messages ("yaml: line 3:
// ...") into Error.Line.
func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, after, ok := strings.Cut(rest, ": "); ok {
			if l, err := strconv.Atoi(num); err == nil {
				line, msg = l, after
			}
		}
	}
	return &Error{Line: line, Msg: msg}
}

func fromYAML(y *yaml.Node) (*node, error) {
	if y.Anchor != "" || y.Kind == yaml.AliasNode {
		return nil, &Error{Line: y.Line, Msg: "YAML anchors and aliases are not supported in a policy"}
	}
	n := &node{line: y.Line}
	switch y.Kind {
	case yaml.DocumentNode:
		if len(y.Content) == 0 {
			return &node{kind: kindMap, line: 1}, nil
		}
		return fromYAML(y.Content[0])
	case yaml.SequenceNode:
		n.kind = kindList
		for _, c := range y.Content {
			item, err := fromYAML(c)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, item)
		}
	case yaml.MappingNode:
		n.kind = kindMap
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, &Error{Line: k.Line, Msg: "a key must be a plain name"}
			}
			if slices.ContainsFunc(n.fields, func(f field) bool { return f.key == k.Value }) {
				return nil, &Error{Line: k.Line, Msg: fmt.Sprintf("key %q appears twice", k.Value)}
			}
			val, err := fromYAML(v)
			if err != nil {
				return nil, err
			}
			n.fields = append(n.fields, field{key: k.Value, line: k.Line, val: val})
		}
	case yaml.ScalarNode:
		var err error
		switch y.ShortTag() {
		case "!!null":
			n.kind = kindNull
		case "!!bool":
			n.kind = kindBool
			err = y.Decode(&n.b)
		case "!!int":
			n.kind = kindInt
			err = y.Decode(&n.i)
		case "!!float":
			n.kind = kindFloat
			err = y.Decode(&n.f)
		case "!!str":
			n.kind, n.s = kindString, y.Value
		default:
			n.kind = kindOther
		}
		if err != nil {
			return nil, &Error{Line: y.Line, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
		}
	}
	return n, nil
}

// parseTOMLTree reads a TOML document with BurntSushi/toml, which has the
// last word on syntax, and takes lines from tomlKeyLines: the decoder's
// metadata holds one position per dotted key, not one per [[rules]] entry.
func parseTOMLTree(data []byte) (*node, error) {
	var m map[string]any
	if _, err := toml.Decode(string(data), &m); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &Error{Line: pe.Position.Line, Msg: pe.Message}
		}
		return nil, &Error{Msg: err.Error()}
	}
	lines := tomlKeyLines(string(data))
	return fromTOML(m, "", 1, lines), nil
}

func fromTOML(v any, path string, line int, lines map[string]int) *node {
	n := &node{line: line}
	switch v := v.(type) {
	case bool:
		n.kind, n.b = kindBool, v
	case int64:
		n.kind, n.i = kindInt, v
	case float64:
		n.kind, n.f = kindFloat, v
	case string:
		n.kind, n.s = kindString, v
	case time.Time:
		n.kind = kindOther
	case []map[string]any:
		n.kind = kindList
		for i, m := range v {
			p := fmt.Sprintf("%s[%d]", path, i)
			n.items = append(n.items, fromTOML(m, p, lineOr(lines, p, line), lines))
		}
	case []any:
		n.kind = kindList
		for i, item := range v {
			p := fmt.Sprintf("%s[%d]", path, i)
			n.items = append(n.items, fromTOML(item, p, lineOr(lines, p, line), lines))
		}
	case map[string]any:
		n.kind = kindMap
		for k, item := range v {
			p := joinPath(path, k)
			l := lineOr(lines, p, line)
			n.fields = append(n.fields, field{key: k, line: l, val: fromTOML(item, p, l, lines)})
		}
		// TOML tables are unordered once decoded; report in file order.
		sort.Slice(n.fields, func(i, j int) bool {
			a, b := n.fields[i], n.fields[j]
			return a.line < b.line || a.line == b.line && a.key < b.key
		})
	default:
		n.kind = kindOther
	}
	return n
}

func lineOr(lines map[string]int, path string, fallback int) int {
	if l, ok := lines[path]; ok {
		return l
	}
	return fallback
}

func joinPath(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// asInt gives an integral number as an int, refusing fractions and
// values beyond int32 (no limit needs more).
func (n *node) asInt() (int, bool) {
	switch n.kind {
	case kindInt:
		if n.i >= math.MinInt32 && n.i <= math.MaxInt32 {
			return int(n.i), true
		}
	case kindFloat:
		if n.f == math.Trunc(n.f) && n.f >= math.MinInt32 && n.f <= math.MaxInt32 {
			return int(n.f), true
		}
	}
	return 0, false
}
