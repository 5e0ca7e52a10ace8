package egress

import (
	"bytes"
	"io"
	"net/url"
	"slices"
)

// A scrubber turns the real values of secrets back into their placeholders
// in what an upstream answers: a server that echoes requests (or has the
// value from elsewhere) must not hand it to the sandbox.
type scrubber struct {
	pairs   [][2][]byte // value, placeholder; longest value first
	longest int
}

// scrubber returns the scrubber for answers from t, nil when no secret is
// bound to t. It knows each value as sent and in URL-escaped forms, as
// echoed queries and paths show it.
func (s *secretSet) scrubber(t Target) *scrubber {
	sc := &scrubber{}
	for _, b := range s.list {
		if !b.hosts.Allows(t) {
			continue
		}
		forms := []string{b.Value, url.QueryEscape(b.Value), url.PathEscape(b.Value)}
		slices.Sort(forms)
		for _, v := range slices.Compact(forms) {
			sc.pairs = append(sc.pairs, [2][]byte{[]byte(v), []byte(b.placeholder)})
			sc.longest = max(sc.longest, len(v))
		}
	}
	if len(sc.pairs) == 0 {
		return nil
	}
	slices.SortStableFunc(sc.pairs, func(a, b [2][]byte) int { return len(b[0]) - len(a[0]) })
	return sc
}

// String scrubs a complete value (a header).
func (sc *scrubber) String(s string) string {
	out, _ := sc.scan(nil, []byte(s), true)
	return string(out)
}

// scan appends p to dst with every value replaced. Unless final, it stops
// where a value could begin and end beyond p, and returns that tail to be
// scanned again with what follows.
func (sc *scrubber) scan(dst, p []byte, final bool) (out, rest []byte) {
	start, i := 0, 0
scanning:
	for i < len(p) {
		if !final && len(p)-i < sc.longest {
			break
		}
		for _, pair := range sc.pairs {
			if bytes.HasPrefix(p[i:], pair[0]) {
				dst = append(append(dst, p[start:i]...), pair[1]...)
				i += len(pair[0])
				start = i
				continue scanning
			}
		}
		i++
	}
	return append(dst, p[start:i]...), p[i:]
}

// Reader scrubs a body as it streams.
func (sc *scrubber) Reader(r io.Reader) io.Reader {
	return &scrubReader{r: r, sc: sc, buf: make([]byte, 32<<10)}
}

type scrubReader struct {
	r       io.Reader
	sc      *scrubber
	buf     []byte
	pending []byte // read, not yet scanned: could be the start of a value
	out     []byte // scanned, not yet returned
	err     error
}

func (s *scrubReader) Read(b []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		n, err := s.r.Read(s.buf)
		s.pending = append(s.pending, s.buf[:n]...)
		var rest []byte
		s.out, rest = s.sc.scan(s.out[:0], s.pending, err != nil)
		s.pending = append(s.pending[:0], rest...)
		s.err = err
	}
	n := copy(b, s.out)
	s.out = s.out[n:]
	return n, nil
}
