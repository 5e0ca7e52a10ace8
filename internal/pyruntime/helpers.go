package pyruntime

import (
	"fmt"
	"strings"
)

// Helper documents one helper of the runtime for the capabilities manual.
type Helper struct {
	Signature, Doc string
}

// Helpers reads the helper docs kept beside the runtime
// (python/mcp/helpers.md), in order.
func Helpers() ([]Helper, error) {
	data, err := files.ReadFile("python/mcp/helpers.md")
	if err != nil {
		return nil, fmt.Errorf("pyruntime: helper docs: %w", err)
	}
	var out []Helper
	for n, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "- `") {
			continue
		}
		sig, doc, ok := strings.Cut(line[3:], "` — ")
		if !ok || sig == "" || doc == "" {
			return nil, fmt.Errorf("pyruntime: helpers.md:%d: want \"- `signature` — doc\"", n+1)
		}
		out = append(out, Helper{Signature: sig, Doc: doc})
	}
	return out, nil
}
