package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
// ERROR lines) and returns their names.
func writeTaskFiles(dir string) []string {
	components := []string{"api", "db", "cache", "auth", "queue"}
	var names []string
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
			fatalf("%v", err)
		}
		names = append(names, name)
	}
	return names
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
		var p json.RawMessage = e.req.params
		req := compactJSON(p)
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
		return "", fmt.Errorf("%s: %v", tool, err)
	}
	if res.IsError {
		return "", fmt.Errorf("%s: %s", tool, resultText(res))
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

func sameStrings(a, b []string) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// task measures section 2.
func (h *harness) task(ctx context.Context) string {
	dir := filepath.Join(h.tmp, "task-files")
	os.MkdirAll(dir, 0o755)
	names := writeTaskFiles(dir)
	sort.Strings(names)
	var texts []string
	for _, n := range names {
		data, _ := os.ReadFile(filepath.Join(dir, n))
		texts = append(texts, string(data))
	}
	want := summarize(names, texts)

	memDirect := filepath.Join(h.tmp, "task-memory-direct.jsonl")
	memCode := filepath.Join(h.tmp, "task-memory-code.jsonl")
	servers := npmServers(dir, memDirect)
	var all []json.RawMessage
	var fs, memory *direct
	for _, s := range servers {
		d, err := connectDirect(ctx, h.command(s), true)
		if err != nil {
			fatalf("%v", err)
		}
		tools, err := listToolsRaw(ctx, d.cs, d.rec)
		if err != nil {
			fatalf("listing %s: %v", s.name, err)
		}
		all = append(all, tools...)
		switch s.name {
		case "filesystem":
			fs = d
		case "memory":
			memory = d
		default:
			d.cs.Close()
		}
	}
	defer fs.cs.Close()
	defer memory.cs.Close()
	directList := h.measureListing("direct", all)

	// Warm both servers (V8 JIT) outside the measurement.
	for range 5 {
		callText(ctx, fs.cs, "list_allowed_directories", map[string]any{})
		callText(ctx, memory.cs, "read_graph", map[string]any{})
	}

	perFile := &styleResult{label: fmt.Sprintf("direct: list_directory, read_text_file × %d, create_entities", taskFiles), listTokens: directList.tokens, listBytes: directList.bytes}
	batched := &styleResult{label: "direct, batched: list_directory, read_multiple_files, create_entities", listTokens: directList.tokens, listBytes: directList.bytes}
	cleanup := func() {
		callText(ctx, memory.cs, "delete_entities", map[string]any{"entityNames": []string{taskEntity}})
	}
	runDirect := func(r *styleResult, batch bool) {
		fs.rec.take()
		memory.rec.take()
		t0 := time.Now()
		listing, err := callText(ctx, fs.cs, "list_directory", map[string]any{"path": dir})
		if err != nil {
			fatalf("%v", err)
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
				fatalf("%v", err)
			}
			contents = splitMultiple(out, paths)
		} else {
			for _, n := range got {
				t, err := callText(ctx, fs.cs, "read_text_file", map[string]any{"path": filepath.Join(dir, n)})
				if err != nil {
					fatalf("%v", err)
				}
				contents = append(contents, t)
			}
		}
		obs := summarize(got, contents)
		if _, err := callText(ctx, memory.cs, "create_entities", map[string]any{"entities": []map[string]any{
			{"name": taskEntity, "entityType": "report", "observations": obs}}}); err != nil {
			fatalf("%v", err)
		}
		r.wall = append(r.wall, time.Since(t0))
		ex := append(exchanges(fs.rec.take(), "tools/call"), exchanges(memory.rec.take(), "tools/call")...)
		h.countExchanges(r, ex)
		r.summaryMatch = sameStrings(memorySummary(memDirect), want)
		cleanup()
	}

	// Code style: codemode with the same five servers configured.
	cfg := map[string]any{}
	for _, s := range npmServers(dir, memCode) {
		cfg[s.name] = h.config(s)
	}
	p, err := h.startCodemode(ctx, cmOpts{backend: "native", spares: -1, servers: cfg, record: true})
	if err != nil {
		fatalf("%v", err)
	}
	defer p.close()
	cmTools, err := listToolsRaw(ctx, p.cs, p.rec)
	if err != nil {
		fatalf("%v", err)
	}
	cmList := h.measureListing("codemode", cmTools)
	code := &styleResult{label: "codemode: one run_python", listTokens: cmList.tokens, listBytes: cmList.bytes}
	// Warm: start both servers and the session outside the measurement.
	if err := p.py(ctx, "", "for _ in range(5):\n    await mcp_filesystem.list_allowed_directories()\n    await mcp_memory.read_graph()", nil); err != nil {
		fatalf("%v", err)
	}
	runCode := func() {
		p.rec.take()
		_, d, err := p.call(ctx, map[string]any{"code": taskCode(dir)})
		if err != nil {
			fatalf("task in code: %v", err)
		}
		code.wall = append(code.wall, d)
		h.countExchanges(code, exchanges(p.rec.take(), "tools/call"))
		code.summaryMatch = sameStrings(memorySummary(memCode), want)
		if err := p.py(ctx, "", fmt.Sprintf("await mcp_memory.delete_entities(entityNames=[%q])", taskEntity), nil); err != nil {
			fatalf("%v", err)
		}
	}

	for i := range h.reps {
		progress("task, repetition %d/%d", i+1, h.reps)
		runDirect(perFile, false)
		runDirect(batched, true)
		runCode()
	}

	var b strings.Builder
	b.WriteString("### 2. One task in both styles\n\n")
	fmt.Fprintf(&b, "Task: list a directory of %d log files (%s in all) with server-filesystem, read every file, keep those with ERROR lines, and save a "+
		"summary (one observation per file: error count and main component) as an entity with server-memory. Both styles run against the same files "+
		"and the same servers; the agent is configured with all five servers of section 1 in both. **Context** is what enters the model's context: the "+
		"tool listing it carries, plus for every call the request it writes (tool name and arguments as JSON) and the result content it reads. "+
		"**Wire** is the whole JSON-RPC traffic of the calls. Wall time is the calls alone (warm servers, warm session), without the model's own "+
		"time per turn, which the direct style pays once per call.\n\n", taskFiles, humanBytes(totalLen(texts)))
	b.WriteString("| style | tool calls | listing tokens | call tokens | **context tokens** | context bytes | wire bytes | wall time | same summary saved |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range []*styleResult{perFile, batched, code} {
		reps := len(r.wall)
		ct, cb, wb := r.callTokens/reps, r.callBytes/reps, r.wireBytes/reps
		fmt.Fprintf(&b, "| %s | %d | %s | %s | **%s** | %s | %s | %s | %s |\n", r.label, r.calls, commas(int64(r.listTokens)), commas(int64(ct)),
			commas(int64(r.listTokens+ct)), commas(int64(r.listBytes+cb)), commas(int64(wb)), mmm(ms(r.wall), " ms"), yesNo(r.summaryMatch))
	}
	perTotal := perFile.listTokens + perFile.callTokens/len(perFile.wall)
	batTotal := batched.listTokens + batched.callTokens/len(batched.wall)
	codeTotal := code.listTokens + code.callTokens/len(code.wall)
	fmt.Fprintf(&b, "\nThe code style puts %.1f %% of the per-file direct style's tokens into the context (%.1f %% of the batched one's), in 1 model turn instead of %d (or %d).\n",
		100*float64(codeTotal)/float64(perTotal), 100*float64(codeTotal)/float64(batTotal), perFile.calls, batched.calls)
	return b.String()
}

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
