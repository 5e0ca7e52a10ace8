package catalog

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/codemode/codemode/internal/serverconfig"
)

// LaunchOptions say how entries are started on this host.
type LaunchOptions struct {
	// NPMPrefix is a directory whose node_modules holds npm packages
	// already installed: a package found there runs from it (with the node
	// in its node_modules/.bin, if there is one) instead of through npx.
	NPMPrefix string
	// Lookup reads codemode's own environment: the only place secret
	// variables come from.
	Lookup func(name string) (string, bool)
	// LookPath finds a program (exec.LookPath); a package whose runner is
	// missing is skipped.
	LookPath func(file string) (string, error)
}

// Error is a reason an entry cannot be added, for the sandboxed code.
type Error struct {
	Kind string // "invalid", "needs_secret", "unsupported"
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Server returns the configuration that runs e as the server called name:
// the first package this host can run (npm, pypi, oci), else the first
// streamable-HTTP or SSE remote. env holds values the code gives for the
// entry's variables; secret ones are refused there and read through
// opts.Lookup instead.
func (e *Entry) Server(name string, env map[string]string, opts LaunchOptions) (serverconfig.Server, error) {
	var declared []string
	for _, p := range e.Packages {
		for _, v := range p.EnvironmentVariables {
			declared = append(declared, v.Name)
			if _, given := env[v.Name]; given && v.IsSecret {
				return serverconfig.Server{}, &Error{"invalid", fmt.Sprintf("%s is a secret: code cannot set it; set it in codemode's environment", v.Name)}
			}
		}
	}
	for k := range env {
		if !slices.Contains(declared, k) {
			return serverconfig.Server{}, &Error{"invalid", fmt.Sprintf("%s declares no variable %s (it declares: %s)", e.Name, k, orNone(declared))}
		}
	}
	var skipped []string
	for _, p := range e.Packages {
		if p.Transport.Type != "" && p.Transport.Type != "stdio" {
			skipped = append(skipped, p.RegistryType+" over "+p.Transport.Type)
			continue
		}
		cmd, args, ok := p.command(opts)
		if !ok {
			skipped = append(skipped, p.RegistryType+" (no runner on this host)")
			continue
		}
		vars, err := p.environment(env, opts)
		if err != nil {
			return serverconfig.Server{}, err
		}
		if p.RegistryType == "oci" {
			// The engine passes the named variables on from its own
			// environment, which is the child's.
			run := []string{"run", "-i", "--rm"}
			for _, k := range sortedKeys(vars) {
				run = append(run, "-e", k)
			}
			args = append(run, args...)
		}
		return serverconfig.Server{Name: name, Description: e.Description, Transport: serverconfig.TransportStdio,
			Command: cmd, Args: args, Env: vars, Source: e.Source, SourceKind: "catalog", Scope: serverconfig.ScopeExplicit}, nil
	}
	for _, r := range e.Remotes {
		t := serverconfig.TransportHTTP
		switch r.Type {
		case "streamable-http":
		case "sse":
			t = serverconfig.TransportSSE
		default:
			skipped = append(skipped, "remote over "+r.Type)
			continue
		}
		headers := map[string]string{}
		for _, h := range r.Headers {
			v, err := value(h, nil, opts)
			if err != nil {
				return serverconfig.Server{}, err
			}
			if v != "" {
				headers[h.Name] = v
			}
		}
		return serverconfig.Server{Name: name, Description: e.Description, Transport: t, URL: r.URL, Headers: headers,
			Source: e.Source, SourceKind: "catalog", Scope: serverconfig.ScopeExplicit}, nil
	}
	return serverconfig.Server{}, &Error{"unsupported", fmt.Sprintf("%s has no package or remote codemode can run here (%s)", e.Name, orNone(skipped))}
}

// command is the program and arguments that run the package.
func (p *Package) command(opts LaunchOptions) (string, []string, bool) {
	have := func(prog string) bool {
		if opts.LookPath == nil {
			return false
		}
		_, err := opts.LookPath(prog)
		return err == nil
	}
	switch p.RegistryType {
	case "npm":
		if bin, ok := installedBin(opts.NPMPrefix, p.Identifier); ok {
			node := filepath.Join(opts.NPMPrefix, "node_modules", ".bin", "node")
			if _, err := os.Stat(node); err != nil {
				node = "node"
			}
			return node, append([]string{bin}, arguments(p.PackageArguments)...), true
		}
		if !have("npx") {
			return "", nil, false
		}
		return "npx", append(append([]string{"-y"}, arguments(p.RuntimeArguments)...), append([]string{versioned(p.Identifier, "@", p.Version)}, arguments(p.PackageArguments)...)...), true
	case "pypi":
		if !have("uvx") {
			return "", nil, false
		}
		return "uvx", append(append(arguments(p.RuntimeArguments), versioned(p.Identifier, "==", p.Version)), arguments(p.PackageArguments)...), true
	case "oci":
		for _, engine := range []string{"podman", "docker"} {
			if have(engine) {
				image := p.Identifier
				if p.Version != "" && !strings.Contains(image[strings.LastIndex(image, "/")+1:], ":") {
					image += ":" + p.Version
				}
				return engine, append(append(arguments(p.RuntimeArguments), image), arguments(p.PackageArguments)...), true
			}
		}
	}
	return "", nil, false
}

// installedBin finds the script an npm package installed under prefix
// runs: its package.json's bin (the only one, or the one named after the
// package).
func installedBin(prefix, pkg string) (string, bool) {
	if prefix == "" || pkg == "" || strings.Contains(pkg, "..") {
		return "", false
	}
	dir := filepath.Join(prefix, "node_modules", filepath.FromSlash(pkg))
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", false
	}
	var meta struct {
		Bin json.RawMessage `json:"bin"`
	}
	if json.Unmarshal(data, &meta) != nil {
		return "", false
	}
	var one string
	if json.Unmarshal(meta.Bin, &one) == nil && one != "" {
		return filepath.Join(dir, one), true
	}
	var bins map[string]string
	if json.Unmarshal(meta.Bin, &bins) != nil || len(bins) == 0 {
		return "", false
	}
	if b, ok := bins[pkg[strings.LastIndex(pkg, "/")+1:]]; ok {
		return filepath.Join(dir, b), true
	}
	if len(bins) == 1 {
		for _, b := range bins {
			return filepath.Join(dir, b), true
		}
	}
	return "", false
}

func versioned(id, sep, version string) string {
	if version == "" || version == "latest" {
		return id
	}
	return id + sep + version
}

// arguments renders arguments with their value, else their default;
// those with neither are left out.
func arguments(list []Argument) []string {
	var out []string
	for _, a := range list {
		v := a.Value
		if v == "" {
			v = a.Default
		}
		switch a.Type {
		case "named":
			if a.Name == "" {
				continue
			}
			out = append(out, a.Name)
			if v != "" {
				out = append(out, v)
			}
		default:
			if v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// environment is the variables the package gets: the code's values for
// plain ones, codemode's environment for secrets, defaults otherwise.
func (p *Package) environment(env map[string]string, opts LaunchOptions) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range p.EnvironmentVariables {
		val, err := value(v, env, opts)
		if err != nil {
			return nil, err
		}
		if val != "" {
			out[v.Name] = val
		}
	}
	return out, nil
}

func value(in Input, env map[string]string, opts LaunchOptions) (string, error) {
	if v, ok := env[in.Name]; ok && !in.IsSecret {
		return v, nil
	}
	if in.IsSecret {
		if opts.Lookup != nil {
			if v, ok := opts.Lookup(in.Name); ok && v != "" {
				return v, nil
			}
		}
		if in.IsRequired {
			return "", &Error{"needs_secret", fmt.Sprintf("the server needs the secret %s (%s); code cannot pass it: set it in codemode's environment", in.Name, in.Description)}
		}
		return "", nil
	}
	if in.Value != "" {
		return in.Value, nil
	}
	if in.Default != "" {
		return in.Default, nil
	}
	if in.IsRequired {
		return "", &Error{"invalid", fmt.Sprintf("%s is required (%s): pass it in env", in.Name, in.Description)}
	}
	return "", nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// ConfigEntry renders cfg, the configuration of e, as an mcpServers entry
// of a config file. Secret variables and headers are written as ${NAME},
// which codemode expands from its environment when it reads the file, so
// no secret is ever stored.
func (e *Entry) ConfigEntry(cfg serverconfig.Server) map[string]any {
	secret := e.Secrets()
	hide := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if slices.Contains(secret, k) {
				v = "${" + k + "}"
			}
			out[k] = v
		}
		return out
	}
	out := map[string]any{}
	if cfg.Description != "" {
		out["description"] = cfg.Description
	}
	if cfg.Transport == serverconfig.TransportStdio {
		out["command"], out["args"] = cfg.Command, cfg.Args
		if len(cfg.Env) > 0 {
			out["env"] = hide(cfg.Env)
		}
		return out
	}
	out["type"], out["url"] = string(cfg.Transport), cfg.URL
	if len(cfg.Headers) > 0 {
		out["headers"] = hide(cfg.Headers)
	}
	return out
}

// WriteConfig writes cfg, the configuration of e, as a config file of its
// own in dir (codemode's config directory, $XDG_CONFIG_HOME/mcp/servers),
// never over an existing file, and returns its path.
func (e *Entry) WriteConfig(dir string, cfg serverconfig.Server) (string, error) {
	doc, err := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{cfg.Name: e.ConfigEntry(cfg)}}, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, cfg.Name+".json")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("catalog: write %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", fmt.Errorf("catalog: write %s: %w", path, err)
	}
	if _, err := f.Write(append(doc, '\n')); err != nil {
		f.Close()
		return "", fmt.Errorf("catalog: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("catalog: write %s: %w", path, err)
	}
	return path, nil
}

// ConfigDir is codemode's own directory of server config files:
// $XDG_CONFIG_HOME/mcp/servers, or ~/.config/mcp/servers.
func ConfigDir(lookup func(string) (string, bool), home string) string {
	if dir, ok := lookup("XDG_CONFIG_HOME"); ok && filepath.IsAbs(dir) {
		return filepath.Join(dir, "mcp", "servers")
	}
	return filepath.Join(home, ".config", "mcp", "servers")
}
