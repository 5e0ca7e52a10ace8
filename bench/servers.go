package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/codemode/codemode/internal/downstream/downstreamtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The benchmark binary doubles as a downstream MCP server, selected by
// these variables: "tools" is the test suite's Go server (echo, sleep, ...),
// "synth" a server with generated tools.
const (
	envServe      = "CODEMODE_BENCH_SERVE"
	envSynthTools = "CODEMODE_BENCH_SYNTH_TOOLS"
	envSynthID    = "CODEMODE_BENCH_SYNTH_ID"
)

// maybeServe runs a downstream server and exits, when asked to.
func maybeServe() {
	switch os.Getenv(envServe) {
	case "":
		return
	case "tools":
		os.Exit(downstreamtest.Serve("tools", os.Stdin, os.Stdout))
	case "synth":
		n, _ := strconv.Atoi(os.Getenv(envSynthTools))
		id, _ := strconv.Atoi(os.Getenv(envSynthID))
		os.Exit(serveSynth(id, n))
	default:
		fmt.Fprintf(os.Stderr, "codemode-bench: unknown server %q\n", os.Getenv(envServe))
		os.Exit(2)
	}
}

// npmServer is one of the real npm MCP servers the benchmark lists and calls.
type npmServer struct {
	name string // as configured: mcp_<name> in the sandbox
	pkg  string // npm package
	bin  string // its bin entry
	args []string
	env  map[string]string
}

// npmServers are the five real servers of the context benchmark, in the
// order they are added for the growth curve. dir is the filesystem
// server's allowed directory; memFile the memory server's store.
func npmServers(dir, memFile string) []npmServer {
	return []npmServer{
		{name: "everything", pkg: "@modelcontextprotocol/server-everything", bin: "mcp-server-everything", args: []string{"stdio"}},
		{name: "filesystem", pkg: "@modelcontextprotocol/server-filesystem", bin: "mcp-server-filesystem", args: []string{dir}},
		{name: "memory", pkg: "@modelcontextprotocol/server-memory", bin: "mcp-server-memory", env: map[string]string{"MEMORY_FILE_PATH": memFile}},
		{name: "sequential_thinking", pkg: "@modelcontextprotocol/server-sequential-thinking", bin: "mcp-server-sequential-thinking", env: map[string]string{"DISABLE_THOUGHT_LOGGING": "true"}},
		{name: "playwright", pkg: "@playwright/mcp", bin: "playwright-mcp"},
	}
}

// entry returns the package's bin script and version, read from its
// package.json (run with Node directly: npx costs ~400 ms per start).
func (h *harness) entry(s npmServer) (script, version string, err error) {
	dir := filepath.Join(h.nodeModules, filepath.FromSlash(s.pkg))
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", "", fmt.Errorf("reading %s's package.json (run scripts/testdeps.sh): %w", s.pkg, err)
	}
	var m struct {
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return "", "", fmt.Errorf("decoding %s's package.json: %w", s.pkg, err)
	}
	var bins map[string]string
	if json.Unmarshal(m.Bin, &bins) != nil {
		var one string
		if json.Unmarshal(m.Bin, &one) != nil {
			return "", "", fmt.Errorf("%s: package.json has no bin", s.pkg)
		}
		bins = map[string]string{s.bin: one}
	}
	script, ok := bins[s.bin]
	if !ok {
		return "", "", fmt.Errorf("%s %s has no bin %q", s.pkg, m.Version, s.bin)
	}
	return filepath.Join(dir, filepath.FromSlash(script)), m.Version, nil
}

// configs is the mcpServers section of codemode's config for servers.
func (h *harness) configs(servers []npmServer) (map[string]any, error) {
	out := map[string]any{}
	for _, s := range servers {
		script, _, err := h.entry(s)
		if err != nil {
			return nil, err
		}
		e := map[string]any{"command": h.node, "args": append([]string{script}, s.args...)}
		if len(s.env) > 0 {
			e["env"] = s.env
		}
		out[s.name] = e
	}
	return out, nil
}

// command is the server's command line for a direct client.
func (h *harness) command(s npmServer) (*exec.Cmd, error) {
	script, _, err := h.entry(s)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(h.node, append([]string{script}, s.args...)...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + h.tmp}
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd, nil
}

// selfServer is the mcpServers entry of this binary as a downstream server.
func (h *harness) selfServer(kind string, env map[string]string) map[string]any {
	e := map[string]string{envServe: kind}
	for k, v := range env {
		e[k] = v
	}
	return map[string]any{"command": h.self, "env": e}
}

// selfCommand runs this binary as a downstream server for a direct client.
func (h *harness) selfCommand(kind string) *exec.Cmd {
	cmd := exec.Command(h.self)
	cmd.Env = []string{envServe + "=" + kind}
	return cmd
}

// direct is a go-sdk client connected straight to a server.
type direct struct {
	cs      *mcp.ClientSession
	rec     *recorder
	connect time.Duration // spawn to initialized
}

func connectDirect(ctx context.Context, cmd *exec.Cmd, record bool) (*direct, error) {
	var tr mcp.Transport = &mcp.CommandTransport{Command: cmd}
	d := &direct{}
	if record {
		d.rec = &recorder{}
		tr = &recordingTransport{inner: tr, rec: d.rec}
	}
	t0 := time.Now()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "codemode-bench-direct", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", strings.Join(cmd.Args, " "), err)
	}
	d.cs, d.connect = cs, time.Since(t0)
	return d, nil
}
