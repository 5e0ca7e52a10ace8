package toon

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Encode encodes the Go value v as TOON.
//
// The dynamic JSON types (nil, bool, string, the integer and float kinds,
// json.Number, json.RawMessage, []any and map[string]any) are converted
// directly; map keys are sorted, as encoding/json sorts them. NaN and
// infinities become null (§3). Any other type, such as a struct, a typed map
// or slice, or a json.Marshaler, is marshalled with encoding/json and the
// result encoded in its order, so struct tags and field order are honoured;
// errors from encoding/json are returned wrapped. A nil opts means the
// defaults.
func Encode(v any, opts *Options) (string, error) {
	c, err := resolve(opts)
	if err != nil {
		return "", err
	}
	root, err := fromGo(v, 0)
	if err != nil {
		return "", fmt.Errorf("toon: encoding %T: %w", v, err)
	}
	return encode(&root, c, 256), nil
}

// fromGo converts a Go value to the encoder's tree.
func fromGo(x any, depth int) (value, error) {
	if depth > maxDepth {
		// Only a cyclic []any or map[string]any gets this deep.
		return value{}, fmt.Errorf("nesting exceeds %d levels", maxDepth)
	}
	switch t := x.(type) {
	case nil:
		return nullValue, nil
	case bool:
		if t {
			return trueValue, nil
		}
		return falseValue, nil
	case string:
		return value{kind: kindString, text: validUTF8(t)}, nil
	case float64:
		return fromFloat(t, 64), nil
	case float32:
		return fromFloat(float64(t), 32), nil
	case int:
		return intValue(int64(t)), nil
	case int8:
		return intValue(int64(t)), nil
	case int16:
		return intValue(int64(t)), nil
	case int32:
		return intValue(int64(t)), nil
	case int64:
		return intValue(t), nil
	case uint:
		return uintValue(uint64(t)), nil
	case uint8:
		return uintValue(uint64(t)), nil
	case uint16:
		return uintValue(uint64(t)), nil
	case uint32:
		return uintValue(uint64(t)), nil
	case uint64:
		return uintValue(t), nil
	case uintptr:
		return uintValue(uint64(t)), nil
	case json.Number:
		s := string(t)
		if s == "" || scanNumber(s) != len(s) {
			return value{}, fmt.Errorf("invalid json.Number %q", s)
		}
		buf, err := appendNumber(nil, s)
		if err != nil {
			return value{}, fmt.Errorf("json.Number %q: %w", s, err)
		}
		return value{kind: kindNumber, text: string(buf)}, nil
	case json.RawMessage:
		if len(t) == 0 {
			// encoding/json also writes an empty RawMessage as null.
			return nullValue, nil
		}
		return parseJSON(string(t))
	case []any:
		v := value{kind: kindArray, items: make([]value, len(t))}
		for i, item := range t {
			var err error
			if v.items[i], err = fromGo(item, depth+1); err != nil {
				return value{}, err
			}
		}
		return v, nil
	case map[string]any:
		v := value{kind: kindObject, keys: make([]string, 0, len(t))}
		for k := range t {
			v.keys = append(v.keys, k)
		}
		slices.Sort(v.keys)
		v.items = make([]value, len(v.keys))
		for i, k := range v.keys {
			var err error
			if v.items[i], err = fromGo(t[k], depth+1); err != nil {
				return value{}, err
			}
			v.keys[i] = validUTF8(k)
		}
		return v, nil
	default:
		data, err := json.Marshal(t)
		if err != nil {
			return value{}, err
		}
		return parseJSON(string(data))
	}
}

func fromFloat(f float64, bitSize int) value {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nullValue
	}
	return value{kind: kindNumber, text: string(appendFloat(nil, f, bitSize))}
}

// intValue and uintValue need no canonicalisation: every 64-bit integer is
// below 1e21, so its decimal form is already canonical.
func intValue(n int64) value {
	return value{kind: kindNumber, text: strconv.FormatInt(n, 10)}
}

func uintValue(n uint64) value {
	return value{kind: kindNumber, text: strconv.FormatUint(n, 10)}
}

// validUTF8 replaces each invalid byte with U+FFFD, as encoding/json does,
// because TOON output must be UTF-8.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
