package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	stdjson "encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestArgsDigest(t *testing.T) {
	canonical := sha(`{"a":1,"b":[true,null],"c":{"x":"é","y":2.5}}`)
	tests := []struct {
		name string
		args any
		want string
	}{
		{"canonical raw", []byte(`{"a":1,"b":[true,null],"c":{"x":"é","y":2.5}}`), canonical},
		{"reordered and spaced", jsontext.Value("{ \"c\": {\"y\": 2.50, \"x\": \"\\u00e9\"},\n \"b\": [true, null], \"a\": 1 }"), canonical},
		{"encoding/json raw", stdjson.RawMessage(`{"b":[true,null],"a":1,"c":{"x":"é","y":25e-1}}`), canonical},
		{"map", map[string]any{"c": map[string]any{"x": "é", "y": 2.5}, "b": []any{true, nil}, "a": 1}, canonical},
		{"empty object", map[string]any{}, sha(`{}`)},
		{"large ints keep their digits", []byte(`{"n":9007199254740993}`), sha(`{"n":9007199254740993}`)},
		{"neighbouring large int differs", []byte(`{"n":9007199254740992}`), sha(`{"n":9007199254740992}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ArgsDigest(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ArgsDigest = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestArgsDigestErrors(t *testing.T) {
	tests := []struct {
		name string
		args any
	}{
		{"invalid JSON", []byte(`{"a":`)},
		{"duplicate names", []byte(`{"a":1,"a":2}`)},
		{"unmarshalable", map[string]any{"f": func() {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := ArgsDigest(tt.args); err == nil {
				t.Errorf("ArgsDigest = %s, want an error", got)
			}
		})
	}
}

func TestArgsDigestLeavesInputAlone(t *testing.T) {
	raw := []byte(`{ "b": 1, "a": 2 }`)
	if _, err := ArgsDigest(raw); err != nil {
		t.Fatal(err)
	}
	if string(raw) != `{ "b": 1, "a": 2 }` {
		t.Errorf("input changed to %s", raw)
	}
}

func TestAppendRejects(t *testing.T) {
	digest := sha("x")
	tests := []struct {
		name string
		rec  Record
		want string
	}{
		{"no kind", Record{}, "kind"},
		{"unknown kind", Record{Kind: "result"}, "kind"},
		{"decision without decision", Record{Kind: KindDecision}, "decision"},
		{"unknown decision", Record{Kind: KindDecision, Decision: "maybe"}, "decision"},
		{"args not an object", Record{Kind: KindCall, Args: jsontext.Value(`[1]`)}, "object"},
		{"args invalid", Record{Kind: KindCall, Args: jsontext.Value(`{"a":`)}, "object"},
		{"args and digest", Record{Kind: KindCall, Args: jsontext.Value(`{}`), ArgsSHA256: digest}, "both"},
		{"digest not hex", Record{Kind: KindCall, ArgsSHA256: "xyz"}, "args_sha256"},
		{"digest upper case", Record{Kind: KindCall, ArgsSHA256: strings.ToUpper(digest)}, "args_sha256"},
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := l.Append(ctx, tt.rec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Append = %v, want an error about %s", err, tt.want)
			}
		})
	}
	// Refused records leave the log usable and out of the chain.
	if err := l.Append(ctx, Record{Kind: KindCall, Outcome: OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyFile(path)
	if err != nil || !rep.OK() || rep.Records != 1 || rep.LastSeq != 1 {
		t.Fatalf("VerifyFile = %v, %v; want 1 record", rep, err)
	}
}

// TestRecordLine checks what a line holds: the fields as given, time in
// UTC, arguments compacted onto the line, seq and prev filled in.
func TestRecordLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 3, 1, 12, 30, 0, 123456789, time.FixedZone("CET", 3600))
	in := []Record{{
		Time: at, Kind: KindDecision, Principal: "alice", Session: "s1", CallID: "c1",
		Server: "github", Tool: "create_issue",
		Args:     jsontext.Value("{\n  \"title\": \"x\",\n  \"body\": \"line\\nbreak\"\n}"),
		Decision: DecisionAsk, Rule: "rules[2]", Reason: "writes need approval", Approver: "console:alice",
		Seq: 99, Prev: "ignored",
	}, {
		Time: at, Kind: KindCall, CallID: "c1", Server: "github", Tool: "create_issue",
		Outcome: OutcomeError, Error: "bad \xff byte", DurationMS: 42,
	}}
	for _, r := range in {
		if err := l.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) != 3 || lines[2] != "" {
		t.Fatalf("want 2 lines, got %q", data)
	}
	first := strings.TrimSuffix(lines[0], "\n")
	wantFirst := `{"seq":1,"time":"2025-03-01T11:30:00.123456789Z","kind":"decision","principal":"alice","session":"s1",` +
		`"call_id":"c1","server":"github","tool":"create_issue","args":{"title":"x","body":"line\nbreak"},"decision":"ask",` +
		`"rule":"rules[2]","reason":"writes need approval","approver":"console:alice","prev":"` + genesis + `"}`
	if first != wantFirst {
		t.Errorf("line 1:\n got %s\nwant %s", first, wantFirst)
	}
	got, err := parseLine([]byte(strings.TrimSuffix(lines[1], "\n")))
	if err != nil {
		t.Fatal(err)
	}
	want := in[1]
	want.Seq, want.Prev, want.Time, want.Error = 2, sha(first), at.UTC(), "bad \ufffd byte"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("line 2 (-want +got):\n%s", diff)
	}
}

func TestAppendFillsTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if err := l.Append(context.Background(), Record{Kind: KindCall}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseLine([]byte(strings.TrimSuffix(string(data), "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if r.Time.Before(before.Add(-time.Second)) || r.Time.After(time.Now()) || r.Time.Location() != time.UTC {
		t.Errorf("time = %v, want now in UTC", r.Time)
	}
}
