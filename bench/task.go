package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The task of section 2: read 20 log files with server-filesystem, keep the
// ones with errors, and save a summary entity with server-memory.

const (
	taskFiles  = 20
	taskEntity = "log-error-summary"
)

// writeTaskFiles creates the 20 files (about 2 KB each, every third with
// ERROR lines) and returns their names and contents.
func writeTaskFiles(dir string) (names, texts []string, err error) {
	components := []string{"api", "db", "cache", "auth", "queue"}
	for i := 1; i <= taskFiles; i++ {
		name := fmt.Sprintf("service-%02d.log", i)
		var b strings.Builder
		for j := range 30 {
			comp := components[(i*7+j*3)%len(components)]
			ts := fmt.Sprintf("2026-11-22T10:%02d:%02dZ", i, j)
			switch {
			case i%3 == 0 && j%(4+i%5) == 1:
				fmt.Fprintf(&b, "%s ERROR %s: request %d failed after %d ms (upstream reset)\n", ts, comp, 1000*i+j, 100+j*17)
			case j%7 == 3:
				fmt.Fprintf(&b, "%s WARN %s: slow request %d took %d ms\n", ts, comp, 1000*i+j, 400+j*11)
			default:
				fmt.Fprintf(&b, "%s INFO %s: request %d served in %d ms\n", ts, comp, 1000*i+j, 5+j%13)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			return nil, nil, fmt.Errorf("writing task file: %w", err)
		}
		names = append(names, name)
		texts = append(texts, b.String())
	}
	return names, texts, nil
}

// summarize is the filter the model (direct style) or the code applies:
// one observation per file with errors.
func summarize(names []string, texts []string) []string {
	var obs []string
	for i, t := range texts {
		count := map[string]int{}
		n := 0
		for _, l := range strings.Split(t, "\n") {
			if _, rest, ok := strings.Cut(l, " ERROR "); ok {
				comp, _, _ := strings.Cut(rest, ":")
				count[comp]++
				n++
			}
		}
		if n == 0 {
			continue
		}
		top, best := "", 0
		for c, k := range count {
			if k > best || (k == best && c < top) {
				top, best = c, k
			}
		}
		obs = append(obs, fmt.Sprintf("%s: %d errors, mostly %s", names[i], n, top))
	}
	return obs
}

// taskCode is the run_python code of the code style.
func taskCode(dir string) string {
	return fmt.Sprintf(`import asyncio, collections
d, entity = %q, %q
listing = (await mcp_filesystem.list_directory(path=d)).text
names = sorted(l.split(" ", 1)[1] for l in listing.splitlines() if l.startswith("[FILE] "))
files = await asyncio.gather(*[mcp_filesystem.read_text_file(path=f"{d}/{n}") for n in names])
obs = []
for n, f in zip(names, files):
    comps = [l.split(" ERROR ", 1)[1].split(":")[0] for l in f.text.splitlines() if " ERROR " in l]
    if comps:
        top = sorted(collections.Counter(comps).items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        obs.append(f"{n}: {len(comps)} errors, mostly {top}")
await mcp_memory.create_entities(entities=[{"name": entity, "entityType": "report", "observations": obs}])
print(f"{len(names)} files read, {len(obs)} with errors; summary saved to memory as {entity!r}")`, dir, taskEntity)
}

// styleResult is one style's cost, per repetition.
type styleResult struct {
	label        string
	calls        int
	listTokens   int // the tools/list the agent carries
	listBytes    int
	callTokens   int // requests (name + arguments) and results (content) of the calls
	callBytes    int
	wireBytes    int // whole JSON-RPC messages of the calls
	wall         []time.Duration
	summaryMatch bool
}

// countExchanges adds what the model reads and writes in each call.
func (h *harness) countExchanges(r *styleResult, ex []exchange) {
	for _, e := range ex {
		req := compactJSON(e.req.params)
		content := contentText(e.resp.result)
		r.callBytes += len(req) + len(content)
		r.callTokens += h.tok.must(req) + h.tok.must(content)
		r.wireBytes += len(e.req.data) + len(e.resp.data)
	}
	r.calls = len(ex)
}

func compactJSON(raw []byte) string {
	var m any
	if json.Unmarshal(raw, &m) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// contentText is the result's content as the model reads it: the text
// blocks, and other blocks as JSON.
func contentText(result []byte) string {
	var r struct {
		Content []json.RawMessage `json:"content"`
	}
	json.Unmarshal(result, &r)
	var parts []string
	for _, c := range r.Content {
		var t struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		json.Unmarshal(c, &t)
		if t.Type == "text" {
			parts = append(parts, t.Text)
		} else {
			parts = append(parts, compactJSON(c))
		}
	}
	return strings.Join(parts, "\n")
}

func callText(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("calling %s: %w", tool, err)
	}
	if res.IsError {
		return "", fmt.Errorf("calling %s: tool error: %s", tool, resultText(res))
	}
	return resultText(res), nil
}

// memorySummary reads the observations of the summary entity from a
// memory server's file.
func memorySummary(file string) []string {
	data, _ := os.ReadFile(file)
	for _, l := range strings.Split(string(data), "\n") {
		var e struct {
			Type         string   `json:"type"`
			Name         string   `json:"name"`
			Observations []string `json:"observations"`
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Name == taskEntity {
			return e.Observations
		}
	}
	return nil
}

// sameSummary says whether a saved summary is the expected one (an empty
// one never is: the task always finds errors).
func sameSummary(got, want []string) bool {
	return len(want) > 0 && slices.Equal(got, want)
}

// taskResult is section 2: the three ways of doing the task.
type taskResult struct {
	fileBytes              int
	perFile, batched, code *styleResult
}

// task measures section 2.
func (h *harness) task(ctx context.Context) (*taskResult, error) {
	dir := filepath.Join(h.tmp, "task-files")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the task directory: %w", err)
	}
	names, texts, err := writeTaskFiles(dir)
	if err != nil {
		return nil, err
	}
	want := summarize(names, texts)

	memDirect := filepath.Join(h.tmp, "task-memory-direct.jsonl")
	memCode := filepath.Join(h.tmp, "task-memory-code.jsonl")
	// The direct agent connects to all five servers: it carries all their
	// listings, though it calls only two of them.
	var all []json.RawMessage
	var fs, memory *direct
	for _, s := range npmServers(dir, memDirect) {
		cmd, err := h.command(s)
		if err != nil {
			return nil, err
		}
		d, err := connectDirect(ctx, cmd, true)
		if err != nil {
			return nil, err
		}
		tools, err := listToolsRaw(ctx, d.cs, d.rec)
		if err != nil {
			d.cs.Close()
			return nil, fmt.Errorf("listing %s: %w", s.name, err)
		}
		all = append(all, tools...)
		switch s.name {
		case "filesystem":
			fs = d
			defer fs.cs.Close()
		case "memory":
			memory = d
			defer memory.cs.Close()
		default:
			d.cs.Close()
		}
	}
	directList := h.measureListing(all)

	// Warm both servers (V8 JIT) outside the measurement.
	for range 5 {
		if _, err := callText(ctx, fs.cs, "list_allowed_directories", map[string]any{}); err != nil {
			return nil, err
		}
		if _, err := callText(ctx, memory.cs, "read_graph", map[string]any{}); err != nil {
			return nil, err
		}
	}

	r := &taskResult{
		fileBytes: totalLen(texts),
		perFile:   &styleResult{label: fmt.Sprintf("direct: list_directory, read_text_file × %d, create_entities", taskFiles), listTokens: directList.tokens, listBytes: directList.bytes},
		batched:   &styleResult{label: "direct, batched: list_directory, read_multiple_files, create_entities", listTokens: directList.tokens, listBytes: directList.bytes},
	}
	// runDirect makes the calls an agent would make, with the filtering the
	// model would do between them done here.
	runDirect := func(sr *styleResult, batch bool) error {
		fs.rec.take()
		memory.rec.take()
		t0 := time.Now()
		listing, err := callText(ctx, fs.cs, "list_directory", map[string]any{"path": dir})
		if err != nil {
			return err
		}
		var got []string
		for _, l := range strings.Split(listing, "\n") {
			if n, ok := strings.CutPrefix(l, "[FILE] "); ok {
				got = append(got, n)
			}
		}
		sort.Strings(got)
		var contents []string
		if batch {
			var paths []string
			for _, n := range got {
				paths = append(paths, filepath.Join(dir, n))
			}
			out, err := callText(ctx, fs.cs, "read_multiple_files", map[string]any{"paths": paths})
			if err != nil {
				return err
			}
			contents = splitMultiple(out, paths)
		} else {
			for _, n := range got {
				t, err := callText(ctx, fs.cs, "read_text_file", map[string]any{"path": filepath.Join(dir, n)})
				if err != nil {
					return err
				}
				contents = append(contents, t)
			}
		}
		obs := summarize(got, contents)
		if _, err := callText(ctx, memory.cs, "create_entities", map[string]any{"entities": []map[string]any{
			{"name": taskEntity, "entityType": "report", "observations": obs}}}); err != nil {
			return err
		}
		sr.wall = append(sr.wall, time.Since(t0))
		h.countExchanges(sr, append(exchanges(fs.rec.take(), "tools/call"), exchanges(memory.rec.take(), "tools/call")...))
		sr.summaryMatch = sameSummary(memorySummary(memDirect), want)
		_, err = callText(ctx, memory.cs, "delete_entities", map[string]any{"entityNames": []string{taskEntity}})
		return err
	}

	// Code style: codemode with the same five servers configured.
	cfg, err := h.configs(npmServers(dir, memCode))
	if err != nil {
		return nil, err
	}
	p, err := h.startCodemode(ctx, cmOpts{backend: "native", spares: -1, servers: cfg, record: true})
	if err != nil {
		return nil, err
	}
	defer p.close()
	cmTools, err := listToolsRaw(ctx, p.cs, p.rec)
	if err != nil {
		return nil, fmt.Errorf("listing codemode: %w", err)
	}
	cmList := h.measureListing(cmTools)
	r.code = &styleResult{label: "codemode: one run_python", listTokens: cmList.tokens, listBytes: cmList.bytes}
	// Warm: start both servers and the session outside the measurement.
	if err := p.py(ctx, "", "for _ in range(5):\n    await mcp_filesystem.list_allowed_directories()\n    await mcp_memory.read_graph()", nil); err != nil {
		return nil, fmt.Errorf("warming codemode's servers: %w", err)
	}
	runCode := func() error {
		p.rec.take()
		_, d, err := p.call(ctx, map[string]any{"code": taskCode(dir)})
		if err != nil {
			return fmt.Errorf("task as code: %w", err)
		}
		r.code.wall = append(r.code.wall, d)
		h.countExchanges(r.code, exchanges(p.rec.take(), "tools/call"))
		r.code.summaryMatch = sameSummary(memorySummary(memCode), want)
		return p.py(ctx, "", fmt.Sprintf("await mcp_memory.delete_entities(entityNames=[%q])", taskEntity), nil)
	}

	for i := range h.reps {
		progress("task, repetition %d/%d", i+1, h.reps)
		if err := runDirect(r.perFile, false); err != nil {
			return nil, fmt.Errorf("task as direct calls: %w", err)
		}
		if err := runDirect(r.batched, true); err != nil {
			return nil, fmt.Errorf("task as batched direct calls: %w", err)
		}
		if err := runCode(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// contextTokens is what one repetition of a style puts in the context.
func (s *styleResult) contextTokens() int { return s.listTokens + s.callTokens/len(s.wall) }

func (r *taskResult) markdown() string {
	var b strings.Builder
	b.WriteString("### 2. One task in both styles\n\n")
	fmt.Fprintf(&b, "Task: list a directory of %d log files (%s in all) with server-filesystem, read every file, keep those with ERROR lines, and save a "+
		"summary (one observation per file: error count and main component) as an entity with server-memory. Both styles run against the same files "+
		"and the same servers; the agent is configured with all five servers of section 1 in both. **Context** is what enters the model's context: the "+
		"tool listing it carries, plus for every call the request it writes (tool name and arguments as JSON) and the result content it reads. "+
		"**Wire** is the whole JSON-RPC traffic of the calls. Wall time is the calls alone (warm servers, warm session), without the model's own "+
		"time per turn, which the direct style pays once per call.\n\n", taskFiles, humanBytes(r.fileBytes))
	var rows [][]string
	for _, s := range []*styleResult{r.perFile, r.batched, r.code} {
		reps := len(s.wall)
		rows = append(rows, []string{s.label, fmt.Sprint(s.calls), commas(int64(s.listTokens)), commas(int64(s.callTokens / reps)),
			"**" + commas(int64(s.contextTokens())) + "**", commas(int64(s.listBytes + s.callBytes/reps)), commas(int64(s.wireBytes / reps)),
			mmm(ms(s.wall), " ms"), yesNo(s.summaryMatch)})
	}
	b.WriteString(table([]string{"style", "tool calls", "listing tokens", "call tokens", "**context tokens**", "context bytes", "wire bytes",
		"wall time", "same summary saved"}, "---:", rows))
	fmt.Fprintf(&b, "\nThe code style puts %.1f %% of the per-file direct style's tokens into the context (%.1f %% of the batched one's), in 1 model turn instead of %d (or %d).\n",
		100*float64(r.code.contextTokens())/float64(r.perFile.contextTokens()), 100*float64(r.code.contextTokens())/float64(r.batched.contextTokens()),
		r.perFile.calls, r.batched.calls)
	return b.String()
}

// goals: the issue sets none for the task; the comparison is the point.
func (r *taskResult) goals() []goal { return nil }

// splitMultiple splits read_multiple_files output ("path:\ncontent\n---\n...") into contents.
func splitMultiple(out string, paths []string) []string {
	contents := make([]string, len(paths))
	parts := strings.Split(out, "\n---\n")
	for _, part := range parts {
		for i, p := range paths {
			if rest, ok := strings.CutPrefix(part, p+":\n"); ok {
				contents[i] = rest
			}
		}
	}
	return contents
}

func totalLen(ss []string) int {
	n := 0
	for _, s := range ss {
		n += len(s)
	}
	return n
}

func humanBytes(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	if n >= 1<<10 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
