// Package statestore keeps what outlives sessions: the memory (JSON values
// by key) and saved tools (function sources) of save_memory() and
// save_tool(). It lives in codemode's state directory, which sandboxes never
// see; every access is a request from sandboxed code through the host, so
// code cannot plant files that later sessions run on their own (saved tools
// run only when code imports them). Data is kept per namespace (one per
// authenticated client), written atomically, and bounded in size.
package statestore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
)

// Options bound the store.
type Options struct {
	Dir           string // <state dir>
	MaxValueBytes int    // one memory value (default 1 MiB)
	MaxKeys       int    // per namespace (default 10,000)
	MaxToolBytes  int    // one tool's source (default 256 KiB)
	MaxTools      int    // per namespace (default 500)
}

// Store is the memory and saved-tool store.
type Store struct {
	opts Options
	mu   sync.Mutex
}

// New returns a store under opts.Dir.
func New(opts Options) *Store {
	if opts.MaxValueBytes <= 0 {
		opts.MaxValueBytes = 1 << 20
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = 10_000
	}
	if opts.MaxToolBytes <= 0 {
		opts.MaxToolBytes = 256 << 10
	}
	if opts.MaxTools <= 0 {
		opts.MaxTools = 500
	}
	return &Store{opts: opts}
}

var (
	namespaceRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	toolNameRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,99}$`)
)

// ErrUser marks errors caused by the request (bad key, too big), as
// opposed to the host's own failures (disk full).
var ErrUser = errors.New("invalid request")

type entry struct {
	Value   json.RawMessage `json:"value"`
	Version int64           `json:"version"`
}

type memoryFile struct {
	Entries map[string]entry `json:"entries"`
}

func (s *Store) memoryPath(ns string) (string, error) {
	if !namespaceRe.MatchString(ns) {
		return "", fmt.Errorf("%w: namespace %q", ErrUser, ns)
	}
	return filepath.Join(s.opts.Dir, "memory", ns+".json"), nil
}

func (s *Store) loadMemory(ns string) (memoryFile, string, error) {
	m := memoryFile{Entries: map[string]entry{}}
	path, err := s.memoryPath(ns)
	if err != nil {
		return m, "", err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, path, nil
	}
	if err != nil {
		return m, path, fmt.Errorf("reading memory: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, path, fmt.Errorf("memory file %s is corrupt: %w", path, err)
	}
	if m.Entries == nil {
		m.Entries = map[string]entry{}
	}
	return m, path, nil
}

// Load returns a key's value and version (0 when absent).
func (s *Store) Load(ns, key string) (json.RawMessage, int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, _, err := s.loadMemory(ns)
	if err != nil {
		return nil, 0, false, err
	}
	e, ok := m.Entries[key]
	return e.Value, e.Version, ok, nil
}

// Save stores value under key. When expected is not nil, the save happens
// only if the key's version still equals *expected (0 = absent); saved
// reports whether it happened.
func (s *Store) Save(ns, key string, value json.RawMessage, expected *int64) (saved bool, err error) {
	if key == "" || len(key) > 256 {
		return false, fmt.Errorf("%w: keys are 1 to 256 characters", ErrUser)
	}
	if len(value) > s.opts.MaxValueBytes {
		return false, fmt.Errorf("%w: value of %d bytes exceeds the %d-byte limit", ErrUser, len(value), s.opts.MaxValueBytes)
	}
	if !json.Valid(value) {
		return false, fmt.Errorf("%w: value is not JSON", ErrUser)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, path, err := s.loadMemory(ns)
	if err != nil {
		return false, err
	}
	old, exists := m.Entries[key]
	if expected != nil && old.Version != *expected {
		return false, nil
	}
	if !exists && len(m.Entries) >= s.opts.MaxKeys {
		return false, fmt.Errorf("%w: memory holds the maximum of %d keys", ErrUser, s.opts.MaxKeys)
	}
	m.Entries[key] = entry{Value: value, Version: old.Version + 1}
	return true, writeJSON(path, m)
}

// Delete removes a key; it reports whether the key existed.
func (s *Store) Delete(ns, key string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, path, err := s.loadMemory(ns)
	if err != nil {
		return false, err
	}
	if _, ok := m.Entries[key]; !ok {
		return false, nil
	}
	delete(m.Entries, key)
	return true, writeJSON(path, m)
}

// Keys lists a namespace's keys, sorted.
func (s *Store) Keys(ns string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, _, err := s.loadMemory(ns)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(m.Entries))
	for k := range m.Entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, nil
}

// Tool is a saved function.
type Tool struct {
	Name   string `json:"name"`
	Doc    string `json:"doc,omitempty"`
	Source string `json:"source,omitempty"`
}

func (s *Store) toolDir(ns string) (string, error) {
	if !namespaceRe.MatchString(ns) {
		return "", fmt.Errorf("%w: namespace %q", ErrUser, ns)
	}
	return filepath.Join(s.opts.Dir, "tools", ns), nil
}

// SaveTool stores a tool's source under its name.
func (s *Store) SaveTool(ns string, t Tool) error {
	if !toolNameRe.MatchString(t.Name) {
		return fmt.Errorf("%w: tool names are Python identifiers, got %q", ErrUser, t.Name)
	}
	if len(t.Source) > s.opts.MaxToolBytes {
		return fmt.Errorf("%w: source of %d bytes exceeds the %d-byte limit", ErrUser, len(t.Source), s.opts.MaxToolBytes)
	}
	dir, err := s.toolDir(ns)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	existing, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if _, err := os.Stat(filepath.Join(dir, t.Name+".json")); err != nil && len(existing) >= s.opts.MaxTools {
		return fmt.Errorf("%w: the maximum of %d saved tools is reached", ErrUser, s.opts.MaxTools)
	}
	return writeJSON(filepath.Join(dir, t.Name+".json"), t)
}

// Tools lists the saved tools, sorted by name; sources only when asked.
func (s *Store) Tools(ns string, withSource bool) ([]Tool, error) {
	dir, err := s.toolDir(ns)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	sort.Strings(files)
	out := []Tool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading saved tool: %w", err)
		}
		var t Tool
		if json.Unmarshal(data, &t) != nil || !toolNameRe.MatchString(t.Name) {
			continue // a damaged file is skipped, not fatal
		}
		if !withSource {
			t.Source = ""
		}
		out = append(out, t)
	}
	return out, nil
}

// writeJSON writes v atomically (temp file, fsync, rename).
func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
