package container

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The engine's working directory is this user's, enterable by others and
// writable only by it; anything else at its path is not used.
func TestEngineDir(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
		wantErr bool
	}{
		{"made", func(*testing.T, string) {}, false},
		{"kept, mode repaired", func(t *testing.T, path string) { mustDo(t, os.Mkdir(path, 0o700)) }, false},
		{"a symlink", func(t *testing.T, path string) { mustDo(t, os.Symlink(t.TempDir(), path)) }, true},
		{"a file", func(t *testing.T, path string) { mustDo(t, os.WriteFile(path, nil, 0o600)) }, true},
		{"another user's", func(t *testing.T, path string) {
			if os.Getuid() != 0 {
				t.Skip("chown needs root")
			}
			mustDo(t, os.Mkdir(path, 0o711))
			mustDo(t, os.Chown(path, 65534, 65534))
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			path := filepath.Join(tmp, "codemode-engine-"+strconv.Itoa(os.Getuid()))
			tc.prepare(t, path)
			dir, err := engineDir()
			if tc.wantErr {
				if err == nil {
					t.Fatalf("engineDir() = %s, want an error", dir)
				}
				return
			}
			if err != nil || dir != path {
				t.Fatalf("engineDir() = %q, %v; want %q", dir, err, path)
			}
			if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o711 {
				t.Fatalf("%s: %v, %v; want a directory with mode 0711", dir, fi.Mode(), err)
			}
		})
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
