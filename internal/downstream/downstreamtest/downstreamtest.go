// Package downstreamtest provides MCP servers for tests, including misbehaving
// ones that no npm server can imitate: a crash in the middle of a call, a
// server that never answers initialize, one that writes garbage, one that
// returns 10 MB. Test binaries run them from TestMain (see MaybeServe), so
// a test can configure its own binary as a downstream server.
package downstreamtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvVar selects the server kind a test binary should run instead of tests.
const EnvVar = "CODEMODE_TEST_DOWNSTREAM"

// MaybeServe runs the server named by EnvVar and exits, if it is set.
func MaybeServe() {
	kind := os.Getenv(EnvVar)
	if kind == "" {
		return
	}
	os.Exit(Serve(kind, os.Stdin, os.Stdout))
}

// Serve runs one kind of test server on the given stdio and returns an exit code.
func Serve(kind string, in io.ReadCloser, out io.WriteCloser) int {
	switch kind {
	case "hang-init":
		// Read requests forever, answer none.
		io.Copy(io.Discard, in)
		return 0
	case "garbage":
		// Answer everything with lines that are not JSON-RPC.
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			fmt.Fprintln(out, "this is not json {{{")
			fmt.Fprintln(out, `{"jsonrpc":"2.0","id":"what"`)
		}
		return 0
	case "asker":
		s := mcp.NewServer(&mcp.Implementation{Name: "asker"}, nil)
		AddAskTool(s)
		if err := s.Run(context.Background(), &mcp.IOTransport{Reader: in, Writer: out}); err != nil && err != context.Canceled {
			fmt.Fprintln(os.Stderr, "test server:", err)
			return 1
		}
		return 0
	case "tools", "self":
		if f := os.Getenv("CODEMODE_TEST_STARTS"); f != "" {
			// Count starts, for single-flight and restart tests.
			if fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
				fmt.Fprintln(fh, os.Getpid())
				fh.Close()
			}
		}
		name := "codemode-test-tools"
		if kind == "self" {
			name = "codemode"
		}
		s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{
			Instructions: "Tools for codemode's tests: echo, add, sleep and friends.\n\nNot for production."})
		addTools(s)
		if err := s.Run(context.Background(), &mcp.IOTransport{Reader: in, Writer: out}); err != nil && err != context.Canceled {
			fmt.Fprintln(os.Stderr, "test server:", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown test server kind %q\n", kind)
	return 2
}

type echoArgs struct {
	Message string `json:"message" jsonschema:"the text to echo back"`
}

type sleepArgs struct {
	Milliseconds int `json:"milliseconds" jsonschema:"how long to sleep"`
}

type meetArgs struct {
	Count        int `json:"count" jsonschema:"how many calls must be in flight at once"`
	Milliseconds int `json:"milliseconds" jsonschema:"how long to wait for them"`
}

// barrier lets calls of the meet tool wait for each other: a round ends
// when every call of it has left.
type barrier struct {
	mu       sync.Mutex
	inFlight int
	met      chan struct{} // closed when the round's count is reached
}

// meet waits until count calls are in flight at once, or wait has passed.
// Calls that run one after the other never meet, however fast they are.
func (b *barrier) meet(ctx context.Context, count int, wait time.Duration) (*mcp.CallToolResult, error) {
	b.mu.Lock()
	if b.inFlight == 0 {
		b.met = make(chan struct{})
	}
	b.inFlight++
	met := b.met
	if b.inFlight >= count {
		select {
		case <-met:
		default:
			close(met)
		}
	}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.inFlight--
		b.mu.Unlock()
	}()
	select {
	case <-met:
		return text(fmt.Sprintf("met %d", count)), nil
	case <-time.After(wait):
		return text(fmt.Sprintf("alone: %d calls were never in flight at once", count)), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type sizeArgs struct {
	Bytes int `json:"bytes" jsonschema:"size of the text to return"`
}

type addArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type sumResult struct {
	Sum float64 `json:"sum"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// AddAskTool adds a tool "ask" that asks its client a form question (or,
// with {"url": true}, a URL one) in its result (multi-round-trip, SEP-2322;
// the SDK asks a client of an older protocol itself) and, once answered,
// reports progress twice (when the call asks for it) and returns the
// answer: "<action> <name>".
func AddAskTool(s *mcp.Server) {
	type args struct {
		URL bool `json:"url,omitempty"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
		answer, answered := req.Params.InputResponses["question"].(*mcp.ElicitResult)
		if !answered {
			params := &mcp.ElicitParams{Mode: "form", Message: "Your name?", RequestedSchema: &map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}
			if a.URL {
				params = &mcp.ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.com/signin", ElicitationID: "e1"}
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"question": params}}, nil, nil
		}
		if tok := req.Params.GetProgressToken(); tok != nil {
			for i := 1; i <= 2; i++ {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 2, Message: "step"})
			}
		}
		//lint:ignore SA1019 relaying the deprecated logging is tested
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "asked"})
		if a.URL {
			req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: "e1"})
		}
		name, _ := answer.Content["name"].(string)
		return text(answer.Action + " " + name), nil, nil
	})
}

func addTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo a message back."},
		func(ctx context.Context, r *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return text("echo: " + a.Message), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "traceparent", Description: "Return the traceparent the call carried in _meta."},
		func(ctx context.Context, r *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			tp, _ := r.Params.GetMeta()["traceparent"].(string)
			return text(tp), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Sleep, then answer."},
		func(ctx context.Context, r *mcp.CallToolRequest, a sleepArgs) (*mcp.CallToolResult, any, error) {
			select {
			case <-time.After(time.Duration(a.Milliseconds) * time.Millisecond):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return text(fmt.Sprintf("slept %dms", a.Milliseconds)), nil, nil
		})
	var meeting barrier
	mcp.AddTool(s, &mcp.Tool{Name: "meet", Description: "Answer once count calls of this tool are in flight at once (a barrier)."},
		func(ctx context.Context, r *mcp.CallToolRequest, a meetArgs) (*mcp.CallToolResult, any, error) {
			res, err := meeting.meet(ctx, a.Count, time.Duration(a.Milliseconds)*time.Millisecond)
			return res, nil, err
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Return a large text."},
		func(ctx context.Context, r *mcp.CallToolRequest, a sizeArgs) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("x", a.Bytes)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers; structured result."},
		func(ctx context.Context, r *mcp.CallToolRequest, a addArgs) (*mcp.CallToolResult, sumResult, error) {
			return nil, sumResult{Sum: a.A + a.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Report a tool error."},
		func(ctx context.Context, r *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			res := text("it failed: " + a.Message)
			res.IsError = true
			return res, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the server in the middle of the call."},
		func(ctx context.Context, r *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Add a tool named by message and announce the change."},
		func(ctx context.Context, r *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: a.Message, Description: "Added at run time."},
				func(ctx context.Context, r *mcp.CallToolRequest, _ echoArgs) (*mcp.CallToolResult, any, error) {
					return text("new tool"), nil, nil
				})
			return text("added " + a.Message), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Return an environment variable."},
		func(ctx context.Context, r *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return text(os.Getenv(a.Message)), nil, nil
		})
}
