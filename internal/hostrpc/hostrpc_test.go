package hostrpc

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// encoded is a result that is JSON already.
type encoded string

func (e encoded) JSON() jsontext.Value { return jsontext.Value(e) }

func TestMuxServe(t *testing.T) {
	mux := NewMux()
	mux.Handle("echo", func(_ context.Context, req *Request) (any, error) {
		var p struct {
			Text string `json:"text"`
		}
		if err := Decode(req, &p); err != nil {
			return nil, err
		}
		return map[string]string{"text": p.Text, "principal": req.Caller.Principal}, nil
	})
	mux.Handle("fail", func(context.Context, *Request) (any, error) {
		return nil, &Error{Kind: "denied", Message: "not you", Server: "fs", Tool: "write"}
	})
	mux.Handle("crash", func(context.Context, *Request) (any, error) { return nil, errors.New("disk on fire") })
	mux.Handle("unencodable", func(context.Context, *Request) (any, error) { return func() {}, nil })
	// A JSON encoding would sort these keys and drop the spaces.
	mux.Handle("encoded", func(context.Context, *Request) (any, error) { return encoded(`{"b": 1, "a": 2}`), nil })
	tests := []struct {
		method, params, want, wantErr string
	}{
		{"echo", `{"text":"hi"}`, `{"principal":"alice","text":"hi"}`, ""},
		{"echo", ``, `{"principal":"alice","text":""}`, ""},
		{"echo", `{"text":"hi","extra":1}`, "", "invalid: invalid parameters for echo"},
		{"fail", ``, "", "denied: not you (fs.write)"},
		{"crash", ``, "", "error: disk on fire"},
		{"unencodable", ``, "", "internal: encoding the result of unencodable"},
		{"nope", ``, "", "invalid: Unknown RPC type: nope"},
		{"encoded", ``, `{"b": 1, "a": 2}`, ""},
	}
	for _, tc := range tests {
		res, rerr := mux.Serve(context.Background(), &Request{Method: tc.method, Params: jsontext.Value(tc.params), Caller: Caller{Principal: "alice"}})
		if tc.wantErr != "" {
			got := ""
			if rerr != nil {
				got = rerr.Kind + ": " + rerr.Message
				if rerr.Server != "" {
					got += " (" + rerr.Server + "." + rerr.Tool + ")"
				}
			}
			if !strings.HasPrefix(got, tc.wantErr) {
				t.Errorf("%s %s: error %q, want prefix %q", tc.method, tc.params, got, tc.wantErr)
			}
			continue
		}
		if rerr != nil || string(res) != tc.want {
			t.Errorf("%s %s = %s, %+v; want %s", tc.method, tc.params, res, rerr, tc.want)
		}
	}
	if got := strings.Join(mux.Methods(), ","); got != "crash,echo,encoded,fail,unencodable" {
		t.Errorf("Methods() = %s", got)
	}
}

func TestMiddlewareOrder(t *testing.T) {
	var trail []string
	mw := func(name string) Middleware {
		return func(method string, next Handler) Handler {
			return func(ctx context.Context, req *Request) (any, error) {
				trail = append(trail, name+">"+method)
				return next(ctx, req)
			}
		}
	}
	mux := NewMux()
	mux.Use(mw("outer"))
	mux.Handle("a", func(context.Context, *Request) (any, error) { trail = append(trail, "handler"); return nil, nil })
	mux.Use(mw("inner")) // added after Handle: still wraps it
	mux.Serve(context.Background(), &Request{Method: "a"})
	if got := strings.Join(trail, " "); got != "outer>a inner>a handler" {
		t.Errorf("trail = %q", got)
	}
}

func TestHandleTwicePanics(t *testing.T) {
	mux := NewMux()
	mux.Handle("a", func(context.Context, *Request) (any, error) { return nil, nil })
	defer func() {
		if recover() == nil {
			t.Error("registering a method twice did not panic")
		}
	}()
	mux.Handle("a", func(context.Context, *Request) (any, error) { return nil, nil })
}

func TestChain(t *testing.T) {
	var trail []string
	mw := func(name string, refuse bool) ToolMiddleware {
		return func(next ToolCaller) ToolCaller {
			return func(ctx context.Context, c *ToolCall) (any, error) {
				trail = append(trail, name)
				if refuse {
					return nil, &Error{Kind: "denied", Message: name + " refused"}
				}
				return next(ctx, c)
			}
		}
	}
	final := func(context.Context, *ToolCall) (any, error) { trail = append(trail, "server"); return "ok", nil }
	res, err := Chain(final, mw("policy", false), mw("audit", false))(context.Background(), &ToolCall{Server: "fs", Tool: "read"})
	if res != "ok" || err != nil || strings.Join(trail, ",") != "policy,audit,server" {
		t.Fatalf("chain: %v %v %v", res, err, trail)
	}
	trail = nil
	_, err = Chain(final, mw("policy", true), mw("audit", false))(context.Background(), &ToolCall{})
	if ToWire(err).Kind != "denied" || strings.Join(trail, ",") != "policy" {
		t.Fatalf("a refusing middleware let the call through: %v %v", err, trail)
	}
}
