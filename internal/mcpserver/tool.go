package mcpserver

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/codemode/codemode/internal/artifacts"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ToolName is the one tool codemode exposes.
const ToolName = "run_python"

// toolDescription and the schema below are everything a client puts in the
// model's prompt for codemode, so every word is paid for on every turn: keep
// the whole tools/list entry under ~200 tokens (see bench/). The manual
// explains what the schema cannot afford to (handles, close).
const toolDescription = "Run Python in a persistent sandbox (state kept per session; no network). " +
	"Configured MCP servers are callable as `await mcp_<server>.<tool>(...)`. " +
	"Start with `print(runtime.capability_summary())`."

// description is the tool's description: with egress on, the model must not
// be told there is no network (the manual names the hosts).
func description(egress bool) string {
	if egress {
		return strings.Replace(toolDescription, "no network", "network: allowed hosts only", 1)
	}
	return toolDescription
}

func inputSchema(defaultTimeout, maxTimeout int) jsontext.Value {
	return jsontext.Value(fmt.Sprintf(`{"type":"object","properties":{`+
		`"code":{"type":"string","description":"Python; top-level await works; a last expression is echoed"},`+
		`"servers":{"type":"array","items":{"type":"string"},"description":"MCP servers to preload"},`+
		`"timeout":{"type":"integer","minimum":1,"maximum":%d,"default":%d,"description":"Seconds"},`+
		`"session":{"type":"string","description":"Session name or handle"},`+
		`"reset":{"type":"boolean","description":"Start from a fresh interpreter"},`+
		`"close":{"type":"boolean"},`+
		`"files":{"type":"object","description":"Files for /workspace: name -> text or {\"base64\": data}"}},`+
		`"required":["code"]}`, maxTimeout, defaultTimeout))
}

// args are run_python's validated arguments.
type args struct {
	Code    string
	Servers []string
	Timeout time.Duration // 0 = default
	Session string
	Reset   bool
	Close   bool // end the session after the call; code may then be empty
	Files   map[string][]byte
}

// maxInputFiles bounds the files argument (all files together).
const maxInputFiles = 10 << 20

var sessionName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// validationError is a message for status validation_error.
type validationError string

func (e validationError) Error() string { return string(e) }

// parseArgs validates run_python arguments. Messages follow the reference
// where it has one ("Missing 'code' argument", "'servers' must be a list",
// "'timeout' must be an integer").
func parseArgs(raw jsontext.Value, maxTimeout int) (args, error) {
	var a args
	if len(raw) == 0 || string(raw) == "null" {
		return a, validationError("Missing 'code' argument")
	}
	var fields map[string]jsontext.Value
	if err := json.Unmarshal(raw, &fields); err != nil {
		return a, validationError("arguments must be a JSON object")
	}
	var unknown []string
	for name := range fields {
		switch name {
		case "code", "servers", "timeout", "session", "reset", "close", "files":
		default:
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return a, validationError(fmt.Sprintf("unknown argument(s) %s; run_python takes code, servers, timeout, session, reset, close and files", strings.Join(quoteAll(unknown), ", ")))
	}
	if v, ok := fields["close"]; ok && string(v) != "null" {
		if json.Unmarshal(v, &a.Close) != nil {
			return a, validationError("'close' must be a boolean")
		}
	}
	if v, ok := fields["code"]; ok && json.Unmarshal(v, &a.Code) != nil {
		return a, validationError("Missing 'code' argument")
	}
	if strings.TrimSpace(a.Code) == "" && !a.Close {
		// Only closing a session needs no code.
		return a, validationError("Missing 'code' argument")
	}
	if v, ok := fields["servers"]; ok && string(v) != "null" {
		var list []any
		if json.Unmarshal(v, &list) != nil {
			return a, validationError("'servers' must be a list")
		}
		seen := map[string]bool{}
		for _, item := range list {
			name, ok := item.(string)
			if !ok || strings.TrimSpace(name) == "" {
				return a, validationError("'servers' must be a list of server names")
			}
			if !seen[name] {
				seen[name] = true
				a.Servers = append(a.Servers, name)
			}
		}
	}
	if v, ok := fields["timeout"]; ok && string(v) != "null" {
		var f float64
		var s string
		if json.Unmarshal(v, &s) == nil {
			// Models often quote numbers ("10"); the meaning is clear.
			v = jsontext.Value(strings.TrimSpace(s))
		}
		if json.Unmarshal(v, &f) != nil || f != float64(int64(f)) {
			return a, validationError("'timeout' must be an integer number of seconds, e.g. 30")
		}
		if f < 1 || f > float64(maxTimeout) {
			return a, validationError(fmt.Sprintf("'timeout' must be between 1 and %d seconds", maxTimeout))
		}
		a.Timeout = time.Duration(f) * time.Second
	}
	if v, ok := fields["session"]; ok && string(v) != "null" {
		if json.Unmarshal(v, &a.Session) != nil || !sessionName.MatchString(a.Session) {
			return a, validationError("'session' must be 1-64 characters of letters, digits, '_', '.' or '-'")
		}
	}
	if v, ok := fields["reset"]; ok && string(v) != "null" {
		if json.Unmarshal(v, &a.Reset) != nil {
			return a, validationError("'reset' must be a boolean")
		}
	}
	if v, ok := fields["files"]; ok && string(v) != "null" {
		files, err := parseFiles(v)
		if err != nil {
			return a, err
		}
		a.Files = files
	}
	return a, nil
}

// parseFiles reads {name: "text"} or {name: {"base64": "..."}} (or
// {"text": "..."}); names stay inside /workspace.
func parseFiles(v jsontext.Value) (map[string][]byte, error) {
	var raw map[string]jsontext.Value
	if json.Unmarshal(v, &raw) != nil {
		return nil, validationError("'files' must be an object mapping file names to contents")
	}
	out := make(map[string][]byte, len(raw))
	total := 0
	for name, content := range raw {
		clean, err := artifacts.CleanName(name)
		if err != nil {
			return nil, validationError(fmt.Sprintf("'files': %v", err))
		}
		var text string
		var obj struct {
			Base64 *string `json:"base64"`
			Text   *string `json:"text"`
		}
		switch {
		case json.Unmarshal(content, &text) == nil:
			out[clean] = []byte(text)
		case json.Unmarshal(content, &obj, json.RejectUnknownMembers(true)) == nil && (obj.Base64 == nil) != (obj.Text == nil):
			if obj.Text != nil {
				out[clean] = []byte(*obj.Text)
				break
			}
			data, err := base64.StdEncoding.DecodeString(*obj.Base64)
			if err != nil {
				return nil, validationError(fmt.Sprintf("'files': %s is not valid base64", name))
			}
			out[clean] = data
		default:
			return nil, validationError(fmt.Sprintf("'files': %s must be a string or {\"base64\": ...}", name))
		}
		total += len(out[clean])
	}
	if total > maxInputFiles {
		return nil, validationError(fmt.Sprintf("'files' holds %d bytes; the limit is %d", total, maxInputFiles))
	}
	return out, nil
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = "'" + v + "'"
	}
	return out
}
