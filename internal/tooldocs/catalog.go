package tooldocs

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
)

// Tool is the metadata of one tool as a server lists it in tools/list. The
// JSON names are MCP's, so a tools/list result decodes straight into it.
// The raw JSON fields are kept as sent and must not be modified after they
// are handed to the Catalog.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// ToolInfo is a tool as the catalogue holds it: Name defaults to "tool" when
// the server sent none, Description is stripped of surrounding white space
// (both as in the reference) and Alias is the tool's Python identifier,
// unique within its server.
type ToolInfo struct {
	Tool
	Alias     string    `json:"alias"`
	Signature Signature `json:"-"`
}

// Signature is what a tool's inputSchema says of its arguments, read once
// when the list is loaded rather than on every call.
type Signature struct {
	Known    bool     // the schema is a JSON object; nothing else is known otherwise
	Params   []string // the declared properties, sorted
	Required []string // in the schema's order
	Open     bool     // additionalProperties admits names beyond Params
}

// Declares reports whether name is one of the declared properties.
func (s Signature) Declares(name string) bool {
	_, found := slices.BinarySearch(s.Params, name)
	return found
}

func signatureOf(schema json.RawMessage) Signature {
	var sc struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	}
	if json.Unmarshal(schema, &sc) != nil {
		return Signature{}
	}
	sig := Signature{Known: true, Params: make([]string, 0, len(sc.Properties)), Required: sc.Required,
		Open: len(sc.AdditionalProperties) > 0 && string(sc.AdditionalProperties) != "false"}
	for name := range sc.Properties {
		sig.Params = append(sig.Params, name)
	}
	slices.Sort(sig.Params)
	return sig
}

// ServerInfo is a snapshot of one server in the catalogue. ToolsKnown is
// false for a server that is configured but has never been listed; Tools is
// then empty. The Tools slice is shared between snapshots and must not be
// modified.
type ServerInfo struct {
	Name        string
	Alias       string
	Description string
	ToolsKnown  bool
	Tools       []ToolInfo
}

// Catalog holds the tool metadata of every configured server and answers
// lookups, doc queries and ranked searches over it. It is safe for
// concurrent use; updates of one server rebuild only that server's part of
// the search index.
type Catalog struct {
	aliases *Aliases

	mu      sync.RWMutex
	servers map[string]*serverEntry // by name
	byAlias map[string]*serverEntry
	order   []*serverEntry // by name
	stats   corpusStats
	vocab   *vocab
	ticket  uint64            // last ticket handed out by SetTools or RemoveServer
	removed map[string]uint64 // server name → ticket of its last removal
}

// serverEntry is the mutable state of one server. Every field is guarded by
// Catalog.mu; info.Tools and seg are replaced, never modified, so readers
// may keep using a snapshot after the lock is released.
type serverEntry struct {
	info   ServerInfo
	seg    *segment // nil until tools are known
	ticket uint64   // ticket of the SetTools that produced info.Tools
}

// NewCatalog returns an empty catalogue that takes server aliases from
// aliases; nil means a registry of its own. Share one Aliases between
// catalogues (or keep one catalogue) for the life of the process so aliases
// stay stable.
func NewCatalog(aliases *Aliases) *Catalog {
	if aliases == nil {
		aliases = NewAliases()
	}
	return &Catalog{
		aliases: aliases,
		servers: make(map[string]*serverEntry),
		byAlias: make(map[string]*serverEntry),
		stats:   corpusStats{df: make(map[string]int)},
		vocab:   newVocab(),
		removed: make(map[string]uint64),
	}
}

// AddServer registers a configured server without touching its tools: a new
// server is listed with no tools known yet, so discovery can still show its
// name and description before it is ever started. For a server already in
// the catalogue only the description is updated.
func (c *Catalog) AddServer(name, description string) {
	description = strings.TrimSpace(description)
	alias := c.aliases.For(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.servers[name]
	if e == nil {
		c.insertLocked(&serverEntry{info: ServerInfo{Name: name, Alias: alias, Description: description}})
		return
	}
	if e.info.Description == description {
		return
	}
	e.info.Description = description
	if e.seg != nil {
		// The server's own text is indexed with every tool.
		c.replaceSegmentLocked(e, buildSegment(e.info))
	}
}

// SetTools sets or replaces the tool list of the server called name, adding
// the server if it is new. Call it after the first tools/list and again
// after every notifications/tools/list_changed. Tool aliases are assigned in
// list order. When calls for the same server overlap, the one that started
// last wins, and a RemoveServer that started after a SetTools is not undone
// by it.
func (c *Catalog) SetTools(name string, tools []Tool) {
	alias := c.aliases.For(name)
	c.mu.Lock()
	c.ticket++
	ticket := c.ticket
	description := ""
	if e := c.servers[name]; e != nil {
		description = e.info.Description
	}
	c.mu.Unlock()

	// Build outside the lock: parsing schemas and indexing are the expensive
	// part, and searches should not wait for them.
	info := ServerInfo{Name: name, Alias: alias, Description: description, ToolsKnown: true, Tools: toolInfos(tools)}
	seg := buildSegment(info)

	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.servers[name]
	if e == nil {
		if c.removed[name] > ticket {
			return // removed while we were building
		}
		e = &serverEntry{info: ServerInfo{Name: name, Alias: alias, Description: description}}
		c.insertLocked(e)
	}
	if ticket < e.ticket {
		return // a later SetTools already replaced this list
	}
	if e.info.Description != description {
		// AddServer changed the description while we were building.
		info.Description = e.info.Description
		seg = buildSegment(info)
	}
	e.info = info
	e.ticket = ticket
	c.replaceSegmentLocked(e, seg)
}

// RemoveServer drops a server and its tools from the catalogue and reports
// whether it was there. Its alias stays reserved for it.
func (c *Catalog) RemoveServer(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ticket++
	c.removed[name] = c.ticket
	e := c.servers[name]
	if e == nil {
		return false
	}
	c.replaceSegmentLocked(e, nil)
	delete(c.servers, name)
	delete(c.byAlias, e.info.Alias)
	c.order = slices.DeleteFunc(c.order, func(x *serverEntry) bool { return x == e })
	return true
}

// Servers returns every server in the catalogue, ordered by name.
func (c *Catalog) Servers() []ServerInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]ServerInfo, len(c.order))
	for i, e := range c.order {
		out[i] = e.info
	}
	return out
}

// Server returns the server called, or aliased, nameOrAlias (see Query for
// the matching rules).
func (c *Catalog) Server(nameOrAlias string) (ServerInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.lookupLocked(nameOrAlias)
	if e == nil {
		return ServerInfo{}, false
	}
	return e.info, true
}

// ResolveTool finds a tool by server (name or alias) and tool (alias or
// name, see Query). Errors are *NotFoundError or wrap ErrToolsUnknown.
func (c *Catalog) ResolveTool(server, tool string) (ServerInfo, ToolInfo, error) {
	info, err := c.server(&server)
	if err != nil {
		return ServerInfo{}, ToolInfo{}, err
	}
	i := findTool(info.Tools, tool)
	if i < 0 {
		return ServerInfo{}, ToolInfo{}, &NotFoundError{Kind: ToolNotFound, Server: info.Name, Tool: tool}
	}
	return info, info.Tools[i], nil
}

// server resolves a requested server for Query and ResolveTool.
func (c *Catalog) server(name *string) (ServerInfo, error) {
	if name == nil {
		return ServerInfo{}, &NotFoundError{Kind: ServerNotFound, none: true}
	}
	c.mu.RLock()
	e := c.lookupLocked(*name)
	var info ServerInfo
	if e != nil {
		info = e.info
	}
	c.mu.RUnlock()
	if e == nil {
		return ServerInfo{}, &NotFoundError{Kind: ServerNotFound, Server: *name}
	}
	if !info.ToolsKnown {
		return ServerInfo{}, &toolsUnknownError{server: info.Name}
	}
	return info, nil
}

// lookupLocked finds a server by exact name, then exact alias, then either
// of them ignoring case (first by name order).
//
// Preconditions: c.mu held.
func (c *Catalog) lookupLocked(s string) *serverEntry {
	if e := c.servers[s]; e != nil {
		return e
	}
	if e := c.byAlias[s]; e != nil {
		return e
	}
	for _, e := range c.order {
		if strings.EqualFold(e.info.Name, s) || strings.EqualFold(e.info.Alias, s) {
			return e
		}
	}
	return nil
}

// insertLocked adds a new entry.
//
// Preconditions: c.mu held for writing; no entry of that name exists.
func (c *Catalog) insertLocked(e *serverEntry) {
	c.servers[e.info.Name] = e
	c.byAlias[e.info.Alias] = e
	i, _ := slices.BinarySearchFunc(c.order, e.info.Name, func(x *serverEntry, name string) int {
		return strings.Compare(x.info.Name, name)
	})
	c.order = slices.Insert(c.order, i, e)
}

// replaceSegmentLocked swaps e's index segment (nil removes it) and moves
// the corpus statistics and vocabulary from the old segment to the new one.
//
// Preconditions: c.mu held for writing.
func (c *Catalog) replaceSegmentLocked(e *serverEntry, seg *segment) {
	if old := e.seg; old != nil {
		c.stats.remove(old)
		for _, w := range old.words {
			c.vocab.remove(w)
		}
	}
	e.seg = seg
	if seg != nil {
		c.stats.add(seg)
		for _, w := range seg.words {
			c.vocab.add(w)
		}
	}
	c.vocab.settle()
}

// toolInfos normalizes a tools/list result and assigns tool aliases.
func toolInfos(tools []Tool) []ToolInfo {
	names := make([]string, len(tools))
	out := make([]ToolInfo, len(tools))
	for i, t := range tools {
		if t.Name == "" {
			t.Name = defaultToolIdentifier // the reference's fallback for a nameless tool
		}
		t.Description = strings.TrimSpace(t.Description)
		names[i] = t.Name
		out[i] = ToolInfo{Tool: t, Signature: signatureOf(t.InputSchema)}
	}
	for i, a := range toolAliases(names) {
		out[i].Alias = a
	}
	return out
}

// findTool returns the index of the tool that s names, or -1. The reference
// accepts an alias or a name, case-insensitively, but resolves clashes by
// dictionary overwrite order; here an exact name wins, then an exact alias,
// then an alias and finally a name ignoring case, each time the first in
// list order.
func findTool(tools []ToolInfo, s string) int {
	if i := slices.IndexFunc(tools, func(t ToolInfo) bool { return t.Name == s }); i >= 0 {
		return i
	}
	if i := slices.IndexFunc(tools, func(t ToolInfo) bool { return t.Alias == s }); i >= 0 {
		return i
	}
	if i := slices.IndexFunc(tools, func(t ToolInfo) bool { return strings.EqualFold(t.Alias, s) }); i >= 0 {
		return i
	}
	return slices.IndexFunc(tools, func(t ToolInfo) bool { return strings.EqualFold(t.Name, s) })
}
