package serverconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// parseJSON decodes a JSON-with-comments document whose top level must be an
// object. Numbers stay json.Number.
func parseJSON(data []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]any{}, nil
	}
	clean, err := stripJSONC(data)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(clean))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// Offset is just past the offending byte.
			line, col := lineCol(clean, max(int(se.Offset)-1, 0))
			return nil, fmt.Errorf("line %d, column %d: %s", line, col, se.Error())
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errors.New("unexpected end of file")
		}
		return nil, err
	}
	off := int(dec.InputOffset())
	if rest := bytes.TrimLeft(clean[off:], " \t\r\n"); len(rest) > 0 {
		line, col := lineCol(clean, len(clean)-len(rest))
		return nil, fmt.Errorf("line %d, column %d: unexpected data after the top-level value", line, col)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("top level is %s, want an object", typeName(v))
	}
	return m, nil
}

// parseTOML decodes a TOML document.
func parseTOML(data []byte) (map[string]any, error) {
	m := map[string]any{}
	if _, err := toml.Decode(string(data), &m); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("line %d, column %d: %s", pe.Position.Line, pe.Position.Col, pe.Message)
		}
		return nil, err
	}
	return m, nil
}

// serverKeys are the members that may hold servers in a file given
// explicitly, in the order they are tried.
var serverKeys = []string{"mcpServers", "mcp_servers", "servers"}

// fileDoc is what one file says about servers.
type fileDoc struct {
	description string
	entries     map[string]any // name -> raw entry
	excluded    map[string]string
	warnings    []string
}

// extract finds the servers object in a parsed file. key nil means "any of
// serverKeys" (explicit files). A missing key is not an error: the file
// simply defines no servers.
func extract(tree map[string]any, key []string, cwd, dialect string) (fileDoc, error) {
	var doc fileDoc
	if d, ok := tree["description"].(string); ok {
		doc.description = d
	}
	var raw any
	var where string
	if key == nil {
		for _, k := range serverKeys {
			v, ok := tree[k]
			if !ok {
				continue
			}
			if raw == nil {
				raw, where = v, k
			} else {
				doc.warnings = append(doc.warnings, fmt.Sprintf("%q ignored: the file also has %q, which is used", k, where))
			}
		}
	} else {
		var cur any = tree
		var path []string
		for _, k := range key {
			if k == "{cwd}" {
				k = cwd
				if k == "" {
					return doc, nil
				}
			}
			m, ok := cur.(map[string]any)
			if !ok {
				return doc, fmt.Errorf("%s: want an object, got %s", strings.Join(path, "."), typeName(cur))
			}
			path = append(path, k)
			if cur, ok = m[k]; !ok {
				return doc, nil
			}
		}
		raw, where = cur, strings.Join(path, ".")
	}
	if raw == nil {
		return doc, nil
	}
	entries, ok := raw.(map[string]any)
	if !ok {
		return doc, fmt.Errorf("%s: want an object, got %s", where, typeName(raw))
	}
	doc.entries = entries
	if dialect == "gemini" {
		doc.excluded = geminiExcluded(tree, entries)
	}
	return doc, nil
}

// geminiExcluded applies Gemini CLI's mcp.allowed and mcp.excluded lists.
func geminiExcluded(tree, entries map[string]any) map[string]string {
	mcp, _ := tree["mcp"].(map[string]any)
	if mcp == nil {
		return nil
	}
	names := func(k string) ([]string, bool) {
		list, ok := mcp[k].([]any)
		if !ok {
			return nil, false
		}
		var out []string
		for _, v := range list {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
		return out, true
	}
	out := map[string]string{}
	allowed, hasAllowed := names("allowed")
	excluded, _ := names("excluded")
	for name := range entries {
		switch {
		case slices.Contains(excluded, name):
			out[name] = "listed in mcp.excluded"
		case hasAllowed && !slices.Contains(allowed, name):
			out[name] = "not listed in mcp.allowed"
		}
	}
	return out
}

// entryContext is what decoding one entry needs besides the entry itself.
type entryContext struct {
	dialect     string
	description string // the file's default
	env         Env
	x           *expander
	allowSelf   bool
}

// decoded is the outcome of decoding one entry: a server, or a skip.
type decoded struct {
	server    Server
	skip      SkipReason
	detail    string
	undefined []string // variables that expanded to ""
}

// decodeEntry turns one raw entry into a Server. Source fields are left for
// the caller.
func decodeEntry(name string, raw any, ec *entryContext) decoded {
	invalid := func(format string, a ...any) decoded {
		return decoded{skip: SkipInvalid, detail: fmt.Sprintf(format, a...)}
	}
	if name == "" {
		return invalid("empty server name")
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return invalid("want an object, got %s", typeName(raw))
	}
	f := &fields{m: m}

	if d, ok := f.boolean("disabled"); ok && d {
		return decoded{skip: SkipDisabled, detail: "disabled: true"}
	}
	if e, ok := f.boolean("enabled"); ok && !e {
		return decoded{skip: SkipDisabled, detail: "enabled: false"}
	}
	if f.err != nil {
		return invalid("%v", f.err)
	}

	s := Server{Name: name, Description: ec.description}
	if d, ok := f.str("description"); ok {
		s.Description = d
	}
	command, hasCommand := f.str("command")
	args := f.strList("args")
	env := f.strMap("env")
	cwd, _ := f.str("cwd")
	envFile, _ := f.str("envFile")
	headers := f.strMap("headers")
	if h := f.strMap("http_headers"); h != nil {
		headers = mergeMaps(h, headers)
	}
	typ, hasType := f.str("type")
	if !hasType {
		typ, hasType = f.str("transport")
	}
	urls := map[string]string{}
	for _, k := range []string{"url", "httpUrl", "serverUrl"} {
		if u, ok := f.str(k); ok {
			urls[k] = u
		}
	}
	s.IncludeTools = f.strList("includeTools", "enabled_tools")
	s.ExcludeTools = f.strList("excludeTools", "disabled_tools", "disabledTools")
	s.StartupTimeout = f.duration("startup_timeout_sec", time.Second)
	if s.StartupTimeout == 0 {
		s.StartupTimeout = f.duration("startup_timeout_ms", time.Millisecond)
	}
	s.ToolTimeout = f.duration("tool_timeout_sec", time.Second)
	if ec.dialect == "gemini" {
		if t := f.duration("timeout", time.Millisecond); t > 0 {
			s.ToolTimeout = t
		}
	}
	envVars := f.strList("env_vars")
	bearerVar, _ := f.str("bearer_token_env_var")
	envHeaders := f.strMap("env_http_headers")
	oauth := f.oauth("oauth")
	if f.err != nil {
		return invalid("%v", f.err)
	}

	// Transport.
	var urlKey string
	if hasType {
		switch strings.ToLower(typ) {
		case "stdio":
			s.Transport = TransportStdio
		case "http", "streamable-http", "streamable_http", "streamablehttp":
			s.Transport = TransportHTTP
			urlKey = firstKey(urls, "httpUrl", "url", "serverUrl")
		case "sse":
			s.Transport = TransportSSE
			urlKey = firstKey(urls, "url", "serverUrl", "httpUrl")
		default:
			return invalid("unknown type %q (want stdio, http or sse)", typ)
		}
	} else if ec.dialect == "gemini" {
		// Gemini CLI picks httpUrl, then url, then command.
		switch {
		case urls["httpUrl"] != "":
			s.Transport, urlKey = TransportHTTP, "httpUrl"
		case urls["url"] != "":
			s.Transport, urlKey = TransportSSE, "url"
		case hasCommand:
			s.Transport = TransportStdio
		}
	} else {
		// A command wins, as in the reference; a bare URL is streamable
		// HTTP unless its path ends in /sse.
		switch {
		case hasCommand:
			s.Transport = TransportStdio
		default:
			if urlKey = firstKey(urls, "url", "serverUrl", "httpUrl"); urlKey != "" {
				s.Transport = TransportHTTP
				if u, err := url.Parse(urls[urlKey]); err == nil && strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/sse") {
					s.Transport = TransportSSE
				}
			}
		}
	}
	if s.Transport == "" {
		return invalid("no command or url")
	}

	// Expansion.
	var ex expansion
	exp := func(v string) string { return ec.x.expand(v, false, &ex) }
	home := ec.env.Home
	if s.Transport == TransportStdio {
		if !hasCommand {
			return invalid("stdio server without a command")
		}
		s.Command = expandTilde(exp(command), home)
		for _, a := range args {
			a = exp(a)
			if strings.HasPrefix(a, "~/") {
				a = expandTilde(a, home)
			}
			s.Args = append(s.Args, a)
		}
		if cwd != "" {
			s.Cwd = absPath(expandTilde(exp(cwd), home), ec.env.Cwd)
		}
		if envFile != "" {
			path := absPath(expandTilde(exp(envFile), home), ec.env.Cwd)
			fileEnv, err := readDotenv(path)
			if err != nil {
				return invalid("envFile: %v", err)
			}
			s.Env = fileEnv
		}
		for _, k := range slices.Sorted(maps.Keys(env)) {
			s.Env = setKey(s.Env, k, ec.x.expand(env[k], ec.dialect == "gemini", &ex))
		}
		for _, k := range envVars {
			if _, set := s.Env[k]; set {
				continue
			}
			if v, ok := ec.env.lookup(k); ok {
				s.Env = setKey(s.Env, k, v)
			}
		}
		if s.Command == "" {
			return invalid("command is empty")
		}
	} else {
		if urlKey == "" {
			return invalid("%s server without a url", s.Transport)
		}
		s.URL = exp(urls[urlKey])
		for _, k := range slices.Sorted(maps.Keys(headers)) {
			s.Headers = setKey(s.Headers, k, exp(headers[k]))
		}
		for _, h := range slices.Sorted(maps.Keys(envHeaders)) {
			if val, ok := ec.env.lookup(envHeaders[h]); ok && val != "" {
				s.Headers = setKey(s.Headers, h, val)
			}
		}
		if oauth != nil {
			oauth.ClientID, oauth.ClientSecret = exp(oauth.ClientID), exp(oauth.ClientSecret)
			s.OAuth = oauth
		}
		if bearerVar != "" {
			if tok, ok := ec.env.lookup(bearerVar); ok && tok != "" {
				s.Headers = setKey(s.Headers, "Authorization", "Bearer "+tok)
			} else {
				ex.addUndefined(bearerVar)
			}
		}
		if err := checkURL(s.URL); err != nil {
			if len(ex.inputs) == 0 {
				return invalid("%s: %v", urlKey, err)
			}
		}
	}
	if len(ex.inputs) > 0 {
		return decoded{skip: SkipNeedsInput, detail: fmt.Sprintf("uses %s, which only VS Code can prompt for", strings.Join(ex.inputs, ", "))}
	}
	if len(ex.unsupported) > 0 {
		return invalid("unsupported variable %s", strings.Join(ex.unsupported, ", "))
	}
	if !ec.allowSelf {
		if why, ok := selfReference(name, s.Command, s.Args, ec.env.Self); ok {
			return decoded{skip: SkipSelf, detail: why}
		}
	}
	return decoded{server: s, undefined: ex.undefined}
}

func firstKey(m map[string]string, keys ...string) string {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return k
		}
	}
	return ""
}

func checkURL(raw string) error {
	if raw == "" {
		return errors.New("empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a valid URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q is not an http or https URL", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", raw)
	}
	return nil
}

// absPath makes p absolute relative to dir (when dir is known).
func absPath(p, dir string) string {
	if p == "" || filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

func setKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

// mergeMaps returns a copy of base with over's entries added on top.
func mergeMaps(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(over))
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}

// fields reads typed members of one entry, remembering the first type error.
type fields struct {
	m   map[string]any
	err error
}

func (f *fields) fail(key, want string, v any) {
	if f.err == nil {
		f.err = fmt.Errorf("%s: want %s, got %s", key, want, typeName(v))
	}
}

// str returns the string member key; present reports whether it is there
// (and not null).
func (f *fields) str(key string) (s string, present bool) {
	v, ok := f.m[key]
	if !ok || v == nil {
		return "", false
	}
	s, ok = v.(string)
	if !ok {
		f.fail(key, "a string", v)
		return "", false
	}
	return s, true
}

func (f *fields) boolean(key string) (b, present bool) {
	v, ok := f.m[key]
	if !ok || v == nil {
		return false, false
	}
	b, ok = v.(bool)
	if !ok {
		f.fail(key, "true or false", v)
		return false, false
	}
	return b, true
}

// strList returns the first present member of keys as a list of strings.
// Numbers and booleans are converted, as the reference does.
func (f *fields) strList(keys ...string) []string {
	for _, key := range keys {
		v, ok := f.m[key]
		if !ok || v == nil {
			continue
		}
		list, ok := v.([]any)
		if !ok {
			f.fail(key, "a list of strings", v)
			return nil
		}
		out := make([]string, 0, len(list))
		for i, e := range list {
			s, ok := scalarString(e)
			if !ok {
				f.fail(fmt.Sprintf("%s[%d]", key, i), "a string", e)
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	return nil
}

// strMap returns member key as a map of strings. Null values are dropped
// (VS Code uses null to unset a variable); numbers and booleans are
// converted.
func (f *fields) strMap(key string) map[string]string {
	v, ok := f.m[key]
	if !ok || v == nil {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		f.fail(key, "an object of strings", v)
		return nil
	}
	out := make(map[string]string, len(obj))
	for k, e := range obj {
		if e == nil {
			continue
		}
		s, ok := scalarString(e)
		if !ok {
			f.fail(key+"."+k, "a string", e)
			return nil
		}
		out[k] = s
	}
	return out
}

// oauth reads member key as an OAuth client configuration.
func (f *fields) oauth(key string) *OAuth {
	v, ok := f.m[key]
	if !ok || v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		f.fail(key, "an object", v)
		return nil
	}
	of := &fields{m: m}
	o := &OAuth{Scopes: of.strList("scopes")}
	o.ClientID, _ = of.str("clientId")
	o.ClientSecret, _ = of.str("clientSecret")
	if of.err != nil && f.err == nil {
		f.err = fmt.Errorf("%s.%w", key, of.err)
	}
	return o
}

// duration reads a non-negative number of units.
func (f *fields) duration(key string, unit time.Duration) time.Duration {
	v, ok := f.m[key]
	if !ok || v == nil {
		return 0
	}
	n, ok := number(v)
	if !ok {
		f.fail(key, "a number", v)
		return 0
	}
	d := n * float64(unit)
	if n < 0 || math.IsNaN(n) || d > float64(math.MaxInt64) {
		if f.err == nil {
			f.err = fmt.Errorf("%s: %v is out of range", key, n)
		}
		return 0
	}
	return time.Duration(d)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		x, err := n.Float64()
		return x, err == nil
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, int64, float64:
		return "a number"
	case []any, []map[string]any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return "a date"
	}
}
