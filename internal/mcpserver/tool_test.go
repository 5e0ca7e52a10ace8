package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

func TestParseArgs(t *testing.T) {
	a, err := parseArgs(jsontext.Value(`{"code":"x","servers":["a","b","a"],"timeout":7,"session":"s-1.b","reset":true}`), 120)
	if err != nil {
		t.Fatal(err)
	}
	if a.Code != "x" || strings.Join(a.Servers, ",") != "a,b" || a.Timeout != 7*time.Second || a.Session != "s-1.b" || !a.Reset {
		t.Fatalf("parseArgs = %+v", a)
	}
	if _, err := parseArgs(jsontext.Value(`{"code":"x","code":"y"}`), 120); err == nil {
		t.Error("duplicate keys accepted")
	}
}

func TestParseArgsClose(t *testing.T) {
	tests := []struct {
		raw     string
		wantErr string
	}{
		{`{"session":"a","close":true}`, ""},
		{`{"code":"print(1)","close":true}`, ""},
		{`{"session":"a","close":false}`, "Missing 'code' argument"},
		{`{"code":"","close":"yes"}`, "'close' must be a boolean"},
		{`{"code":1,"close":true}`, "Missing 'code' argument"},
	}
	for _, tc := range tests {
		a, err := parseArgs(jsontext.Value(tc.raw), 120)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%s: error %v, want %q", tc.raw, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !a.Close {
			t.Errorf("%s = %+v, %v; want close", tc.raw, a, err)
		}
	}
}

func TestParseArgsTimeout(t *testing.T) {
	tests := []struct {
		raw     string
		want    time.Duration
		wantErr string
	}{
		{`10`, 10 * time.Second, ""},
		{`"10"`, 10 * time.Second, ""}, // quoted numbers are common in model output
		{`" 5 "`, 5 * time.Second, ""},
		{`"ten"`, 0, "'timeout' must be an integer number of seconds, e.g. 30"},
		{`1.5`, 0, "'timeout' must be an integer number of seconds, e.g. 30"},
		{`"500"`, 0, "'timeout' must be between 1 and 120 seconds"},
	}
	for _, tc := range tests {
		a, err := parseArgs(jsontext.Value(`{"code":"x","timeout":`+tc.raw+`}`), 120)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("timeout %s: error %v, want %q", tc.raw, err, tc.wantErr)
			}
			continue
		}
		if err != nil || a.Timeout != tc.want {
			t.Errorf("timeout %s = %v, %v; want %v", tc.raw, a.Timeout, err, tc.want)
		}
	}
}

func TestInputSchemaIsValidJSON(t *testing.T) {
	var v map[string]any
	if err := json.Unmarshal(inputSchema(30, 120), &v); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseArgs: any input either validates into sane arguments or gives a
// validation error; nothing panics.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{`{"code":"print(1)"}`, `{}`, `null`, `{"code":"x","timeout":1e309}`, `{"code":"x","servers":[1]}`,
		`{"code":"x","session":"a/b"}`, `{"code":"x","timeout":-0}`, `{"close":true}`, `{"code":" ","close":1}`, `[]`, `{"code":"\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := parseArgs(jsontext.Value(data), 120)
		if err != nil {
			if _, ok := err.(validationError); !ok {
				t.Fatalf("error %T %v is not a validation error", err, err)
			}
			return
		}
		if strings.TrimSpace(a.Code) == "" && !a.Close || a.Timeout < 0 || a.Timeout > 120*time.Second || (a.Session != "" && !sessionName.MatchString(a.Session)) {
			t.Fatalf("accepted bad arguments %+v from %q", a, data)
		}
	})
}
