package audit

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

var update = flag.Bool("update", false, "rewrite testdata/chain.log")

const golden = "testdata/chain.log"

// goldenRecords are the records of testdata/chain.log: an allowed call, an
// approved call with redacted arguments and a denied one.
func goldenRecords(t testing.TB) []Record {
	digest, err := ArgsDigest(map[string]any{"repo": "acme/web", "body": "token=hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	at := func(ms int) time.Time { return time.Date(2025, 3, 1, 9, 0, 0, ms*int(time.Millisecond), time.UTC) }
	return []Record{
		{Time: at(0), Kind: KindDecision, Principal: "client:claude-code", Session: "s-7", CallID: "c-1",
			Server: "github", Tool: "list_issues", Args: jsontext.Value(`{"repo":"acme/web","state":"open"}`),
			Decision: DecisionAllow, Rule: "rules[0]"},
		{Time: at(130), Kind: KindCall, Principal: "client:claude-code", Session: "s-7", CallID: "c-1",
			Server: "github", Tool: "list_issues", Outcome: OutcomeOK, DurationMS: 128},
		{Time: at(200), Kind: KindDecision, Principal: "client:claude-code", Session: "s-7", CallID: "c-2",
			Server: "github", Tool: "create_issue", ArgsSHA256: digest,
			Decision: DecisionAsk, Rule: "rules[2]", Reason: "writes need approval", Approver: "client:claude-code"},
		{Time: at(4100), Kind: KindCall, Principal: "client:claude-code", Session: "s-7", CallID: "c-2",
			Server: "github", Tool: "create_issue", Outcome: OutcomeError, Error: "422: validation failed", DurationMS: 310},
		{Time: at(4200), Kind: KindDecision, Principal: "client:claude-code", Session: "s-7", CallID: "c-3",
			Server: "shell", Tool: "exec", Args: jsontext.Value(`{"cmd":"rm -rf /"}`),
			Decision: DecisionDeny, Rule: "default", Reason: "no rule allows shell.exec"},
		{Time: at(4200), Kind: KindCall, Principal: "client:claude-code", Session: "s-7", CallID: "c-3",
			Server: "shell", Tool: "exec", Outcome: OutcomeDenied},
	}
}

// TestGolden pins the file format: the writer must produce
// testdata/chain.log byte for byte, so logs written by earlier versions keep
// verifying.
func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range goldenRecords(t) {
		if err := l.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
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
		t.Errorf("written log differs from %s (go test -update rewrites it):\n%s", golden, got)
	}
}

// TestTamper changes testdata/chain.log (six records) and checks what
// Verify prints. A changed line k is reported at line k+1, whose prev no
// longer matches; a changed last line has no successor, so the chain holds
// and only Head shows it.
func TestTamper(t *testing.T) {
	data, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	orig := strings.SplitAfter(string(data), "\n")[:6]
	goldenHead := sha(strings.TrimSuffix(orig[5], "\n"))
	edit := func(k int, old, new string) func([]string) []string {
		return func(l []string) []string {
			if !strings.Contains(l[k-1], old) {
				t.Fatalf("line %d has no %q", k, old)
			}
			l[k-1] = strings.Replace(l[k-1], old, new, 1)
			return l
		}
	}
	tests := []struct {
		name   string
		tamper func(lines []string) []string
		raw    func(data []byte) []byte // applied after tamper
		want   string                   // Report.String(), up to "; head" when ok
		head   bool                     // Head is that of the golden file
	}{
		{"intact", nil, nil, "ok: 6 records, seq 1..6, 1 file(s), chain starts at the first record ever", true},
		{"field edited", edit(3, `"approver":"client:claude-code"`, `"approver":"console:mallory"`), nil,
			"audit.log:4: record does not follow line 3 (prev hash mismatch): edited, removed or reordered", false},
		{"args edited", edit(1, `"state":"open"`, `"state":"all"`), nil,
			"audit.log:2: record does not follow line 1 (prev hash mismatch): edited, removed or reordered", false},
		{"seq edited", edit(3, `"seq":3`, `"seq":4`), nil,
			"audit.log:3: seq 4 after 2 at line 2 though prev matches: edited", false},
		{"first seq edited", edit(1, `"seq":1`, `"seq":2`), nil,
			"audit.log:1: first record (prev all zeros) has seq 2, want 1: edited", false},
		{"line removed", func(l []string) []string { return append(l[:2], l[3:]...) }, nil,
			"audit.log:3: record does not follow line 2 (prev hash mismatch, seq 4 after 2): removed or reordered", false},
		{"lines swapped", func(l []string) []string { l[2], l[3] = l[3], l[2]; return l }, nil,
			"audit.log:3: record does not follow line 2 (prev hash mismatch, seq 4 after 2): removed or reordered", false},
		{"line duplicated", func(l []string) []string { return append(l[:3], l[2:]...) }, nil,
			"audit.log:4: record does not follow line 3 (prev hash mismatch, seq 3 after 3): reordered or duplicated", false},
		{"forged line inserted with a valid prev", func(l []string) []string {
			forged := `{"seq":3,"time":"2025-03-01T09:00:00.15Z","kind":"call","outcome":"ok","prev":"` +
				sha(strings.TrimSuffix(l[1], "\n")) + "\"}\n"
			return append(l[:2], append([]string{forged}, l[2:]...)...)
		}, nil, "audit.log:4: record does not follow line 3 (prev hash mismatch, seq 3 after 3): reordered or duplicated", false},
		{"blank line inserted", func(l []string) []string { return append(l[:2], append([]string{"\n"}, l[2:]...)...) }, nil,
			"audit.log:3: not a valid record (jsontext: unexpected EOF): edited or corrupted", false},
		{"prev made invalid", edit(2, `"prev":"`, `"prev":"x`), nil,
			"audit.log:2: not a valid record (prev is not a hex SHA-256): edited or corrupted", false},
		{"last line truncated", nil, func(d []byte) []byte { return d[:len(d)-20] },
			"audit.log:6: last record has no newline: truncated", false},
		{"final newline removed", nil, func(d []byte) []byte { return d[:len(d)-1] },
			"audit.log:6: last record has no newline: truncated", false},
		{"last line edited: only Head shows it", edit(6, `"outcome":"denied"`, `"outcome":"ok"`), nil,
			"ok: 6 records, seq 1..6, 1 file(s), chain starts at the first record ever", false},
		{"last line removed: only Head shows it", func(l []string) []string { return l[:5] }, nil,
			"ok: 5 records, seq 1..5, 1 file(s), chain starts at the first record ever", false},
		{"first line removed: no longer from genesis", func(l []string) []string { return l[1:] }, nil,
			"ok: 5 records, seq 2..6, 1 file(s), chain starts at seq 2 (earlier records rotated away, not verified)", true},
		{"emptied", func([]string) []string { return nil }, nil, "ok: no records in 1 file(s)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			lines := append([]string(nil), orig...)
			if tt.tamper != nil {
				lines = tt.tamper(lines)
			}
			out := []byte(strings.Join(lines, ""))
			if tt.raw != nil {
				out = tt.raw(out)
			}
			if err := os.WriteFile("audit.log", out, 0o600); err != nil {
				t.Fatal(err)
			}
			rep, err := VerifyFile("audit.log")
			if err != nil {
				t.Fatal(err)
			}
			got := rep.String()
			if rep.OK() {
				got, _, _ = strings.Cut(got, "; head")
			}
			if got != tt.want {
				t.Errorf("Report.String() =\n%s\nwant\n%s", got, tt.want)
			}
			if (rep.Head == goldenHead) != tt.head {
				t.Errorf("Head = %s, golden head %s, want same = %v", rep.Head, goldenHead, tt.head)
			}
			if (rep.Err() == nil) != strings.HasPrefix(tt.want, "ok:") {
				t.Errorf("Err() = %v", rep.Err())
			}
		})
	}
}

func TestVerifyErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := VerifyFile(filepath.Join(dir, "missing.log")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("VerifyFile(missing) = %v, want ErrNotExist", err)
	}
	if _, err := Verify(); err == nil {
		t.Error("Verify() with no files succeeded")
	}
	if _, err := Verify(filepath.Join(dir, "missing.log")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Verify(missing) = %v, want ErrNotExist", err)
	}
}

// FuzzVerify feeds arbitrary files to the verifier: it must not panic, and
// whatever it passes must be a chain by a plain re-check.
func FuzzVerify(f *testing.F) {
	data, err := os.ReadFile(golden)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add(bytes.Replace(data, []byte(`"seq":2`), []byte(`"seq":3`), 1))
	f.Add([]byte{})
	f.Add([]byte("\n"))
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"seq":1,"prev":"` + genesis + `","seq":1}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := chain{report: Report{Files: []string{"f"}}}
		if err := c.read("f", bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		if !c.report.OK() {
			return
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			t.Fatalf("passed a file without a final newline: %v", c.report)
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		lines = lines[:len(lines)-1]
		if c.report.Records != len(lines) {
			t.Fatalf("passed %d records of %d lines", c.report.Records, len(lines))
		}
		var prev string
		var seq uint64
		for i, line := range lines {
			line = line[:len(line)-1]
			var r struct {
				Seq  uint64 `json:"seq"`
				Prev string `json:"prev"`
			}
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("passed line %d that does not parse: %v", i+1, err)
			}
			if i > 0 && (r.Prev != prev || r.Seq != seq+1) || r.Prev == genesis && r.Seq != 1 {
				t.Fatalf("passed line %d that does not follow line %d", i+1, i)
			}
			prev, seq = sha(string(line)), r.Seq
		}
		if c.report.Head != prev {
			t.Fatalf("Head %s, want %s", c.report.Head, prev)
		}
	})
}
