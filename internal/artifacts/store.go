// Package artifacts keeps what sandboxed code hands back besides text:
// files (written under /workspace/out or passed to publish(), and output too
// big for a result) are stored on the host per session and served as MCP
// resources (codemode://sessions/<id>/files/<name>) while the session
// lives; images are decoded, downscaled to a pixel and byte budget and
// re-encoded as PNG.
package artifacts

import (
	"errors"
	"fmt"
	"mime"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Options bound what a session may store.
type Options struct {
	Dir          string // host directory for stored files (removed per session)
	MaxFileBytes int64  // one file (default 16 MiB)
	MaxSession   int64  // all files of one session (default 64 MiB)
}

// Store holds the files of live sessions.
type Store struct {
	opts     Options
	mu       sync.Mutex
	sessions map[string]*session // by session id
}

type session struct {
	owner string
	total int64
	files map[string]File
}

// File is one stored file.
type File struct {
	URI      string `json:"uri"`
	Name     string `json:"name"`
	MIMEType string `json:"mimeType"`
	Size     int64  `json:"size"`
	path     string
}

// ErrNotFound is returned for unknown sessions or files (or another owner's).
var ErrNotFound = errors.New("no such session file")

// New returns a Store. Dir should be private to this process (several
// codemode processes may share a state directory): see SweepSiblings.
func New(opts Options) (*Store, error) {
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = 16 << 20
	}
	if opts.MaxSession <= 0 {
		opts.MaxSession = 64 << 20
	}
	if opts.Dir != "" {
		if err := os.RemoveAll(opts.Dir); err != nil {
			return nil, fmt.Errorf("clearing %s: %w", opts.Dir, err)
		}
		if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating %s: %w", opts.Dir, err)
		}
	}
	return &Store{opts: opts, sessions: map[string]*session{}}, nil
}

// URIPrefix starts every file URI.
const URIPrefix = "codemode://sessions/"

// URI names a session's file.
func URI(sessionID, name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return URIPrefix + url.PathEscape(sessionID) + "/files/" + strings.Join(parts, "/")
}

// ParseURI splits a file URI.
func ParseURI(uri string) (sessionID, name string, ok bool) {
	rest, ok := strings.CutPrefix(uri, URIPrefix)
	if !ok {
		return "", "", false
	}
	sid, rest, ok := strings.Cut(rest, "/files/")
	if !ok {
		return "", "", false
	}
	var err error
	if sid, err = url.PathUnescape(sid); err != nil {
		return "", "", false
	}
	if name, err = url.PathUnescape(rest); err != nil {
		return "", "", false
	}
	return sid, name, true
}

// CleanName checks a file name given by sandboxed code: relative, no "..",
// no empty or hidden-escape parts.
func CleanName(name string) (string, error) {
	clean := path.Clean(strings.ReplaceAll(name, "\\", "/"))
	if name == "" || clean == "." || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsRune(clean, 0) {
		return "", fmt.Errorf("invalid file name %q", name)
	}
	return clean, nil
}

// Put stores a file for a session; a file of the same name is replaced.
func (s *Store) Put(sessionID, owner, name string, data []byte) (File, error) {
	name, err := CleanName(name)
	if err != nil {
		return File{}, err
	}
	if int64(len(data)) > s.opts.MaxFileBytes {
		return File{}, fmt.Errorf("file %s is %d bytes; the limit is %d", name, len(data), s.opts.MaxFileBytes)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[sessionID]
	if sess == nil {
		sess = &session{owner: owner, files: map[string]File{}}
		s.sessions[sessionID] = sess
	}
	old := sess.files[name]
	if sess.total-old.Size+int64(len(data)) > s.opts.MaxSession {
		return File{}, fmt.Errorf("the session's files would exceed %d bytes; file %s not kept", s.opts.MaxSession, name)
	}
	f := File{URI: URI(sessionID, name), Name: name, MIMEType: mimeOf(name, data), Size: int64(len(data))}
	if s.opts.Dir != "" {
		f.path = filepath.Join(s.opts.Dir, sessionID, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
			return File{}, err
		}
		if err := os.WriteFile(f.path, data, 0o600); err != nil {
			return File{}, fmt.Errorf("storing %s: %w", name, err)
		}
	}
	sess.total += f.Size - old.Size
	sess.files[name] = f
	return f, nil
}

// Read returns a file's content, if owner may see it.
func (s *Store) Read(owner, uri string) (File, []byte, error) {
	sid, name, ok := ParseURI(uri)
	if !ok {
		return File{}, nil, ErrNotFound
	}
	s.mu.Lock()
	sess := s.sessions[sid]
	var f File
	if sess != nil && sess.owner == owner {
		f, ok = sess.files[name]
	} else {
		ok = false
	}
	s.mu.Unlock()
	if !ok {
		return File{}, nil, ErrNotFound
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return File{}, nil, fmt.Errorf("reading %s: %w", f.Name, err)
	}
	return f, data, nil
}

// List returns the files an owner may read, sorted by URI.
func (s *Store) List(owner string) []File {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []File
	for _, sess := range s.sessions {
		if sess.owner != owner {
			continue
		}
		for _, f := range sess.files {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URI < out[j].URI })
	return out
}

// Drop forgets a session and deletes its files.
func (s *Store) Drop(sessionID string) {
	s.mu.Lock()
	delete(s.sessions, sessionID)
	s.mu.Unlock()
	if s.opts.Dir != "" {
		os.RemoveAll(filepath.Join(s.opts.Dir, sessionID))
	}
}

func mimeOf(name string, data []byte) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	if isText(data) {
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}

func isText(data []byte) bool {
	n := min(len(data), 8192)
	for _, b := range data[:n] {
		if b == 0 {
			return false
		}
	}
	return true
}

// SweepSiblings removes the directories next to dir that belong to codemode
// processes that no longer run; alive reports whether a directory's owner
// (its name) still runs.
func SweepSiblings(dir string, alive func(name string) bool) {
	parent := filepath.Dir(dir)
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || filepath.Join(parent, e.Name()) == dir || alive(e.Name()) {
			continue
		}
		os.RemoveAll(filepath.Join(parent, e.Name()))
	}
}
