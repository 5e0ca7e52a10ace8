package toon

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// entropy supplies the generator's choices. intn returns a value in [0, n).
// The generator treats 0 as the simplest choice everywhere, so an exhausted
// fuzz input quickly closes the document.
type entropy interface {
	intn(n int) int
}

// randSource draws from a seeded PCG for the deterministic batch test.
type randSource struct{ r *rand.Rand }

func newRandSource(seed uint64) *randSource {
	return &randSource{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (s *randSource) intn(n int) int {
	if n <= 1 {
		return 0
	}
	return s.r.IntN(n)
}

// byteSource reads choices from fuzz input, one byte (or more for large n)
// at a time, and yields zeros once the input is used up.
type byteSource struct{ data []byte }

func newByteSource(data []byte) *byteSource { return &byteSource{data: data} }

func (s *byteSource) intn(n int) int {
	if n <= 1 {
		return 0
	}
	x := 0
	for m := n - 1; m > 0; m >>= 8 {
		x <<= 8
		if len(s.data) > 0 {
			x |= int(s.data[0])
			s.data = s.data[1:]
		}
	}
	return x % n
}

// gv is a generated JSON value. Strings hold their value in lit; numbers,
// booleans and null hold their JSON spelling.
type gv struct {
	kind  kind
	lit   string
	keys  []string
	items []*gv
}

// generator builds random JSON documents that stress what TOON encoders
// decide: quoting, number forms, and the choice between inline, tabular and
// list arrays.
type generator struct {
	src   entropy
	nodes int
	// lone asks serialize to break the next string with an unpaired
	// surrogate escape, which EncodeJSON must reject (the reference's
	// output for it is ill-formed, see forReference).
	lone bool
	out  []byte
}

// maxNodes bounds a document's size so the fuzzer spends its time on
// shapes, not on volume.
const maxNodes = 80

func newGenerator(src entropy) *generator { return &generator{src: src} }

func (g *generator) intn(n int) int { return g.src.intn(n) }

// chance reports a 1-in-n event; it is false on exhausted fuzz input.
func (g *generator) chance(n int) bool { return g.intn(n) == n-1 }

func pick[T any](g *generator, list []T) T { return list[g.intn(len(list))] }

// document returns a JSON document and the options to encode it with. A
// third of the documents are encoded with key folding, some of those with a
// flattenDepth limit.
func (g *generator) document() ([]byte, *Options) {
	o := &Options{
		Delimiter: pick(g, []Delimiter{Comma, Comma, Tab, Pipe}),
		Indent:    pick(g, []int{2, 2, 4, 1, 3}),
	}
	if g.intn(3) == 2 {
		o.KeyFolding = KeyFoldingSafe
		o.FlattenDepth = pick(g, []int{0, 0, 0, 2, 3, 4, 1})
	}
	g.lone = g.chance(40)
	g.nodes = 0
	var root *gv
	switch g.intn(6) {
	case 0, 1, 2:
		root = g.object(0)
	case 3, 4:
		root = g.array(0)
	default:
		root = g.primitive()
	}
	forReference(root, o)
	g.out = nil
	g.serialize(root)
	return g.out, o
}

func (g *generator) value(depth int) *gv {
	if depth >= 4 || g.nodes >= maxNodes {
		return g.primitive()
	}
	// Containers are likelier near the root so documents have some bulk.
	switch c := g.intn(10); {
	case c < 2+depth*2:
		return g.primitive()
	case c%2 == 0:
		return g.object(depth)
	default:
		return g.array(depth)
	}
}

func (g *generator) primitive() *gv {
	g.nodes++
	switch g.intn(8) {
	case 0:
		return &gv{kind: kindNull, lit: "null"}
	case 1:
		return &gv{kind: kindBool, lit: pick(g, []string{"true", "false"})}
	case 2, 3:
		return &gv{kind: kindNumber, lit: g.number()}
	default:
		return &gv{kind: kindString, lit: g.string()}
	}
}

func (g *generator) object(depth int) *gv {
	g.nodes++
	v := &gv{kind: kindObject}
	n := g.intn(7)
	switch {
	case g.chance(4):
		// A chain of single-key objects, the shape key folding targets.
		g.addMember(v, g.chainKey(), g.chainValue(depth+1))
		return v
	case depth < 3 && g.chance(6):
		// Members that are objects with one key set, which TOON 4.x writes
		// in keyed tabular form; 3.3 nests them.
		fields := g.fields()
		for range 2 + g.intn(3) {
			g.addMember(v, g.key(), g.row(fields))
		}
		return v
	}
	for range n {
		g.addMember(v, g.key(), g.value(depth+1))
	}
	return v
}

// chainValue continues a chain of single-key objects or ends it with any
// value: a primitive, an array, an empty object or one with several keys.
func (g *generator) chainValue(depth int) *gv {
	if depth >= 6 || g.intn(3) == 0 {
		return g.value(depth)
	}
	g.nodes++
	v := &gv{kind: kindObject}
	g.addMember(v, g.chainKey(), g.chainValue(depth+1))
	return v
}

// chainKey returns a key for a chain; half of them are identifier segments,
// which key folding needs.
func (g *generator) chainKey() string {
	if g.intn(2) == 0 {
		return g.key()
	}
	return pick(g, []string{"a", "b", "c", "id", "data", "meta", "user_id", "_", "A9", "x"})
}

// fields returns one to four distinct keys.
func (g *generator) fields() []string {
	var fields []string
	for range 1 + g.intn(4) {
		if k := g.key(); !slices.Contains(fields, k) {
			fields = append(fields, k)
		}
	}
	return fields
}

// row returns an object with the given keys and primitive values, sometimes
// listing the keys in another order.
func (g *generator) row(fields []string) *gv {
	g.nodes++
	row := &gv{kind: kindObject}
	order := slices.Clone(fields)
	if g.chance(4) {
		// Same key set in another order: still tabular.
		g.shuffle(order)
	}
	for _, f := range order {
		g.addMember(row, f, g.primitive())
	}
	return row
}

func (g *generator) addMember(v *gv, k string, item *gv) {
	if slices.Contains(v.keys, k) {
		return
	}
	v.keys = append(v.keys, k)
	v.items = append(v.items, item)
}

func (g *generator) array(depth int) *gv {
	g.nodes++
	v := &gv{kind: kindArray}
	switch g.intn(7) {
	case 0: // primitives, inline form
		for range g.intn(7) {
			v.items = append(v.items, g.primitive())
		}
	case 1, 2: // uniform objects, tabular form unless perturbed
		fields := g.fields()
		// One column of uniform objects: TOON 4.x folds it into the header
		// as a nested field group; in 3.3 the rows become list items.
		group, sub := -1, []string(nil)
		if depth < 3 && g.chance(4) {
			group, sub = g.intn(len(fields)), g.fields()
		}
		for range 1 + g.intn(5) {
			row := g.row(fields)
			if group >= 0 {
				row.items[slices.Index(row.keys, fields[group])] = g.row(sub)
			}
			v.items = append(v.items, row)
		}
		if g.chance(3) {
			g.perturb(v, depth)
		}
	case 3: // arrays of primitive arrays
		for range 1 + g.intn(4) {
			inner := &gv{kind: kindArray}
			for range g.intn(4) {
				inner.items = append(inner.items, g.primitive())
			}
			if g.chance(6) {
				inner.items = append(inner.items, g.value(depth+2))
			}
			v.items = append(v.items, inner)
		}
	case 4: // anything
		for range 1 + g.intn(5) {
			v.items = append(v.items, g.value(depth+1))
		}
	case 5: // objects of varying shape
		for range 1 + g.intn(4) {
			v.items = append(v.items, g.object(depth+1))
		}
	default: // empty objects among others
		for range 1 + g.intn(4) {
			if g.intn(2) == 0 {
				v.items = append(v.items, &gv{kind: kindObject})
			} else {
				v.items = append(v.items, g.object(depth+1))
			}
		}
	}
	return v
}

// perturb breaks the uniformity of a would-be tabular array in one of the
// ways §9.3 rules out.
func (g *generator) perturb(v *gv, depth int) {
	row := v.items[g.intn(len(v.items))]
	switch g.intn(4) {
	case 0: // a missing field
		if len(row.keys) > 0 {
			row.keys, row.items = row.keys[1:], row.items[1:]
		}
	case 1: // an extra field
		g.addMember(row, g.key(), g.primitive())
	case 2: // a nested value
		if len(row.items) > 0 {
			row.items[0] = g.value(depth + 2)
		}
	default: // an empty object row
		row.keys, row.items = nil, nil
	}
}

func (g *generator) shuffle(s []string) {
	for i := len(s) - 1; i > 0; i-- {
		j := g.intn(i + 1)
		s[i], s[j] = s[j], s[i]
	}
}

// interestingStrings are values on or near a quoting rule of §7.2.
var interestingStrings = []string{
	"a", "", " ", "  ", "hello", "hello world", " padded", "padded ", "Ada_99",
	"true", "false", "null", "True", "NULL", "nullish", "true story",
	"42", "-42", "3.14", "-3.14", "1e5", "1E-5", "1e+5", "05", "0", "-0", "00",
	"+5", "+3.5e2", ".5", "5.", "-.5", "1e", "e5", "0x1F", "1_000", "1.0",
	"1.5000", "Infinity", "-Infinity", "NaN", "١٢٣", "１２",
	"-", "--", "- item", "-x", "#", "#tag", "a#b", "+", "+x",
	",", "a,b", "|", "a|b", "\t", "a\tb", ":", "a:b", "http://x.y/z?q=1",
	"say \"hi\"", "\"", "back\\slash", "\\", "[5]", "[3]: x,y", "[", "]",
	"{key}", "{", "}", "a\nb", "\r\n", "\x00", "\x01", "x\x1fy", "\x7f",
	"\u0085", "café", "你好", "🚀", "hello 👋 world", "e\u0301", "ключ",
	"a\u00a0b", "zero\u200bwidth", "a\u2028b", "\ufeff", "ends with dot.",
	"a.b.c", "_id", "x y z", "key: value", "a, b", "a | b",
	"\u00a0lead", "trail\u3000", "\u2029", "\u180emvs", "\u200bzw", "\vvt", "ff\f",
}

// fragments compose random strings.
var fragments = []string{
	"a", "Z", "_", "0", "9", " ", ",", "|", "\t", ":", "\"", "\\", "-", "#",
	"+", ".", "e", "E", "[", "]", "{", "}", "é", "😀", "\u00a0", "\u3000",
	"x y", "true", "null", "12", "\n", "\r", "\x02", "/", "'", "=", "!",
	"ß", "\u2029", "\ufeff", "\u0085", "\u1680", "\u202f", "\u205f", "\u200b",
	"\u180e", "\v", "\f",
}

func (g *generator) string() string {
	switch g.intn(3) {
	case 0:
		return pick(g, interestingStrings)
	case 1:
		var b strings.Builder
		for range 1 + g.intn(5) {
			b.WriteString(pick(g, fragments))
		}
		return b.String()
	default:
		// Random code points from a few blocks, including astral ones.
		var b strings.Builder
		for range g.intn(8) {
			base := pick(g, []rune{0x20, 0x61, 0xa0, 0x400, 0x2000, 0x4e00, 0x1f600})
			b.WriteRune(base + rune(g.intn(0x60)))
		}
		return b.String()
	}
}

// interestingKeys are keys on or near the unquoted-key and folding rules.
var interestingKeys = []string{
	"id", "name", "a", "b", "c", "x", "user_id", "_", "a.b", "a.b.c", "A9",
	"full name", "order:id", "-lead", "", "123", "0", "1", "7", "42",
	"4294967294", "4294967295", "01", "-1", "1.5", "tab\tkey", "quo\"te",
	"back\\slash", "[k]", "{k}", "a,b", "a|b", "ключ", "ünï", "emoji😀",
	"#hash", "trailing ", " lead", "true", "null", "__proto__", "constructor",
	"nl\nkey", "\x01",
}

func (g *generator) key() string {
	switch g.intn(3) {
	case 0:
		// Short identifiers collide often enough to exercise uniform rows.
		return string(rune('a' + g.intn(4)))
	case 1:
		return pick(g, interestingKeys)
	default:
		return g.string()
	}
}

// number returns the JSON spelling of a float64 value. Every spelling has
// exactly the value of the float64, so the reference encoder (which parses
// to float64) and EncodeJSON (which keeps the digits) must agree.
func (g *generator) number() string {
	var f float64
	switch g.intn(8) {
	case 0:
		f = float64(g.intn(2001) - 1000)
	case 1:
		f = pick(g, []float64{
			0, 1e21, 1e-6, 1e-7, 1e20, 9.999999999999999e20, 1.0000000000000001e-6,
			123456789012345680000, 5e-324, math.MaxFloat64, 0.1, 0.3333333333333333,
			1 << 53, -(1 << 53), 1e300, 1.5e-300, 0.000001234, 1234567.891,
		})
	case 2:
		f = float64(int64(g.bits(53)))
		if g.intn(2) == 1 {
			f = -f
		}
	case 3:
		f = math.Float64frombits(g.bits(64))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = 0
		}
	case 4:
		f = float64(g.intn(200001)-100000) / math.Pow10(g.intn(9))
	case 5:
		f = float64(1+g.intn(9)) * math.Pow10(g.intn(61)-30)
	case 6:
		f = math.Copysign(0, -1)
	default:
		f = float64(float32(float64(g.intn(1<<20)) / 1024))
	}
	switch g.intn(6) {
	case 0:
		return strconv.FormatFloat(f, 'g', -1, 64)
	case 1:
		return strconv.FormatFloat(f, 'f', -1, 64)
	case 2:
		return strconv.FormatFloat(f, 'e', -1, 64)
	case 3:
		return strings.Replace(strconv.FormatFloat(f, 'E', -1, 64), "E+", "E", 1)
	case 4:
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if strings.Contains(s, ".") {
			return s + "00"
		}
		return s + ".0"
	default:
		// The significant digits as an integer mantissa: 1.5e+10 → 15e9.
		s := strconv.FormatFloat(f, 'e', -1, 64)
		mant, exp, _ := strings.Cut(s, "e")
		e, _ := strconv.Atoi(exp)
		intPart, frac, _ := strings.Cut(mant, ".")
		return intPart + frac + "e" + strconv.Itoa(e-len(frac))
	}
}

func (g *generator) bits(n int) uint64 {
	var x uint64
	for i := 0; i < n; i += 16 {
		x = x<<16 | uint64(g.intn(1<<16))
	}
	return x & (1<<n - 1)
}

// forReference rewrites a generated value, encoded with options o, so that
// the reference encoder sees the document as EncodeJSON does and agrees with
// it. Each rewrite steers around one difference pinned, with both outputs,
// in TestReferenceDifferences; everything else is left to the comparison.
//
//   - jsKeyOrder: JavaScript objects list integer-like keys first whatever
//     the document says (JavaScript semantics, not a TOON difference).
//   - nelEdges: the reference quotes only what JavaScript's trim strips, so a
//     string value that starts or ends with U+0085, which is Unicode
//     White_Space, stays bare there; EncodeJSON quotes it (§7.2).
//   - listItemFolding, only with key folding: the reference never folds the
//     first member of a list-item object, and checks the others for
//     collisions with their siblings except that first member (§13.4).
//
// Numbers need no rewrite: the generator spells only values that a float64
// holds exactly (see number), because the reference parses numbers into
// float64 while EncodeJSON keeps every digit. Unpaired surrogate escapes
// are left in: the reference passes them through and reference.mjs reports
// its ill-formed output, which counts as a failure, like EncodeJSON's error.
func forReference(v *gv, o *Options) {
	jsKeyOrder(v)
	nelEdges(v)
	if o.KeyFolding == KeyFoldingSafe {
		budget := o.FlattenDepth
		if budget == 0 {
			budget = math.MaxInt
		}
		listItemFolding(v, budget)
	}
}

// nelEdges moves U+0085 (NEXT LINE) away from the edges of string values.
func nelEdges(v *gv) {
	for _, item := range v.items {
		nelEdges(item)
	}
	if v.kind != kindString {
		return
	}
	if strings.HasPrefix(v.lit, "\u0085") {
		v.lit = "x" + v.lit
	}
	if strings.HasSuffix(v.lit, "\u0085") {
		v.lit += "x"
	}
}

// listItemFolding rewrites the objects in arrays, which become list items
// unless they are tabular rows (and rows have nothing to fold), where the
// reference's key folding differs from EncodeJSON's:
//
//   - a first member that EncodeJSON folds gets a primitive member "_k"
//     placed before it, so the chain is folded by both as a later member;
//   - a dotted first key that a later member folds to is renamed, so both
//     leave that member unfolded for a reason that applies to both.
func listItemFolding(v *gv, budget int) {
	for _, item := range v.items {
		listItemFolding(item, budget)
	}
	if v.kind != kindArray {
		return
	}
	for _, obj := range v.items {
		if obj.kind != kindObject || len(obj.keys) == 0 {
			continue
		}
		if k := foldKey(obj.keys[0], obj.items[0], budget); k != "" && !slices.Contains(obj.keys, k) {
			name := "_k"
			for slices.Contains(obj.keys, name) {
				name += "_"
			}
			obj.keys = slices.Insert(obj.keys, 0, name)
			obj.items = slices.Insert(obj.items, 0, &gv{kind: kindNumber, lit: "0"})
			continue
		}
		for taken := true; taken; {
			taken = false
			for j := 1; j < len(obj.keys); j++ {
				if foldKey(obj.keys[j], obj.items[j], budget) == obj.keys[0] {
					taken = true
				}
			}
			if taken {
				name := obj.keys[0] + "_"
				for slices.Contains(obj.keys, name) {
					name += "_"
				}
				obj.keys[0] = name
			}
		}
	}
}

// foldKey returns the dotted key under which EncodeJSON folds the member
// (k, v) of an object when budget segments are left, before it checks the
// key against the object's other keys, or "" if the member does not fold.
func foldKey(k string, v *gv, budget int) string {
	if budget < 2 || v.kind != kindObject || len(v.keys) != 1 || !isIdentifierSegment(k) {
		return ""
	}
	key, cur := k, v
	for n := 1; n < budget && cur.kind == kindObject && len(cur.keys) == 1; n++ {
		if !isIdentifierSegment(cur.keys[0]) {
			return ""
		}
		key += "." + cur.keys[0]
		cur = cur.items[0]
	}
	return key
}

// jsKeyOrder moves integer-like keys first, in numeric order, as every
// JavaScript object does; the reference sees keys in that order whatever
// the document says.
func jsKeyOrder(v *gv) {
	for _, item := range v.items {
		jsKeyOrder(item)
	}
	if v.kind != kindObject {
		return
	}
	idx := make([]int, len(v.keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		na, aok := arrayIndex(v.keys[a])
		nb, bok := arrayIndex(v.keys[b])
		switch {
		case aok && bok:
			return int(na - nb)
		case aok:
			return -1
		case bok:
			return 1
		}
		return 0
	})
	keys := make([]string, len(idx))
	items := make([]*gv, len(idx))
	for i, j := range idx {
		keys[i], items[i] = v.keys[j], v.items[j]
	}
	v.keys, v.items = keys, items
}

// arrayIndex reports whether k is a canonical JavaScript array index.
func arrayIndex(k string) (int64, bool) {
	if k == "" || len(k) > 10 || (k[0] == '0' && k != "0") {
		return 0, false
	}
	for i := 0; i < len(k); i++ {
		if !isDigit(k[i]) {
			return 0, false
		}
	}
	n, _ := strconv.ParseInt(k, 10, 64)
	return n, n <= math.MaxUint32-1
}

// serialize writes v as JSON text with some syntactic variety (whitespace,
// escapes, repeated member names) that must not change the result.
func (g *generator) serialize(v *gv) {
	switch v.kind {
	case kindString:
		g.jsonString(v.lit, g.lone)
		g.lone = false
	case kindArray:
		g.out = append(g.out, '[')
		for i, item := range v.items {
			if i > 0 {
				g.out = append(g.out, ',')
			}
			g.space()
			g.serialize(item)
		}
		g.space()
		g.out = append(g.out, ']')
	case kindObject:
		g.out = append(g.out, '{')
		for i, k := range v.keys {
			if i > 0 {
				g.out = append(g.out, ',')
			}
			if _, idx := arrayIndex(k); !idx && g.chance(15) {
				// A repeated name just before the real member: both
				// parsers keep the first position and the last value.
				g.jsonString(k, false)
				g.out = append(g.out, `:"dropped",`...)
			}
			g.space()
			g.jsonString(k, false)
			g.space()
			g.out = append(g.out, ':')
			g.space()
			g.serialize(v.items[i])
		}
		g.space()
		g.out = append(g.out, '}')
	default:
		g.out = append(g.out, v.lit...)
	}
}

func (g *generator) space() {
	if g.chance(6) {
		g.out = append(g.out, pick(g, []string{" ", "\n", "\t", "\r\n  "})...)
	}
}

func (g *generator) jsonString(s string, lone bool) {
	g.out = append(g.out, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			g.out = append(g.out, '\\', byte(r))
		case r == '/' && g.chance(2):
			g.out = append(g.out, '\\', '/')
		case r == '\n' && g.intn(2) == 0:
			g.out = append(g.out, '\\', 'n')
		case r == '\b' || r == '\f':
			g.out = append(g.out, '\\', "bf"[(r-'\b')/4])
		case r < 0x20 || (r >= 0x80 && g.chance(4)):
			g.escapeRune(r)
		default:
			g.out = utf8.AppendRune(g.out, r)
		}
	}
	if lone {
		g.out = append(g.out, pick(g, []string{`\ud83d`, `\udc00`, `\ud800x`})...)
	}
	g.out = append(g.out, '"')
}

// escapeRune writes r as \uXXXX, as a surrogate pair beyond the BMP.
func (g *generator) escapeRune(r rune) {
	if r > 0xffff {
		r -= 0x10000
		g.escapeRune(0xd800 + r>>10)
		g.escapeRune(0xdc00 + r&0x3ff)
		return
	}
	g.out = append(g.out, '\\', 'u')
	h := strconv.FormatInt(int64(r)|0x10000, 16)[1:]
	if g.intn(2) == 1 {
		h = strings.ToUpper(h)
	}
	g.out = append(g.out, h...)
}
