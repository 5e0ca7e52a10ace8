package egress

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func testScrubber(t testing.TB, values ...string) *replacer {
	var secrets []Secret
	for i, v := range values {
		secrets = append(secrets, Secret{Name: "S" + string(rune('A'+i)), Hosts: Pattern{name: "api.test"}, Value: v})
	}
	set, err := newSecretSet(secrets)
	if err != nil {
		t.Fatal(err)
	}
	// Fixed placeholders keep the table readable.
	for i := range set.list {
		set.list[i].placeholder = "<" + set.list[i].Name + ">"
	}
	return set.scrubber(Target{Name: "api.test", Port: 443})
}

func TestScrubber(t *testing.T) {
	sc := testScrubber(t, "tok3n", "a b&c", "tok3n-long")
	tests := []struct{ in, want string }{
		{"", ""},
		{"nothing here", "nothing here"},
		{"Bearer tok3n", "Bearer <SA>"},
		{"tok3ntok3n", "<SA><SA>"},
		{"tok3n-long and tok3n", "<SC> and <SA>"}, // the longer value wins where both match
		{"tok3", "tok3"},
		{"q=a+b%26c p=a%20b&c raw=a b&c", "q=<SB> p=<SB> raw=<SB>"},
	}
	for _, tc := range tests {
		if got := sc.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
		// Streamed one byte at a time, every value crosses a read boundary.
		got, err := io.ReadAll(sc.Reader(iotest.OneByteReader(strings.NewReader(tc.in))))
		if err != nil || string(got) != tc.want {
			t.Errorf("Reader(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if testScrubber(t, "x").String("y") != "y" {
		t.Error("a scrubber changed text without its value")
	}
	set, _ := newSecretSet([]Secret{{Name: "A", Hosts: Pattern{name: "api.test"}, Value: "v"}})
	if set.scrubber(Target{Name: "other.test", Port: 443}) != nil {
		t.Error("a host without bound secrets gets a scrubber")
	}
}

// TestScrubberErrors: the underlying reader's error comes through after
// the scanned bytes.
func TestScrubberErrors(t *testing.T) {
	sc := testScrubber(t, "secret")
	r := sc.Reader(io.MultiReader(strings.NewReader("a secre"), iotest.ErrReader(io.ErrUnexpectedEOF)))
	got, err := io.ReadAll(r)
	if string(got) != "a secre" || err != io.ErrUnexpectedEOF {
		t.Fatalf("got %q, %v", got, err)
	}
}

// FuzzScrubber: a streamed body, however it is split, comes out as the
// whole text scrubbed at once.
func FuzzScrubber(f *testing.F) {
	f.Add("abc", "xxabcxxab", false)
	f.Add("aa", "aaaaa", true)
	f.Fuzz(func(t *testing.T, value, text string, oneByte bool) {
		if value == "" {
			return
		}
		sc := testScrubber(t, value)
		whole := sc.String(text)
		r := sc.Reader(iotest.HalfReader(strings.NewReader(text)))
		if oneByte {
			r = sc.Reader(iotest.OneByteReader(strings.NewReader(text)))
		}
		got, err := io.ReadAll(r)
		if err != nil || string(got) != whole {
			t.Fatalf("streamed %q, whole %q (%v)", got, whole, err)
		}
	})
}
