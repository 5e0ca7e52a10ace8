package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/testenv"
)

const capabilitiesURI = "resource://mcp-server-code-execution-mode/capabilities"

// TestInspectorCLI drives codemode with the MCP Inspector's CLI
// (@modelcontextprotocol/inspector v2, `mcp-inspector --cli`), an
// independent TypeScript client, over stdio (the inspector spawns codemode)
// and over streamable HTTP with a bearer token.
func TestInspectorCLI(t *testing.T) {
	node := testenv.Node(t)
	inspector := npmBin(t, "@modelcontextprotocol/inspector", "mcp-inspector")
	h := startHTTP(t)
	targets := []struct {
		name string
		args []string // the target and its connection options
	}{
		// The inspector passes the stdio server only HOME, PATH and the
		// like from its own environment, plus -e.
		{"stdio", []string{codemodeBin, "serve", "-e", "HOME=" + t.TempDir(), "-e", "CODEMODE_LOG_LEVEL=debug"}},
		{"http", []string{h.url, "--header", "Authorization: Bearer " + aliceToken}},
	}
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			t.Parallel()
			inspect := func(t *testing.T, args ...string) inspectorOutput {
				t.Helper()
				return runInspector(t, node, inspector, append(slices.Clone(target.args), args...)...)
			}
			t.Run("tools/list", func(t *testing.T) {
				out := inspect(t, "--method", "tools/list")
				checkToolList(t, out.Result)
				if len(out.SchemaFindings) > 0 {
					t.Errorf("schemaFindings without --strict: %s", out.SchemaFindings)
				}
			})
			t.Run("tools/list --strict", func(t *testing.T) {
				// --strict lints the tool schemas for portability across
				// clients: findings go into the JSON envelope, and errors
				// make the inspector exit 6 (which runInspector reports).
				out := inspect(t, "--method", "tools/list", "--strict")
				checkToolList(t, out.Result)
				var results []struct {
					ToolName string `json:"toolName"`
					Findings []struct {
						Severity   string          `json:"severity"`
						Path       json.RawMessage `json:"path"`
						Issue      string          `json:"issue"`
						Suggestion string          `json:"suggestion"`
					} `json:"findings"`
				}
				if len(out.SchemaFindings) > 0 {
					if err := json.Unmarshal(out.SchemaFindings, &results); err != nil {
						t.Fatalf("schemaFindings: %v: %s", err, out.SchemaFindings)
					}
				}
				for _, r := range results {
					for _, f := range r.Findings {
						if f.Severity == "error" {
							t.Errorf("tool %s: schema portability error at %s: %s (%s)", r.ToolName, f.Path, f.Issue, f.Suggestion)
						} else {
							t.Logf("tool %s: schema portability %s at %s: %s", r.ToolName, f.Severity, f.Path, f.Issue)
						}
					}
				}
			})
			t.Run("tools/call", func(t *testing.T) {
				out := inspect(t, "--method", "tools/call", "--tool-name", "run_python", "--tool-args-json", `{"code":"print(6*7)"}`)
				checkFortyTwo(t, out.Result)
			})
			t.Run("tools/call newest protocol", func(t *testing.T) {
				// "auto" negotiates 2026-07-28 where codemode offers it
				// (stdio; go-sdk serves it over HTTP only when stateless)
				// and falls back to the initialize handshake elsewhere.
				out := inspect(t, "--protocol-era", "auto", "--method", "tools/call", "--tool-name", "run_python", "--tool-args-json", `{"code":"print(6*7)"}`)
				checkFortyTwo(t, out.Result)
			})
			t.Run("resources/list", func(t *testing.T) {
				out := inspect(t, "--method", "resources/list")
				var list struct {
					Resources []struct {
						URI string `json:"uri"`
					} `json:"resources"`
				}
				decode(t, out.Result, &list)
				found := false
				for _, r := range list.Resources {
					found = found || r.URI == capabilitiesURI
				}
				if !found {
					t.Errorf("resources/list = %s, want %s among them", out.Result, capabilitiesURI)
				}
			})
			t.Run("resources/read", func(t *testing.T) {
				out := inspect(t, "--method", "resources/read", "--uri", capabilitiesURI)
				var read struct {
					Contents []struct {
						URI      string `json:"uri"`
						MIMEType string `json:"mimeType"`
						Text     string `json:"text"`
					} `json:"contents"`
				}
				decode(t, out.Result, &read)
				if len(read.Contents) != 1 || read.Contents[0].URI != capabilitiesURI || !strings.Contains(read.Contents[0].Text, "run_python") {
					t.Errorf("resources/read %s = %.500s, want its text, which mentions run_python", capabilitiesURI, out.Result)
				}
			})
		})
	}
	t.Run("http without token", func(t *testing.T) {
		t.Parallel()
		// --stored-auth-only: fail instead of starting an interactive OAuth
		// login; the inspector's private home holds no stored token.
		stdout, stderr, err := execInspector(t, node, inspector, h.url, "--stored-auth-only", "--method", "tools/list")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(stderr), "auth_required") {
			t.Errorf("tools/list without a token: %v, want exit code 3 (auth_required)\nstdout: %s\nstderr: %s", err, stdout, stderr)
		}
	})
}

// inspectorOutput is the inspector's --format json envelope.
type inspectorOutput struct {
	Result         json.RawMessage `json:"result"`
	SchemaFindings json.RawMessage `json:"schemaFindings"`
}

// runInspector runs the inspector CLI with --format json -q and decodes its
// envelope, failing the test when it exits non-zero.
func runInspector(t *testing.T, node, inspector string, args ...string) inspectorOutput {
	t.Helper()
	start := time.Now()
	stdout, stderr, err := execInspector(t, node, inspector, args...)
	if err != nil {
		t.Fatalf("inspector %q: %v\nstdout: %s\nstderr: %s", args, err, stdout, stderr)
	}
	t.Logf("inspector took %v", time.Since(start).Round(time.Millisecond))
	var out inspectorOutput
	if err := json.Unmarshal(stdout, &out); err != nil || out.Result == nil {
		t.Fatalf("inspector %q: stdout is not a JSON result envelope (%v):\n%s\nstderr: %s", args, err, stdout, stderr)
	}
	return out
}

// execInspector runs `mcp-inspector --cli <args> --format json -q` in a
// private home and working directory.
func execInspector(t *testing.T, node, inspector string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append(append([]string{inspector, "--cli"}, args...), "--format", "json", "-q")...)
	cmd.Env = nodeEnv(t)
	cmd.Dir = t.TempDir()
	var outBuf, errBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &errBuf
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	return outBuf.Bytes(), errBuf.Bytes(), err
}

func decode(t *testing.T, data json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decoding %.500s: %v", data, err)
	}
}

func checkToolList(t *testing.T, result json.RawMessage) {
	t.Helper()
	var list struct {
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
	}
	decode(t, result, &list)
	if len(list.Tools) != 1 || list.Tools[0].Name != "run_python" || list.Tools[0].InputSchema["type"] != "object" {
		t.Errorf("tools/list = %.1000s, want exactly one tool, run_python, with an object input schema", result)
	}
}

func checkFortyTwo(t *testing.T, result json.RawMessage) {
	t.Helper()
	var call struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	decode(t, result, &call)
	var text strings.Builder
	for _, c := range call.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
		}
	}
	if call.IsError || !strings.Contains(text.String(), "42") {
		t.Errorf("run_python print(6*7) = %.1000s, want text containing 42", result)
	}
}
