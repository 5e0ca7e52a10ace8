package serverconfig

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// maxFileSize bounds what Load reads from one file (~/.claude.json also
// holds Claude Code's history and can reach megabytes).
const maxFileSize = 64 << 20

// Load discovers and parses every server configuration file, in the
// precedence order described in the package documentation, and returns the
// servers to use together with everything it skipped and why.
//
// Problems with individual files or entries become warnings or skipped
// entries; the error is only for a cancelled ctx.
func Load(ctx context.Context, env Env, opts Options) (*Result, error) {
	if env.GOOS == "" {
		env.GOOS = runtime.GOOS
	}
	l := &loader{
		ctx:   ctx,
		env:   env,
		res:   &Result{Servers: []Server{}, Skipped: []Skipped{}, Warnings: []Warning{}, Sources: []Source{}, home: env.Home, cwd: env.Cwd},
		first: map[string]string{},
		read:  map[string]*readFile{},
		seen:  map[string]string{},
	}
	l.res.AllowSelf = truthy(env.Vars["MCP_BRIDGE_ALLOW_SELF_SERVER"])
	var cwdBase string
	if env.Cwd != "" {
		cwdBase = filepath.Base(env.Cwd)
	}
	l.x = &expander{lookup: env.lookup, predefined: map[string]string{
		"userHome":                env.Home,
		"workspaceFolder":         env.Cwd,
		"workspaceFolderBasename": cwdBase,
		"pathSeparator":           string(filepath.Separator),
		"/":                       string(filepath.Separator),
	}}

	for _, p := range opts.Explicit {
		l.explicit(p, "flag")
	}
	if v := env.Vars["CODEMODE_CONFIG"]; v != "" {
		for _, p := range filepath.SplitList(v) {
			l.explicit(p, "env:CODEMODE_CONFIG")
		}
	}
	if v := env.Vars["MCP_SERVERS_CONFIG"]; v != "" {
		l.explicit(v, "env:MCP_SERVERS_CONFIG")
	}
	for _, loc := range Locations(env.GOOS) {
		if loc.Scope == ScopeProject && opts.NoProject {
			continue
		}
		l.location(loc)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	slices.SortStableFunc(l.res.Servers, func(a, b Server) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortStableFunc(l.res.Skipped, func(a, b Skipped) int { return cmp.Compare(a.Name, b.Name) })
	return l.res, nil
}

// truthy reports MCP_BRIDGE_ALLOW_SELF_SERVER's accepted "on" values.
func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes":
		return true
	}
	return false
}

type loader struct {
	ctx context.Context
	env Env
	res *Result
	x   *expander

	first map[string]string    // server name -> file of its first definition
	read  map[string]*readFile // path -> contents, read once per Load
	seen  map[string]string    // path + key -> kind that already used it
}

type readFile struct {
	tree map[string]any
	err  error
}

// explicit loads a file named on the command line or in an environment
// variable. It reads any of mcpServers, mcp_servers or servers.
func (l *loader) explicit(p, kind string) {
	if l.ctx.Err() != nil {
		return
	}
	src := Source{Path: p, Kind: kind, Scope: ScopeExplicit}
	if strings.HasPrefix(p, "~") && l.env.Home != "" {
		p = expandTilde(p, l.env.Home)
	}
	p = filepath.Clean(absPath(p, l.env.Cwd))
	src.Path = p
	l.file(src, nil, "", true)
}

// location loads one row of the table.
func (l *loader) location(loc Location) {
	if l.ctx.Err() != nil {
		return
	}
	src := Source{Path: loc.Path, Kind: loc.Kind, Client: loc.Client, Scope: loc.Scope}
	path, note := resolvePath(loc.Path, loc.Scope, l.env)
	if note != "" {
		src.Note = note
		l.res.Sources = append(l.res.Sources, src)
		return
	}
	dir, pattern, isGlob := splitGlob(path)
	if !isGlob {
		src.Path = path
		l.file(src, loc.Key, loc.Dialect, false)
		return
	}
	src.Path = path
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		src.Found, src.Error = true, err.Error()
		l.res.Sources = append(l.res.Sources, src)
		l.warn(dir, "", err.Error())
		return
	}
	var names []string
	for _, e := range entries {
		if ok, _ := filepath.Match(pattern, e.Name()); ok && !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		l.res.Sources = append(l.res.Sources, src)
		return
	}
	slices.Sort(names)
	for _, n := range names {
		s := src
		s.Path = filepath.Join(dir, n)
		l.file(s, loc.Key, loc.Dialect, false)
	}
}

// file loads the servers of one file into the result. key nil means any of
// serverKeys.
func (l *loader) file(src Source, key []string, dialect string, explicit bool) {
	rf, ok := l.read[src.Path]
	if !ok {
		rf = l.readFile(src.Path, explicit)
		l.read[src.Path] = rf
		if rf != nil && rf.err != nil {
			l.warn(src.Path, "", rf.err.Error())
		}
	}
	if rf == nil {
		l.res.Sources = append(l.res.Sources, src)
		return
	}
	src.Found = true
	if rf.err != nil {
		src.Error = rf.err.Error()
		l.res.Sources = append(l.res.Sources, src)
		return
	}
	// The same part of the same file is used once, at its highest position.
	effective := key
	if effective == nil {
		effective = []string{serverKeys[0]}
		for _, k := range serverKeys {
			if _, ok := rf.tree[k]; ok {
				effective = []string{k}
				break
			}
		}
	}
	seenKey := src.Path + "\x00" + strings.Join(effective, "\x00")
	if prev, ok := l.seen[seenKey]; ok {
		src.Note = "same file as " + prev
		l.res.Sources = append(l.res.Sources, src)
		return
	}
	l.seen[seenKey] = src.Kind

	cwd := l.env.Cwd
	if cwd != "" {
		cwd = filepath.Clean(cwd)
	}
	doc, err := extract(rf.tree, key, cwd, dialect)
	for _, w := range doc.warnings {
		l.warn(src.Path, "", w)
	}
	if err != nil {
		src.Error = err.Error()
		l.warn(src.Path, "", err.Error())
		l.res.Sources = append(l.res.Sources, src)
		return
	}
	src.Entries = len(doc.entries)
	l.res.Sources = append(l.res.Sources, src)

	ec := &entryContext{
		dialect:     dialect,
		description: doc.description,
		env:         l.env,
		x:           l.x,
		allowSelf:   l.res.AllowSelf,
	}
	for _, name := range slices.Sorted(maps.Keys(doc.entries)) {
		sk := Skipped{Name: name, Source: src.Path, SourceKind: src.Kind, Scope: src.Scope}
		if winner, ok := l.first[name]; ok {
			sk.Reason, sk.Detail = SkipShadowed, winner
			l.res.Skipped = append(l.res.Skipped, sk)
			continue
		}
		l.first[name] = src.Path
		if why, ok := doc.excluded[name]; ok {
			sk.Reason, sk.Detail = SkipDisabled, why
			l.res.Skipped = append(l.res.Skipped, sk)
			continue
		}
		d := decodeEntry(name, doc.entries[name], ec)
		if d.skip != "" {
			sk.Reason, sk.Detail = d.skip, d.detail
			l.res.Skipped = append(l.res.Skipped, sk)
			continue
		}
		for _, v := range d.undefined {
			l.res.Warnings = append(l.res.Warnings, Warning{File: src.Path, Server: name,
				Message: fmt.Sprintf("variable %s is not set; it expands to an empty string", v)})
		}
		s := d.server
		s.Source, s.SourceKind, s.Scope = src.Path, src.Kind, src.Scope
		l.res.Servers = append(l.res.Servers, s)
	}
}

// readFile reads and parses a file. It returns nil when the file does not
// exist (a warning too when the file was named explicitly).
func (l *loader) readFile(path string, explicit bool) *readFile {
	data, err := readLimited(path, maxFileSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if explicit {
			l.warn(path, "", "file not found")
		}
		return nil
	case err != nil:
		return &readFile{err: err}
	}
	var tree map[string]any
	if strings.EqualFold(filepath.Ext(path), ".toml") {
		tree, err = parseTOML(data)
		if err != nil {
			err = fmt.Errorf("invalid TOML: %w", err)
		}
	} else {
		tree, err = parseJSON(data)
		if err != nil {
			err = fmt.Errorf("invalid JSON: %w", err)
		}
	}
	return &readFile{tree: tree, err: err}
}

// readLimited reads a regular file of at most limit bytes. It does not trust
// the size the file system reports (files in /proc say 0).
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case info.IsDir():
		return nil, errors.New("is a directory")
	case !info.Mode().IsRegular():
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d KiB", limit>>10)
	}
	return data, nil
}

func (l *loader) warn(file, server, msg string) {
	l.res.Warnings = append(l.res.Warnings, Warning{File: file, Server: server, Message: msg})
}
