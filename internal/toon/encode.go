package toon

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// EncodeJSON encodes the JSON document data as TOON. Object members keep
// their order and numbers their exact value; see the package documentation
// for the rest of the JSON-to-TOON mapping. A nil opts means the defaults.
func EncodeJSON(data []byte, opts *Options) (string, error) {
	c, err := resolve(opts)
	if err != nil {
		return "", err
	}
	// One copy of the input lets every plain string and key in the tree be
	// a substring of it.
	v, err := parseJSON(string(data))
	if err != nil {
		return "", fmt.Errorf("toon: encoding JSON: %w", err)
	}
	return encode(&v, c, len(data)), nil
}

// encoder writes the TOON lines for a value tree into buf.
type encoder struct {
	config
	buf     []byte
	started bool
	// item is the depth of a pending list-item marker, or -1. A non-empty
	// object in a list is encoded like a normal object one level deeper,
	// except that its first line moves up onto the "- " line; §10's layout
	// (rows at +2, other fields at +1) follows from that.
	item int
	// rootDotted lists the root object's literal keys that contain a dot,
	// which folded keys must not reproduce (see folded).
	rootDotted []string
}

func encode(v *value, c config, sizeHint int) string {
	e := encoder{config: c, item: -1}
	// TOON is rarely longer than the JSON it comes from.
	e.buf = make([]byte, 0, sizeHint+16)
	switch v.kind {
	case kindArray:
		e.array(0, "", false, v)
	case kindObject:
		sc := scope{budget: e.flatten}
		if e.fold {
			for _, k := range v.keys {
				if strings.Contains(k, ".") {
					e.rootDotted = append(e.rootDotted, k)
				}
			}
			sc.rooted = e.rootDotted != nil
		}
		e.object(0, v, sc)
	default:
		e.line(0)
		e.primitive(v)
	}
	if cap(e.buf) > 2*len(e.buf)+4096 {
		// Much smaller than its input (pretty-printed JSON, say): copy
		// rather than keep the oversized buffer alive.
		return string(e.buf)
	}
	// The buffer is never touched again, so it can back the string
	// directly instead of being copied, as strings.Builder does.
	return unsafe.String(unsafe.SliceData(e.buf), len(e.buf))
}

// line starts a new output line at depth. Lines are joined with LF and the
// document has no trailing newline (§12).
func (e *encoder) line(depth int) {
	if e.started {
		e.buf = append(e.buf, '\n')
	}
	e.started = true
	if e.item >= 0 {
		e.indentTo(e.item)
		e.buf = append(e.buf, '-', ' ')
		e.item = -1
		return
	}
	e.indentTo(depth)
}

func (e *encoder) indentTo(depth int) {
	n := depth * e.indent
	for n > len(e.spaces) {
		e.buf = append(e.buf, e.spaces...)
		n -= len(e.spaces)
	}
	e.buf = append(e.buf, e.spaces[:n]...)
}

// itemLine starts a list item line at depth: "- ".
func (e *encoder) itemLine(depth int) {
	e.line(depth)
	e.buf = append(e.buf, '-', ' ')
}

func (e *encoder) primitive(v *value) {
	if v.kind == kindString {
		e.buf = appendString(e.buf, v.text, e.delim)
		return
	}
	e.buf = append(e.buf, v.text...)
}

// scope is what key folding needs to know about the object being written.
type scope struct {
	// budget is how many segments a folded key may still hold on this path.
	budget int
	// path is the dotted path of the object from the root object. It is
	// tracked only when the root has dotted literal keys to avoid, and only
	// through nested objects: decoders never expand paths across arrays.
	path   string
	rooted bool
}

// child returns the scope of the object under key k.
func (sc scope) child(k string, budget int) scope {
	sc.budget = budget
	if sc.rooted {
		if sc.path == "" {
			sc.path = k
		} else {
			sc.path = sc.path + "." + k
		}
	}
	return sc
}

// object writes the fields of v at depth.
func (e *encoder) object(depth int, v *value, sc scope) {
	for i := range v.keys {
		if e.fold && sc.budget >= 2 && e.folded(depth, v, i, sc) {
			continue
		}
		e.field(depth, v.keys[i], &v.items[i], sc)
	}
}

// field writes one object member (§8): "key: value", "key:" followed by a
// nested object, or an array with its key in the header.
func (e *encoder) field(depth int, key string, v *value, sc scope) {
	switch v.kind {
	case kindArray:
		e.array(depth, key, true, v)
	case kindObject:
		e.line(depth)
		e.buf = appendKey(e.buf, key)
		e.buf = append(e.buf, ':')
		if len(v.keys) > 0 {
			e.object(depth+1, v, sc.child(key, sc.budget))
		}
	default:
		e.line(depth)
		e.buf = appendKey(e.buf, key)
		e.buf = append(e.buf, ':', ' ')
		e.primitive(v)
	}
}

// folded writes member i of obj as a folded key (§13.4) if it is eligible,
// and reports whether it did.
//
// The chain follows single-key objects from the member, up to the budget.
// All its segments must be identifiers, and the dotted key must differ from
// every sibling key and, as a full path, from every dotted literal key of
// the root object: a decoder expanding paths would otherwise merge the two.
// If the chain ends at a primitive, an array or {}, that leaf is written
// under the dotted key. If it ends at an object that still has members
// (several keys, or the segment limit was reached) the dotted key opens that
// object, whose own members may fold only within what is left of the
// budget, so no dotted path exceeds flattenDepth segments.
func (e *encoder) folded(depth int, obj *value, i int, sc scope) bool {
	cur := &obj.items[i]
	if cur.kind != kindObject || len(cur.keys) != 1 || !isIdentifierSegment(obj.keys[i]) {
		return false
	}
	n := 1
	size := len(obj.keys[i])
	for n < sc.budget && cur.kind == kindObject && len(cur.keys) == 1 {
		if !isIdentifierSegment(cur.keys[0]) {
			return false
		}
		size += 1 + len(cur.keys[0])
		cur = &cur.items[0]
		n++
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(obj.keys[i])
	for seg, next := 1, &obj.items[i]; seg < n; seg++ {
		b.WriteByte('.')
		b.WriteString(next.keys[0])
		next = &next.items[0]
	}
	key := b.String()
	for j, k := range obj.keys {
		if j != i && k == key {
			return false
		}
	}
	inner := sc.child(key, sc.budget-n)
	if inner.rooted && slices.Contains(e.rootDotted, inner.path) {
		return false
	}
	if cur.kind == kindObject && len(cur.keys) > 0 {
		e.line(depth)
		e.buf = append(e.buf, key...)
		e.buf = append(e.buf, ':')
		e.object(depth+1, cur, inner)
		return true
	}
	e.field(depth, key, cur, inner)
	return true
}

// array writes an array that has a key, or the root array when hasKey is
// false (§9).
func (e *encoder) array(depth int, key string, hasKey bool, v *value) {
	e.line(depth)
	if len(v.items) == 0 {
		if hasKey {
			e.buf = appendKey(e.buf, key)
			e.buf = append(e.buf, ':', ' ', '[', ']')
		} else {
			e.buf = append(e.buf, '[', ']')
		}
		return
	}
	if allPrimitive(v) {
		e.inline(key, hasKey, v)
		return
	}
	if fields := tabularFields(v); fields != nil {
		e.header(key, hasKey, len(v.items), fields)
		e.rows(depth+1, v, fields)
		return
	}
	e.header(key, hasKey, len(v.items), nil)
	for i := range v.items {
		e.listItem(depth+1, &v.items[i])
	}
}

// listItem writes one element of an expanded list (§9.4, §10).
func (e *encoder) listItem(depth int, v *value) {
	switch v.kind {
	case kindArray:
		e.itemLine(depth)
		if allPrimitive(v) {
			// Empty inner arrays keep the header form "- [0]:" (§9.2).
			e.inline("", false, v)
			return
		}
		// No field list fits on a hyphen line, so nested arrays of
		// objects are always expanded.
		e.header("", false, len(v.items), nil)
		for i := range v.items {
			e.listItem(depth+1, &v.items[i])
		}
	case kindObject:
		if len(v.keys) == 0 {
			e.line(depth)
			e.buf = append(e.buf, '-')
			return
		}
		e.item = depth
		e.object(depth+1, v, scope{budget: e.flatten})
	default:
		e.itemLine(depth)
		e.primitive(v)
	}
}

// inline writes a primitive array on its header line: "key[N]: a,b,c".
func (e *encoder) inline(key string, hasKey bool, v *value) {
	e.header(key, hasKey, len(v.items), nil)
	for i := range v.items {
		if i == 0 {
			e.buf = append(e.buf, ' ')
		} else {
			e.buf = append(e.buf, e.delim)
		}
		e.primitive(&v.items[i])
	}
}

// header writes key[N<delim>]{fields}: (§6). The bracket names the delimiter
// unless it is a comma.
func (e *encoder) header(key string, hasKey bool, n int, fields []string) {
	if hasKey {
		e.buf = appendKey(e.buf, key)
	}
	e.buf = append(e.buf, '[')
	e.buf = strconv.AppendInt(e.buf, int64(n), 10)
	if e.delim != ',' {
		e.buf = append(e.buf, e.delim)
	}
	e.buf = append(e.buf, ']')
	if fields != nil {
		e.buf = append(e.buf, '{')
		for i, f := range fields {
			if i > 0 {
				e.buf = append(e.buf, e.delim)
			}
			e.buf = appendKey(e.buf, f)
		}
		e.buf = append(e.buf, '}')
	}
	e.buf = append(e.buf, ':')
}

// rows writes the rows of a tabular array, cells in header order.
func (e *encoder) rows(depth int, v *value, fields []string) {
	for i := range v.items {
		row := &v.items[i]
		e.line(depth)
		for j := range fields {
			if j > 0 {
				e.buf = append(e.buf, e.delim)
			}
			e.primitive(&row.items[fieldIndex(row, fields, j)])
		}
	}
}

func allPrimitive(v *value) bool {
	for i := range v.items {
		if !v.items[i].isPrimitive() {
			return false
		}
	}
	return true
}

// tabularFields returns the header fields if v qualifies for tabular form
// (§9.3): every element an object with at least one key, all with the same
// key set and only primitive values. Field order is the first object's.
func tabularFields(v *value) []string {
	first := &v.items[0]
	if first.kind != kindObject || len(first.keys) == 0 {
		return nil
	}
	fields := first.keys
	for i := range v.items {
		row := &v.items[i]
		if row.kind != kindObject || len(row.keys) != len(fields) || !allPrimitive(row) {
			return nil
		}
		// Keys within an object are unique, so equal counts and every
		// field present mean equal sets.
		for j := range fields {
			if fieldIndex(row, fields, j) < 0 {
				return nil
			}
		}
	}
	return fields
}

// fieldIndex returns the position of fields[j] in row, or -1. Rows nearly
// always list their keys in header order, so that position is tried first.
func fieldIndex(row *value, fields []string, j int) int {
	if row.keys[j] == fields[j] {
		return j
	}
	for k, key := range row.keys {
		if key == fields[j] {
			return k
		}
	}
	return -1
}
