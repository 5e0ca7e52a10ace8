package downstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/codemode/codemode/internal/testenv"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scripted is a stdioConn whose server is the test: it reads what the
// connection writes and writes what the server would. A goroutine plays the
// SDK, reading everything that is not a lane answer.
type scripted struct {
	conn     *stdioConn
	requests *bufio.Reader // what the connection wrote
	server   io.WriteCloser
	sdk      chan jsonrpc.Message
	readErr  chan error
}

func newScripted(t *testing.T, maxMessage int) *scripted {
	t.Helper()
	toServer, fromClient := io.Pipe()
	// A real pipe: the connection stops a read with a deadline.
	fromServer, toClient, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &scripted{
		conn:     newStdioConn(fromClient, fromServer, maxMessage),
		requests: bufio.NewReader(toServer),
		server:   toClient,
		sdk:      make(chan jsonrpc.Message, 16),
		readErr:  make(chan error, 1),
	}
	go func() {
		for {
			msg, err := s.conn.Read(context.Background())
			if err != nil {
				s.readErr <- err
				return
			}
			s.sdk <- msg
		}
	}()
	t.Cleanup(func() {
		s.conn.Close()
		toServer.Close()
		toClient.Close()
	})
	return s
}

// request reads the next request the connection wrote.
func (s *scripted) request(t *testing.T) map[string]any {
	t.Helper()
	line, err := s.requests.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the request: %v", err)
	}
	var req map[string]any
	if err := json.Unmarshal([]byte(line), &req); err != nil {
		t.Fatalf("request %q: %v", line, err)
	}
	return req
}

func (s *scripted) send(t *testing.T, raw string) {
	t.Helper()
	if _, err := io.WriteString(s.server, raw); err != nil {
		t.Fatal(err)
	}
}

type callOutcome struct {
	res Result
	err error
}

func (s *scripted) call(ctx context.Context, args any, meta map[string]string) <-chan callOutcome {
	done := make(chan callOutcome, 1)
	go func() {
		res, err := s.conn.callTool(ctx, "echo", args, meta)
		done <- callOutcome{res, err}
	}()
	return done
}

func wait(t *testing.T, ch <-chan callOutcome) callOutcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not return")
		return callOutcome{}
	}
}

// The lane takes its answer whatever shape the server gives the message,
// and passes everything else to the SDK in order.
func TestLaneAnswers(t *testing.T) {
	tests := []struct {
		name      string
		answer    string // %ID% is the request's id
		wantJSON  string
		wantError bool // isError
		wantErr   string
		wantSDK   []string // methods the SDK gets
	}{
		{name: "result", answer: `{"jsonrpc":"2.0","id":"%ID%","result":{"content":[{"type":"text","text":"hi"}]}}` + "\n",
			wantJSON: `{"content":[{"type":"text","text":"hi"}]}`},
		{name: "tool error", answer: `{"result":{"content":[],"isError":true},"jsonrpc":"2.0","id":"%ID%"}` + "\n",
			wantJSON: `{"content":[],"isError":true}`, wantError: true},
		{name: "protocol error", answer: `{"jsonrpc":"2.0","id":"%ID%","error":{"code":-32602,"message":"bad arguments"}}` + "\n",
			wantErr: `calling "tools/call": bad arguments`},
		{name: "written in pieces, pretty-printed", answer: "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": \"%ID%\",\n  \"result\": {\"content\": []}\n}\n",
			wantJSON: `{"content": []}`},
		{name: "notification and request first", answer: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"codemode-1","progress":1}}` + "\n" +
			`{"jsonrpc":"2.0","id":"%ID%","method":"roots/list"}` + "\n" +
			`{"jsonrpc":"2.0","id":"%ID%","result":{"content":[]}}` + "\n",
			wantJSON: `{"content":[]}`, wantSDK: []string{"notifications/progress", "roots/list"}},
		{name: "batch", answer: `[{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}},{"jsonrpc":"2.0","id":"%ID%","result":{"content":[]}}]` + "\n",
			wantJSON: `{"content":[]}`, wantSDK: []string{"notifications/message"}},
		{name: "invalid UTF-8 is repaired", answer: "{\"jsonrpc\":\"2.0\",\"id\":\"%ID%\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\xffb\"}]}}\n",
			wantJSON: "{\"content\":[{\"type\":\"text\",\"text\":\"a\uFFFDb\"}]}"},
		{name: "not an object", answer: `{"jsonrpc":"2.0","id":"%ID%","result":[1]}` + "\n", wantErr: "not an object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newScripted(t, 1<<20)
			done := s.call(t.Context(), nil, nil)
			id := s.request(t)["id"].(string)
			s.send(t, strings.ReplaceAll(tc.answer, "%ID%", id))
			o := wait(t, done)
			if tc.wantErr != "" {
				if o.err == nil || !strings.Contains(o.err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", o.err, tc.wantErr)
				}
			} else if o.err != nil || string(o.res.JSON()) != tc.wantJSON || o.res.IsError() != tc.wantError {
				t.Fatalf("result %s (isError %v), %v; want %s (isError %v)", o.res.JSON(), o.res.IsError(), o.err, tc.wantJSON, tc.wantError)
			}
			for _, method := range tc.wantSDK {
				select {
				case msg := <-s.sdk:
					if req, ok := msg.(*jsonrpc.Request); !ok || req.Method != method {
						t.Fatalf("the SDK got %#v, want %s", msg, method)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("the SDK never got %s", method)
				}
			}
		})
	}
}

// warm makes one call and answers it, after which the SDK's goroutine
// leaves the reading to lane calls for idleAfter.
func (s *scripted) warm(t *testing.T, idleAfter time.Duration) {
	t.Helper()
	s.conn.mu.Lock()
	s.conn.idleAfter = idleAfter
	s.conn.mu.Unlock()
	done := s.call(t.Context(), nil, nil)
	s.answer(t, s.request(t)["id"].(string), "warm")
	if o := wait(t, done); o.err != nil {
		t.Fatal(o.err)
	}
}

func (s *scripted) answer(t *testing.T, id, text string) {
	t.Helper()
	s.send(t, `{"jsonrpc":"2.0","id":"`+id+`","result":{"content":[{"type":"text","text":"`+text+`"}]}}`+"\n")
}

// reader waits until the lane call with id reads the server's output.
func (s *scripted) awaitReader(t *testing.T, id string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.conn.mu.Lock()
		r := s.conn.reader
		s.conn.mu.Unlock()
		if r != nil && r.id == id {
			return
		}
	}
	t.Fatalf("call %s never became the reader", id)
}

func (s *scripted) sdkGets(t *testing.T, check func(jsonrpc.Message) bool, what string) {
	t.Helper()
	select {
	case msg := <-s.sdk:
		if !check(msg) {
			t.Fatalf("the SDK got %#v, want %s", msg, what)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the SDK never got %s", what)
	}
}

// Concurrent calls share the reading: the first reads and hands the others
// their answers, or hands on its turn once its own came; every call gets
// its own answer whatever the order.
func TestLaneReaderTurns(t *testing.T) {
	for _, order := range [][]int{{2, 1, 0}, {0, 1, 2}, {1, 0, 2}, {0, 2, 1}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			s := newScripted(t, 1<<20)
			s.warm(t, time.Hour)
			var ids []string
			var calls []<-chan callOutcome
			for i := range 3 {
				calls = append(calls, s.call(t.Context(), nil, nil))
				ids = append(ids, s.request(t)["id"].(string))
				if i == 0 {
					s.awaitReader(t, ids[0]) // the first call found nobody reading
				}
			}
			for _, i := range order {
				s.answer(t, ids[i], ids[i])
			}
			for i, done := range calls {
				if o := wait(t, done); o.err != nil || textOf(o.res) != ids[i] {
					t.Fatalf("call %d: %s, %v", i, o.res.JSON(), o.err)
				}
			}
		})
	}
}

// A reading call that is cancelled mid-message hands on its turn; the
// next reader finishes the message where it stopped.
func TestLaneReaderCancelled(t *testing.T) {
	s := newScripted(t, 1<<20)
	s.warm(t, time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	first := s.call(ctx, nil, nil)
	firstID := s.request(t)["id"].(string)
	s.awaitReader(t, firstID)
	second := s.call(t.Context(), nil, nil)
	secondID := s.request(t)["id"].(string)
	answer := `{"jsonrpc":"2.0","id":"` + secondID + `","result":{"content":[{"type":"text","text":"second"}]}}` + "\n"
	s.send(t, answer[:len(answer)/2])
	time.Sleep(20 * time.Millisecond) // the reader holds half a message
	cancel()
	if o := wait(t, first); !errors.Is(o.err, context.Canceled) {
		t.Fatalf("cancelled call: %v", o.err)
	}
	if n := s.request(t); n["method"] != "notifications/cancelled" {
		t.Fatalf("after the cancel the server got %v", n)
	}
	s.awaitReader(t, secondID)
	s.send(t, answer[len(answer)/2:])
	if o := wait(t, second); o.err != nil || textOf(o.res) != "second" {
		t.Fatalf("second call: %s, %v", o.res.JSON(), o.err)
	}
	// The late answer of the first goes nowhere; the next call is served.
	s.answer(t, firstID, "late")
	third := s.call(t.Context(), nil, nil)
	s.answer(t, s.request(t)["id"].(string), "third")
	if o := wait(t, third); o.err != nil || textOf(o.res) != "third" {
		t.Fatalf("third call: %s, %v", o.res.JSON(), o.err)
	}
}

// What the SDK waits for is read at once, even while lane calls keep the
// SDK's goroutine from reading; a notification that comes with no call in
// flight reaches the SDK once the lane is idle, or with the next call.
func TestLaneSDKStillReads(t *testing.T) {
	t.Run("its own request's answer", func(t *testing.T) {
		s := newScripted(t, 1<<20)
		s.warm(t, time.Hour)
		go s.conn.Write(t.Context(), &jsonrpc.Request{ID: mustID(t, 7), Method: "ping", Params: json.RawMessage(`{}`)})
		if got := s.request(t)["method"]; got != "ping" {
			t.Fatalf("the server got %v", got)
		}
		s.send(t, `{"jsonrpc":"2.0","id":7,"result":{}}`+"\n")
		s.sdkGets(t, func(m jsonrpc.Message) bool { r, ok := m.(*jsonrpc.Response); return ok && r.ID == mustID(t, 7) }, "the ping's answer")
	})
	notification := `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n"
	isNotification := func(m jsonrpc.Message) bool {
		r, ok := m.(*jsonrpc.Request)
		return ok && r.Method == "notifications/tools/list_changed"
	}
	t.Run("a notification once idle", func(t *testing.T) {
		s := newScripted(t, 1<<20)
		s.warm(t, 10*time.Millisecond)
		s.send(t, notification)
		s.sdkGets(t, isNotification, "the notification")
	})
	t.Run("a notification with the next call", func(t *testing.T) {
		s := newScripted(t, 1<<20)
		s.warm(t, time.Hour)
		s.send(t, notification)
		select {
		case msg := <-s.sdk:
			t.Fatalf("the SDK got %#v with nobody reading", msg)
		case <-time.After(50 * time.Millisecond):
		}
		done := s.call(t.Context(), nil, nil)
		s.answer(t, s.request(t)["id"].(string), "x")
		if o := wait(t, done); o.err != nil {
			t.Fatal(o.err)
		}
		s.sdkGets(t, isNotification, "the notification")
	})
}

// Closing ends the SDK's Read while it leaves the reading to lane calls
// and nobody reads; later calls fail at once.
func TestLaneClose(t *testing.T) {
	s := newScripted(t, 1<<20)
	s.warm(t, time.Hour)
	s.conn.Close()
	select {
	case err := <-s.readErr:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("the SDK's read ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the SDK's read did not end")
	}
	if o := wait(t, s.call(t.Context(), nil, nil)); !errors.Is(o.err, mcp.ErrConnectionClosed) {
		t.Fatalf("call after Close: %v", o.err)
	}
}

// A protocol error keeps the SDK's type, so callers can inspect it.
func TestLaneErrorIsTheSDKs(t *testing.T) {
	s := newScripted(t, 1<<20)
	done := s.call(t.Context(), nil, nil)
	id := s.request(t)["id"].(string)
	s.send(t, `{"jsonrpc":"2.0","id":"`+id+`","error":{"code":-32601,"message":"no","data":{"why":1}}}`+"\n")
	var e *jsonrpc.Error
	if o := wait(t, done); !errors.As(o.err, &e) || e.Code != jsonrpc.CodeMethodNotFound || string(e.Data) != `{"why":1}` {
		t.Fatalf("error %#v, want a *jsonrpc.Error", o.err)
	}
}

// The request carries the arguments as given, the per-request _meta the
// SDK sent with its tools/list (protocol 2026-07-28), and the call's own
// _meta members.
func TestLaneRequest(t *testing.T) {
	s := newScripted(t, 1<<20)
	list := &jsonrpc.Request{ID: mustID(t, 1), Method: "tools/list",
		Params: json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"codemode"},"progressToken":7}}`)}
	go s.conn.Write(t.Context(), list)
	if got := s.request(t)["method"]; got != "tools/list" {
		t.Fatalf("the SDK's message became %v", got)
	}
	args := map[string]jsontext.Value{"message": jsontext.Value(`"x\n"`), "n": jsontext.Value(`[1, 2]`)}
	done := s.call(t.Context(), args, map[string]string{"progressToken": "codemode-9", "traceparent": "00-a-b-01"})
	req := s.request(t)
	params := req["params"].(map[string]any)
	meta := params["_meta"].(map[string]any)
	want := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": map[string]any{"name": "codemode"},
		"progressToken": "codemode-9", "traceparent": "00-a-b-01"}
	if len(meta) != len(want) {
		t.Fatalf("_meta %v, want %v", meta, want)
	}
	for k, v := range want {
		if got, _ := json.Marshal(meta[k]); string(got) != mustJSON(t, v) {
			t.Fatalf("_meta[%s] = %s, want %s", k, got, mustJSON(t, v))
		}
	}
	if got := mustJSON(t, params["arguments"]); got != `{"message":"x\n","n":[1,2]}` {
		t.Fatalf("arguments %s", got)
	}
	if req["method"] != "tools/call" || params["name"] != "echo" || req["jsonrpc"] != "2.0" {
		t.Fatalf("request %v", req)
	}
	s.send(t, `{"jsonrpc":"2.0","id":"`+req["id"].(string)+`","result":{"content":[]}}`+"\n")
	wait(t, done)
}

// A cancelled call tells the server, and its late answer goes nowhere.
func TestLaneCancel(t *testing.T) {
	s := newScripted(t, 1<<20)
	ctx, cancel := context.WithCancel(t.Context())
	done := s.call(ctx, nil, nil)
	id := s.request(t)["id"].(string)
	cancel()
	if o := wait(t, done); !errors.Is(o.err, context.Canceled) {
		t.Fatalf("cancelled call: %v", o.err)
	}
	n := s.request(t)
	if n["method"] != "notifications/cancelled" || n["params"].(map[string]any)["requestId"] != id {
		t.Fatalf("after the cancel the server got %v", n)
	}
	s.send(t, `{"jsonrpc":"2.0","id":"`+id+`","result":{"content":[]}}`+"\n")
	// The next call gets its own answer.
	done = s.call(t.Context(), nil, nil)
	next := s.request(t)["id"].(string)
	s.send(t, `{"jsonrpc":"2.0","id":"`+next+`","result":{"content":[{"type":"text","text":"mine"}]}}`+"\n")
	if o := wait(t, done); o.err != nil || !strings.Contains(string(o.res.JSON()), "mine") {
		t.Fatalf("next call: %s, %v", o.res.JSON(), o.err)
	}
}

// When the server's output ends, calls in flight fail as a closed
// connection, and so does any later call, at once.
func TestLaneServerGone(t *testing.T) {
	s := newScripted(t, 1<<20)
	done := s.call(t.Context(), nil, nil)
	s.request(t)
	s.server.Close()
	if o := wait(t, done); !errors.Is(o.err, mcp.ErrConnectionClosed) {
		t.Fatalf("in flight: %v", o.err)
	}
	if o := wait(t, s.call(t.Context(), nil, nil)); !errors.Is(o.err, mcp.ErrConnectionClosed) {
		t.Fatalf("later: %v", o.err)
	}
	if err := <-s.readErr; !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("the SDK's read ended with %v", err)
	}
}

// A message over the limit ends the connection instead of being buffered.
func TestLaneMessageLimit(t *testing.T) {
	s := newScripted(t, 1024)
	done := s.call(t.Context(), nil, nil)
	id := s.request(t)["id"].(string)
	// The connection stops reading mid-message, so the write may block.
	go io.WriteString(s.server, `{"jsonrpc":"2.0","id":"`+id+`","result":{"content":[{"type":"text","text":"`+strings.Repeat("x", 4096)+`"}]}}`+"\n")
	if o := wait(t, done); !errors.Is(o.err, mcp.ErrConnectionClosed) {
		t.Fatalf("call: %v", o.err)
	}
	if err := <-s.readErr; !errors.Is(err, errFrameTooLarge) {
		t.Fatalf("the SDK's read ended with %v, want %v", err, errFrameTooLarge)
	}
}

func TestResultFlags(t *testing.T) {
	tests := []struct {
		in                  string
		isError, inputAsked bool
	}{
		{`{"content":[]}`, false, false},
		{`{"content":[],"isError":true}`, true, false},
		{`{"content":[],"isError":false}`, false, false},
		{`{"inputRequests":{"q":{"method":"elicitation/create","params":{}}},"resultType":"input_required"}`, false, true},
		{`{"inputRequests":{},"resultType":"input_required"}`, false, true},
		{`{"content":[],"resultType":"complete","inputRequests":null}`, false, false},
		{`{"nested":{"isError":true},"content":[]}`, false, false},
	}
	for _, tc := range tests {
		r, err := NewResult(jsontext.Value(tc.in))
		if err != nil || r.IsError() != tc.isError || r.needsInput() != tc.inputAsked {
			t.Errorf("%s: isError %v, needsInput %v, %v; want %v, %v", tc.in, r.IsError(), r.needsInput(), err, tc.isError, tc.inputAsked)
		}
	}
	for _, bad := range []string{`[1]`, `{"a":`, `"x"`} {
		if _, err := NewResult(jsontext.Value(bad)); err == nil {
			t.Errorf("NewResult(%s) accepted it", bad)
		}
	}
}

func TestEncodeArgs(t *testing.T) {
	tests := []struct {
		in      any
		want    string
		wantErr bool
	}{
		{nil, `{}`, false},
		{map[string]jsontext.Value{}, `{}`, false},
		{map[string]jsontext.Value{"a\"b": jsontext.Value(`1`)}, `{"a\"b":1}`, false},
		{map[string]any{"a": []int{1}}, `{"a":[1]}`, false},
		{[]int{1}, ``, true},
	}
	for _, tc := range tests {
		got, err := encodeArgs(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && string(got) != tc.want) {
			t.Errorf("encodeArgs(%v) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

// Stdio servers of either protocol get their calls on the lane: the Go
// SDK's test server speaks 2026-07-28 (per-request _meta), npm's
// server-everything 2025-11-25.
func TestLaneServesStdioServers(t *testing.T) {
	node := testenv.Node(t)
	pkg := testenv.NodePackage(t, "@modelcontextprotocol/server-everything")
	p := newPool(t, Options{Servers: []serverconfig.Server{testServer(t, "tools", "tools"),
		{Name: "everything", Transport: serverconfig.TransportStdio, Command: node, Args: []string{pkg + "/dist/index.js", "stdio"}}}})
	for _, tc := range []struct{ server, tool, message, want string }{
		{"tools", "echo", "hi", "echo: hi"},
		{"everything", "echo", "hi", "Echo: hi"},
	} {
		res, err := p.CallTool(t.Context(), tc.server, tc.tool, map[string]any{"message": tc.message})
		if err != nil || textOf(res) != tc.want {
			t.Fatalf("%s: %s, %v", tc.server, res.JSON(), err)
		}
		p.mu.Lock()
		lane := p.servers[tc.server].conn.lane
		p.mu.Unlock()
		if lane == nil {
			t.Fatalf("%s: the call did not take the lane", tc.server)
		}
	}
}

func mustID(t *testing.T, v any) jsonrpc.ID {
	id, err := jsonrpc.MakeID(float64(v.(int)))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func mustJSON(t *testing.T, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
