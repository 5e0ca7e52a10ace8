package tooldocs

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// fixtureServer is one server of testdata/catalog.json.
type fixtureServer struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Tools       []Tool `json:"tools"`
}

// loadFixture reads the realistic catalogue: about 70 tools in the style of
// github, filesystem, memory, slack, postgres, jira and calendar servers.
func loadFixture(tb testing.TB) []fixtureServer {
	tb.Helper()
	data, err := os.ReadFile("testdata/catalog.json")
	if err != nil {
		tb.Fatal(err)
	}
	var f struct {
		Servers []fixtureServer `json:"servers"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		tb.Fatalf("decoding testdata/catalog.json: %v", err)
	}
	return f.Servers
}

// newCatalogOf builds a catalogue from fixture servers.
func newCatalogOf(servers []fixtureServer) *Catalog {
	c := NewCatalog(nil)
	for _, s := range servers {
		c.AddServer(s.Name, s.Description)
		c.SetTools(s.Name, s.Tools)
	}
	return c
}

func countTools(servers []fixtureServer) int {
	n := 0
	for _, s := range servers {
		n += len(s.Tools)
	}
	return n
}

// syntheticServers returns the realistic servers plus generated distractor
// servers, deterministically, so that there are exactly total tools. The
// distractors share much of the realistic vocabulary (issues, events,
// messages, files, queries, projects, comments) so that the relevance test
// has to rank, not just filter.
func syntheticServers(tb testing.TB, total int) []fixtureServer {
	tb.Helper()
	servers := loadFixture(tb)
	need := total - countTools(servers)
	rng := rand.New(rand.NewPCG(20240601, 7))

	type domain struct {
		name, desc string
		style      string // snake, camel or kebab tool names
		nouns      []string
	}
	domains := []domain{
		{"billing", "Subscription billing, invoices and payments for a SaaS product.", "snake", []string{"invoice", "subscription", "customer", "payment method", "coupon", "refund", "credit note"}},
		{"helpdesk", "Customer support desk: tickets, agents, macros and satisfaction surveys.", "snake", []string{"ticket", "agent", "macro", "satisfaction rating", "view", "ticket comment"}},
		{"error-tracker", "Application error monitoring: grouped issues, events, releases and alerts.", "snake", []string{"issue", "event", "release", "alert rule", "project", "issue comment"}},
		{"crm", "Sales CRM with contacts, companies, deals and pipelines.", "camel", []string{"contact", "company", "deal", "pipeline", "note", "activity"}},
		{"object-storage", "S3-compatible object storage with buckets, objects and presigned URLs.", "snake", []string{"bucket", "object", "presigned url", "lifecycle rule", "object tag", "multipart upload"}},
		{"dns", "DNS zones and records for managed domains.", "kebab", []string{"zone", "record", "domain", "nameserver", "dnssec key"}},
		{"ci", "Continuous integration: pipelines, jobs, build logs and artifacts.", "snake", []string{"pipeline", "job", "build log", "artifact", "runner", "workflow run"}},
		{"analytics", "Product analytics: events, funnels, cohorts and saved queries.", "camel", []string{"event", "funnel", "cohort", "saved query", "dashboard", "insight"}},
		{"docs-wiki", "Team wiki with pages, spaces, comments and attachments.", "snake", []string{"page", "space", "page comment", "attachment", "template", "label"}},
		{"email", "Send and manage e-mail: messages, drafts, labels and threads.", "snake", []string{"message", "draft", "mail label", "mail thread", "attachment", "filter"}},
		{"sms", "Text messaging gateway for SMS and WhatsApp.", "kebab", []string{"text message", "phone number", "sender id", "delivery report", "opt out"}},
		{"inventory", "Warehouse inventory: products, stock levels and transfers.", "snake", []string{"product", "stock level", "warehouse", "transfer", "supplier", "purchase order"}},
		{"hr", "Human resources: employees, time off and org chart.", "camel", []string{"employee", "time off request", "department", "position", "review cycle"}},
		{"recruiting", "Applicant tracking: jobs, candidates, interviews and offers.", "snake", []string{"job posting", "candidate", "interview", "offer", "scorecard", "application"}},
		{"feature-flags", "Feature flags, segments and experiments.", "kebab", []string{"flag", "segment", "experiment", "environment", "flag rule"}},
		{"logs", "Centralized logs: search, saved views and log-based metrics.", "snake", []string{"log line", "saved view", "log metric", "index", "archive", "exclusion filter"}},
		{"tracing", "Distributed tracing: traces, spans and service maps.", "snake", []string{"trace", "span", "service", "service map", "sampling rule"}},
		{"kubernetes", "Kubernetes cluster operations: pods, deployments, services and config maps.", "camel", []string{"pod", "deployment", "service", "config map", "namespace", "node"}},
		{"cloud-vm", "Virtual machines, disks, snapshots and firewalls in the cloud.", "snake", []string{"instance", "disk", "snapshot", "firewall rule", "machine image", "ssh key"}},
		{"secrets", "Secret storage with versioning and rotation.", "snake", []string{"secret", "secret version", "access policy", "encryption key"}},
		{"cdn", "Content delivery network: cache, routes and certificates.", "kebab", []string{"cache", "route", "certificate", "origin", "purge request"}},
		{"search-engine", "Hosted full-text search indexes and documents.", "snake", []string{"search index", "document", "synonym", "ranking rule", "index setting"}},
		{"translation", "Machine translation and glossaries.", "camel", []string{"translation", "glossary", "language", "translation memory"}},
		{"maps", "Geocoding, routing and places search.", "snake", []string{"address", "route", "place", "distance matrix", "time zone"}},
		{"video", "Video meetings and recordings.", "snake", []string{"meeting", "recording", "participant", "webinar", "transcript"}},
		{"spreadsheet", "Spreadsheets: sheets, ranges, cells and formulas.", "camel", []string{"spreadsheet", "sheet", "cell range", "formula", "chart"}},
		{"forms", "Online forms and survey responses.", "kebab", []string{"form", "form response", "question", "webhook"}},
		{"status-page", "Public status page: components, incidents and maintenance windows.", "snake", []string{"component", "incident", "maintenance window", "subscriber", "incident update"}},
		{"chat-bots", "Chat bot builder: intents, flows and conversations.", "snake", []string{"intent", "flow", "conversation", "bot message", "channel integration"}},
		{"data-warehouse", "Cloud data warehouse: datasets, tables, jobs and scheduled queries.", "snake", []string{"dataset", "warehouse table", "query job", "scheduled query", "table export"}},
	}
	verbs := []struct{ verb, phrase string }{
		{"get", "Retrieve a single %s by its ID"},
		{"list", "List %ss with pagination and optional filters"},
		{"create", "Create a new %s"},
		{"update", "Update the fields of an existing %s"},
		{"delete", "Permanently delete a %s"},
		{"archive", "Archive a %s so it is hidden from default listings"},
		{"restore", "Restore a previously archived or deleted %s"},
		{"export", "Export %ss to CSV or JSON"},
		{"import", "Import %ss from a CSV file"},
		{"search", "Search %ss by keyword"},
		{"count", "Count the %ss matching a filter"},
		{"sync", "Synchronize %ss with the upstream system"},
		{"validate", "Check a %s definition for errors without saving it"},
		{"clone", "Duplicate an existing %s"},
		{"tag", "Attach tags to a %s"},
		{"summarize", "Produce a short statistical summary of %ss"},
	}
	extras := []string{
		"Results are paginated with a cursor.",
		"Requires admin permissions in the workspace.",
		"Returns the resulting object as JSON.",
		"Supports filtering by creation date and owner.",
		"The operation is idempotent.",
		"Rate limited to 10 requests per second.",
		"Deleted items stay recoverable for 30 days.",
		"Fields not listed in the request are left unchanged.",
		"Use dry_run to preview the change.",
		"Large result sets are streamed in batches.",
	}
	params := []struct{ name, desc string }{
		{"limit", "Maximum number of results"},
		{"cursor", "Opaque pagination cursor"},
		{"filter", "Filter expression"},
		{"fields", "Fields to include in the response"},
		{"sort_by", "Field to sort by"},
		{"since", "Only items changed after this time"},
		{"workspace_id", "Workspace the item belongs to"},
		{"environment", "Target environment such as staging or production"},
		{"tags", "Tags to apply"},
		{"dry_run", "Validate without applying"},
		{"format", "Output format: csv or json"},
		{"include_deleted", "Also return deleted items"},
		{"region", "Data centre region"},
		{"owner_id", "User who owns the item"},
	}
	nameOf := func(style, verb, noun string) string {
		words := append([]string{verb}, strings.Fields(noun)...)
		switch style {
		case "camel":
			for i := 1; i < len(words); i++ {
				words[i] = strings.ToUpper(words[i][:1]) + words[i][1:]
			}
			return strings.Join(words, "")
		case "kebab":
			return strings.Join(words, "-")
		}
		return strings.Join(words, "_")
	}

	perServer := (need + len(domains) - 1) / len(domains)
	for _, d := range domains {
		if need == 0 {
			break
		}
		s := fixtureServer{Name: d.name, Description: d.desc}
		used := make(map[string]bool)
		for len(s.Tools) < perServer && need > 0 {
			v := verbs[rng.IntN(len(verbs))]
			noun := d.nouns[rng.IntN(len(d.nouns))]
			name := nameOf(d.style, v.verb, noun)
			if used[name] {
				continue
			}
			used[name] = true
			desc := fmt.Sprintf(v.phrase, noun) + ". " + extras[rng.IntN(len(extras))]
			props := map[string]any{
				strings.ReplaceAll(noun, " ", "_") + "_id": map[string]string{"type": "string", "description": "ID of the " + noun},
			}
			for range 1 + rng.IntN(3) {
				p := params[rng.IntN(len(params))]
				props[p.name] = map[string]string{"type": "string", "description": p.desc}
			}
			schema, err := json.Marshal(map[string]any{"type": "object", "properties": props})
			if err != nil {
				tb.Fatal(err)
			}
			s.Tools = append(s.Tools, Tool{Name: name, Description: desc, InputSchema: schema})
			need--
		}
		servers = append(servers, s)
	}
	if need != 0 {
		tb.Fatalf("synthetic catalogue is %d tools short", need)
	}
	return servers
}
