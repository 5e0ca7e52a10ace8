package seccomp

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestDeniedNamesUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range Denied {
		if seen[name] {
			t.Errorf("%s listed twice", name)
		}
		seen[name] = true
	}
	for _, goarch := range []string{"amd64", "arm64"} {
		a, err := archFor(goarch)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range a.absent {
			if !slices.Contains(Denied, name) {
				t.Errorf("%s: absent %s is not in Denied", goarch, name)
			}
		}
	}
}

// The profiles are golden files: amd64's is the one codemode shipped
// before arm64 was covered, byte for byte.
func TestOCIProfile(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			got, err := ociProfile(goarch)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "oci_"+goarch+".json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("profile differs from %s (go test -update rewrites it):\n%s", golden, got)
			}
			var p struct {
				Architectures []string
				Syscalls      []struct{ Names []string }
			}
			if err := json.Unmarshal(got, &p); err != nil {
				t.Fatal(err)
			}
			a, _ := archFor(goarch)
			if !slices.Equal(p.Architectures, []string{a.oci}) {
				t.Errorf("architectures = %v, want only %s", p.Architectures, a.oci)
			}
			if n := len(p.Syscalls[0].Names); n != len(Denied)-len(a.absent) {
				t.Errorf("%d names denied, want %d", n, len(Denied)-len(a.absent))
			}
		})
	}
	if _, err := ociProfile("mips"); err == nil {
		t.Error("a profile for an architecture the policy does not cover")
	}
}
