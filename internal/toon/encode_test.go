package toon

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestEncodeJSON(t *testing.T) {
	safe := &Options{KeyFolding: KeyFoldingSafe}
	tests := []struct {
		name string
		json string
		opts *Options
		want string
	}{
		// §2 canonical numbers, computed on the decimal digits.
		{"integer with fraction zero", `[1.0,-2.000,100e-2]`, nil, "[3]: 1,-2,1"},
		{"exponent in range", `[1e6,1E+6,1.5e3,25e-1]`, nil, "[4]: 1000000,1000000,1500,2.5"},
		{"negative zero", `[-0,-0.0,-0e10,0e-5]`, nil, "[4]: 0,0,0,0"},
		{"small boundary", `[0.000001,1e-6,0.00000100,1e-7,9.9e-7]`, nil, "[5]: 0.000001,0.000001,0.000001,1e-7,9.9e-7"},
		{"large boundary", `[1e20,999999999999999999999,1e21,-1e21]`, nil,
			"[4]: 100000000000000000000,999999999999999999999,1e+21,-1e+21"},
		{"digits beyond float64", `[12345678901234567890,0.30000000000000000001]`, nil,
			"[2]: 12345678901234567890,0.30000000000000000001"},
		{"exponent form keeps all digits", `[12345678901234567890123,-1.25e-30,1e400]`, nil,
			"[3]: 1.2345678901234567890123e+22,-1.25e-30,1e+400"},
		{"exponent with leading zeros", `[1e007,5E-0010]`, nil, "[2]: 10000000,5e-10"},

		// §7.2 quoting and §7.1 escaping.
		{"safe strings stay bare", `["hello world","café","a.b","x-y","DEL\u007f","a'b"]`, nil,
			"[6]: hello world,café,a.b,x-y,DEL\x7f,a'b"},
		{"literal look-alikes", `["true","null","42","-1","1e5","05","Infinity","True","0x1F"]`, nil,
			`[9]: "true","null","42","-1","1e5","05",Infinity,True,0x1F`},
		// §7.2's pattern has no "+", and "#" is not structural in 3.3.
		{"plus sign and hash stay bare", `["+5","+1.5e3","+","#","#tag"]`, nil, "[5]: +5,+1.5e3,+,#,#tag"},
		{"structural characters", `["a:b","[x]","{y}","say \"hi\"","back\\slash","-","-x","a#b"]`, nil,
			`[8]: "a:b","[x]","{y}","say \"hi\"","back\\slash","-","-x",a#b`},
		{"unicode whitespace at the edges", `["\u00a0x","x\u3000","\ufeffx","x\u0085","a\u00a0b"]`, nil,
			"[5]: \"\u00a0x\",\"x\u3000\",\"\ufeffx\",\"x\u0085\",a\u00a0b"},
		{"control escapes", `{"s":"\u0000\u0001\b\f\n\r\t\u001f"}`, nil, `s: "\u0000\u0001\u0008\u000c\n\r\t\u001f"`},
		{"escaped input decodes first", `["\u0041\/\u00e9","\ud83d\ude00"]`, nil, "[2]: A/é,😀"},
		{"document delimiter in object values", `{"a":"x|y","b":"x,y"}`, &Options{Delimiter: Pipe}, "a: \"x|y\"\nb: x,y"},
		{"keys", `{"":1,"a b":2,"a.b":3,"_x9":4,"9x":5,"é":6}`, nil,
			"\"\": 1\n\"a b\": 2\na.b: 3\n_x9: 4\n\"9x\": 5\n\"é\": 6"},

		// Object member order and repeated names.
		{"document order", `{"b":1,"2":2,"a":3}`, nil, "b: 1\n\"2\": 2\na: 3"},
		{"repeated name", `{"a":1,"b":2,"a":3}`, nil, "a: 3\nb: 2"},
		{"repeated name in a large object", `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,` +
			`"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k3":"x","k16":"y"}`, nil,
			"k0: 0\nk1: 1\nk2: 2\nk3: x\nk4: 4\nk5: 5\nk6: 6\nk7: 7\nk8: 8\nk9: 9\nk10: 10\nk11: 11\nk12: 12\n" +
				"k13: 13\nk14: 14\nk15: 15\nk16: y"},

		// Empty values in each position (§8, §9.1, §9.2, §10).
		{"root empty object", `{}`, nil, ""},
		{"root empty array", ` [ ] `, nil, "[]"},
		{"root empty string", `""`, nil, `""`},
		{"empty array as list item", `[[],[1]]`, nil, "[2]:\n  - [0]:\n  - [1]: 1"},
		{"empty object as list item", `{"a":[{},{"b":{}}]}`, nil, "a[2]:\n  -\n  - b:"},
		{"empty array as first field", `[{"a":[],"b":1},2]`, nil, "[2]:\n  - a: []\n    b: 1\n  - 2"},

		// Arrays (§9) and list items (§10).
		{"tabular rows in header order", `[{"a":1,"b":"x y"},{"b":"z","a":2}]`, nil, "[2]{a,b}:\n  1,x y\n  2,z"},
		{"tab delimiter", `{"t":[{"a":"x,y","b":"p\tq"}]}`, &Options{Delimiter: Tab}, "t[1\t]{a\tb}:\n  x,y\t\"p\\tq\""},
		{"nested list of objects", `[[{"a":1},{"a":2}]]`, nil, "[1]:\n  - [2]:\n    - a: 1\n    - a: 2"},
		{"tabular first field with wide indent", `[{"t":[{"x":1}],"y":2}]`, &Options{Indent: 4},
			"[1]:\n    - t[1]{x}:\n            1\n        y: 2"},
		{"object first field", `[{"o":{"p":1,"q":[1,2]},"r":3}]`, nil, "[1]:\n  - o:\n      p: 1\n      q[2]: 1,2\n    r: 3"},
		{"list first field", `[{"l":[1,{"a":1}]}]`, nil, "[1]:\n  - l[2]:\n      - 1\n      - a: 1"},

		// §13.4 key folding.
		{"fold ends at multi-key object", `{"a":{"b":{"c":1,"d":2}}}`, safe, "a.b:\n  c: 1\n  d: 2"},
		{"fold needs every segment an identifier", `{"a":{"b-c":{"d":1}}}`, safe, "a:\n  \"b-c\":\n    d: 1"},
		{"fold stops at dotted segment", `{"a":{"b.c":{"d":1}}}`, safe, "a:\n  b.c:\n    d: 1"},
		{"fold below a multi-key object", `{"o":{"x":1,"a":{"b":2}}}`, safe, "o:\n  x: 1\n  a.b: 2"},
		{"fold budget is shared along a path", `{"a":{"b":{"c":1,"d":{"e":{"f":2}}}}}`,
			&Options{KeyFolding: KeyFoldingSafe, FlattenDepth: 3}, "a.b:\n  c: 1\n  d:\n    e:\n      f: 2"},
		{"fold budget left for a nested chain", `{"a":{"b":{"c":1,"d":{"e":{"f":2}}}}}`,
			&Options{KeyFolding: KeyFoldingSafe, FlattenDepth: 4}, "a.b:\n  c: 1\n  d.e:\n    f: 2"},
		{"fold to empty object and array", `{"a":{"b":{}},"c":{"d":[]}}`, safe, "a.b:\nc.d: []"},
		{"fold in list items", `[{"a":{"b":1},"c":{"d":{"e":2}}}]`, safe, "[1]:\n  - a.b: 1\n    c.d.e: 2"},
		{"fold avoids sibling key", `[{"a.b":1,"a":{"b":2}}]`, safe, "[1]:\n  - a.b: 1\n    a:\n      b: 2"},
		{"fold avoids root dotted path", `{"x.y.z":0,"x":{"q":1,"y":{"z":2}}}`, safe,
			"x.y.z: 0\nx:\n  q: 1\n  y:\n    z: 2"},
		{"root path check stops at arrays", `{"a.b":0,"l":[{"a":{"b":1}}]}`, safe, "a.b: 0\nl[1]:\n  - a.b: 1"},
		{"flatten depth 1 folds nothing", `{"a":{"b":1}}`, &Options{KeyFolding: KeyFoldingSafe, FlattenDepth: 1}, "a:\n  b: 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EncodeJSON([]byte(tc.json), tc.opts)
			if err != nil {
				t.Fatalf("EncodeJSON(%s): %v", tc.json, err)
			}
			if got != tc.want {
				t.Errorf("EncodeJSON(%s)\n got: %q\nwant: %q", tc.json, got, tc.want)
			}
		})
	}
}

func TestEncodeJSONErrors(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"empty input", ``, "unexpected end of input"},
		{"unclosed object", `{"a":1`, "unexpected end of input in object"},
		{"trailing comma", `[1,]`, "want a value"},
		{"leading zero", `01`, "after top-level value"},
		{"bare fraction point", `1.`, "invalid number"},
		{"lone minus", `-`, "invalid number"},
		{"bad literal", `tru`, "want true"},
		{"two values", `1 2`, "after top-level value"},
		{"missing colon", `{"a" 1}`, "want ':'"},
		{"unquoted key", `{a:1}`, "want a member name"},
		{"raw control character", "\"a\x01\"", "control character"},
		{"unknown escape", `"\q"`, "invalid escape"},
		{"short unicode escape", `"\u12"`, "invalid \\u escape"},
		{"lone high surrogate", `"\ud800"`, "unpaired surrogate"},
		{"lone low surrogate", `"\udc00"`, "unpaired surrogate"},
		{"high surrogate before letter", `"\ud800\u0041"`, "unpaired surrogate"},
		{"invalid UTF-8", "\"a\xffb\"", "invalid UTF-8"},
		{"invalid UTF-8 after escape", "\"\\n\xc3\"", "invalid UTF-8"},
		{"unterminated string", `"abc`, "unterminated string"},
		{"huge exponent", `1e99999999999999999999`, "exponent out of range"},
		{"deep nesting", strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), "nesting exceeds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EncodeJSON([]byte(tc.json), nil)
			if err == nil {
				t.Fatalf("EncodeJSON(%q) = %q, want an error", tc.json, got)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "toon: encoding JSON: ") || !strings.Contains(msg, tc.want) {
				t.Errorf("EncodeJSON(%q) error = %q, want it to mention %q", tc.json, msg, tc.want)
			}
		})
	}
}

func TestDeepButAllowedNesting(t *testing.T) {
	// Parse only: the encoded form of this document is quadratic in size.
	doc := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	if _, err := parseJSON(doc); err != nil {
		t.Fatalf("parseJSON(%d nested arrays): %v", maxDepth, err)
	}
}

func TestInvalidOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"negative indent", Options{Indent: -1}, "invalid indent"},
		{"unknown delimiter", Options{Delimiter: ';'}, "invalid delimiter"},
		{"unknown folding mode", Options{KeyFolding: 7}, "invalid key folding mode"},
		{"negative flatten depth", Options{FlattenDepth: -1}, "invalid flatten depth"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := EncodeJSON([]byte(`{}`), &tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("EncodeJSON with %+v: error %v, want %q", tc.opts, err, tc.want)
			}
			if _, err := Encode(map[string]any{}, &tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Encode with %+v: error %v, want %q", tc.opts, err, tc.want)
			}
		})
	}
}

type record struct {
	Name    string    `json:"name"`
	Count   int       `json:"count"`
	Skipped string    `json:"-"`
	When    time.Time `json:"when"`
	Tags    []string  `json:"tags,omitempty"`
}

func TestEncode(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	when := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		v       any
		want    string
		wantErr string
	}{
		{name: "nil", v: nil, want: "null"},
		{name: "sorted map keys", v: map[string]any{"b": 1, "a": true, "c": nil}, want: "a: true\nb: 1\nc: null"},
		{name: "non-finite floats", v: []any{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1)}, want: "[4]: null,null,null,0"},
		{name: "shortest float digits", v: []any{0.1, float32(0.1), 1e21, 1.5e-7, 123456789.0}, want: "[5]: 0.1,0.1,1e+21,1.5e-7,123456789"},
		{name: "integer limits", v: []any{int64(math.MinInt64), uint64(math.MaxUint64), int8(-8), uint16(16)},
			want: "[4]: -9223372036854775808,18446744073709551615,-8,16"},
		{name: "json.Number", v: map[string]any{"n": json.Number("1.50e2")}, want: "n: 150"},
		{name: "json.RawMessage keeps order", v: json.RawMessage(`{"z":1,"a":2}`), want: "z: 1\na: 2"},
		{name: "empty json.RawMessage", v: json.RawMessage(nil), want: "null"},
		{name: "invalid UTF-8", v: "a\xffb", want: "a\ufffdb"},
		{name: "struct via encoding/json", v: []record{{Name: "x", Count: 1, When: when}, {Name: "y", Count: 2, When: when}},
			want: "[2]{name,count,when}:\n  x,1,\"2026-09-01T12:00:00Z\"\n  y,2,\"2026-09-01T12:00:00Z\""},
		{name: "typed map and slice", v: map[string][]int{"b": {1}, "a": {}}, want: "a: []\nb[1]: 1"},
		{name: "invalid json.Number", v: json.Number("1.2.3"), wantErr: "invalid json.Number"},
		{name: "unsupported type", v: map[string]any{"c": make(chan int)}, wantErr: "json: unsupported type"},
		{name: "cycle", v: cyclic, wantErr: "nesting exceeds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Encode(tc.v, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "toon: encoding ") {
					t.Fatalf("Encode(%T) = %q, %v; want error mentioning %q", tc.v, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Encode(%T): %v", tc.v, err)
			}
			if got != tc.want {
				t.Errorf("Encode(%T)\n got: %q\nwant: %q", tc.v, got, tc.want)
			}
		})
	}
}

// TestEncodeAgreesWithEncodeJSON checks that the Go-value path and the JSON
// path give the same text for a value encoding/json can round-trip.
func TestEncodeAgreesWithEncodeJSON(t *testing.T) {
	v := map[string]any{
		"rows":  []any{map[string]any{"id": 1, "ok": true}, map[string]any{"id": 2, "ok": false}},
		"mixed": []any{"a", 1.5, []any{1, 2}, map[string]any{}},
		"deep":  map[string]any{"k": map[string]any{"s": "x: y"}},
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	opts := &Options{Delimiter: Pipe, Indent: 3, KeyFolding: KeyFoldingSafe}
	fromJSON, err := EncodeJSON(data, opts)
	if err != nil {
		t.Fatal(err)
	}
	fromGo, err := Encode(v, opts)
	if err != nil {
		t.Fatal(err)
	}
	if fromGo != fromJSON {
		t.Errorf("Encode = %q\nEncodeJSON = %q", fromGo, fromJSON)
	}
}

func TestLooksNumeric(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "+0": false, "+5": false, "12.5": true, "1e9": true, "1E-9": true, "007": true,
		"1.": false, ".5": false, "1e": false, "e1": false, "1.5.2": false, "--1": false, "0x10": false,
		"1e+": false, "١": false, " 1": false,
	} {
		if got := looksNumeric(s); got != want {
			t.Errorf("looksNumeric(%q) = %v, want %v", s, got, want)
		}
	}
}
