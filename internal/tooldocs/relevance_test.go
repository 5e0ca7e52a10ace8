package tooldocs

import (
	"fmt"
	"strings"
	"testing"
)

// relevanceCase is a natural query and the tool a model asking it wants.
type relevanceCase struct {
	query, server, tool string
}

// relevanceCases mixes plain requests, typos, partial words, camelCase and
// snake_case names, parameter vocabulary and questions whose words only
// occur in descriptions.
var relevanceCases = []relevanceCase{
	{"serach isues", "github", "search_issues"},
	{"create a pull request", "github", "create_pull_request"},
	{"list pul requets", "github", "list_pull_requests"},
	{"merge PR", "github", "merge_pull_request"},
	{"commit history", "github", "list_commits"},
	{"fork repo", "github", "fork_repository"},
	{"repositry search", "github", "search_repositories"},
	{"new branch", "github", "create_branch"},
	{"read file from github repo", "github", "get_file_contents"},
	{"request review", "github", "request_reviewers"},
	{"search source code", "github", "search_code"},
	{"readFile", "filesystem", "read_file"},
	{"list directory contents", "filesystem", "list_directory"},
	{"rename a file", "filesystem", "move_file"},
	{"find files matching glob", "filesystem", "search_files"},
	{"replace text in a file", "filesystem", "edit_file"},
	{"directroy tree", "filesystem", "directory_tree"},
	{"file size and modification time", "filesystem", "get_file_info"},
	{"write file", "filesystem", "write_file"},
	{"delete obser", "memory", "delete_observations"},
	{"connect entities with a relation", "memory", "create_relations"},
	{"read_graph", "memory", "read_graph"},
	{"knowledge graph search", "memory", "search_nodes"},
	{"remember new facts about an entity", "memory", "add_observations"},
	{"send a message to a slack channel", "slack", "slack_post_message"},
	{"thread replies", "slack", "slack_get_thread_replies"},
	{"react with emoji", "slack", "slack_add_reaction"},
	{"user email and time zone", "slack", "slack_get_user_profile"},
	{"share a file in slack", "slack", "slack_upload_file"},
	{"slack_post_message", "slack", "slack_post_message"},
	{"recent messages in a channel", "slack", "slack_get_channel_history"},
	{"query by sql", "postgres", "query"},
	{"table columns and types", "postgres", "describe_table"},
	{"why is my query slow", "postgres", "explain_query"},
	{"show tables", "postgres", "list_tables"},
	{"insert rows", "postgres", "execute"},
	{"postgres schemas", "postgres", "list_schemas"},
	{"JQL", "jira", "searchIssues"},
	{"jira createIssue", "jira", "createIssue"},
	{"getIssue jira", "jira", "getIssue"},
	{"add comment to jira ticket", "jira", "addComment"},
	{"move issue to done", "jira", "transitionIssue"},
	{"sprint board", "jira", "getSprintIssues"},
	{"log time spent", "jira", "addWorklog"},
	{"assign ticket to someone", "jira", "assignIssue"},
	{"calend event create", "calendar", "create-event"},
	{"reschedule a meeting", "calendar", "update-event"},
	{"cancel meeting", "calendar", "delete-event"},
	{"decline invitation", "calendar", "respond-to-event"},
	{"when is everyone free", "calendar", "find-free-slots"},
	{"list-events", "calendar", "list-events"},
}

func TestRelevanceRealistic(t *testing.T) {
	t.Parallel()
	c := newCatalogOf(loadFixture(t))
	checkRelevance(t, c)
}

func TestRelevanceSynthetic1000(t *testing.T) {
	t.Parallel()
	servers := syntheticServers(t, 1000)
	if n := countTools(servers); n != 1000 {
		t.Fatalf("synthetic catalogue has %d tools, want 1000", n)
	}
	checkRelevance(t, newCatalogOf(servers))
}

// checkRelevance requires every case's tool in the top 3 and logs the
// top-1 and top-3 rates (run with -v to see them).
func checkRelevance(t *testing.T, c *Catalog) {
	t.Helper()
	if len(relevanceCases) < 25 {
		t.Fatalf("only %d relevance cases", len(relevanceCases))
	}
	top1, top3 := 0, 0
	for _, tc := range relevanceCases {
		docs := c.Search(tc.query, 3, DetailSummary)
		rank := -1
		for i, d := range docs {
			if d.Server == tc.server && d.Tool == tc.tool {
				rank = i
				break
			}
		}
		switch {
		case rank == 0:
			top1++
			top3++
		case rank > 0:
			top3++
		default:
			t.Errorf("Search(%q) top 3 = %s, want %s/%s among them", tc.query, docNames(docs), tc.server, tc.tool)
		}
	}
	n := len(relevanceCases)
	t.Logf("%d queries: top-1 %d (%.0f%%), top-3 %d (%.0f%%)", n, top1, 100*float64(top1)/float64(n), top3, 100*float64(top3)/float64(n))
}

func docNames(docs []Doc) string {
	names := make([]string, len(docs))
	for i, d := range docs {
		names[i] = d.Server + "/" + d.Tool
	}
	return fmt.Sprintf("[%s]", strings.Join(names, " "))
}
