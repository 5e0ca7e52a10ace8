package settings

import (
	"strconv"
	"testing"
)

// FuzzParseBytes: any input either fails or gives a size that is not
// negative and that a plain byte count parses back to.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"512m", "1g", "65536", "64KiB", "2MB", "1.5k", "-1", "nan", "inf", "1e300g", " 7 b ", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, err := ParseBytes(raw)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseBytes(%q) = %d, negative", raw, n)
		}
		back, err := ParseBytes(strconv.FormatInt(n, 10))
		if err != nil || back != n {
			t.Fatalf("ParseBytes(%q) = %d, which parses back as %d, %v", raw, n, back, err)
		}
	})
}

// FuzzParseDuration: any input either fails or gives a duration that is
// not negative.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30", "30s", "2m", "1.5", "-1", "1e20", "nan", "1h2m3s", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		d, err := ParseDuration(raw)
		if err == nil && d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", raw, d)
		}
	})
}
