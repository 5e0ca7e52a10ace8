package kubernetes

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Frame kinds between the host and the keeper (see keeper.py).
const (
	kindData     = 'd' // to the keeper: bytes for the command's stdin
	kindClose    = 'c' // to the keeper: close the command's stdin
	kindAttached = 'A' // from the keeper: this connection is the current one
	kindOutput   = 'o' // from the keeper: bytes of the command's stdout
	kindAck      = 'a' // from the keeper: so many stdin bytes reached the command
	kindTakeover = 'T' // from the keeper: a newer connection took over
	kindExit     = 'X' // from the keeper: the command exited (uint32 status)

	// maxChunk bounds one stdin frame. The interpreter writes each wire
	// frame with one Write (up to 64 MiB of payload), so one Write stays
	// one frame and reaches the command whole or not at all.
	maxChunk = 64<<20 + 64<<10
	// maxOutput bounds one output frame (one whole wire frame).
	maxOutput = 64<<20 + 5
	// window bounds the stdin bytes in flight (sent, not yet acknowledged
	// by the keeper as written to the command): a command that stops
	// reading stalls Stdin's writes as a pipe would, however much the exec
	// path buffers. A larger frame goes alone.
	window = 256 << 10
)

// A link is one connection to a keeper: frames to it through w, from it
// through r. The keeper is inside the sandbox, so nothing it says is
// trusted beyond the session: sizes are capped and unknown kinds end the
// link.
type link struct {
	w   io.WriteCloser // the connection's input
	out *io.PipeWriter // the command's stdout, for Session.Stdout

	mu        sync.Mutex // serialises frames to w
	closed    atomic.Bool
	closeOnce sync.Once
	done      chan struct{} // closed by close
	unacked   atomic.Int64  // stdin bytes sent, not acknowledged
	acked     chan struct{} // signalled at each acknowledgement

	attached  chan struct{} // closed at the keeper's 'A'
	takenOver atomic.Bool
	exited    atomic.Bool
	status    atomic.Uint32
	active    atomic.Int64 // unix nanoseconds of the last frame either way
}

// newLink starts relaying the keeper's frames from r; Stdout is the reader
// of the command's stdout. done is closed when r ends.
func newLink(w io.WriteCloser, r io.Reader) (*link, *io.PipeReader, <-chan error) {
	pr, pw := io.Pipe()
	l := &link{w: w, out: pw, attached: make(chan struct{}), done: make(chan struct{}), acked: make(chan struct{}, 1)}
	l.touch()
	done := make(chan error, 1)
	go func() {
		err := l.relay(r)
		pw.CloseWithError(err)
		done <- err
		close(done)
	}()
	return l, pr, done
}

func (l *link) touch() { l.active.Store(time.Now().UnixNano()) }

// relay copies output frames to the stdout pipe until the stream ends. The
// end of the transport, however it ends (the Pod stopped, the connection
// was taken over or lost), is the end of stdout; what it means for the
// session is Wait's to say. Only frames that break the protocol are errors.
func (l *link) relay(r io.Reader) error {
	var hdr [5]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil
		}
		n := binary.BigEndian.Uint32(hdr[1:])
		switch hdr[0] {
		case kindOutput:
			if n > maxOutput {
				return fmt.Errorf("keeper link: output frame of %d bytes", n)
			}
			if _, err := io.CopyN(l.out, r, int64(n)); err != nil {
				return nil
			}
		case kindAttached:
			if n != 0 {
				return fmt.Errorf("keeper link: attach frame of %d bytes", n)
			}
			select {
			case <-l.attached:
			default:
				close(l.attached)
			}
		case kindAck:
			if n != 4 {
				return fmt.Errorf("keeper link: ack frame of %d bytes", n)
			}
			var b [4]byte
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return nil
			}
			l.unacked.Add(-int64(binary.BigEndian.Uint32(b[:])))
			select {
			case l.acked <- struct{}{}:
			default:
			}
		case kindTakeover, kindExit:
			if n > 4 {
				return fmt.Errorf("keeper link: control frame of %d bytes", n)
			}
			var b [4]byte
			if _, err := io.ReadFull(r, b[:n]); err != nil {
				return nil
			}
			if hdr[0] == kindTakeover {
				l.takenOver.Store(true)
			} else {
				l.status.Store(binary.BigEndian.Uint32(b[:]))
				l.exited.Store(true)
			}
		default:
			return fmt.Errorf("keeper link: unknown frame kind 0x%02x", hdr[0])
		}
		l.touch()
	}
}

// stdin is the command's standard input over a link.
type stdin struct{ l *link }

// Write sends p as one frame (or several when larger than maxChunk).
func (s stdin) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := min(len(p), maxChunk)
		if err := s.l.send(kindData, p[:n]); err != nil {
			return written, err
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

// Close asks the keeper to close the command's stdin; the connection stays.
func (s stdin) Close() error { return s.l.send(kindClose, nil) }

var errLinkClosed = errors.New("keeper link: closed")

func (l *link) send(kind byte, p []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if kind == kindData {
		for u := l.unacked.Load(); u > 0 && u+int64(len(p)) > window; u = l.unacked.Load() {
			select {
			case <-l.acked:
			case <-l.done:
				return errLinkClosed
			}
		}
		l.unacked.Add(int64(len(p)))
	}
	if l.closed.Load() {
		return errLinkClosed
	}
	var hdr [5]byte
	hdr[0] = kind
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	// One Write of header and payload: the transport may be cut between
	// two Writes, and the keeper discards an incomplete frame anyway.
	if _, err := l.w.Write(append(hdr[:], p...)); err != nil {
		return fmt.Errorf("keeper link: %w", err)
	}
	l.touch()
	return nil
}

// close drops the connection: the keeper keeps the command running. It
// takes no lock: a Write blocked on a sandbox that stopped reading its
// stdin (which is why the caller is killing it) holds the send lock, and
// closing the pipes under it is what releases that Write. It also ends
// stdout (readers get EOF), so that a relay blocked on a reader that
// stopped reading lets go.
func (l *link) close() {
	l.closeOnce.Do(func() {
		l.closed.Store(true)
		close(l.done)
		l.w.Close()
		l.out.Close()
	})
}
