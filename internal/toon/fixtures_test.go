package toon

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/testenv"
)

// specVersion is the TOON specification version this package implements; a
// fixture that needs a later one means the spec package was upgraded and
// the encoder must be reviewed.
const specVersion = "3.3"

// fixtureFile is the schema of tests/fixtures/*.json in @toon-format/spec.
type fixtureFile struct {
	Version     string        `json:"version"`
	Category    string        `json:"category"`
	Description string        `json:"description"`
	Tests       []fixtureCase `json:"tests"`
}

type fixtureCase struct {
	Name string `json:"name"`
	// Input stays raw so member order and number spelling reach EncodeJSON
	// exactly as written in the fixture.
	Input          json.RawMessage `json:"input"`
	Expected       json.RawMessage `json:"expected"`
	ShouldError    bool            `json:"shouldError"`
	Options        json.RawMessage `json:"options"`
	SpecSection    string          `json:"specSection"`
	Note           string          `json:"note"`
	MinSpecVersion string          `json:"minSpecVersion"`
}

// fixtureOptions are the encode options a fixture may set. Decoding with
// DisallowUnknownFields makes a fixture that uses an option we do not map
// fail instead of silently running with defaults.
type fixtureOptions struct {
	Delimiter    *string `json:"delimiter"`
	Indent       *int    `json:"indent"`
	KeyFolding   *string `json:"keyFolding"`
	FlattenDepth *int    `json:"flattenDepth"`
}

func (fo fixtureOptions) toOptions(t *testing.T) *Options {
	t.Helper()
	var o Options
	if fo.Delimiter != nil {
		if len(*fo.Delimiter) != 1 {
			t.Fatalf("fixture delimiter %q is not one byte", *fo.Delimiter)
		}
		o.Delimiter = Delimiter((*fo.Delimiter)[0])
	}
	if fo.Indent != nil {
		o.Indent = *fo.Indent
	}
	if fo.KeyFolding != nil {
		switch *fo.KeyFolding {
		case "off":
			o.KeyFolding = KeyFoldingOff
		case "safe":
			o.KeyFolding = KeyFoldingSafe
		default:
			t.Fatalf("fixture keyFolding %q is unknown", *fo.KeyFolding)
		}
	}
	if fo.FlattenDepth != nil {
		o.FlattenDepth = *fo.FlattenDepth
		if o.FlattenDepth == 0 {
			// Options uses 0 for "no limit"; the fixture's 0 means "fold
			// at most zero segments", which is what 1 does (§13.4: values
			// below 2 have no folding effect).
			o.FlattenDepth = 1
		}
	}
	return &o
}

// TestSpecFixtures runs every encode fixture of the pinned specification
// package.
func TestSpecFixtures(t *testing.T) {
	dir := filepath.Join(testenv.NodePackage(t, "@toon-format/spec"), "tests", "fixtures", "encode")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no encode fixtures in %s", dir)
	}
	cases := 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var ff fixtureFile
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ff); err != nil {
			t.Fatalf("decoding %s: %v", path, err)
		}
		if ff.Category != "encode" {
			t.Errorf("%s: category %q, want encode", path, ff.Category)
		}
		file := strings.TrimSuffix(filepath.Base(path), ".json")
		for _, fc := range ff.Tests {
			cases++
			t.Run(file+"/"+fc.Name, func(t *testing.T) {
				if v := fc.MinSpecVersion; v != "" && versionLess(specVersion, v) {
					t.Errorf("fixture needs spec %s, encoder implements %s", v, specVersion)
				}
				var fo fixtureOptions
				if len(fc.Options) > 0 {
					dec := json.NewDecoder(bytes.NewReader(fc.Options))
					dec.DisallowUnknownFields()
					if err := dec.Decode(&fo); err != nil {
						t.Fatalf("fixture options %s: %v", fc.Options, err)
					}
				}
				got, err := EncodeJSON(fc.Input, fo.toOptions(t))
				if fc.ShouldError {
					if err == nil {
						t.Fatalf("EncodeJSON(%s) = %q, want an error", fc.Input, got)
					}
					return
				}
				if err != nil {
					t.Fatalf("EncodeJSON(%s): %v", fc.Input, err)
				}
				var want string
				if err := json.Unmarshal(fc.Expected, &want); err != nil {
					t.Fatalf("fixture expected %s is not a string: %v", fc.Expected, err)
				}
				if got != want {
					t.Errorf("EncodeJSON(%s, %s)\n got: %q\nwant: %q", fc.Input, fc.Options, got, want)
				}
			})
		}
	}
	t.Logf("ran %d encode fixture cases from %d files", cases, len(files))
	if cases == 0 {
		t.Fatal("encode fixtures contain no cases")
	}
}

// versionLess compares MAJOR.MINOR version strings numerically.
func versionLess(a, b string) bool {
	am, an, _ := strings.Cut(a, ".")
	bm, bn, _ := strings.Cut(b, ".")
	ai, _ := strconv.Atoi(am)
	bi, _ := strconv.Atoi(bm)
	if ai != bi {
		return ai < bi
	}
	aj, _ := strconv.Atoi(an)
	bj, _ := strconv.Atoi(bn)
	return aj < bj
}
