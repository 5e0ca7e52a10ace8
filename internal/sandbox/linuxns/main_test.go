package linuxns

import (
	"os"
	"testing"
)

// The test binary doubles as the sandbox init, as codemode's own binary does.
func TestMain(m *testing.M) {
	if IsInit() {
		os.Exit(InitMain())
	}
	os.Exit(m.Run())
}
