package serverconfig

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestStripJSONC(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        string
	}{
		{name: "plain JSON unchanged", in: `{"a": [1, 2], "b": "x"}`, want: `{"a": [1, 2], "b": "x"}`},
		{name: "line comment", in: "{\"a\": 1 // one\n}", want: "{\"a\": 1       \n}"},
		{name: "block comment keeps newlines", in: "{/* a\nb */\"a\": 1}", want: "{    \n    \"a\": 1}"},
		{name: "trailing comma in object", in: `{"a": 1,}`, want: `{"a": 1 }`},
		{name: "trailing comma in array", in: `[1, 2, ]`, want: `[1, 2  ]`},
		{name: "trailing comma before comment", in: "[1, // c\n]", want: "[1      \n]"},
		{name: "comment markers in strings", in: `{"u": "http://x/*y*/", "c": ","}`, want: `{"u": "http://x/*y*/", "c": ","}`},
		{name: "escaped quote in string", in: `{"a": "\"//", "b": 1,}`, want: `{"a": "\"//", "b": 1 }`},
		{name: "comma inside string before brace", in: `{"a": ",}"}`, want: `{"a": ",}"}`},
		{name: "byte order mark", in: "\uFEFF{}", want: "   {}"},
		{name: "unterminated block comment", in: "{\n  /* open", wantErr: "line 2, column 3: unterminated /* comment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := stripJSONC([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("stripJSONC(%q) error = %v, want %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("stripJSONC(%q): %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Errorf("stripJSONC(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzStripJSONC checks that stripping never panics, keeps the length and
// the newlines, leaves valid JSON alone, and leaves string contents alone.
func FuzzStripJSONC(f *testing.F) {
	for _, s := range []string{
		`{"a": 1}`, "{\"a\": 1, // x\n}", "/* a */ [1, 2,]", `{"s": "/* not a comment */"}`,
		`"\\"`, `"unterminated`, "/*", "//", "[,]", "\uFEFF{}", `{"a":"\"\\//",}`,
	} {
		f.Add([]byte(s))
	}
	addFixtureSeeds(f, ".json")
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := stripJSONC(in)
		if err != nil {
			if !strings.Contains(err.Error(), "unterminated /* comment") {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if len(out) != len(in) {
			t.Fatalf("length %d, want %d", len(out), len(in))
		}
		for i := range in {
			if (in[i] == '\n') != (out[i] == '\n') {
				t.Fatalf("newline moved at offset %d", i)
			}
		}
		if json.Valid(in) && string(out) != string(in) && !strings.HasPrefix(string(in), "\uFEFF") {
			t.Fatalf("valid JSON changed: %q -> %q", in, out)
		}
		// Every JSON string in the output is byte-identical to the input.
		for i := 0; i < len(out); i++ {
			if out[i] == '"' {
				end := skipString(out, i)
				if string(out[i:end]) != string(in[i:end]) {
					t.Fatalf("string at %d changed: %q -> %q", i, in[i:end], out[i:end])
				}
				i = end - 1
			}
		}
	})
}
