// Package proxy answers the requests sandboxed code makes to reach the
// user's MCP servers: discovery (discovered_servers, list_servers,
// describe_server), docs and ranked search over the tool catalogue, and tool
// calls through the downstream pool. It is the host side of mcp.runtime; the
// method names and result shapes follow the reference project's mcp.runtime.
package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/codemode/codemode/internal/downstream"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/codemode/codemode/internal/tooldocs"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Proxy.
type Options struct {
	Servers []serverconfig.Server
	Pool    *downstream.Pool
	Catalog *tooldocs.Catalog
	// IndexTimeout bounds how long a search waits for never-started servers
	// to start so their tools can be searched too (default 15s).
	IndexTimeout time.Duration
	// CacheDir keeps tool lists across restarts (the state directory);
	// empty disables the cache.
	CacheDir string
	// Visibility hides servers and tools from discovery (the policy's
	// unconditional denials); nil hides nothing.
	Visibility Visibility
	Logger     *slog.Logger
}

// Visibility says what code may not even see. Hidden servers do not start.
type Visibility interface {
	ServerHidden(server string) bool
	ToolHidden(server, tool string) bool
}

func (p *Proxy) serverHidden(server string) bool {
	return p.opts.Visibility != nil && p.opts.Visibility.ServerHidden(server)
}

func (p *Proxy) toolHidden(server, tool string) bool {
	return p.opts.Visibility != nil && (p.opts.Visibility.ServerHidden(server) || p.opts.Visibility.ToolHidden(server, tool))
}

// Proxy answers the MCP requests of sandboxed code.
type Proxy struct {
	opts    Options
	log     *slog.Logger
	mu      sync.RWMutex // guards servers, which grows when servers are added
	servers map[string]serverconfig.Server
	cache   *toolCache

	indexMu sync.Mutex // one catalogue warm-up at a time

	// call is the tool-call chain Register builds (middleware, then the pool).
	call hostrpc.ToolCaller
}

// New returns a Proxy and registers every configured server in the catalogue.
func New(opts Options) *Proxy {
	if opts.IndexTimeout <= 0 {
		opts.IndexTimeout = 15 * time.Second
	}
	p := &Proxy{opts: opts, log: opts.Logger, servers: map[string]serverconfig.Server{}, cache: openToolCache(opts.CacheDir)}
	p.call = p.poolCall
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	for _, s := range opts.Servers {
		p.servers[s.Name] = s
		opts.Catalog.AddServer(s.Name, s.Description)
		if tools, ok := p.cache.get(s); ok {
			opts.Catalog.SetTools(s.Name, tools)
		}
	}
	return p
}

// ToolsChanged keeps the catalogue and the on-disk cache current; app
// registers it with the pool (Pool.WatchTools), the one source of tool lists.
func (p *Proxy) ToolsChanged(server string, tools []*mcp.Tool) {
	converted := convertTools(tools)
	p.opts.Catalog.SetTools(server, converted)
	if cfg, ok := p.config(server); ok {
		if err := p.cache.put(cfg, converted); err != nil {
			p.log.Warn("writing the tool cache", "error", err)
		}
	}
}

func convertTools(tools []*mcp.Tool) []tooldocs.Tool {
	out := make([]tooldocs.Tool, 0, len(tools))
	for _, t := range tools {
		out = append(out, tooldocs.Tool{
			Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: rawJSON(t.InputSchema), OutputSchema: rawJSON(t.OutputSchema), Annotations: rawJSON(t.Annotations),
		})
	}
	return out
}

func rawJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil || string(data) == "null" {
		return nil
	}
	return data
}

func (p *Proxy) config(name string) (serverconfig.Server, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	cfg, ok := p.servers[name]
	return cfg, ok
}

// Alias reports the alias of a server code may see, by name or alias.
func (p *Proxy) Alias(name string) (string, bool) {
	info, ok := p.opts.Catalog.Server(name)
	if !ok || p.serverHidden(info.Name) {
		return "", false
	}
	return info.Alias, true
}

// AddServer adds a server while codemode runs (from a catalog): the pool
// gets it, it starts and lists its tools, and from then on discovery,
// search and calls treat it as configured; new interpreters see it in
// their boot configuration (Briefs). If it fails to start it is removed.
func (p *Proxy) AddServer(ctx context.Context, cfg serverconfig.Server) (string, error) {
	if err := p.opts.Pool.Add(cfg); err != nil {
		return "", err
	}
	p.mu.Lock()
	p.servers[cfg.Name] = cfg
	p.mu.Unlock()
	p.opts.Catalog.AddServer(cfg.Name, cfg.Description)
	if _, err := p.opts.Pool.Tools(ctx, cfg.Name); err != nil {
		p.opts.Pool.Remove(cfg.Name)
		p.opts.Catalog.RemoveServer(cfg.Name)
		p.mu.Lock()
		delete(p.servers, cfg.Name)
		p.mu.Unlock()
		return "", toRPCError(err)
	}
	info, _ := p.opts.Catalog.Server(cfg.Name)
	return info.Alias, nil
}

// Brief describes a server to the runtime at boot (for mcp_<alias> names).
type Brief struct {
	Name        string `json:"name"`
	Alias       string `json:"alias"`
	Description string `json:"description"`
}

// Briefs lists every configured server code may see, sorted by name.
func (p *Proxy) Briefs() []Brief {
	var out []Brief
	for _, s := range p.opts.Catalog.Servers() {
		if p.serverHidden(s.Name) {
			continue
		}
		out = append(out, Brief{Name: s.Name, Alias: s.Alias, Description: p.about(s)})
	}
	return out
}

// about is a server's description: the configured one, else what the
// server said of itself when it last started (in this run or, through the
// tool cache, an earlier one).
func (p *Proxy) about(s tooldocs.ServerInfo) string {
	if s.Description != "" {
		return s.Description
	}
	cfg, ok := p.config(s.Name)
	if !ok {
		return ""
	}
	if live := p.opts.Pool.About(s.Name); live != "" {
		if err := p.cache.setAbout(cfg, live); err != nil {
			p.log.Warn("writing the tool cache", "error", err)
		}
		return live
	}
	return p.cache.about(cfg)
}

// Preload starts the named servers (the run_python `servers` argument) in
// parallel. Unknown names fail with the reference's "Unknown MCP server".
func (p *Proxy) Preload(ctx context.Context, names []string) error {
	for _, n := range names {
		if info, ok := p.opts.Catalog.Server(n); !ok || p.serverHidden(info.Name) {
			// The reference's wording; prompts may look for it.
			return &hostrpc.Error{Kind: "unknown_server", Server: n, Message: "Unknown MCP server: " + n}
		}
	}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, _ := p.opts.Catalog.Server(n)
			errs[i] = p.opts.Pool.Start(ctx, info.Name)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Loaded lists the servers with a live session.
func (p *Proxy) Loaded() []string { return p.opts.Pool.Running() }

// Register adds the proxy's handlers to mux: discovery, docs, search and
// tool calls. Tool calls pass mws (policy, audit, tracing) after resolution
// and before the pool.
func (p *Proxy) Register(mux *hostrpc.Mux, mws ...hostrpc.ToolMiddleware) {
	p.call = hostrpc.Chain(p.poolCall, mws...)
	mux.Handle(hostrpc.DiscoveredServers, func(context.Context, *hostrpc.Request) (any, error) { return orEmpty(p.Briefs()), nil })
	mux.Handle(hostrpc.ListServers, func(context.Context, *hostrpc.Request) (any, error) { return orEmpty(p.Loaded()), nil })
	mux.Handle(hostrpc.DescribeServer, p.params(func(ctx context.Context, _ *hostrpc.Request, a rpcParams) (any, error) {
		info, err := p.serverWithTools(ctx, a.Server)
		if err != nil {
			return nil, err
		}
		return p.describe(info), nil
	}))
	mux.Handle(hostrpc.ListLoadedServerMetadata, func(context.Context, *hostrpc.Request) (any, error) {
		out := []description{}
		for _, name := range p.Loaded() {
			if info, ok := p.opts.Catalog.Server(name); ok && info.ToolsKnown && !p.serverHidden(name) {
				out = append(out, p.describe(info))
			}
		}
		return out, nil
	})
	mux.Handle(hostrpc.ListTools, p.params(func(ctx context.Context, _ *hostrpc.Request, a rpcParams) (any, error) {
		info, err := p.server(a.Server)
		if err != nil {
			return nil, err
		}
		tools, err := p.opts.Pool.RefreshTools(ctx, info.Name)
		if err != nil {
			return nil, err
		}
		visible := []*mcp.Tool{}
		for _, t := range tools {
			if !p.toolHidden(info.Name, t.Name) {
				visible = append(visible, t)
			}
		}
		return visible, nil
	}))
	mux.Handle(hostrpc.ListToolsCached, p.params(func(ctx context.Context, _ *hostrpc.Request, a rpcParams) (any, error) {
		info, err := p.serverWithTools(ctx, a.Server)
		if err != nil {
			return nil, err
		}
		return p.describe(info).Tools, nil
	}))
	mux.Handle(hostrpc.QueryToolDocs, p.params(func(ctx context.Context, _ *hostrpc.Request, a rpcParams) (any, error) {
		info, err := p.serverWithTools(ctx, a.Server)
		if err != nil {
			return nil, err
		}
		docs, err := p.opts.Catalog.Query(a.Server, a.Tool, a.Detail)
		if err != nil {
			return nil, err
		}
		visible := []tooldocs.Doc{}
		for _, d := range docs {
			if !p.toolHidden(info.Name, d.Tool) {
				visible = append(visible, d)
			}
		}
		if a.Tool != nil && len(visible) == 0 {
			return nil, &hostrpc.Error{Kind: "unknown_tool", Server: info.Name, Tool: *a.Tool,
				Message: fmt.Sprintf("Tool '%s' not found for server %s", *a.Tool, info.Name)}
		}
		return visible, nil
	}))
	mux.Handle(hostrpc.SearchToolDocs, p.params(func(ctx context.Context, _ *hostrpc.Request, a rpcParams) (any, error) {
		if a.Query == nil || strings.TrimSpace(*a.Query) == "" {
			return nil, hostrpc.Errorf(hostrpc.KindInvalid, "Missing 'query' value")
		}
		limit := tooldocs.DefaultSearchLimit
		if a.Limit != nil {
			limit = *a.Limit
		}
		p.indexAll(ctx)
		if p.opts.Visibility == nil {
			return p.opts.Catalog.Search(*a.Query, limit, a.Detail), nil
		}
		return p.opts.Catalog.SearchFiltered(*a.Query, limit, a.Detail, func(server, tool string) bool { return !p.toolHidden(server, tool) }), nil
	}))
	mux.Handle(hostrpc.CallTool, p.params(p.callTool))
}

// params decodes the proxy's request parameters before h runs.
func (p *Proxy) params(h func(context.Context, *hostrpc.Request, rpcParams) (any, error)) hostrpc.Handler {
	return func(ctx context.Context, req *hostrpc.Request) (any, error) {
		var a rpcParams
		if err := hostrpc.Decode(req, &a); err != nil {
			return nil, err
		}
		res, err := h(ctx, req, a)
		return res, toRPCError(err)
	}
}

// toRPCError gives the pool's and the catalogue's errors the kind the
// runtime raises.
func toRPCError(err error) error {
	if err == nil {
		return nil
	}
	var he *hostrpc.Error
	if errors.As(err, &he) {
		return he
	}
	var de *downstream.Error
	if errors.As(err, &de) {
		return &hostrpc.Error{Kind: de.Kind, Message: de.Error(), Server: de.Server, Tool: de.Tool}
	}
	var nf *tooldocs.NotFoundError
	if errors.As(err, &nf) {
		kind := "unknown_server"
		if nf.Kind == tooldocs.ToolNotFound {
			kind = "unknown_tool"
		}
		return &hostrpc.Error{Kind: kind, Message: nf.Error(), Server: nf.Server, Tool: nf.Tool}
	}
	return err
}

type rpcParams struct {
	Server     *string          `json:"server"`
	Tool       *string          `json:"tool"`
	Detail     string           `json:"detail"`
	Query      *string          `json:"query"`
	Limit      *int             `json:"limit"`
	Arguments  jsontext.Value   `json:"arguments"`
	Positional []jsontext.Value `json:"positional"`
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// server resolves a server by name or alias.
func (p *Proxy) server(name *string) (tooldocs.ServerInfo, error) {
	if name == nil {
		return tooldocs.ServerInfo{}, &hostrpc.Error{Kind: "invalid", Message: "a server name is required"}
	}
	info, ok := p.opts.Catalog.Server(*name)
	if !ok || p.serverHidden(info.Name) {
		return tooldocs.ServerInfo{}, &hostrpc.Error{Kind: "unknown_server", Message: fmt.Sprintf("Unknown MCP server: %s (configured: %s)", *name, strings.Join(p.names(), ", ")), Server: *name}
	}
	return info, nil
}

func (p *Proxy) names() []string {
	var out []string
	for _, s := range p.opts.Catalog.Servers() {
		if !p.serverHidden(s.Name) {
			out = append(out, s.Name)
		}
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// serverWithTools resolves a server and makes sure its tools are known,
// starting it if it never ran.
func (p *Proxy) serverWithTools(ctx context.Context, name *string) (tooldocs.ServerInfo, error) {
	info, err := p.server(name)
	if err != nil {
		return info, err
	}
	if info.ToolsKnown {
		return info, nil
	}
	// The pool hands the list to ToolsChanged before Tools returns.
	if _, err := p.opts.Pool.Tools(ctx, info.Name); err != nil {
		return info, err
	}
	info, _ = p.opts.Catalog.Server(info.Name)
	return info, nil
}

type toolDescription struct {
	Name        string          `json:"name"`
	Alias       string          `json:"alias"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type description struct {
	Name  string            `json:"name"`
	Alias string            `json:"alias"`
	Tools []toolDescription `json:"tools"`
	Cwd   *string           `json:"cwd"`
}

func (p *Proxy) describe(info tooldocs.ServerInfo) description {
	d := description{Name: info.Name, Alias: info.Alias, Tools: []toolDescription{}}
	if cfg, ok := p.config(info.Name); ok && cfg.Cwd != "" {
		cwd := cfg.Cwd
		d.Cwd = &cwd
	}
	for _, t := range info.Tools {
		if p.toolHidden(info.Name, t.Name) {
			continue
		}
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage("null")
		}
		d.Tools = append(d.Tools, toolDescription{Name: t.Name, Alias: t.Alias, Description: t.Description, InputSchema: schema})
	}
	return d
}

// indexAll starts, in parallel and for a bounded time, every configured
// server whose tools were never listed, so search covers all of them.
func (p *Proxy) indexAll(ctx context.Context) {
	var missing []string
	for _, s := range p.opts.Catalog.Servers() {
		if !s.ToolsKnown && !p.serverHidden(s.Name) {
			missing = append(missing, s.Name)
		}
	}
	if len(missing) == 0 {
		return
	}
	p.indexMu.Lock()
	defer p.indexMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, p.opts.IndexTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, name := range missing {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := p.opts.Pool.Tools(ctx, name); err != nil {
				p.log.InfoContext(ctx, "server not searchable", "server", name, "error", err)
			}
		}()
	}
	wg.Wait()
}

func (p *Proxy) callTool(ctx context.Context, req *hostrpc.Request, a rpcParams) (any, error) {
	if a.Tool == nil || *a.Tool == "" {
		return nil, &hostrpc.Error{Kind: "invalid", Message: "Missing tool name"}
	}
	info, err := p.serverWithTools(ctx, a.Server)
	if err != nil {
		return nil, err
	}
	_, tool, err := p.opts.Catalog.ResolveTool(info.Name, *a.Tool)
	if err != nil {
		var nf *tooldocs.NotFoundError
		if errors.As(err, &nf) {
			return nil, &hostrpc.Error{Kind: "unknown_tool", Server: info.Name, Tool: *a.Tool,
				Message: fmt.Sprintf("Tool %q not found for server %s; its tools: %s", *a.Tool, info.Name, toolNames(info))}
		}
		return nil, err
	}
	args := map[string]jsontext.Value{}
	if len(a.Arguments) > 0 && string(a.Arguments) != "null" {
		if err := jsonv2.Unmarshal(a.Arguments, &args); err != nil {
			return nil, &hostrpc.Error{Kind: "invalid", Message: "Arguments must be an object", Server: info.Name, Tool: tool.Name}
		}
	}
	if len(a.Positional) > 0 {
		if err := bindPositional(info.Name, tool, a.Positional, args); err != nil {
			return nil, err
		}
	}
	if err := checkArguments(info.Name, tool, args); err != nil {
		return nil, err
	}
	return p.call(ctx, &hostrpc.ToolCall{Caller: req.Caller, Server: info.Name, Tool: tool.Name, Arguments: args,
		Annotations: jsontext.Value(tool.Annotations)})
}

// poolCall is the end of the tool-call chain: the call goes downstream.
func (p *Proxy) poolCall(ctx context.Context, c *hostrpc.ToolCall) (any, error) {
	return p.opts.Pool.CallTool(ctx, c.Server, c.Tool, c.Arguments)
}

func toolNames(info tooldocs.ServerInfo) string {
	names := make([]string, len(info.Tools))
	for i, t := range info.Tools {
		names[i] = t.Alias
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// bindPositional maps positional arguments onto parameter names when that is
// unambiguous: one argument, and the tool has exactly one required parameter
// (or exactly one parameter). Anything else is a TypeError naming the
// parameters, as Python would raise.
func bindPositional(server string, tool tooldocs.ToolInfo, pos []jsontext.Value, args map[string]jsontext.Value) error {
	sig := tool.Signature
	target := ""
	switch {
	case len(sig.Required) == 1:
		target = sig.Required[0]
	case len(sig.Required) == 0 && len(sig.Params) == 1:
		target = sig.Params[0]
	}
	typeErr := func(why string) error {
		return &hostrpc.Error{Kind: "type_error", Server: server, Tool: tool.Name,
			Message: fmt.Sprintf("%s() %s; call it with keyword arguments: %s (required: %s)", tool.Alias, why,
				strings.Join(orNone(sig.Params), ", "), strings.Join(orNone(sig.Required), ", "))}
	}
	if target == "" {
		return typeErr("takes no positional arguments")
	}
	if len(pos) > 1 {
		return typeErr(fmt.Sprintf("takes 1 positional argument but %d were given", len(pos)))
	}
	if _, dup := args[target]; dup {
		return typeErr(fmt.Sprintf("got multiple values for argument '%s'", target))
	}
	args[target] = pos[0]
	return nil
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"none"}
	}
	return s
}

// checkArguments compares argument names with the tool's inputSchema before
// anything is sent, so a misspelt name fails with the valid ones instead of
// the server's own, often vaguer, error. Schemas that admit any name
// (additionalProperties, or no properties at all) are not checked. Missing
// required arguments are named only along with an unknown one (usually its
// misspelling): alone, they are the server's to judge.
func checkArguments(server string, tool tooldocs.ToolInfo, args map[string]jsontext.Value) error {
	sig := tool.Signature
	if !sig.Known || len(sig.Params) == 0 || sig.Open {
		return nil
	}
	var unknown, missing []string
	for name := range args {
		if !sig.Declares(name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	params := sig.Params
	for _, name := range sig.Required {
		if _, ok := args[name]; !ok {
			missing = append(missing, name)
		}
	}
	sort.Strings(unknown)
	var why []string
	for _, name := range unknown {
		msg := fmt.Sprintf("got an unexpected keyword argument '%s'", name)
		if near := nearest(name, params, args); near != "" {
			msg += fmt.Sprintf(" (did you mean '%s'?)", near)
		}
		why = append(why, msg)
	}
	if len(missing) > 0 {
		why = append(why, fmt.Sprintf("is missing required argument(s): %s", strings.Join(missing, ", ")))
	}
	return &hostrpc.Error{Kind: "type_error", Server: server, Tool: tool.Name,
		Message: fmt.Sprintf("%s() %s; its arguments: %s (required: %s)", tool.Alias, strings.Join(why, "; "),
			strings.Join(orNone(params), ", "), strings.Join(orNone(sig.Required), ", "))}
}

// nearest is the parameter not already given whose name is closest to
// name, or "" when none is close enough to be a likely typo.
func nearest(name string, params []string, given map[string]jsontext.Value) string {
	best, bestDist := "", 0
	for _, p := range params {
		if _, ok := given[p]; ok {
			continue
		}
		d := levenshtein(strings.ToLower(name), strings.ToLower(p))
		if limit := max(2, len(p)/3); d <= limit && (best == "" || d < bestDist) {
			best, bestDist = p, d
		}
	}
	return best
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
