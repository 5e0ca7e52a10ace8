package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/codemode/codemode/internal/tooldocs"
)

// toolCache keeps the tool lists of servers on disk, so that search covers a
// server codemode has listed before without starting it again. An entry is
// used only while the server's configuration is unchanged.
type toolCache struct {
	path string
	mu   sync.Mutex
	data map[string]cacheEntry
}

type cacheEntry struct {
	Config string          `json:"config"` // hash of what starts the server
	Tools  []tooldocs.Tool `json:"tools"`
	About  string          `json:"about,omitempty"` // what the server said of itself
}

func openToolCache(dir string) *toolCache {
	c := &toolCache{data: map[string]cacheEntry{}}
	if dir == "" {
		return c
	}
	c.path = filepath.Join(dir, "tool-cache.json")
	if data, err := os.ReadFile(c.path); err == nil {
		json.Unmarshal(data, &c.data) // a broken cache is an empty one
	}
	return c
}

func configHash(s serverconfig.Server) string {
	// Only what decides which program answers: name changes keep the cache.
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	enc := json.NewEncoder(h)
	enc.Encode([]any{s.Transport, s.Command, s.Args, s.Cwd, s.URL, keys, s.IncludeTools, s.ExcludeTools})
	for _, k := range keys {
		enc.Encode(s.Env[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func (c *toolCache) get(s serverconfig.Server) ([]tooldocs.Tool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.data[s.Name]
	if !ok || e.Config != configHash(s) {
		return nil, false
	}
	return e.Tools, true
}

// about returns what the server said of itself when it last ran.
func (c *toolCache) about(s serverconfig.Server) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.data[s.Name]; ok && e.Config == configHash(s) {
		return e.About
	}
	return ""
}

// setAbout records what a server said of itself, with its tools.
func (c *toolCache) setAbout(s serverconfig.Server, about string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.data[s.Name]
	if !ok || e.Config != configHash(s) || e.About == about {
		return nil
	}
	e.About = about
	c.data[s.Name] = e
	return c.writeLocked()
}

// put records a server's tools and writes the cache file atomically.
func (c *toolCache) put(s serverconfig.Server, tools []tooldocs.Tool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := cacheEntry{Config: configHash(s), Tools: tools}
	if old, ok := c.data[s.Name]; ok && old.Config == e.Config {
		e.About = old.About
	}
	c.data[s.Name] = e
	return c.writeLocked()
}

// writeLocked writes the cache file atomically. Preconditions: c.mu is held.
func (c *toolCache) writeLocked() error {
	if c.path == "" {
		return nil
	}
	data, err := json.Marshal(c.data)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return err
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.path)
}
