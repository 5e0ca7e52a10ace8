package downstream

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/serverconfig"
)

func openFDs() []string {
	entries, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range entries {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, target)
	}
	return out
}

// A crashed and restarted server leaves no descriptor behind.
func TestCrashLeaksNoDescriptors(t *testing.T) {
	p := newPool(t, Options{Servers: []serverconfig.Server{testServer(t, "tools", "tools")}})
	if _, err := p.CallTool(t.Context(), "tools", "echo", map[string]any{"message": "a"}); err != nil {
		t.Fatal(err)
	}
	before := openFDs()
	for i := 0; i < 3; i++ {
		_, err := p.CallTool(t.Context(), "tools", "crash", map[string]any{"message": "x"})
		var e *Error
		if !errors.As(err, &e) || e.Kind != "crashed" {
			t.Fatalf("crash %d: %v", i, err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := p.CallTool(t.Context(), "tools", "echo", map[string]any{"message": "b"}); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no restart")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	time.Sleep(200 * time.Millisecond)
	after := openFDs()
	if len(after) > len(before) {
		t.Fatalf("descriptors grew from %d to %d:\nbefore %s\nafter  %s", len(before), len(after), strings.Join(before, " "), strings.Join(after, " "))
	}
}
