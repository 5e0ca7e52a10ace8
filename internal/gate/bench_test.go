package gate

import (
	"context"
	"testing"

	"github.com/codemode/codemode/internal/approval"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/policy"
)

// BenchmarkMiddleware measures what the policy boundary adds to an allowed
// nested call (the starter-like policy of the tests, no audit log; with
// audit, the log's own BenchmarkAppend adds its cost).
func BenchmarkMiddleware(b *testing.B) {
	p, err := policy.Parse([]byte(testPolicy), "toml")
	if err != nil {
		b.Fatal(err)
	}
	final := func(context.Context, *hostrpc.ToolCall) (any, error) { return nil, nil }
	call := toolCall("fs", "read_file", `{"path":"/data/notes.txt","encoding":"utf-8"}`)
	for _, bc := range []struct {
		name string
		mws  []hostrpc.ToolMiddleware
	}{
		{"direct", nil},
		{"gate", []hostrpc.ToolMiddleware{New(Options{Policy: fixed{p}, Approver: approval.New(approval.Options{})}).Middleware}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := hostrpc.Chain(final, bc.mws...)
			ctx := context.Background()
			for b.Loop() {
				if _, err := c(ctx, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
