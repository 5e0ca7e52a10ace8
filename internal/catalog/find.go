package catalog

import (
	"encoding/json"
	"strings"

	"github.com/codemode/codemode/internal/tooldocs"
)

// Catalog is the entries of every catalog source, searchable. It is
// immutable and safe for concurrent use.
type Catalog struct {
	entries []Entry
	byName  map[string]int
	index   *tooldocs.Catalog
}

// New returns a catalog of entries; an entry whose name an earlier one
// already has is left out.
func New(entries []Entry) *Catalog {
	c := &Catalog{byName: map[string]int{}, index: tooldocs.NewCatalog(nil)}
	for _, e := range entries {
		if _, dup := c.byName[e.Name]; dup {
			continue
		}
		c.byName[e.Name] = len(c.entries)
		c.entries = append(c.entries, e)
		// Each entry is indexed as a server with one tool that carries its
		// text, so the tool search ranks entries by name and description.
		c.index.AddServer(e.Name, e.Title)
		c.index.SetTools(e.Name, []tooldocs.Tool{{Name: shortName(e.Name), Title: e.Title, Description: entryText(e)}})
	}
	return c
}

// shortName is the last part of an entry's name: "server-memory" for
// "io.github.modelcontextprotocol/server-memory".
func shortName(name string) string {
	return name[strings.LastIndex(name, "/")+1:]
}

func entryText(e Entry) string {
	parts := []string{e.Description}
	for _, p := range e.Packages {
		parts = append(parts, p.Identifier)
	}
	return strings.Join(parts, "\n")
}

// Len is the number of entries.
func (c *Catalog) Len() int { return len(c.entries) }

// Entries returns every entry, in catalog order.
func (c *Catalog) Entries() []Entry { return c.entries }

// Get finds an entry by its name, or by the last part of it when that is
// unambiguous ("server-memory").
func (c *Catalog) Get(name string) (Entry, bool) {
	if i, ok := c.byName[name]; ok {
		return c.entries[i], true
	}
	found := -1
	for i, e := range c.entries {
		if shortName(e.Name) == name {
			if found >= 0 {
				return Entry{}, false
			}
			found = i
		}
	}
	if found < 0 {
		return Entry{}, false
	}
	return c.entries[found], true
}

// Match is one ranked entry, as find_servers returns it.
type Match struct {
	Name        string   `json:"name"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description"`
	Version     string   `json:"version,omitempty"`
	Registry    string   `json:"registry"`
	Source      string   `json:"source"`
	Secrets     []string `json:"secrets,omitempty"`
	// Configured is true for a server already configured or added; Alias
	// is then its mcp_<alias>.
	Configured bool   `json:"configured"`
	Alias      string `json:"alias,omitempty"`
}

// Find ranks the entries for query, best first, at most
// tooldocs.ClampLimit(limit) of them. alias reports the alias of entries
// already configured (ok false for the others); nil means none is.
func (c *Catalog) Find(query string, limit int, alias func(name string) (string, bool)) []Match {
	out := []Match{}
	for _, d := range c.index.Search(query, limit, tooldocs.DetailSummary) {
		e := c.entries[c.byName[d.Server]]
		m := c.match(e)
		if alias != nil {
			m.Alias, m.Configured = alias(e.Name)
		}
		out = append(out, m)
	}
	return out
}

func (c *Catalog) match(e Entry) Match {
	return Match{Name: e.Name, Title: e.Title, Description: e.Description, Version: e.Version,
		Registry: e.Registry(), Source: e.Source, Secrets: e.Secrets()}
}

// marshalEntry writes e as a server.json document.
func marshalEntry(e Entry) (string, error) {
	data, err := json.Marshal(e)
	return string(data), err
}
