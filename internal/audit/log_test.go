package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// record is a typical call record; i varies it.
func record(i int) Record {
	return Record{
		Time: time.Date(2025, 3, 1, 12, 0, i%60, 0, time.UTC),
		Kind: KindCall, Principal: "client:claude-code", Session: "s-1", CallID: fmt.Sprintf("c-%d", i),
		Server: "github", Tool: fmt.Sprintf("t%d", i), Args: jsontext.Value(fmt.Sprintf(`{"n":%d,"q":"issues"}`, i)),
		Outcome: OutcomeOK, DurationMS: int64(i),
	}
}

// appendN opens path, appends records from..to-1 and closes it.
func appendN(t testing.TB, path string, opts Options, from, to int) {
	t.Helper()
	l, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := from; i < to; i++ {
		if err := l.Append(context.Background(), record(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// mustVerify verifies path and its rotated files and wants the chain whole.
func mustVerify(t *testing.T, path string) Report {
	t.Helper()
	rep, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("VerifyFile: %v", rep)
	}
	return rep
}

func TestAppendVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	appendN(t, path, Options{}, 0, 20)
	rep := mustVerify(t, path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if rep.Records != 20 || rep.FirstSeq != 1 || rep.LastSeq != 20 || !rep.Genesis || rep.Head != sha(lines[19]) {
		t.Errorf("report = %+v", rep)
	}
	want := "ok: 20 records, seq 1..20, 1 file(s), chain starts at the first record ever; head " + sha(lines[19])
	if rep.String() != want {
		t.Errorf("String() = %q, want %q", rep.String(), want)
	}
}

func TestReopen(t *testing.T) {
	tests := []struct {
		name    string
		between func(t *testing.T, path string) // after records 0..4 are written and closed
		want    int                             // records that verify after 5 more
	}{
		{"continues the chain", func(*testing.T, string) {}, 10},
		{"drops a torn last record", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(`{"seq":6,"time":"2025-`); err != nil {
				t.Fatal(err)
			}
		}, 10},
		{"continues from path.1 after a crash mid-rotation", func(t *testing.T, path string) {
			if err := shift(path, DefaultMaxFiles); err != nil {
				t.Fatal(err)
			}
		}, 10},
		{"continues from path.1 when path is empty", func(t *testing.T, path string) {
			if err := shift(path, DefaultMaxFiles); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			appendN(t, path, Options{}, 0, 5)
			tt.between(t, path)
			appendN(t, path, Options{}, 5, 10)
			rep := mustVerify(t, path)
			if rep.Records != tt.want || rep.LastSeq != uint64(tt.want) || !rep.Genesis {
				t.Errorf("report = %v", rep)
			}
		})
	}
}

func TestOpenRefusesBrokenTail(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"last record not a record", func(t *testing.T, path string) {
			appendN(t, path, Options{}, 0, 3)
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("{\"hello\":1}\n"); err != nil {
				t.Fatal(err)
			}
		}},
		{"path.1 torn while path is missing", func(t *testing.T, path string) {
			if err := os.WriteFile(path+".1", []byte(`{"seq":1`), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			tt.setup(t, path)
			l, err := Open(path, Options{})
			if err == nil {
				l.Close()
				t.Fatal("Open succeeded on a log whose chain cannot be continued")
			}
		})
	}
}

func TestRotation(t *testing.T) {
	const n = 60
	one := len(`{"seq":10,"time":"2025-03-01T11:30:00.123456789Z","kind":"call","principal":"client:claude-code","session":"s-1","call_id":"c-10","server":"github","tool":"t10","args":{"n":10,"q":"issues"},"outcome":"ok","duration_ms":10,"prev":"`+genesis+`"}`) + 1
	tests := []struct {
		name     string
		maxFiles int
		genesis  bool
	}{
		{"all files kept", 100, true},
		{"old files dropped", 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "audit.log")
			// A leftover from a larger MaxFiles must go, or it would sit
			// before a gap in the chain.
			stale := fmt.Sprintf("%s.%d", path, tt.maxFiles+5)
			if err := os.WriteFile(stale, []byte("stale\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			opts := Options{MaxBytes: int64(4 * one), MaxFiles: tt.maxFiles}
			appendN(t, path, opts, 0, n/2)
			appendN(t, path, opts, n/2, n) // rotation state survives reopening
			rep := mustVerify(t, path)
			if rep.LastSeq != n || rep.Genesis != tt.genesis || rep.Records != int(rep.LastSeq-rep.FirstSeq+1) {
				t.Errorf("report = %v", rep)
			}
			if tt.genesis && (rep.Records != n || len(rep.Files) < 2) || !tt.genesis && len(rep.Files) != tt.maxFiles+1 {
				t.Errorf("%d records in %d files: %v", rep.Records, len(rep.Files), rep.Files)
			}
			for i, f := range rep.Files {
				want := path
				if i < len(rep.Files)-1 {
					want = fmt.Sprintf("%s.%d", path, len(rep.Files)-1-i)
				}
				if f != want {
					t.Errorf("Files[%d] = %s, want %s", i, f, want)
				}
				st, err := os.Stat(f)
				if err != nil {
					t.Fatal(err)
				}
				if st.Size() > opts.MaxBytes {
					t.Errorf("%s is %d bytes, over MaxBytes %d", f, st.Size(), opts.MaxBytes)
				}
			}
			if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("stale %s kept: %v", stale, err)
			}
		})
	}
}

// TestRotatedTamper breaks a chain that spans files.
func TestRotatedTamper(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, path string)
		file   string // suffix of the file named
		line   int    // 0: the last line of the file before it
		reason string
	}{
		{"edit inside path.2", func(t *testing.T, path string) {
			editLine(t, path+".2", 1, `"duration_ms":`, `"duration_ms":1`)
		}, ".2", 2, "record does not follow line 1 (prev hash mismatch): edited, removed or reordered"},
		{"edit last line of path.2", func(t *testing.T, path string) {
			editLine(t, path+".2", -1, `"outcome":"ok"`, `"outcome":"error"`)
		}, ".1", 1, "record does not follow %s.2:4 (prev hash mismatch): edited, removed or reordered"},
		{"path.2 removed", func(t *testing.T, path string) {
			if err := os.Remove(path + ".2"); err != nil {
				t.Fatal(err)
			}
		}, ".1", 1, "record does not follow %s.3:4 (prev hash mismatch, seq 13 after 8): removed or reordered"},
		{"path.1 and path.2 swapped", func(t *testing.T, path string) {
			if err := os.Rename(path+".1", path+".x"); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".2", path+".1"); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".x", path+".2"); err != nil {
				t.Fatal(err)
			}
		}, ".2", 1, "record does not follow %s.3:4 (prev hash mismatch, seq 13 after 8): removed or reordered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			// Lines are 266 to 287 bytes, so four records a file: 1-4 in .4, 5-8 in .3, 9-12 in .2, 13-16 in .1, 17-18 in path.
			appendN(t, path, Options{MaxBytes: 1200, MaxFiles: 10}, 0, 18)
			for n := 1; n <= 4; n++ {
				if lines := readLines(t, fmt.Sprintf("%s.%d", path, n)); len(lines) != 4 {
					t.Fatalf("%s.%d has %d lines, the test expects 4", path, n, len(lines))
				}
			}
			tt.tamper(t, path)
			rep, err := VerifyFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := &Problem{File: path + tt.file, Line: tt.line, Reason: strings.ReplaceAll(tt.reason, "%s", path)}
			if rep.Problem == nil || *rep.Problem != *want {
				t.Errorf("VerifyFile = %v\nwant %v", rep, want)
			}
		})
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
}

// editLine replaces old with new in line n (1-based; -1 the last) of path.
func editLine(t *testing.T, path string, n int, old, new string) {
	t.Helper()
	lines := readLines(t, path)
	if n < 0 {
		n = len(lines)
	}
	if !strings.Contains(lines[n-1], old) {
		t.Fatalf("%s:%d has no %q", path, n, old)
	}
	lines[n-1] = strings.Replace(lines[n-1], old, new, 1)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentAppends(t *testing.T) {
	const goroutines, each = 8, 300
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, Options{MaxBytes: 64 << 10, MaxFiles: 100, FlushInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines+1)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if err := l.Append(context.Background(), record(g*each+i)); err != nil {
					errs <- err
					return
				}
				if i%50 == 0 {
					if err := l.Sync(); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rep := mustVerify(t, path)
	if rep.Records != goroutines*each || !rep.Genesis || len(rep.Files) < 2 {
		t.Errorf("report = %v over %d files", rep, len(rep.Files))
	}
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	var nilLog *Log
	if err := nilLog.Append(ctx, record(0)); err != nil {
		t.Errorf("nil Append = %v", err)
	}
	if err := nilLog.Sync(); err != nil {
		t.Errorf("nil Sync = %v", err)
	}
	if err := nilLog.Close(); err != nil {
		t.Errorf("nil Close = %v", err)
	}

	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l2, err := Open(path, Options{}); err == nil {
		l2.Close()
		t.Error("a second Open of the same log succeeded")
	}
	if err := l.Append(ctx, record(0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if err := l.Append(ctx, record(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
	if err := l.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close = %v, want ErrClosed", err)
	}
	l, err = Open(path, Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	l.Close()
	if _, err := Open(path, Options{MaxFiles: -1}); err == nil {
		t.Error("Open accepted a negative MaxFiles")
	}
}

func TestFlush(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		sync     bool
	}{
		{"Sync writes at once", time.Hour, true},
		{"the flusher writes within its interval", 5 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			l, err := Open(path, Options{FlushInterval: tt.interval})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := l.Append(context.Background(), record(0)); err != nil {
				t.Fatal(err)
			}
			if tt.sync {
				if st, err := os.Stat(path); err != nil || st.Size() != 0 {
					t.Fatalf("before Sync: %v, %v; want the record still buffered", st.Size(), err)
				}
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
			}
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				if rep, err := VerifyFile(path); err == nil && rep.OK() && rep.Records == 1 {
					return
				}
				if tt.sync || time.Now().After(deadline) {
					t.Fatal("record not on disk")
				}
			}
		})
	}
}

func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	r := record(1)
	for _, parallel := range []bool{false, true} {
		b.Run(fmt.Sprintf("parallel=%v", parallel), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "audit.log")
			l, err := Open(path, Options{MaxBytes: 64 << 20})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			if parallel {
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := l.Append(ctx, r); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for b.Loop() {
					if err := l.Append(ctx, r); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
