package attacks_test

import (
	"os"
	"testing"

	"github.com/codemode/codemode/internal/sandbox/linuxns"
)

// The native backend re-executes the test binary as the sandbox's init.
func TestMain(m *testing.M) {
	if linuxns.IsInit() {
		os.Exit(linuxns.InitMain())
	}
	os.Exit(m.Run())
}
