package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

type scaleResult struct {
	servers, tools int
	connect        time.Duration // codemode spawn to initialized
	listTokens     int
	passP50        sample // ms per round
	firstSearch    float64
	searchP50      sample // ms per round
	hits, queries  int
	proxied        sample // µs p50 per round
	cmMem          mem
}

// scaleResults is section 5, one entry per server count.
type scaleResults struct {
	each int // tools per server
	rs   []*scaleResult
}

// scale measures section 5 with 1, 10, 100 ... synthetic servers.
func (h *harness) scale(ctx context.Context, maxServers, each int) (*scaleResults, error) {
	out := &scaleResults{each: each}
	for n := 1; n <= maxServers; n *= 10 {
		progress("scale: %d servers × %d tools", n, each)
		r, err := h.scaleOne(ctx, n, each)
		if err != nil {
			return nil, fmt.Errorf("scale with %d servers: %w", n, err)
		}
		out.rs = append(out.rs, r)
	}
	return out, nil
}

func (s *scaleResults) markdown() string {
	var b strings.Builder
	b.WriteString("### 5. Scale: servers and tools configured\n\n")
	fmt.Fprintf(&b, "Synthetic Go MCP servers (this harness's binary in server mode), %d generated tools each (a one-to-two-sentence description, "+
		"four typed parameters: about the size of a real tool), native backend. Search is `runtime.search_tool_docs(query, limit=3)` timed inside "+
		"Python: the first search starts every configured server to list its tools (in parallel), the next ones use the index. The %d queries each "+
		"name one tool by verb, noun, domain and region (\"archive invoice in billing europe\"); a hit is that tool in the top 3.\n\n", s.each, s.rs[0].queries)
	var rows [][]string
	for _, r := range s.rs {
		rows = append(rows, []string{
			fmt.Sprint(r.servers), commas(int64(r.tools)), fmt.Sprint(r.listTokens), num(msOf(r.connect)) + " ms",
			mmm(r.passP50, " ms"), mmm(r.proxied, " µs"), num(r.firstSearch) + " ms", mmm(r.searchP50, " ms"),
			fmt.Sprintf("%d/%d", r.hits, r.queries), fmt.Sprintf("%.1f MiB", mib(r.cmMem.rss)),
		})
	}
	b.WriteString(table([]string{"servers", "tools", "codemode tools/list tokens", "codemode start (spawn → initialized)",
		"warm `pass` p50", "proxied call p50", "first search (starts and lists every server)", "search p50, indexed", "top-3 hits",
		"codemode RSS after"}, "---:", rows))
	return b.String()
}

// goals: search within 1 ms (the tooldocs goal, set for 1,000 tools) at
// the largest catalogue, and every query's tool in its top 3.
func (s *scaleResults) goals() []goal {
	r := s.rs[len(s.rs)-1]
	return []goal{
		{fmt.Sprintf("`search_tool_docs` p50 over %s tools", commas(int64(r.tools))), "≤ 1 ms", mmm(r.searchP50, " ms"), r.searchP50.median() <= 1},
		{fmt.Sprintf("expected tool in the top 3, %s tools", commas(int64(r.tools))), "all", fmt.Sprintf("%d/%d", r.hits, r.queries), r.hits == r.queries},
	}
}

func (h *harness) scaleOne(ctx context.Context, n, each int) (*scaleResult, error) {
	servers := map[string]any{}
	for k := range n {
		servers[synthServerName(k)] = h.selfServer("synth", map[string]string{envSynthTools: fmt.Sprint(each), envSynthID: fmt.Sprint(k)})
	}
	p, err := h.startCodemode(ctx, cmOpts{backend: "native", spares: -1, servers: servers, record: true})
	if err != nil {
		return nil, err
	}
	defer p.close()
	r := &scaleResult{servers: n, tools: n * each, connect: p.connect}
	tools, err := listToolsRaw(ctx, p.cs, p.rec)
	if err != nil {
		return nil, fmt.Errorf("listing codemode: %w", err)
	}
	r.listTokens = h.tok.must(toolsDoc(tools))
	var discovered int
	if err := p.py(ctx, "main", "print(len(runtime.discovered_servers()))", &discovered); err != nil {
		return nil, fmt.Errorf("counting discovered servers: %w", err)
	}
	if discovered != n {
		h.note("scale: codemode discovered %d of %d configured servers", discovered, n)
	}
	pass := map[string]any{"code": "pass", "session": "main"}
	for range 20 {
		if _, _, err := p.call(ctx, pass); err != nil {
			return nil, fmt.Errorf("warm calls: %w", err)
		}
	}
	for range h.reps {
		var durs []time.Duration
		for range 100 {
			_, d, err := p.call(ctx, pass)
			if err != nil {
				return nil, fmt.Errorf("warm calls: %w", err)
			}
			durs = append(durs, d)
		}
		r.passP50 = append(r.passP50, ms(durs).pct(0.5))
	}

	// First search: indexes every server.
	if err := p.py(ctx, "main", "import time, json\nt0 = time.perf_counter()\nawait runtime.search_tool_docs('list open tickets', limit=3)\n"+
		"print(json.dumps((time.perf_counter() - t0) * 1000))", &r.firstSearch); err != nil {
		return nil, fmt.Errorf("first search: %w", err)
	}
	type query struct {
		Q, Server, Tool string
	}
	var qs []query
	for q := range 30 {
		k := (q*37 + 5) % n
		i := (q*11 + 3) % each
		name, verb, noun := synthTool(k, i)
		domain, region := synthDomain(k)
		qs = append(qs, query{fmt.Sprintf("%s %s in %s %s", verb, noun, domain, region), synthServerName(k), name})
	}
	qj, _ := json.Marshal(qs)
	searchCode := fmt.Sprintf(`import time, json
qs = json.loads(%q)
times, hits = [], 0
for q in qs:
    t0 = time.perf_counter()
    docs = await runtime.search_tool_docs(q["Q"], limit=3)
    times.append((time.perf_counter() - t0) * 1000)
    hits += any(d["server"] == q["Server"] and d["tool"] == q["Tool"] for d in docs)
times.sort()
print(json.dumps({"p50": times[len(times) // 2], "hits": hits}))`, string(qj))
	r.queries = len(qs)
	for range h.reps {
		var out struct {
			P50  float64 `json:"p50"`
			Hits int     `json:"hits"`
		}
		if err := p.py(ctx, "main", searchCode, &out); err != nil {
			return nil, fmt.Errorf("searching: %w", err)
		}
		r.searchP50 = append(r.searchP50, out.P50)
		r.hits = out.Hits
	}

	name, _, noun := synthTool(0, 0)
	proxiedCode := fmt.Sprintf("import time, json\nf = getattr(mcp_%s, %q)\nfor _ in range(20): await f(%s_id='x')\nt = []\n"+
		"for _ in range(200):\n    t0 = time.perf_counter(); await f(%s_id='x'); t.append(time.perf_counter() - t0)\n"+
		"t.sort(); print(json.dumps(t[len(t)//2] * 1e6))", synthServerName(0), name, noun, noun)
	for range h.reps {
		var us float64
		if err := p.py(ctx, "main", proxiedCode, &us); err != nil {
			return nil, fmt.Errorf("proxied calls: %w", err)
		}
		r.proxied = append(r.proxied, us)
	}
	r.cmMem = procMem(p.pid())
	return r, nil
}
