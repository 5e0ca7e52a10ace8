package toon

import (
	"errors"
	"strconv"
)

// maxExponent bounds the exponent of a JSON number. Anything larger is far
// beyond any numeric type and would only overflow the arithmetic below.
const maxExponent = 1 << 50

var errExponentRange = errors.New("number exponent out of range")

// appendNumber appends the canonical TOON form (§2) of the JSON number lit,
// which must already match the JSON number grammar.
//
// It works on the decimal digits rather than on a float64 so that no value is
// rounded. The layout mirrors JavaScript's Number.prototype.toString, which is
// what §2 describes: plain decimal for zero and magnitudes in [1e-6, 1e21),
// otherwise d.ddde±x.
func appendNumber(dst []byte, lit string) ([]byte, error) {
	i := 0
	neg := false
	if lit[0] == '-' {
		neg = true
		i++
	}
	// Split the mantissa into integer and fraction digits.
	intStart := i
	for i < len(lit) && isDigit(lit[i]) {
		i++
	}
	intPart := lit[intStart:i]
	frac := ""
	if i < len(lit) && lit[i] == '.' {
		i++
		s := i
		for i < len(lit) && isDigit(lit[i]) {
			i++
		}
		frac = lit[s:i]
	}
	exp := int64(0)
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		expNeg := false
		if lit[i] == '+' || lit[i] == '-' {
			expNeg = lit[i] == '-'
			i++
		}
		for ; i < len(lit); i++ {
			exp = exp*10 + int64(lit[i]-'0')
			if exp > maxExponent {
				return dst, errExponentRange
			}
		}
		if expNeg {
			exp = -exp
		}
	}

	// The value is 0.D × 10^point, where D are the significant digits with
	// leading and trailing zeros removed.
	point := int64(len(intPart)) + exp
	digits := trimZeros(intPart+frac, &point)
	if digits == "" {
		// Every zero, -0 included, is written as 0.
		return append(dst, '0'), nil
	}
	if neg {
		dst = append(dst, '-')
	}
	return appendDecimal(dst, digits, point), nil
}

// trimZeros returns s without leading and trailing zeros, moving *point left
// for every leading zero dropped. It returns "" when s is all zeros.
func trimZeros(s string, point *int64) string {
	start := 0
	for start < len(s) && s[start] == '0' {
		start++
	}
	if start == len(s) {
		return ""
	}
	end := len(s)
	for s[end-1] == '0' {
		end--
	}
	*point -= int64(start)
	return s[start:end]
}

// appendDecimal formats 0.digits × 10^point; digits has no leading or
// trailing zeros.
func appendDecimal(dst []byte, digits string, point int64) []byte {
	k := int64(len(digits))
	switch {
	case k <= point && point <= 21:
		dst = append(dst, digits...)
		for range point - k {
			dst = append(dst, '0')
		}
	case 0 < point && point <= 21:
		dst = append(dst, digits[:point]...)
		dst = append(dst, '.')
		dst = append(dst, digits[point:]...)
	case -6 < point && point <= 0:
		dst = append(dst, '0', '.')
		for range -point {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		e := point - 1
		if e >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, e, 10)
	}
	return dst
}

// appendFloat appends the canonical form of f using the shortest digits that
// round-trip at the given bit size, the same digits JavaScript prints. NaN
// and infinities must be handled by the caller.
func appendFloat(dst []byte, f float64, bitSize int) []byte {
	var tmp [32]byte
	lit := strconv.AppendFloat(tmp[:0], f, 'e', -1, bitSize)
	// strconv's exponent form always matches the JSON grammar and has a
	// small exponent, so this cannot fail.
	dst, _ = appendNumber(dst, string(lit))
	return dst
}

// scanNumber returns the length of the JSON number at the start of s, or 0
// if s does not start with one.
func scanNumber(s string) int {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return 0
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return 0
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return 0
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
