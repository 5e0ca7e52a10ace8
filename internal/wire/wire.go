// Package wire is the framed protocol between codemode and the Python runtime
// inside a sandbox.
//
// A frame is a 5-byte header (one kind byte, then the payload length as a
// big-endian uint32) followed by the payload. Kind 'M' carries one JSON
// message; kinds 'O' and 'E' carry raw bytes the sandboxed code wrote to its
// stdout and stderr. The runtime moves the sandbox's stdio to private file
// descriptors before running user code and points fd 1 and 2 at pipes it
// drains into 'O'/'E' frames, so nothing user code writes can be parsed as a
// frame. Where the sandbox has direct pipes (sandbox.Direct), the RPCs of a
// thread that waits for the answer and their results go there, in the same
// frames. The host still treats every frame as untrusted: sizes are capped,
// messages are decoded strictly (case-sensitive names, no unknown or
// duplicate members) and unknown kinds are errors.
//
// This package must not import the MCP SDK or any sandbox backend; it is
// shared by the interpreter client and tested with fuzzing
// (FuzzReadFrame, FuzzDecodeMessage).
package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Frame kinds.
const (
	KindMessage byte = 'M'
	KindStdout  byte = 'O'
	KindStderr  byte = 'E'
)

// HeaderSize is the size of a frame header in bytes.
const HeaderSize = 5

// DefaultMaxPayload bounds a frame's payload unless the caller chooses
// otherwise. Tool results of several megabytes must fit, so the default is
// generous; output chunks are far smaller.
const DefaultMaxPayload = 64 << 20

// ErrFrameTooLarge reports a frame whose declared payload exceeds the limit.
var ErrFrameTooLarge = errors.New("wire: frame too large")

// Frame is one decoded frame. Payload is owned by the caller.
type Frame struct {
	Kind    byte
	Payload []byte
}

// Reader decodes frames from a byte stream.
type Reader struct {
	r   *bufio.Reader
	max int
	hdr [HeaderSize]byte
}

// NewReader returns a Reader that rejects payloads over maxPayload bytes
// (DefaultMaxPayload when maxPayload <= 0).
func NewReader(r io.Reader, maxPayload int) *Reader {
	if maxPayload <= 0 {
		maxPayload = DefaultMaxPayload
	}
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: maxPayload}
}

// Next reads the next frame. It returns io.EOF only at a clean frame
// boundary; a stream cut inside a frame gives io.ErrUnexpectedEOF.
func (r *Reader) Next() (Frame, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		return Frame{}, err
	}
	kind := r.hdr[0]
	n := binary.BigEndian.Uint32(r.hdr[1:])
	switch kind {
	case KindMessage, KindStdout, KindStderr:
	default:
		return Frame{}, fmt.Errorf("wire: unknown frame kind 0x%02x", kind)
	}
	if uint64(n) > uint64(r.max) {
		return Frame{}, fmt.Errorf("%w: %d bytes (limit %d)", ErrFrameTooLarge, n, r.max)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r.r, payload); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	return Frame{Kind: kind, Payload: payload}, nil
}

// Writer encodes frames onto a byte stream. It is safe for concurrent use;
// each frame is written with one Write call so frames never interleave.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// WriteFrame writes one frame.
func (w *Writer) WriteFrame(kind byte, payload []byte) error {
	if uint64(len(payload)) > uint64(^uint32(0)) {
		return ErrFrameTooLarge
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = AppendFrame(w.buf[:0], kind, payload)
	_, err := w.w.Write(w.buf)
	if cap(w.buf) > 1<<20 {
		w.buf = nil // don't pin a large buffer after one big message
	}
	return err
}

// WriteMessage encodes msg as JSON and writes it as a message frame.
func (w *Writer) WriteMessage(msg any) error {
	data, err := Marshal(msg)
	if err != nil {
		return err
	}
	return w.WriteFrame(KindMessage, data)
}

// AppendFrame appends the encoding of one frame to dst.
func AppendFrame(dst []byte, kind byte, payload []byte) []byte {
	dst = append(dst, kind, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(dst[len(dst)-4:], uint32(len(payload)))
	return append(dst, payload...)
}
