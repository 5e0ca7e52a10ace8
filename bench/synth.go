package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Synthetic servers for the scale curve: server id has n generated tools
// shaped like real ones (a description of a sentence or two, 2–4 typed
// parameters). Every server covers one business domain in one region, so a
// query can name exactly one tool among thousands.

var (
	synthVerbs = []string{"get", "list", "create", "update", "delete", "archive", "search", "export", "approve", "assign"}
	synthNouns = []string{"invoice", "customer", "order", "ticket", "shipment", "contract", "payment", "refund",
		"subscription", "product", "warehouse", "supplier", "employee", "timesheet", "budget", "forecast",
		"campaign", "lead", "opportunity", "quote", "asset", "license", "incident", "deployment", "alert",
		"dashboard", "report", "document", "folder", "comment", "review", "survey", "appointment", "room",
		"vehicle", "route", "driver", "policy", "claim", "account"}
	synthDomains = []string{"billing", "sales", "support", "logistics", "finance", "marketing", "hr", "legal",
		"procurement", "inventory", "fleet", "insurance", "analytics", "security", "facilities", "payroll",
		"compliance", "catalog", "scheduling", "operations"}
	synthRegions = []string{"europe", "america", "asia", "africa", "oceania"}
)

func synthDomain(id int) (domain, region string) {
	return synthDomains[id%len(synthDomains)], synthRegions[(id/len(synthDomains))%len(synthRegions)]
}

// synthTool is tool i of server id.
func synthTool(id, i int) (name, verb, noun string) {
	verb = synthVerbs[i%len(synthVerbs)]
	noun = synthNouns[(i/len(synthVerbs)+id)%len(synthNouns)]
	name = verb + "_" + noun
	if i >= len(synthVerbs)*len(synthNouns) {
		name += fmt.Sprint("_", i)
	}
	return name, verb, noun
}

func synthServerName(id int) string { return fmt.Sprintf("syn%03d", id) }

func serveSynth(id, n int) int {
	domain, region := synthDomain(id)
	s := mcp.NewServer(&mcp.Implementation{Name: "synthetic-" + domain + "-" + region, Version: "1"}, nil)
	for i := range n {
		name, verb, noun := synthTool(id, i)
		desc := fmt.Sprintf("%s %s records in the %s system of the %s region. Returns each %s with its id, status, owner and timestamps; "+
			"fails when the caller lacks the %s permission.", strings.ToUpper(verb[:1])+verb[1:], noun, domain, region, noun, domain)
		schema := json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"%s_id":{"type":"string","description":"The %s's identifier"},`+
			`"limit":{"type":"integer","minimum":1,"maximum":500,"description":"Most records to return"},`+
			`"status":{"type":"string","enum":["open","closed","pending"],"description":"Only records with this status"},`+
			`"cursor":{"type":"string","description":"Page token from a previous call"}},"required":["%s_id"]}`, noun, noun, noun))
		s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: schema},
			func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ok"}}}, nil
			})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil && err != context.Canceled {
		fmt.Fprintln(os.Stderr, "synthetic server:", err)
		return 1
	}
	return 0
}
