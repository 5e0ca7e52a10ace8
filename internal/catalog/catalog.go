// Package catalog reads catalogs of MCP servers in the official MCP
// Registry's formats (server.json documents, and the registry API's list
// responses, from files or a registry's base URL), ranks their entries for a
// query with the same search as the tool docs, turns an entry into the
// configuration of a server codemode can start (npm through npx or an
// installed package, pypi through uvx, oci through a container engine,
// remotes over streamable HTTP or SSE), and answers the sandbox's
// find_servers and add_server requests under the policy's add rules.
package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Entry is one server.json document: a server a catalog offers.
type Entry struct {
	Name        string    `json:"name"`
	Title       string    `json:"title,omitempty"`
	Description string    `json:"description,omitempty"`
	Version     string    `json:"version,omitempty"`
	WebsiteURL  string    `json:"websiteUrl,omitempty"`
	Packages    []Package `json:"packages,omitempty"`
	Remotes     []Remote  `json:"remotes,omitempty"`
	// Source is the catalog (file or URL) the entry was read from.
	Source string `json:"-"`
}

// Package is one way to run a server locally.
type Package struct {
	RegistryType         string     `json:"registryType"`
	RegistryBaseURL      string     `json:"registryBaseUrl,omitempty"`
	Identifier           string     `json:"identifier"`
	Version              string     `json:"version,omitempty"`
	RuntimeHint          string     `json:"runtimeHint,omitempty"`
	Transport            Transport  `json:"transport"`
	RuntimeArguments     []Argument `json:"runtimeArguments,omitempty"`
	PackageArguments     []Argument `json:"packageArguments,omitempty"`
	EnvironmentVariables []Input    `json:"environmentVariables,omitempty"`
}

// Transport is how a package speaks MCP: "stdio", "streamable-http" or "sse".
type Transport struct {
	Type string `json:"type"`
	URL  string `json:"url,omitempty"`
}

// Remote is a server reached over HTTP.
type Remote struct {
	Type    string  `json:"type"` // "streamable-http" or "sse"
	URL     string  `json:"url"`
	Headers []Input `json:"headers,omitempty"`
}

// Input is a value the user supplies: an environment variable or a header.
type Input struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Value       string `json:"value,omitempty"`
	Default     string `json:"default,omitempty"`
	IsRequired  bool   `json:"isRequired,omitempty"`
	IsSecret    bool   `json:"isSecret,omitempty"`
}

// Argument is a command-line argument: positional (its value) or named
// (its name, then its value unless it is a flag).
type Argument struct {
	Type       string `json:"type"` // "positional" or "named"
	Name       string `json:"name,omitempty"`
	Value      string `json:"value,omitempty"`
	Default    string `json:"default,omitempty"`
	ValueHint  string `json:"valueHint,omitempty"`
	IsRequired bool   `json:"isRequired,omitempty"`
}

// Registry is how the entry would run, for the policy's add rules: the
// registry type of its first package, or "remote" for an entry with only
// remotes.
func (e *Entry) Registry() string {
	if len(e.Packages) > 0 {
		return e.Packages[0].RegistryType
	}
	if len(e.Remotes) > 0 {
		return "remote"
	}
	return ""
}

// Secrets lists the names of the environment variables and headers the
// entry marks secret.
func (e *Entry) Secrets() []string {
	var out []string
	for _, p := range e.Packages {
		for _, v := range p.EnvironmentVariables {
			if v.IsSecret {
				out = append(out, v.Name)
			}
		}
	}
	for _, r := range e.Remotes {
		for _, h := range r.Headers {
			if h.IsSecret {
				out = append(out, h.Name)
			}
		}
	}
	return out
}

// Page is one document of a catalog: its entries and, for a registry's
// list response, the cursor of the next page ("" on the last).
type Page struct {
	Entries    []Entry
	NextCursor string
}

// Parse reads a catalog document: one server.json object, an array of
// them, or a registry list response ({"servers": [{"server": {...},
// "_meta": {...}}, ...], "metadata": {"nextCursor": ...}}; older responses
// list the server objects directly). Entries without a name are errors;
// source is recorded in each entry.
func Parse(data []byte, source string) (Page, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return Page{}, errors.New("empty document")
	}
	var raw []json.RawMessage
	var page Page
	switch data[0] {
	case '[':
		if err := json.Unmarshal(data, &raw); err != nil {
			return Page{}, fmt.Errorf("an array of server.json documents: %w", err)
		}
	case '{':
		var list struct {
			Servers  *[]json.RawMessage `json:"servers"`
			Metadata struct {
				NextCursor string `json:"nextCursor"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(data, &list); err != nil {
			return Page{}, fmt.Errorf("a server.json document or a registry list: %w", err)
		}
		if list.Servers == nil {
			raw = []json.RawMessage{data}
		} else {
			raw, page.NextCursor = *list.Servers, list.Metadata.NextCursor
		}
	default:
		return Page{}, errors.New("want a JSON object or array")
	}
	for i, item := range raw {
		e, err := parseItem(item)
		if err != nil {
			return Page{}, fmt.Errorf("server %d: %w", i, err)
		}
		e.Source = source
		page.Entries = append(page.Entries, e)
	}
	return page, nil
}

// parseItem reads a server.json document, or a list item that wraps one
// in "server".
func parseItem(item json.RawMessage) (Entry, error) {
	var wrapped struct {
		Server json.RawMessage `json:"server"`
	}
	if err := json.Unmarshal(item, &wrapped); err != nil {
		return Entry{}, err
	}
	if len(wrapped.Server) > 0 && string(wrapped.Server) != "null" {
		item = wrapped.Server
	}
	var e Entry
	if err := json.Unmarshal(item, &e); err != nil {
		return Entry{}, err
	}
	e.Name = strings.TrimSpace(e.Name)
	if e.Name == "" {
		return Entry{}, errors.New("no name")
	}
	return e, nil
}
