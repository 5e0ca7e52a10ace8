package tooldocs

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr(s string) *string { return &s }

func TestQueryAllTools(t *testing.T) {
	t.Parallel()
	fixture := loadFixture(t)
	c := newCatalogOf(fixture)
	docs, err := c.Query(ptr("github"), nil, "summary")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != len(fixture[0].Tools) {
		t.Fatalf("Query(github) returned %d docs, want %d", len(docs), len(fixture[0].Tools))
	}
	for i, d := range docs {
		if d.Tool != fixture[0].Tools[i].Name {
			t.Errorf("doc %d is %q, want %q (list order)", i, d.Tool, fixture[0].Tools[i].Name)
		}
		if d.InputSchema != nil {
			t.Errorf("summary doc %s has an inputSchema", d.Tool)
		}
		if d.Server != "github" || d.ServerAlias != "github" || d.Description == "" {
			t.Errorf("doc %d = %+v", i, d)
		}
	}
}

func TestQueryOneTool(t *testing.T) {
	t.Parallel()
	c := newCatalogOf(loadFixture(t))
	c.SetTools("My Server", []Tool{{Name: "readFile", Description: "  first  "}, {Name: "readfile", Description: "second"}})
	tests := []struct {
		name, server, tool string
		wantServer         string
		wantTool           string
	}{
		{"by name", "calendar", "create-event", "calendar", "create-event"},
		{"by alias", "calendar", "create_event", "calendar", "create-event"},
		{"alias ignoring case", "calendar", "Create_Event", "calendar", "create-event"},
		{"name ignoring case", "calendar", "CREATE-EVENT", "calendar", "create-event"},
		{"camelCase name", "jira", "createIssue", "jira", "createIssue"},
		{"camelCase alias", "jira", "createissue", "jira", "createIssue"},
		{"server by alias", "my_server", "readFile", "My Server", "readFile"},
		{"server ignoring case", "MY SERVER", "readFile", "My Server", "readFile"},
		{"exact name beats alias", "My Server", "readfile", "My Server", "readfile"},
		{"suffixed alias", "My Server", "readfile_2", "My Server", "readfile"},
		{"alias ignoring case before name", "My Server", "READFILE", "My Server", "readFile"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			docs, err := c.Query(ptr(tc.server), ptr(tc.tool), "")
			if err != nil {
				t.Fatalf("Query(%q, %q): %v", tc.server, tc.tool, err)
			}
			if len(docs) != 1 || docs[0].Server != tc.wantServer || docs[0].Tool != tc.wantTool {
				t.Errorf("Query(%q, %q) = %+v, want %s/%s", tc.server, tc.tool, docs, tc.wantServer, tc.wantTool)
			}
			_, tool, err := c.ResolveTool(tc.server, tc.tool)
			if err != nil || tool.Name != tc.wantTool {
				t.Errorf("ResolveTool(%q, %q) = %q, %v, want %q", tc.server, tc.tool, tool.Name, err, tc.wantTool)
			}
		})
	}
	docs, _ := c.Query(ptr("My Server"), ptr("readFile"), "")
	if docs[0].Description != "first" {
		t.Errorf("description = %q, want it stripped", docs[0].Description)
	}
}

func TestQueryErrors(t *testing.T) {
	t.Parallel()
	c := newCatalogOf(loadFixture(t))
	c.AddServer("later", "Configured, never started")
	tests := []struct {
		name         string
		server, tool *string
		wantKind     NotFoundKind
		wantMsg      string
	}{
		{"unknown server", ptr("nope"), nil, ServerNotFound, "Server 'nope' is not available"},
		{"no server", nil, nil, ServerNotFound, "Server None is not available"},
		{"quote in server", ptr("it's"), nil, ServerNotFound, `Server "it's" is not available`},
		{"unknown tool", ptr("github"), ptr("nope"), ToolNotFound, "Tool 'nope' not found for server github"},
		{"unknown tool via alias", ptr("GitHub"), ptr("x\ny"), ToolNotFound, `Tool 'x\ny' not found for server github`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := c.Query(tc.server, tc.tool, "summary")
			nf, ok := errors.AsType[*NotFoundError](err)
			if !ok {
				t.Fatalf("Query error = %v, want *NotFoundError", err)
			}
			if nf.Kind != tc.wantKind || err.Error() != tc.wantMsg {
				t.Errorf("Query error = kind %d %q, want kind %d %q", nf.Kind, err, tc.wantKind, tc.wantMsg)
			}
		})
	}

	_, err := c.Query(ptr("later"), nil, "summary")
	if !errors.Is(err, ErrToolsUnknown) {
		t.Errorf("Query(later) error = %v, want ErrToolsUnknown", err)
	}
	if _, _, err := c.ResolveTool("later", "x"); !errors.Is(err, ErrToolsUnknown) {
		t.Errorf("ResolveTool(later) error = %v, want ErrToolsUnknown", err)
	}
}

func TestDocJSON(t *testing.T) {
	t.Parallel()
	c := NewCatalog(nil)
	c.SetTools("srv", []Tool{
		{Name: "bare"},
		{Name: "full", Description: "Does it.", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)},
		{Name: "empty schema", Description: "x", InputSchema: json.RawMessage(` { } `)},
		{Name: "null schema", Description: "x", InputSchema: json.RawMessage(`null`)},
	})
	tests := []struct {
		detail string
		want   string
	}{
		{"summary", `[{"server":"srv","serverAlias":"srv","tool":"bare","toolAlias":"bare"},` +
			`{"server":"srv","serverAlias":"srv","tool":"full","toolAlias":"full","description":"Does it."},` +
			`{"server":"srv","serverAlias":"srv","tool":"empty schema","toolAlias":"empty_schema","description":"x"},` +
			`{"server":"srv","serverAlias":"srv","tool":"null schema","toolAlias":"null_schema","description":"x"}]`},
		{"FULL", `[{"server":"srv","serverAlias":"srv","tool":"bare","toolAlias":"bare"},` +
			`{"server":"srv","serverAlias":"srv","tool":"full","toolAlias":"full","description":"Does it.","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}},` +
			`{"server":"srv","serverAlias":"srv","tool":"empty schema","toolAlias":"empty_schema","description":"x"},` +
			`{"server":"srv","serverAlias":"srv","tool":"null schema","toolAlias":"null_schema","description":"x"}]`},
	}
	for _, tc := range tests {
		docs, err := c.Query(ptr("srv"), nil, tc.detail)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(docs)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("Query(detail %q) JSON =\n%s\nwant\n%s", tc.detail, got, tc.want)
		}
	}
}

func TestNormalizeDetail(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"": "summary", "summary": "summary", "full": "full", "FULL": "full", " Full ": "full",
		"verbose": "summary", "fully": "summary",
	} {
		if got := NormalizeDetail(in); got != want {
			t.Errorf("NormalizeDetail(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCatalogLifecycle(t *testing.T) {
	t.Parallel()
	c := NewCatalog(nil)
	c.AddServer("notes", "  Personal notes  ")
	c.AddServer("alpha", "")
	got := c.Servers()
	want := []ServerInfo{
		{Name: "alpha", Alias: "alpha"},
		{Name: "notes", Alias: "notes", Description: "Personal notes"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Servers() mismatch (-want +got):\n%s", diff)
	}
	if docs := c.Search("notes", 5, ""); len(docs) != 0 {
		t.Errorf("Search before tools are known = %v, want none", docs)
	}

	c.SetTools("notes", []Tool{{Name: "add_note", Description: "Store a note."}, {Name: ""}})
	s, ok := c.Server("notes")
	if !ok || !s.ToolsKnown || s.Description != "Personal notes" || len(s.Tools) != 2 || s.Tools[1].Name != "tool" {
		t.Errorf("Server(notes) after SetTools = %+v, %v", s, ok)
	}
	if docs := c.Search("store note", 5, ""); len(docs) == 0 || docs[0].Tool != "add_note" {
		t.Errorf("Search(store note) = %v, want add_note first", docs)
	}

	// tools/list_changed: the new list replaces the old one.
	c.SetTools("notes", []Tool{{Name: "append_note", Description: "Append text to a note."}})
	if _, err := c.Query(ptr("notes"), ptr("add_note"), ""); err == nil {
		t.Error("old tool still found after SetTools replaced the list")
	}
	if docs := c.Search("append", 5, ""); len(docs) != 1 || docs[0].Tool != "append_note" {
		t.Errorf("Search(append) = %v, want append_note", docs)
	}

	// A description change is indexed too.
	c.AddServer("notes", "Zettelkasten")
	if docs := c.Search("zettelkasten", 5, ""); len(docs) != 1 {
		t.Errorf("Search(zettelkasten) = %v, want the server's tool", docs)
	}

	if !c.RemoveServer("notes") || c.RemoveServer("notes") {
		t.Error("RemoveServer(notes) twice did not report true, false")
	}
	if docs := c.Search("append", 5, ""); len(docs) != 0 {
		t.Errorf("Search after RemoveServer = %v, want none", docs)
	}
	if _, err := c.Query(ptr("notes"), nil, ""); err == nil {
		t.Error("Query of a removed server succeeded")
	}
}

func TestPyRepr(t *testing.T) {
	t.Parallel()
	// Expected values are Python 3's repr() of the same strings.
	tests := map[string]string{
		"x":                 `'x'`,
		"it's":              `"it's"`,
		`say "hi"`:          `'say "hi"'`,
		`both ' and "`:      `'both \' and "'`,
		"tab\there":         `'tab\there'`,
		"nl\n":              `'nl\n'`,
		`back\slash`:        `'back\\slash'`,
		"\x00\x7f":          `'\x00\x7f'`,
		"\u0085\u00a0":      `'\x85\xa0'`,
		"café":              `'café'`,
		"\u200b":            `'\u200b'`,
		"\u2028":            `'\u2028'`,
		"😀":                 `'😀'`,
		"\U000e0001":        `'\U000e0001'`,
		"a\xffb":            `'a\udcffb'`,
		"":                  `''`,
		"\u0301 combining":  "'\u0301 combining'",
		"\u3000ideographic": `'\u3000ideographic'`,
	}
	for in, want := range tests {
		if got := pyRepr(in); got != want {
			t.Errorf("pyRepr(%q) = %s, want %s", in, got, want)
		}
	}
}
