package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// benchPolicy has 20 rules. With conditions set, every rule matches the
// call's server and tool and has a condition, the first 19 false and the
// last true: the most evaluation one call can cost. Without, 19 rules fail
// on their globs and the last matches with a condition.
func benchPolicy(b *testing.B, conditions bool) *Policy {
	var sb strings.Builder
	for i := range 19 {
		if conditions {
			fmt.Fprintf(&sb, "[[rules]]\nserver = \"f*\"\ntool = \"write_*\"\nwhen = 'args.path.startsWith(\"/etc/%d/\")'\ndecision = \"deny\"\n", i)
		} else {
			fmt.Fprintf(&sb, "[[rules]]\nserver = \"srv%d\"\ntool = \"tool_[0-9]*\"\ndecision = \"deny\"\n", i)
		}
	}
	sb.WriteString("[[rules]]\nserver = \"fs\"\nwhen = 'args.path.endsWith(\"secret.txt\") && principal != \"root\"'\ndecision = \"ask\"\n")
	return mustParse(b, "toml", sb.String())
}

func BenchmarkDecide(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name       string
		conditions bool
		in         Input
	}{
		{"20conditions", true, Input{Server: "fs", Tool: "write_file", Args: map[string]any{"path": "/home/a/secret.txt"}, Principal: "alice"}},
		{"19globs+condition", false, Input{Server: "fs", Tool: "write_file", Args: map[string]any{"path": "/home/a/secret.txt"}, Principal: "alice"}},
		{"20conditions/ArgsJSON", true, Input{Server: "fs", Tool: "write_file", ArgsJSON: []byte(`{"path":"/home/a/secret.txt","content":"hello"}`), Principal: "alice"}},
	} {
		p := benchPolicy(b, bc.conditions)
		if d := p.Decide(ctx, bc.in); d.Effect != Ask || d.Rule.Index != 19 {
			b.Fatalf("Decide = %v, want ask by rules[19]", d)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Decide(ctx, bc.in)
			}
		})
	}
}

func BenchmarkHidden(b *testing.B) {
	p := benchPolicy(b, true)
	for b.Loop() {
		p.Hidden("fs", "write_file")
	}
}

func BenchmarkAcquire(b *testing.B) {
	e := NewEnforcer(&mutableLimits{l: Limits{MaxCallsPerRun: 1 << 30, MaxConcurrentCalls: 16, CallsPerMinute: 1 << 30}})
	ctx := context.Background()
	var run Run
	b.ReportAllocs()
	for b.Loop() {
		release, err := e.Acquire(ctx, "alice", &run)
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
}
