package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/testenv"
)

// Every setting is documented in the README, by flag and by variable.
func TestREADMEDocumentsEverySetting(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	for _, s := range NewRegistry(nil).settings {
		if !strings.Contains(readme, "`--"+s.name+"`") {
			t.Errorf("README lacks the flag --%s", s.name)
		}
		for _, env := range s.env {
			if !strings.Contains(readme, "`"+env+"`") {
				t.Errorf("README lacks the variable %s", env)
			}
		}
	}
}
