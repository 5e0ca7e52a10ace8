package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Store holds the policy in force and replaces it when its file changes
// (Watch) or when asked (Reload, which the server calls on SIGHUP). A file
// that fails to load leaves the previous policy in force.
type Store struct {
	path     string
	log      *slog.Logger
	cur      atomic.Pointer[Policy]
	debounce time.Duration // editors write in several steps; reload once they are done

	reloadMu sync.Mutex // one reload at a time
	last     []byte     // the text of the policy in force

	watchMu sync.Mutex
	stop    chan struct{} // closed by Close
	done    chan struct{} // closed when the watcher has stopped
}

// NewStore loads the policy file at path; it fails if the file does.
// log receives reloads and their failures (nil discards them).
func NewStore(path string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("policy: load %s: %w", path, err)
	}
	s := &Store{path: abs, log: log, debounce: 100 * time.Millisecond}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Current is the policy in force.
func (s *Store) Current() *Policy { return s.cur.Load() }

// Limits are the current policy's limits.
func (s *Store) Limits() Limits { return s.Current().Limits() }

// Path is the policy file's absolute path.
func (s *Store) Path() string { return s.path }

// Reload reads the file again. On failure the previous policy stays in
// force, and the error is logged and returned. An empty file is refused:
// it is more likely one being rewritten than a wish to allow everything
// (write default = "allow" for that).
func (s *Store) Reload() error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	data, err := os.ReadFile(s.path)
	var p *Policy
	if err == nil {
		if len(bytes.TrimSpace(data)) == 0 {
			err = errors.New(`the file is empty (write default = "allow" to allow everything)`)
		} else if bytes.Equal(data, s.last) && s.cur.Load() != nil {
			return nil
		} else {
			var format string
			if format, err = formatOf(s.path); err == nil {
				p, err = parse(data, format)
			}
		}
	}
	if err != nil {
		err = fmt.Errorf("policy: load %s: %w", s.path, err)
		if s.cur.Load() != nil {
			s.log.Error("policy: reload failed; the previous policy stays in force", "path", s.path, "error", err)
		}
		return err
	}
	s.cur.Store(p)
	s.last = data
	s.log.Info("policy: loaded", "path", s.path, "summary", p.Summary())
	return nil
}

// Watch starts reloading the policy when its file changes, and returns once
// changes are being watched. It watches the file's directory, so editors
// that write a new file and rename it over the old one are followed.
// Watching stops when ctx ends or on Close.
func (s *Store) Watch(ctx context.Context) error {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.stop != nil {
		return errors.New("policy: watch: already watching")
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("policy: watch %s: %w", s.path, err)
	}
	if err := w.Add(filepath.Dir(s.path)); err != nil {
		w.Close()
		return fmt.Errorf("policy: watch %s: %w", s.path, err)
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.watch(ctx, w, s.stop, s.done)
	return nil
}

func (s *Store) watch(ctx context.Context, w *fsnotify.Watcher, stop, done chan struct{}) {
	defer close(done)
	defer w.Close()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if filepath.Clean(ev.Name) == s.path {
				timer.Reset(s.debounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			s.log.Warn("policy: watching the file", "path", s.path, "error", err)
		case <-timer.C:
			// Reload logs its own failures.
			_ = s.Reload()
		}
	}
}

// Close stops watching and waits for the watcher to finish.
func (s *Store) Close() error {
	s.watchMu.Lock()
	stop, done := s.stop, s.done
	if stop != nil {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}
	s.watchMu.Unlock()
	if done != nil {
		<-done
	}
	return nil
}
