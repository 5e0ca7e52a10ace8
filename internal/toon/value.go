package toon

// kind is the JSON-model type of a value.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// value is one node of the JSON data model as the encoder sees it. Both entry
// points build this tree first because the encoder needs to look ahead: an
// array's form depends on all of its elements, and key folding on a chain of
// nested objects.
//
// For primitives text holds what is written for them: the canonical number,
// "true"/"false"/"null", or the raw (unescaped, unquoted) string. Arrays keep
// their elements in items; objects keep member names in keys and the values,
// in the same order, in items.
type value struct {
	kind  kind
	text  string
	keys  []string
	items []value
}

var (
	nullValue  = value{kind: kindNull, text: "null"}
	trueValue  = value{kind: kindBool, text: "true"}
	falseValue = value{kind: kindBool, text: "false"}
)

func (v *value) isPrimitive() bool { return v.kind < kindArray }
