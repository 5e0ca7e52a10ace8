package downstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Result is a tool's CallToolResult as JSON: as a stdio server sent it, or
// as the SDK decoded it from other servers. The runtime reads it as a dict,
// so it passes to the sandbox without being decoded into Go types.
type Result struct {
	json       jsontext.Value
	isError    bool
	inputAsked bool // the result asks for input (multi-round-trip) instead
}

// JSON returns the CallToolResult object (valid JSON, valid UTF-8).
func (r Result) JSON() jsontext.Value { return r.json }

// IsError reports the result's isError: the tool failed, and said so in
// its result rather than as a protocol error.
func (r Result) IsError() bool { return r.isError }

// needsInput reports a result of protocol 2026-07-28 that asks the client
// for input (multi-round-trip) before the tool can run.
func (r Result) needsInput() bool { return r.inputAsked }

// NewResult reads a CallToolResult object encoded as JSON.
func NewResult(data jsontext.Value) (Result, error) {
	if data.Kind() != '{' || !data.IsValid() {
		return Result{}, errors.New("a tool result must be a JSON object")
	}
	r := Result{json: data}
	if err := r.readFlags(jsontext.NewDecoder(bytes.NewReader(nil))); err != nil {
		return Result{}, err
	}
	return r, nil
}

// fromSDK encodes a result the SDK decoded.
func fromSDK(res *mcp.CallToolResult) (Result, error) {
	data, err := jsonv2.Marshal(res)
	if err != nil {
		return Result{}, fmt.Errorf("encoding a tool result: %w", err)
	}
	return NewResult(data)
}

// stdioConn is the connection to a stdio server. The SDK's session runs on
// it (initialize, tool lists, notifications, the server's own requests),
// and tool calls take a lane beside the SDK: the request is written as
// bytes, its answer is picked out by id before the SDK sees it, and the
// result stays the JSON the server sent. Through the SDK a call costs
// about 100 µs more on a 2-vCPU machine (BENCHMARKS.md, "Issue 19, second
// pass"): a goroutine hand-off per message, the arguments and the result
// encoded and decoded through Go types, and the result encoded again for
// the sandbox.
//
// One goroutine at a time reads the server's output, the reader, and
// routes each message: a lane call's answer to its caller, anything else
// to the SDK's queue. A lane call that finds nobody reading becomes the
// reader and reads its own answer, so the answer reaches the goroutine
// that waits for it without a hand-off, which on a VM costs a thread
// wake-up of tens of microseconds. The SDK's goroutine (Read) reads while
// the lane is idle; it steps aside after a lane call and takes over again
// once no lane call has started for laneIdle, or at once when the SDK
// writes a request of its own and waits for the answer.
type stdioConn struct {
	stdin  io.WriteCloser
	stdout deadlineReader
	limit  *frameLimit
	dec    *jsontext.Decoder // the reader's
	peek   *jsontext.Decoder // scans one message's members (the reader's)

	writeMu sync.Mutex
	buf     []byte // the lane's request being written; guarded by writeMu

	mu         sync.Mutex
	waiting    map[string]*laneCall // lane calls by request id
	reader     *laneCall            // who reads: a lane call, sdkReads, or nil (nobody)
	kicked     bool                 // the reader's read deadline was set to stop it (its call ended)
	queue      []jsonrpc.Message    // messages for the SDK, in order
	laneActive bool                 // a lane call started less than laneIdle ago: the SDK leaves reading to them
	sdkAsked   int                  // the SDK's requests not yet answered: the SDK reads
	sdkWake    chan struct{}        // tells the SDK's Read to look again (buffered, 1)
	idle       *time.Timer          // ends laneActive
	idleAfter  time.Duration        // laneIdle, but in tests
	next       uint64
	readErr    error  // why reading ended; no lane call starts after it
	meta       []byte // the per-request _meta members of protocol 2026-07-28, as the SDK sends them

	closeOnce sync.Once
}

// deadlineReader is the server's output: a pipe whose reads a deadline can
// stop, so a lane call reading for others can end when its own call does.
type deadlineReader interface {
	io.ReadCloser
	SetReadDeadline(time.Time) error
}

// laneCall is a lane call waiting for its answer, or for its turn to read.
type laneCall struct {
	id string
	ch chan laneAnswer // buffered (1): its answer, or the turn to read
}

type laneAnswer struct {
	result Result
	err    error
	read   bool // not an answer: the call is the reader now
}

// sdkReads marks the SDK's goroutine as the reader.
var sdkReads = &laneCall{}

// laneIdle is how long after a lane call the SDK's goroutine leaves the
// reading to lane calls. Meanwhile a server's notification that comes
// with no call in flight waits that long; anything the SDK waits for does
// not (sdkAsked).
const laneIdle = 20 * time.Millisecond

// laneIDPrefix marks the lane's request ids: the SDK numbers its own, so a
// string id is never one of them.
const laneIDPrefix = "codemode-"

func newStdioConn(stdin io.WriteCloser, stdout deadlineReader, maxMessage int) *stdioConn {
	limit := &frameLimit{r: stdout, max: maxMessage}
	// Lenient where the SDK's reader is: duplicate names and invalid UTF-8
	// are the server's business (a lane result is repaired, see answer).
	lenient := []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}
	return &stdioConn{
		stdin: stdin, stdout: stdout, limit: limit,
		dec:       jsontext.NewDecoder(limit, lenient...),
		peek:      jsontext.NewDecoder(bytes.NewReader(nil), lenient...),
		waiting:   map[string]*laneCall{},
		sdkWake:   make(chan struct{}, 1),
		idleAfter: laneIdle,
	}
}

// stdioTransport hands the SDK an already open stdioConn.
type stdioTransport struct{ conn *stdioConn }

func (t stdioTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

// Read implements mcp.Connection: the next message for the SDK, read by
// this goroutine or by a lane call.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c.mu.Lock()
		if len(c.queue) > 0 {
			msg := c.queue[0]
			c.queue[0] = nil
			c.queue = c.queue[1:]
			c.mu.Unlock()
			return msg, nil
		}
		if c.readErr != nil {
			err := c.readErr
			c.mu.Unlock()
			return nil, err
		}
		if c.reader != nil || (c.laneActive && c.sdkAsked == 0) {
			c.mu.Unlock()
			select {
			case <-c.sdkWake:
			case <-ctx.Done():
			}
			continue
		}
		c.reader = sdkReads
		c.mu.Unlock()
		_, _, err := c.readOne("")
		c.mu.Lock()
		c.release(sdkReads)
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
}

// readOne reads the next message and routes it. The answer to lane call
// mine is returned instead (ok). Only the reader calls it.
func (c *stdioConn) readOne(mine string) (a laneAnswer, ok bool, err error) {
	c.limit.reset(len(c.dec.UnreadBuffer()))
	v, err := c.dec.ReadValue()
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return laneAnswer{}, false, err // the reader's call ended; the next reader picks up
		}
		if errors.Is(err, io.ErrUnexpectedEOF) && c.limit.over() {
			err = errFrameTooLarge
		}
		c.endReading(err)
		return laneAnswer{}, false, err
	}
	if v.Kind() == '[' {
		a, ok, err = c.routeBatch(v, mine)
	} else {
		a, ok, err = c.route(v, mine)
	}
	if err != nil {
		c.endReading(err)
	}
	return a, ok, err
}

// release ends lc's turn as the reader (c.mu held): the turn goes to a
// waiting lane call, or to nobody; then the SDK's goroutine takes over
// unless lane calls were recent.
func (c *stdioConn) release(lc *laneCall) {
	if c.reader != lc {
		return
	}
	c.reader = nil
	if c.kicked {
		c.unkick()
	}
	if c.readErr != nil {
		c.wakeSDK()
		return
	}
	for _, next := range c.waiting {
		c.reader = next
		next.ch <- laneAnswer{read: true}
		return
	}
	if c.laneActive {
		if c.idle == nil {
			c.idle = time.AfterFunc(c.idleAfter, c.idleEnded)
		} else {
			c.idle.Reset(c.idleAfter)
		}
	}
	if !c.laneActive || c.sdkAsked > 0 || len(c.queue) > 0 {
		c.wakeSDK()
	}
}

// idleEnded gives the reading back to the SDK's goroutine: no lane call
// has started for laneIdle.
func (c *stdioConn) idleEnded() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reader == nil && len(c.waiting) == 0 {
		c.laneActive = false
		c.wakeSDK()
	}
}

// wakeSDK tells the SDK's Read to look again (c.mu held).
func (c *stdioConn) wakeSDK() {
	select {
	case c.sdkWake <- struct{}{}:
	default:
	}
}

var errFrameTooLarge = errors.New("a message from the server is over the size limit")

// routeBatch routes each member of a JSON-RPC batch.
func (c *stdioConn) routeBatch(v jsontext.Value, mine string) (a laneAnswer, ok bool, err error) {
	var members []jsontext.Value
	if err := jsonv2.Unmarshal(v, &members); err != nil || len(members) == 0 {
		return laneAnswer{}, false, fmt.Errorf("reading from the server: invalid batch: %v", err)
	}
	for _, m := range members {
		ma, mok, err := c.route(m, mine)
		if err != nil {
			return laneAnswer{}, false, err
		}
		if mok {
			a, ok = ma, true
		}
	}
	return a, ok, nil
}

// route delivers one message: a lane call's answer to its caller (mine's
// is returned), anything else to the SDK's queue.
func (c *stdioConn) route(v jsontext.Value, mine string) (laneAnswer, bool, error) {
	if id, result, rpcErr, ok := c.answerOf(v); ok {
		c.mu.Lock()
		lc := c.waiting[id]
		delete(c.waiting, id)
		c.mu.Unlock()
		if lc == nil {
			return laneAnswer{}, false, nil // its call was cancelled
		}
		a := c.answer(result, rpcErr)
		if id == mine {
			return a, true, nil
		}
		lc.ch <- a
		return laneAnswer{}, false, nil
	}
	msg, err := jsonrpc.DecodeMessage(bytes.Clone(v))
	if err != nil {
		return laneAnswer{}, false, fmt.Errorf("reading from the server: %w", err)
	}
	c.mu.Lock()
	if _, ok := msg.(*jsonrpc.Response); ok && c.sdkAsked > 0 {
		c.sdkAsked--
	}
	c.queue = append(c.queue, msg)
	c.wakeSDK()
	c.mu.Unlock()
	return laneAnswer{}, false, nil
}

// answerOf reports whether v answers a lane call, and with what: the raw
// result or error member. The slices point into v.
func (c *stdioConn) answerOf(v jsontext.Value) (id string, result, rpcErr jsontext.Value, ok bool) {
	if v.Kind() != '{' || !bytes.Contains(v, []byte(laneIDPrefix)) {
		return "", nil, nil, false // the SDK's, without scanning it
	}
	d := c.peek
	d.Reset(bytes.NewReader(v), d.Options())
	if _, err := d.ReadToken(); err != nil {
		return "", nil, nil, false
	}
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			return "", nil, nil, false
		}
		name := tok.String() // before the next read voids tok
		start := d.InputOffset()
		if err := d.SkipValue(); err != nil {
			return "", nil, nil, false
		}
		member := bytes.TrimLeft(v[start:d.InputOffset()], " \t\r\n:")
		switch name {
		case "id":
			var s string
			if jsonv2.Unmarshal(member, &s) != nil {
				return "", nil, nil, false
			}
			id = s
		case "method":
			return "", nil, nil, false // a request of the server's
		case "result":
			result = member
		case "error":
			rpcErr = member
		}
	}
	if len(id) <= len(laneIDPrefix) || id[:len(laneIDPrefix)] != laneIDPrefix || (result == nil) == (rpcErr == nil) {
		return "", nil, nil, false
	}
	return id, result, rpcErr, true
}

// answer makes a lane call's answer of its result or error member.
func (c *stdioConn) answer(result, rpcErr jsontext.Value) laneAnswer {
	if rpcErr != nil {
		var e jsonrpc.Error
		if err := jsonv2.Unmarshal(rpcErr, &e); err != nil {
			return laneAnswer{err: fmt.Errorf("calling %q: the server's error is malformed: %w", "tools/call", err)}
		}
		return laneAnswer{err: fmt.Errorf("calling %q: %w", "tools/call", &e)}
	}
	if result.Kind() != '{' {
		return laneAnswer{err: fmt.Errorf("calling %q: the result is not an object", "tools/call")}
	}
	// The value is the decoder's buffer until the next read: keep a copy,
	// with invalid UTF-8 (only possible inside strings) replaced, as the
	// SDK's decoding does.
	owned := bytes.Clone(result)
	if !utf8.Valid(owned) {
		owned = bytes.ToValidUTF8(owned, []byte("\uFFFD"))
	}
	res := Result{json: owned}
	if err := res.readFlags(c.peek); err != nil {
		return laneAnswer{err: fmt.Errorf("calling %q: reading the result: %w", "tools/call", err)}
	}
	return laneAnswer{result: res}
}

// readFlags reads the members of the result object the host acts on:
// isError, and whether it asks for input (inputRequests, resultType).
func (r *Result) readFlags(d *jsontext.Decoder) error {
	d.Reset(bytes.NewReader(r.json), d.Options())
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			return err
		}
		name, kind, start := tok.String(), d.PeekKind(), d.InputOffset()
		if err := d.SkipValue(); err != nil {
			return err
		}
		switch name {
		case "isError":
			r.isError = kind == 't'
		case "inputRequests":
			r.inputAsked = r.inputAsked || kind != 'n'
		case "resultType":
			r.inputAsked = r.inputAsked || string(bytes.TrimSpace(r.json[start:d.InputOffset()])) == `"input_required"`
		}
	}
	return nil
}

// endReading fails the lane calls in flight: their answers cannot come.
func (c *stdioConn) endReading(err error) {
	c.mu.Lock()
	if c.readErr == nil {
		c.readErr = err
	}
	waiting := c.waiting
	c.waiting = map[string]*laneCall{}
	c.wakeSDK()
	c.mu.Unlock()
	for _, lc := range waiting {
		lc.ch <- laneAnswer{err: fmt.Errorf("%w: calling %q: %v", mcp.ErrConnectionClosed, "tools/call", err)}
	}
}

// Write implements mcp.Connection for the SDK's messages. It also learns
// the per-request _meta the SDK sends on protocol 2026-07-28 (SEP-2575:
// protocol version, client info and capabilities) from its tools/list,
// which every start sends, so the lane's calls carry the same.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a message for the server: %w", err)
	}
	req, _ := msg.(*jsonrpc.Request)
	if req != nil && req.Method == "tools/list" {
		c.learnMeta(req.Params)
	}
	asks := req != nil && req.ID.IsValid() // the SDK will wait for an answer: it reads until then
	if asks {
		c.mu.Lock()
		c.sdkAsked++
		if c.reader == nil {
			c.wakeSDK()
		}
		c.mu.Unlock()
	}
	c.writeMu.Lock()
	_, err = c.stdin.Write(append(data, '\n'))
	c.writeMu.Unlock()
	if err != nil && asks {
		c.mu.Lock()
		c.sdkAsked--
		c.mu.Unlock()
	}
	return err
}

// metaPrefix names the SEP-2575 per-request members.
const metaPrefix = "io.modelcontextprotocol/"

func (c *stdioConn) learnMeta(params []byte) {
	var p struct {
		Meta map[string]jsontext.Value `json:"_meta"`
	}
	if jsonv2.Unmarshal(params, &p) != nil {
		return
	}
	var members []byte
	for name, value := range p.Meta {
		if len(name) > len(metaPrefix) && name[:len(metaPrefix)] == metaPrefix {
			members, _ = jsontext.AppendQuote(members, name)
			members = append(members, ':')
			members = append(members, value...)
			members = append(members, ',')
		}
	}
	c.mu.Lock()
	c.meta = members
	c.mu.Unlock()
}

// knowsMeta reports whether the SDK sent per-request _meta members.
func (c *stdioConn) knowsMeta() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.meta) > 0
}

// Close implements mcp.Connection. Reading ends, and so do the lane calls
// in flight.
func (c *stdioConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.mu.Lock()
		if c.idle != nil {
			c.idle.Stop()
		}
		c.mu.Unlock()
		err = errors.Join(c.stdin.Close(), c.stdout.Close())
		// A read in progress fails on its own; without one, the SDK's
		// Read may be waiting for its turn.
		c.endReading(os.ErrClosed)
	})
	return err
}

// SessionID implements mcp.Connection: stdio has no session id.
func (c *stdioConn) SessionID() string { return "" }

// callTool makes a tools/call on the lane. meta holds extra _meta members
// (progress token, trace context).
func (c *stdioConn) callTool(ctx context.Context, tool string, args any, meta map[string]string) (Result, error) {
	argsJSON, err := encodeArgs(args)
	if err != nil {
		return Result{}, err
	}
	c.mu.Lock()
	if c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		return Result{}, fmt.Errorf("%w: calling %q: %v", mcp.ErrConnectionClosed, "tools/call", err)
	}
	c.next++
	lc := &laneCall{id: laneIDPrefix + strconv.FormatUint(c.next, 10), ch: make(chan laneAnswer, 1)}
	c.waiting[lc.id] = lc
	c.laneActive = true
	reads := c.reader == nil
	if reads {
		c.reader = lc
	}
	protocolMeta := c.meta
	c.mu.Unlock()

	if err := c.writeCall(lc.id, tool, argsJSON, protocolMeta, meta); err != nil {
		c.abandon(lc)
		return Result{}, fmt.Errorf("calling %q: %w", "tools/call", err)
	}
	for {
		if reads {
			a := c.readFor(ctx, lc)
			return a.result, a.err
		}
		select {
		case a := <-lc.ch:
			if a.read {
				reads = true
				continue
			}
			return a.result, a.err
		case <-ctx.Done():
			if !c.abandon(lc) {
				a := <-lc.ch // it came meanwhile: it is on its way
				return a.result, a.err
			}
			// Best effort, off the caller's path, as the SDK does.
			go c.notifyCancelled(lc.id, ctx.Err())
			return Result{}, ctx.Err()
		}
	}
}

// readFor reads the server's output as the reader until lc's answer
// comes, the output ends, or ctx does (a read deadline then stops the
// read; whatever part of a message it read stays for the next reader).
func (c *stdioConn) readFor(ctx context.Context, lc *laneCall) laneAnswer {
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.reader == lc {
			c.kicked = true
			c.stdout.SetReadDeadline(time.Unix(1, 0))
		}
	})
	defer stop()
	for {
		a, mine, err := c.readOne(lc.id)
		switch {
		case mine:
			c.mu.Lock()
			c.release(lc)
			c.mu.Unlock()
			return a
		case errors.Is(err, os.ErrDeadlineExceeded):
			c.mu.Lock()
			ended := ctx.Err() != nil // else not this call's deadline: cleared, or every read would stop at once
			if !ended {
				c.unkick()
			}
			c.mu.Unlock()
			if !ended {
				continue
			}
			if !c.abandon(lc) {
				return <-lc.ch // the output ended meanwhile
			}
			go c.notifyCancelled(lc.id, ctx.Err())
			return laneAnswer{err: ctx.Err()}
		case err != nil:
			c.mu.Lock()
			c.release(lc)
			c.mu.Unlock()
			return <-lc.ch // endReading failed every call, this one too
		}
	}
}

// unkick clears the read deadline that stops a reader (c.mu held).
func (c *stdioConn) unkick() {
	c.kicked = false
	c.stdout.SetReadDeadline(time.Time{})
}

// abandon stops waiting for lc, handing on its turn to read if it has it;
// false if its answer is on its way.
func (c *stdioConn) abandon(lc *laneCall) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.waiting[lc.id]
	delete(c.waiting, lc.id)
	c.release(lc)
	return ok
}

func (c *stdioConn) writeCall(id, tool string, args, protocolMeta []byte, meta map[string]string) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	b := append(c.buf[:0], `{"jsonrpc":"2.0","id":`...)
	b, _ = jsontext.AppendQuote(b, id)
	b = append(b, `,"method":"tools/call","params":{`...)
	if len(protocolMeta) > 0 || len(meta) > 0 {
		b = append(b, `"_meta":{`...)
		b = append(b, protocolMeta...)
		for k, v := range meta {
			b, _ = jsontext.AppendQuote(b, k)
			b = append(b, ':')
			b, _ = jsontext.AppendQuote(b, v)
			b = append(b, ',')
		}
		b[len(b)-1] = '}'
		b = append(b, ',')
	}
	b = append(b, `"name":`...)
	var err error
	if b, err = jsontext.AppendQuote(b, tool); err != nil {
		return fmt.Errorf("tool name: %w", err)
	}
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	b = append(b, "}}\n"...)
	if cap(b) <= 64<<10 {
		c.buf = b // reused; a large request's buffer is let go
	}
	_, err = c.stdin.Write(b)
	return err
}

// cancelNotifyTimeout bounds the write of notifications/cancelled.
const cancelNotifyTimeout = 5 * time.Second

func (c *stdioConn) notifyCancelled(id string, reason error) {
	ctx, cancel := context.WithTimeout(context.Background(), cancelNotifyTimeout)
	defer cancel()
	n := &jsonrpc.Request{Method: "notifications/cancelled"}
	n.Params, _ = jsonv2.Marshal(map[string]string{"requestId": id, "reason": reason.Error()})
	c.Write(ctx, n)
}

// encodeArgs encodes a call's arguments as a JSON object; nil is {}.
func encodeArgs(args any) ([]byte, error) {
	switch a := args.(type) {
	case nil:
		return []byte("{}"), nil
	case map[string]jsontext.Value:
		// The proxy's: already JSON, member by member.
		b := []byte{'{'}
		for k, v := range a {
			var err error
			if b, err = jsontext.AppendQuote(b, k); err != nil {
				return nil, fmt.Errorf("argument name %q: %w", k, err)
			}
			b = append(b, ':')
			b = append(b, v...)
			b = append(b, ',')
		}
		if len(b) == 1 {
			return []byte("{}"), nil
		}
		b[len(b)-1] = '}'
		return b, nil
	}
	data, err := jsonv2.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("encoding the arguments: %w", err)
	}
	if jsontext.Value(data).Kind() != '{' {
		return nil, errors.New("the arguments must be an object")
	}
	return data, nil
}

// frameLimit bounds what one message may make the decoder buffer: it counts
// the bytes read since the last message ended.
type frameLimit struct {
	r     io.Reader
	max   int
	count int
}

func (l *frameLimit) Read(p []byte) (int, error) {
	if l.over() {
		return 0, io.EOF // the decoder reports a cut message; Read says why
	}
	if len(p) > l.max-l.count {
		p = p[:l.max-l.count]
	}
	n, err := l.r.Read(p)
	l.count += n
	return n, err
}

// reset starts a new message with buffered bytes already read.
func (l *frameLimit) reset(buffered int) { l.count = buffered }

func (l *frameLimit) over() bool { return l.count >= l.max }
