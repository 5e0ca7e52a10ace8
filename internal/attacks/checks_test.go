package attacks

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestPidNamespaceAndSurvivors(t *testing.T) {
	self, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	if got := pidNamespace("noise\nPIDNS " + self + "\nVERDICT blocked x\n"); got != self {
		t.Fatalf("pidNamespace = %q, want %q", got, self)
	}
	if got := pidNamespace("no namespace here\n"); got != "" {
		t.Fatalf("pidNamespace = %q, want none", got)
	}
	// This test's own namespace holds (at least) this process: the check
	// must see it, or it could never see a survivor.
	left := survivors(self, 0)
	if !slices.ContainsFunc(left, func(s string) bool { return strings.HasPrefix(s, fmt.Sprintf("%d ", os.Getpid())) }) {
		t.Fatalf("survivors(%s) = %v, want this process among them", self, left)
	}
	if left := survivors("pid:[1]", 0); len(left) != 0 {
		t.Fatalf("survivors of a namespace nobody is in = %v", left)
	}
}
