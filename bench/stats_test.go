package main

import (
	"math"
	"testing"
	"time"
)

func TestSampleStats(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		s                          sample
		median, min, max, p50, p99 float64
	}{
		{"one", sample{7}, 7, 7, 7, 7, 7},
		{"odd, unsorted", sample{5, 1, 3}, 3, 1, 5, 3, 5},
		{"even: median is the mean of the middle two", sample{4, 1, 3, 2}, 2.5, 1, 4, 2, 4},
		{"duplicates", sample{2, 2, 2, 9}, 2, 2, 9, 2, 9},
		{"negative", sample{-1, -3, -2}, -2, -3, -1, -2, -1},
		// Nearest rank: p99 of 100 values is the 99th, p50 the 50th.
		{"hundred", seq(1, 100), 50.5, 1, 100, 50, 99},
		{"two hundred", seq(1, 200), 100.5, 1, 200, 100, 198},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []struct {
				what      string
				got, want float64
			}{
				{"median", tc.s.median(), tc.median},
				{"min", tc.s.min(), tc.min},
				{"max", tc.s.max(), tc.max},
				{"p50", tc.s.pct(0.5), tc.p50},
				{"p99", tc.s.pct(0.99), tc.p99},
			} {
				if c.got != c.want {
					t.Errorf("%s(%v) = %v, want %v", c.what, tc.s, c.got, c.want)
				}
			}
		})
	}
}

func TestSampleStatsDoNotReorder(t *testing.T) {
	s := sample{3, 1, 2}
	s.median()
	s.pct(0.9)
	if s[0] != 3 || s[1] != 1 || s[2] != 2 {
		t.Errorf("sample reordered to %v", s)
	}
}

func TestEmptySampleIsNaN(t *testing.T) {
	var s sample
	for what, v := range map[string]float64{"median": s.median(), "min": s.min(), "max": s.max(), "pct": s.pct(0.5)} {
		if !math.IsNaN(v) {
			t.Errorf("%s of an empty sample = %v, want NaN", what, v)
		}
	}
}

func TestPctBounds(t *testing.T) {
	s := sample{10, 20, 30}
	for _, tc := range []struct{ p, want float64 }{{0, 10}, {0.01, 10}, {0.34, 20}, {1, 30}} {
		if got := s.pct(tc.p); got != tc.want {
			t.Errorf("pct(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func TestMs(t *testing.T) {
	got := ms([]time.Duration{1500 * time.Microsecond, 2 * time.Second})
	want := sample{1.5, 2000}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ms = %v, want %v", got, want)
	}
}

func TestNum(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{math.NaN(), "–"},
		{0, "0.000"},
		{0.5724, "0.572"},
		{1.234, "1.23"},
		{12.34, "12.3"},
		{123.4, "123"},
		{999.6, "1,000"},
		{99.97, "100"},
		{9.997, "10.0"},
		{0.9996, "1.00"},
		{1234.5, "1,235"},
		{-1234.4, "-1,234"},
		{-0.25, "-0.250"},
	} {
		if got := num(tc.v); got != tc.want {
			t.Errorf("num(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestCommas(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1,000"}, {56765, "56,765"}, {1234567, "1,234,567"}, {-1000, "-1,000"}, {-999, "-999"},
	} {
		if got := commas(tc.n); got != tc.want {
			t.Errorf("commas(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestMmm(t *testing.T) {
	for _, tc := range []struct {
		s    sample
		want string
	}{
		{nil, "–"},
		{sample{0.6}, "0.600 ms"},
		{sample{3, 1, 2}, "2.00 ms (1.00–3.00)"},
		{sample{1651, 1649, 1653, 1650}, "1,651 ms (1,649–1,653)"},
	} {
		if got := mmm(tc.s, " ms"); got != tc.want {
			t.Errorf("mmm(%v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

// seq is the sample lo, lo+1, ..., hi in reverse order (unsorted on purpose).
func seq(lo, hi int) sample {
	var s sample
	for i := hi; i >= lo; i-- {
		s = append(s, float64(i))
	}
	return s
}
