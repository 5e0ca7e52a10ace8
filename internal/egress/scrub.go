package egress

import (
	"bytes"
	"io"
	"net/url"
	"slices"
)

// A replacer rewrites a secret's text in one direction: the placeholder
// into the value in request bodies sent to the secret's hosts (when
// configured), and the value back into the placeholder in everything those
// hosts answer, so that a server that echoes requests (or has the value
// from elsewhere) cannot hand it to the sandbox.
type replacer struct {
	pairs   [][2][]byte // from, to; longest first
	longest int
}

func (r *replacer) add(from, to string) {
	r.pairs = append(r.pairs, [2][]byte{[]byte(from), []byte(to)})
	r.longest = max(r.longest, len(from))
}

func (r *replacer) done() *replacer {
	if len(r.pairs) == 0 {
		return nil
	}
	slices.SortStableFunc(r.pairs, func(a, b [2][]byte) int { return len(b[0]) - len(a[0]) })
	return r
}

// scrubber returns the replacer for answers from t, nil when no secret is
// bound to t. It knows each value as sent and in URL-escaped forms, as
// echoed queries and paths show it.
func (s *secretSet) scrubber(t Target) *replacer {
	sc := &replacer{}
	for _, b := range s.list {
		if !b.hosts.Allows(t) {
			continue
		}
		forms := []string{b.Value, url.QueryEscape(b.Value), url.PathEscape(b.Value)}
		slices.Sort(forms)
		for _, v := range slices.Compact(forms) {
			sc.add(v, b.placeholder)
		}
	}
	return sc.done()
}

// swapper returns the replacer that puts the values of t's secrets into a
// request body, nil when no secret is bound to t.
func (s *secretSet) swapper(t Target) *replacer {
	sw := &replacer{}
	for _, b := range s.list {
		if b.hosts.Allows(t) {
			sw.add(b.placeholder, b.Value)
		}
	}
	return sw.done()
}

// String rewrites a complete value (a header).
func (sc *replacer) String(s string) string {
	out, _ := sc.scan(nil, []byte(s), true)
	return string(out)
}

// scan appends p to dst with every value replaced. Unless final, it stops
// where a value could begin and end beyond p, and returns that tail to be
// scanned again with what follows.
func (sc *replacer) scan(dst, p []byte, final bool) (out, rest []byte) {
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

// Reader rewrites a body as it streams.
func (sc *replacer) Reader(r io.Reader) io.Reader {
	return &scrubReader{r: r, sc: sc, buf: make([]byte, 32<<10)}
}

type scrubReader struct {
	r       io.Reader
	sc      *replacer
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
