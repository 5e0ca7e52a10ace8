package wire

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	big := bytes.Repeat([]byte("z"), 3<<20) // far beyond the reference's 64 KiB line limit
	frames := []Frame{{KindStdout, []byte("hello\n")}, {KindStderr, nil}, {KindMessage, []byte(`{"type":"pong","id":1}`)}, {KindStdout, big}}
	for _, f := range frames {
		if err := w.WriteFrame(f.Kind, f.Payload); err != nil {
			t.Fatal(err)
		}
	}
	r := NewReader(&buf, 0)
	for i, want := range frames {
		got, err := r.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got.Kind != want.Kind || !bytes.Equal(got.Payload, want.Payload) {
			t.Fatalf("frame %d: kind %c len %d, want kind %c len %d", i, got.Kind, len(got.Payload), want.Kind, len(want.Payload))
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after last frame: %v, want io.EOF", err)
	}
}

func TestReaderErrors(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		max   int
		want  string
	}{
		{"unknown kind", []byte{'X', 0, 0, 0, 0}, 0, "unknown frame kind"},
		{"too large", AppendFrame(nil, KindStdout, make([]byte, 100)), 10, "frame too large"},
		{"cut header", []byte{'O', 0, 0}, 0, "unexpected EOF"},
		{"cut payload", []byte{'O', 0, 0, 0, 9, 'a'}, 0, "unexpected EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(tc.input), tc.max).Next()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Next() = %v, want error containing %q", err, tc.want)
			}
		})
	}
	_, err := NewReader(bytes.NewReader(AppendFrame(nil, KindStdout, make([]byte, 100))), 10).Next()
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("errors.Is(%v, ErrFrameTooLarge) = false", err)
	}
}

func TestDecodeSandboxMessage(t *testing.T) {
	tests := []struct {
		in      string
		want    any
		wantErr string
	}{
		{`{"type":"ready","python":"3.11.2","pid":7}`, &Ready{Type: "ready", Python: "3.11.2", PID: 7}, ""},
		{`{"type":"done","id":3,"status":"error","exitCode":1,"error":"ValueError: x"}`, &Done{Type: "done", ID: 3, Status: "error", ExitCode: 1, Error: "ValueError: x"}, ""},
		{`{"type":"pong","id":9}`, &Pong{Type: "pong", ID: 9}, ""},
		{`{"type":"rpc","id":2,"method":"call_tool","params":{"a":1}}`, &RPC{Type: "rpc", ID: 2, Method: "call_tool", Params: []byte(`{"a":1}`)}, ""},
		{`{"type":"done","id":3,"status":"ok","exitCode":0,"extra":1}`, nil, "unknown"},
		{`{"type":"done","ID":3,"status":"ok","exitCode":0}`, nil, "unknown"}, // names are case-sensitive
		{`{"type":"done","id":3,"id":4,"status":"ok","exitCode":0}`, nil, "duplicate"},
		{`{"type":"exec","id":1}`, nil, "unknown message type"},
		{`[1,2]`, nil, "decoding message"},
		{`{"type":"done","id":-1,"status":"ok","exitCode":0}`, nil, "done"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := DecodeSandboxMessage([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("DecodeSandboxMessage() = %v, %v; want error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeRPC(t *testing.T) {
	tests := []struct {
		in      string
		want    *RPC
		wantErr string
	}{
		{`{"type":"rpc","id":2,"method":"call_tool","params":{"a":1}}`, &RPC{Type: "rpc", ID: 2, Method: "call_tool", Params: []byte(`{"a":1}`)}, ""},
		{`{"type":"rpc","id":2,"method":"list_servers","params":null}`, &RPC{Type: "rpc", ID: 2, Method: "list_servers"}, ""},
		{`{"type":"pong","id":9}`, nil, "only rpc"},
		{`{"type":"rpc","id":2,"method":"m","direct":true}`, nil, "unknown"},
		{`{"type":"rpc","id":2,"id":3,"method":"m"}`, nil, "duplicate"},
		{`{"id":2,"method":"m"}`, nil, "only rpc"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := DecodeRPC([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("DecodeRPC() = %v, %v; want error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add(AppendFrame(nil, KindStdout, []byte("x")))
	f.Add(AppendFrame(AppendFrame(nil, KindMessage, []byte(`{"type":"pong","id":1}`)), KindStderr, []byte{0xff}))
	f.Add([]byte{'M', 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), 1<<16)
		consumed := 0
		for {
			fr, err := r.Next()
			if err != nil {
				return
			}
			consumed += HeaderSize + len(fr.Payload)
			if consumed > len(data) || len(fr.Payload) > 1<<16 {
				t.Fatalf("frame beyond input or limit: %d > %d", consumed, len(data))
			}
			// What was read re-encodes to the same bytes.
			if enc := AppendFrame(nil, fr.Kind, fr.Payload); !bytes.Equal(enc, data[consumed-len(enc):consumed]) {
				t.Fatalf("re-encoding differs")
			}
		}
	})
}

func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{`{"type":"ready","python":"3","pid":1}`, `{"type":"done","id":1,"status":"ok","exitCode":0}`,
		`{"type":"rpc","id":1,"method":"m","params":null}`, `{"type":"pong","id":18446744073709551615}`, `{"type":"done","id":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msg, err := DecodeSandboxMessage(data)
		if err != nil {
			return
		}
		// Anything accepted must re-encode and decode to the same value.
		enc, err := Marshal(msg)
		if err != nil {
			t.Fatalf("Marshal(%#v) = %v", msg, err)
		}
		again, err := DecodeSandboxMessage(enc)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", enc, err)
		}
		if diff := cmp.Diff(msg, again); diff != "" {
			t.Fatalf("round trip differs:\n%s", diff)
		}
	})
}

func BenchmarkFrameRoundTrip(b *testing.B) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	r := NewReader(&buf, 0)
	payload := []byte(`{"type":"exec","id":1,"code":"pass","filename":"<cell-1>"}`)
	for b.Loop() {
		w.WriteFrame(KindMessage, payload)
		if _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

// Empty lists and objects are results too: the runtime must not see them
// as a missing result (None).
func TestRPCResultKeepsEmptyValues(t *testing.T) {
	tests := []struct {
		result string
		want   string
	}{
		{result: "[]", want: `"result":[]`},
		{result: "{}", want: `"result":{}`},
		{result: "null", want: `"result":null`},
		{result: "", want: ""},
	}
	for _, tt := range tests {
		var result []byte
		if tt.result != "" {
			result = []byte(tt.result)
		}
		data, err := Marshal(RPCResult{Type: TypeRPCResult, ID: 7, OK: true, Result: result})
		if err != nil {
			t.Fatal(err)
		}
		if tt.want == "" {
			if strings.Contains(string(data), `"result"`) {
				t.Errorf("no result: got %s", data)
			}
			continue
		}
		if !strings.Contains(string(data), tt.want) {
			t.Errorf("result %s: got %s, want it to contain %s", tt.result, data, tt.want)
		}
	}
}

// An answer is encoded without the JSON encoder (appendRPCResult), as the
// encoder would encode it: the same members and values.
func TestMarshalRPCResult(t *testing.T) {
	results := []string{`{"content":[{"type":"text","text":"é \u00e9 \"q\""}],"isError":false}`, "{\n  \"a\": [1, 2]\n}",
		`[]`, `{}`, `null`, `"x"`, `12.5`, ``}
	for _, id := range []uint64{0, 7, ^uint64(0)} {
		for _, result := range results {
			res := RPCResult{Type: TypeRPCResult, ID: id, OK: true}
			if result != "" {
				res.Result = jsontext.Value(result)
			}
			got, err := Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			if !jsontext.Value(got).IsValid() {
				t.Fatalf("invalid JSON: %s", got)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("Marshal = %s, the JSON encoder gives %s", got, want)
			}
		}
	}
	// An error is the encoder's to write.
	data, err := Marshal(RPCResult{Type: TypeRPCResult, ID: 1, Error: &RPCError{Kind: "invalid", Message: "no"}})
	if err != nil || !strings.Contains(string(data), `"error":{"kind":"invalid","message":"no"`) {
		t.Fatalf("error answer %s, %v", data, err)
	}
}
