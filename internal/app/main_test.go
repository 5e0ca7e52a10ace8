package app

import (
	"os"
	"testing"

	"github.com/codemode/codemode/internal/sandbox/linuxns"
)

func TestMain(m *testing.M) {
	if linuxns.IsInit() {
		os.Exit(linuxns.InitMain())
	}
	os.Exit(m.Run())
}
