package main

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// sample is a set of repeated measurements of one quantity (in any unit).
type sample []float64

func (s sample) sorted() []float64 {
	c := append([]float64(nil), s...)
	sort.Float64s(c)
	return c
}

// pct returns the p-th percentile (0..1), nearest rank.
func (s sample) pct(p float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	c := s.sorted()
	i := int(math.Ceil(p*float64(len(c)))) - 1
	return c[min(max(i, 0), len(c)-1)]
}

func (s sample) median() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	c := s.sorted()
	n := len(c)
	if n%2 == 1 {
		return c[n/2]
	}
	return (c[n/2-1] + c[n/2]) / 2
}

func (s sample) min() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	return s.sorted()[0]
}

func (s sample) max() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	c := s.sorted()
	return c[len(c)-1]
}

// ms converts durations to a sample in milliseconds.
func ms(ds []time.Duration) sample {
	out := make(sample, len(ds))
	for i, d := range ds {
		out[i] = msOf(d)
	}
	return out
}

// msOf is a duration in milliseconds.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// num formats a number with a precision that suits its size.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "–"
	// The bounds are where rounding carries into the next size: 999.6
	// prints as 1,000, not 1000.
	case a >= 999.5:
		return commas(int64(math.Round(v)))
	case a >= 99.95:
		return fmt.Sprintf("%.0f", v)
	case a >= 9.995:
		return fmt.Sprintf("%.1f", v)
	case a >= 0.9995:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// commas prints an integer with thousands separators.
func commas(n int64) string {
	s := fmt.Sprint(n)
	neg := false
	if n < 0 {
		neg, s = true, s[1:]
	}
	out := ""
	for len(s) > 3 {
		out = "," + s[len(s)-3:] + out
		s = s[:len(s)-3]
	}
	out = s + out
	if neg {
		out = "-" + out
	}
	return out
}

// mmm formats a sample as "median (min–max)" with a unit suffix.
func mmm(s sample, unit string) string {
	if len(s) == 0 {
		return "–"
	}
	if len(s) == 1 {
		return num(s[0]) + unit
	}
	return fmt.Sprintf("%s%s (%s–%s)", num(s.median()), unit, num(s.min()), num(s.max()))
}
