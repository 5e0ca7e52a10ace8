// Package connect registers codemode in an MCP client's configuration file
// (Claude Code, Claude Desktop, Cursor, VS Code, Windsurf, Gemini CLI,
// Codex) and can move the client's other servers into codemode's own
// configuration, where code reaches them but the model's prompt no longer
// carries their schemas.
//
// Files are edited in place: JSON with comments through hujson, so every
// comment and every byte of layout outside the entries changed survives;
// Codex's TOML by adding and removing whole [mcp_servers.NAME] sections.
// The file as it was is copied next to it first. The paths are the ones
// config discovery (serverconfig.Locations) reads.
package connect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/codemode/codemode/internal/serverconfig"
)

// ServerName is the entry connect writes.
const ServerName = "codemode"

// Client is an MCP client connect knows.
type Client struct {
	Name  string // as typed on the command line, e.g. "claude-code"
	Label string // as the client calls itself, e.g. "Claude Code"
	kind  string // the serverconfig location row of its user config
}

// Clients lists every client connect can configure.
func Clients() []Client {
	return []Client{
		{"claude-code", "Claude Code", "claude-code-user"},
		{"claude-desktop", "Claude Desktop", "claude-desktop"},
		{"cursor", "Cursor", "cursor-user"},
		{"vscode", "VS Code", "vscode-user"},
		{"windsurf", "Windsurf", "windsurf"},
		{"gemini", "Gemini CLI", "gemini-user"},
		{"codex", "Codex", "codex"},
	}
}

// Options configure Connect and List.
type Options struct {
	// Env locates the files: home directory, XDG_CONFIG_HOME, APPDATA,
	// CODEX_HOME and the OS.
	Env serverconfig.Env
	// Command is the absolute path of the codemode binary to register.
	Command string
	// MoveServers moves the client's other servers into codemode's own
	// configuration.
	MoveServers bool
}

// Result says what Connect changed.
type Result struct {
	Path    string   // the client's configuration file
	Backup  string   // copy of the file as it was; "" when nothing was there or nothing changed
	Changed bool     // false: codemode was already registered with this command and nothing moved
	Moved   []string // servers moved out of the client's file
	MovedTo string   // the codemode configuration file that now holds them
}

// State is a client's configuration as List finds it.
type State struct {
	Client    Client
	Path      string // "" when the client has no location on this OS
	Note      string // why the location does not apply, or why the file cannot be read
	Exists    bool
	Connected bool     // an entry named codemode is present
	Servers   []string // the other servers in the file
}

// client finds a client by name.
func client(name string) (Client, error) {
	for _, c := range Clients() {
		if c.Name == name {
			return c, nil
		}
	}
	names := make([]string, 0, len(Clients()))
	for _, c := range Clients() {
		names = append(names, c.Name)
	}
	return Client{}, fmt.Errorf("connect: unknown client %q (want one of %s)", name, strings.Join(names, ", "))
}

// location returns the client's config file and the key path to its
// servers object.
func (c Client) location(env serverconfig.Env) (path string, key []string, dialect string, err error) {
	for _, l := range serverconfig.Locations(env.GOOS) {
		if l.Kind != c.kind {
			continue
		}
		p, note := l.Resolve(env)
		if note != "" {
			return "", nil, "", fmt.Errorf("connect: %s config: %s", c.Label, note)
		}
		return p, l.Key, l.Dialect, nil
	}
	return "", nil, "", fmt.Errorf("connect: %s has no known config file on %s", c.Label, env.GOOS)
}

// OwnDir is the directory of codemode's own server configuration files
// (read by discovery as ~/.config/mcp/servers/*.json).
func OwnDir(env serverconfig.Env) (string, error) {
	for _, l := range serverconfig.Locations(env.GOOS) {
		if l.Kind == "mcp-servers-xdg" {
			p, note := l.Resolve(env)
			if note != "" {
				return "", fmt.Errorf("connect: codemode's config: %s", note)
			}
			return filepath.Dir(p), nil
		}
	}
	return "", errors.New("connect: codemode's config directory is not in the location table")
}

// List reports each client's configuration file and whether codemode is
// registered in it.
func List(ctx context.Context, env serverconfig.Env) []State {
	var out []State
	for _, c := range Clients() {
		if ctx.Err() != nil {
			break
		}
		st := State{Client: c}
		path, key, _, err := c.location(env)
		if err != nil {
			st.Note = err.Error()
			out = append(out, st)
			continue
		}
		st.Path = path
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			st.Note = err.Error()
		default:
			st.Exists = true
			names, err := serverNames(path, data, key)
			if err != nil {
				st.Note = err.Error()
			}
			for _, n := range names {
				if n == ServerName {
					st.Connected = true
				} else {
					st.Servers = append(st.Servers, n)
				}
			}
		}
		out = append(out, st)
	}
	return out
}

// Connect registers codemode in the client's configuration file and, with
// MoveServers, moves the client's other servers into codemode's own file.
func Connect(ctx context.Context, name string, opts Options) (Result, error) {
	c, err := client(name)
	if err != nil {
		return Result{}, err
	}
	if !filepath.IsAbs(opts.Command) {
		return Result{}, fmt.Errorf("connect: the codemode command must be an absolute path, got %q", opts.Command)
	}
	path, key, dialect, err := c.location(opts.Env)
	if err != nil {
		return Result{}, err
	}
	res := Result{Path: path}
	orig, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("connect: read %s: %w", path, err)
	}
	existed := err == nil
	entry := map[string]any{"command": opts.Command}
	if c.kind == "vscode-user" {
		entry = map[string]any{"type": "stdio", "command": opts.Command}
	}
	var edited []byte
	var moved map[string]map[string]any
	if strings.HasSuffix(path, ".toml") {
		edited, moved, err = editTOML(orig, key[0], entry, opts.MoveServers)
	} else {
		edited, moved, err = editJSON(orig, key, entry, opts.MoveServers)
	}
	if err != nil {
		return res, fmt.Errorf("connect: %s: %w", path, err)
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if len(moved) > 0 {
		dir, err := OwnDir(opts.Env)
		if err != nil {
			return res, err
		}
		res.MovedTo = filepath.Join(dir, "from-"+c.Name+".json")
		for n, e := range moved {
			moved[n] = portable(e, dialect)
			res.Moved = append(res.Moved, n)
		}
		slices.Sort(res.Moved)
		if err := writeOwn(res.MovedTo, moved); err != nil {
			return res, err
		}
	}
	if existed && bytes.Equal(edited, orig) {
		return res, nil
	}
	res.Changed = true
	if existed {
		if res.Backup, err = backup(path, orig); err != nil {
			return res, err
		}
	}
	if err := writeFile(path, edited); err != nil {
		return res, err
	}
	return res, nil
}

// portable rewrites a Gemini CLI entry, where "url" means SSE and
// "httpUrl" streamable HTTP, into the form every other file uses.
func portable(entry map[string]any, dialect string) map[string]any {
	if dialect != "gemini" {
		return entry
	}
	if u, ok := entry["httpUrl"]; ok {
		delete(entry, "httpUrl")
		entry["url"], entry["type"] = u, "http"
	} else if _, ok := entry["url"]; ok {
		entry["type"] = "sse"
	}
	return entry
}

// writeOwn adds servers to one of codemode's own configuration files
// (creating it), replacing entries of the same name.
func writeOwn(path string, servers map[string]map[string]any) error {
	orig, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("connect: read %s: %w", path, err)
	}
	data := orig
	for _, name := range sortedKeys(servers) {
		if data, err = setServer(data, []string{"mcpServers"}, name, servers[name]); err != nil {
			return fmt.Errorf("connect: %s: %w", path, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if len(orig) > 0 {
		if _, err := backup(path, orig); err != nil {
			return err
		}
	}
	return writeFile(path, data)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// backup copies data next to path under the first free name
// PATH.before-codemode, PATH.before-codemode.2, ... and returns it.
func backup(path string, data []byte) (string, error) {
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	for i := 1; ; i++ {
		name := path + ".before-codemode"
		if i > 1 {
			name += fmt.Sprintf(".%d", i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("connect: backup %s: %w", path, err)
		}
		_, werr := f.Write(data)
		if err := errors.Join(werr, f.Close()); err != nil {
			return "", fmt.Errorf("connect: backup %s: %w", path, err)
		}
		return name, nil
	}
}

// writeFile replaces path with data atomically, keeping its permissions.
func writeFile(path string, data []byte) error {
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("connect: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Chmod(mode), tmp.Close()); err != nil {
		return fmt.Errorf("connect: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("connect: write %s: %w", path, err)
	}
	return nil
}

// serverNames lists the names of the servers object at key.
func serverNames(path string, data []byte, key []string) ([]string, error) {
	if strings.HasSuffix(path, ".toml") {
		return tomlServerNames(data, key[0])
	}
	return jsonServerNames(data, key)
}

// jsonValue round-trips v through JSON into a plain map.
func jsonValue(b []byte) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}
