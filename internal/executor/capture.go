package executor

// capture keeps a stream's first and last bytes within a limit: the start of
// output explains what ran, the end usually holds the error. When spool is
// set it also keeps everything up to spool bytes, so output cut from the
// result can still be read in full as a session file.
type capture struct {
	headLimit, tailLimit int
	head, tail           []byte
	total                int64
	spool                int
	all                  []byte
}

func newCapture(limit, spool int) *capture {
	head := limit * 3 / 4
	return &capture{headLimit: head, tailLimit: limit - head, spool: spool}
}

func (c *capture) write(p []byte) {
	c.total += int64(len(p))
	if room := c.spool - len(c.all); room > 0 {
		c.all = append(c.all, p[:min(room, len(p))]...)
	}
	if room := c.headLimit - len(c.head); room > 0 {
		n := min(room, len(p))
		c.head = append(c.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	c.tail = append(c.tail, p...)
	// Trim lazily so long streams cost amortised O(1) per byte.
	if len(c.tail) > 2*c.tailLimit {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-c.tailLimit:]...)
	}
}

func (c *capture) output() Output {
	tail := c.tail
	if len(tail) > c.tailLimit {
		tail = tail[len(tail)-c.tailLimit:]
	}
	if c.total == int64(len(c.head)+len(tail)) {
		return Output{Head: append(append([]byte(nil), c.head...), tail...), Total: c.total}
	}
	return Output{Head: c.head, Tail: tail, Total: c.total}
}

// spilled returns the output kept for a session file, and whether even the
// spool was too small for all of it.
func (c *capture) spilled() (data []byte, partial bool) {
	if c.spool == 0 || c.total == 0 {
		return nil, false
	}
	return c.all, int64(len(c.all)) < c.total
}
