package toon

import (
	"fmt"
	"math"
	"strings"
)

// Delimiter separates the values of inline arrays and tabular rows (§11).
type Delimiter byte

// The delimiters TOON allows. The zero Delimiter means Comma.
const (
	Comma Delimiter = ','
	Tab   Delimiter = '\t'
	Pipe  Delimiter = '|'
)

// KeyFolding selects whether chains of single-key objects are collapsed into
// dotted keys (§13.4).
type KeyFolding uint8

// Key folding modes. The zero value is KeyFoldingOff, the specification's
// default.
const (
	KeyFoldingOff KeyFolding = iota
	// KeyFoldingSafe folds {"a":{"b":1}} to "a.b: 1" when every folded
	// segment is an identifier and the folded key does not collide with a
	// sibling key.
	KeyFoldingSafe
)

// Options are the encoder options of §13. A nil *Options, and every zero
// field, means the specification's default.
type Options struct {
	// Indent is the number of spaces per indentation level; 0 means 2.
	Indent int
	// Delimiter is the document delimiter, also declared in every array
	// header; 0 means Comma.
	Delimiter Delimiter
	// KeyFolding enables dotted-key folding.
	KeyFolding KeyFolding
	// FlattenDepth caps how many segments one folded key may hold when
	// KeyFolding is KeyFoldingSafe; 0 means no limit (the specification's
	// Infinity). Values below 2 leave every key unfolded.
	FlattenDepth int
}

// config is the resolved form of Options that the encoder reads.
type config struct {
	indent  int
	delim   byte
	fold    bool
	flatten int // segments per folded key; math.MaxInt when unlimited
	// spaces holds enough spaces for a few levels so indentation is a
	// slice of it rather than a loop in the common case.
	spaces string
}

func resolve(o *Options) (config, error) {
	c := config{indent: 2, delim: ',', flatten: math.MaxInt}
	if o != nil {
		switch {
		case o.Indent < 0:
			return c, fmt.Errorf("toon: invalid indent %d: must not be negative", o.Indent)
		case o.Indent > 0:
			c.indent = o.Indent
		}
		switch o.Delimiter {
		case 0:
		case Comma, Tab, Pipe:
			c.delim = byte(o.Delimiter)
		default:
			return c, fmt.Errorf("toon: invalid delimiter %q: want comma, tab or pipe", rune(o.Delimiter))
		}
		switch o.KeyFolding {
		case KeyFoldingOff:
		case KeyFoldingSafe:
			c.fold = true
		default:
			return c, fmt.Errorf("toon: invalid key folding mode %d", o.KeyFolding)
		}
		switch {
		case o.FlattenDepth < 0:
			return c, fmt.Errorf("toon: invalid flatten depth %d: must not be negative", o.FlattenDepth)
		case o.FlattenDepth > 0:
			c.flatten = o.FlattenDepth
		}
	}
	c.spaces = strings.Repeat(" ", c.indent*8)
	return c, nil
}
