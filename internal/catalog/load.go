package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LoadOptions configure Load.
type LoadOptions struct {
	// CacheDir keeps registry listings (fetched from URLs) on disk; empty
	// disables the cache.
	CacheDir string
	// CacheFor is how long a cached listing is used before it is fetched
	// again (default 24h). A stale listing is still used when the registry
	// cannot be reached.
	CacheFor time.Duration
	// HTTPClient fetches registry listings (default http.DefaultClient with
	// a 30s timeout).
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// maxPages bounds a registry listing (at 100 entries a page).
const maxPages = 200

// Load reads every source, in order: a file of server.json documents or
// a registry list response, or a registry's base URL (http or https),
// listed with paging through /v0/servers. An entry whose name an earlier
// source already gave is left out.
func Load(ctx context.Context, sources []string, opts LoadOptions) (*Catalog, error) {
	if opts.CacheFor <= 0 {
		opts.CacheFor = 24 * time.Hour
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	var all []Entry
	for _, src := range sources {
		var entries []Entry
		var err error
		if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
			entries, err = loadRegistry(ctx, src, opts)
		} else {
			entries, err = loadFile(src)
		}
		if err != nil {
			return nil, fmt.Errorf("catalog: load %s: %w", src, err)
		}
		all = append(all, entries...)
	}
	return New(all), nil
}

func loadFile(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	page, err := Parse(data, abs)
	if err != nil {
		return nil, err
	}
	return page.Entries, nil
}

// loadRegistry lists a registry's servers, page by page, or reads the
// cached listing when it is fresh (or the registry is unreachable).
func loadRegistry(ctx context.Context, base string, opts LoadOptions) ([]Entry, error) {
	cache := ""
	if opts.CacheDir != "" {
		sum := sha256.Sum256([]byte(base))
		cache = filepath.Join(opts.CacheDir, "catalogs", hex.EncodeToString(sum[:8])+".json")
	}
	if cache != "" {
		if fi, err := os.Stat(cache); err == nil && time.Since(fi.ModTime()) < opts.CacheFor {
			if entries, err := loadCached(cache, base); err == nil {
				return entries, nil
			}
		}
	}
	entries, docs, err := fetchRegistry(ctx, base, opts.HTTPClient)
	if err != nil {
		if cache != "" {
			if cached, cerr := loadCached(cache, base); cerr == nil {
				opts.Logger.Warn("registry unreachable; using the cached listing", "registry", base, "error", err)
				return cached, nil
			}
		}
		return nil, err
	}
	if cache != "" {
		if err := writeCache(cache, docs); err != nil {
			opts.Logger.Warn("caching the registry listing", "registry", base, "error", err)
		}
	}
	return entries, nil
}

func fetchRegistry(ctx context.Context, base string, client *http.Client) ([]Entry, []byte, error) {
	var entries []Entry
	// The cache holds the entries as one array of server.json documents.
	var docs []string
	cursor := ""
	for range maxPages {
		u, err := url.Parse(strings.TrimRight(base, "/") + "/v0/servers")
		if err != nil {
			return nil, nil, err
		}
		q := u.Query()
		q.Set("limit", "100")
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		u.RawQuery = q.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
		resp.Body.Close()
		if err != nil {
			return nil, nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, nil, fmt.Errorf("GET %s: %s", u, resp.Status)
		}
		page, err := Parse(body, base)
		if err != nil {
			return nil, nil, fmt.Errorf("GET %s: %w", u, err)
		}
		entries = append(entries, page.Entries...)
		for _, e := range page.Entries {
			doc, err := marshalEntry(e)
			if err != nil {
				return nil, nil, err
			}
			docs = append(docs, doc)
		}
		if page.NextCursor == "" || page.NextCursor == cursor {
			return entries, []byte("[" + strings.Join(docs, ",\n") + "]\n"), nil
		}
		cursor = page.NextCursor
	}
	return nil, nil, fmt.Errorf("more than %d pages", maxPages)
}

func loadCached(path, source string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	page, err := Parse(data, source)
	return page.Entries, err
}

func writeCache(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
