package policy

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuffer collects log output from the watcher's goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// eventually polls cond until it holds or a deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// replaceFile writes a new file and renames it over path, as editors do.
func replaceFile(t *testing.T, path, text string) {
	t.Helper()
	tmp := path + ".tmp"
	writeFile(t, tmp, text)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func newTestStore(t *testing.T, name, text string) (*Store, string, *logBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	writeFile(t, path, text)
	logs := &logBuffer{}
	s, err := NewStore(path, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	s.debounce = 10 * time.Millisecond
	t.Cleanup(func() { s.Close() })
	return s, path, logs
}

func TestStoreWatch(t *testing.T) {
	s, path, logs := newTestStore(t, "policy.toml", `default = "allow"`)
	if err := s.Watch(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s.Current().Default() != Allow {
		t.Fatalf("initial default %v", s.Current().Default())
	}

	writeFile(t, path, `default = "deny"`)
	eventually(t, "an in-place write is loaded", func() bool { return s.Current().Default() == Deny })

	replaceFile(t, path, "default = \"ask\"\n[limits]\nmax_calls_per_run = 7")
	eventually(t, "a renamed-over file is loaded", func() bool { return s.Current().Default() == Ask })
	if s.Limits().MaxCallsPerRun != 7 {
		t.Errorf("Limits() = %+v", s.Limits())
	}

	before := s.Current()
	writeFile(t, path, "default = \"deny\"\n[[rules]]\ndecision = \"nope\"")
	eventually(t, "the broken file is reported", func() bool {
		return strings.Contains(logs.String(), `rules[0].decision: invalid decision \"nope\"`)
	})
	if s.Current() != before {
		t.Error("a broken file replaced the policy")
	}
	if !strings.Contains(logs.String(), "previous policy stays in force") {
		t.Errorf("log lacks the outcome:\n%s", logs)
	}

	writeFile(t, path, `default = "allow"`)
	eventually(t, "a fixed file is loaded", func() bool { return s.Current().Default() == Allow })

	if err := s.Watch(t.Context()); err == nil {
		t.Error("a second Watch was accepted")
	}
}

func TestStoreReload(t *testing.T) {
	s, path, logs := newTestStore(t, "policy.yaml", "default: deny")
	before := s.Current()
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if s.Current() != before {
		t.Error("reloading an unchanged file made a new policy")
	}

	writeFile(t, path, "default: allow\nrules:\n  - decision: allow\n    when: 'argz'\n")
	err := s.Reload()
	if err == nil || !strings.Contains(err.Error(), "line 4: rules[0].when") {
		t.Fatalf("Reload of a broken file: %v", err)
	}
	if s.Current() != before {
		t.Error("a broken file replaced the policy")
	}
	if !strings.Contains(logs.String(), "reload failed") {
		t.Errorf("the failure was not logged:\n%s", logs)
	}

	writeFile(t, path, "")
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("Reload of an empty file: %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err == nil {
		t.Error("Reload of a missing file succeeded")
	}
	if s.Current() != before {
		t.Error("the policy changed")
	}

	writeFile(t, path, "default: ask")
	if err := s.Reload(); err != nil || s.Current().Default() != Ask {
		t.Errorf("Reload: %v, default %v", err, s.Current().Default())
	}
}

func TestNewStoreFails(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	writeFile(t, bad, `{"default": "maybe"}`)
	if _, err := NewStore(bad, nil); err == nil || !strings.Contains(err.Error(), "line 1: default") {
		t.Errorf("NewStore(broken): %v", err)
	}
	if _, err := NewStore(filepath.Join(dir, "none.toml"), nil); err == nil {
		t.Error("NewStore(missing) succeeded")
	}
}

// Watching ends with the context, and Close is safe after that.
func TestStoreWatchContext(t *testing.T) {
	s, _, _ := newTestStore(t, "policy.toml", `default = "allow"`)
	ctx, cancel := context.WithCancel(t.Context())
	if err := s.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	done := make(chan struct{})
	go func() {
		s.Close()
		s.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
}
