package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listing is a tools/list as a model would carry it.
type listing struct {
	tools  []json.RawMessage
	bytes  int // of the compact JSON {"tools":[...]}
	tokens int // o200k
	start  time.Duration
}

func (h *harness) measureListing(tools []json.RawMessage) listing {
	doc := toolsDoc(tools)
	return listing{tools: tools, bytes: len(doc), tokens: h.tok.must(doc)}
}

// toolsDoc is the compact JSON {"tools":[...]} the measurements count.
func toolsDoc(tools []json.RawMessage) string {
	var b bytes.Buffer
	b.WriteString(`{"tools":[`)
	for i, t := range tools {
		if i > 0 {
			b.WriteByte(',')
		}
		json.Compact(&b, t)
	}
	b.WriteString("]}")
	return b.String()
}

// listToolsRaw lists every page of tools and returns each tool's JSON as
// the server sent it.
func listToolsRaw(ctx context.Context, cs *mcp.ClientSession, rec *recorder) ([]json.RawMessage, error) {
	var tools []json.RawMessage
	cursor := ""
	for {
		rec.take()
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		var page struct {
			Tools []json.RawMessage `json:"tools"`
		}
		ex := exchanges(rec.take(), "tools/list")
		if len(ex) == 1 && len(ex[0].resp.result) > 0 {
			if err := json.Unmarshal(ex[0].resp.result, &page); err != nil {
				return nil, fmt.Errorf("decoding tools/list result: %w", err)
			}
		} else {
			// Served from the client's cache: use the decoded result.
			for _, t := range res.Tools {
				b, _ := json.Marshal(t)
				page.Tools = append(page.Tools, b)
			}
		}
		tools = append(tools, page.Tools...)
		if res.NextCursor == "" {
			return tools, nil
		}
		cursor = res.NextCursor
	}
}

type contextResult struct {
	servers  []npmServer
	versions []string
	direct   []listing // each server listed directly
	cumul    []listing // the first k servers, k = 1..5
	codemode []listing // codemode with the first k servers configured, k = 0..5
}

// contextEconomy measures section 1.
func (h *harness) contextEconomy(ctx context.Context) (*contextResult, error) {
	dir := filepath.Join(h.tmp, "ctx-files")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the filesystem server's directory: %w", err)
	}
	r := &contextResult{servers: npmServers(dir, filepath.Join(h.tmp, "ctx-memory.jsonl"))}
	var all []json.RawMessage
	for _, s := range r.servers {
		_, version, err := h.entry(s)
		if err != nil {
			return nil, err
		}
		r.versions = append(r.versions, version)
		progress("listing %s %s directly", s.pkg, version)
		cmd, err := h.command(s)
		if err != nil {
			return nil, err
		}
		d, err := connectDirect(ctx, cmd, true)
		if err != nil {
			return nil, err
		}
		tools, err := listToolsRaw(ctx, d.cs, d.rec)
		d.cs.Close()
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", s.name, err)
		}
		l := h.measureListing(tools)
		l.start = d.connect
		r.direct = append(r.direct, l)
		all = append(all, tools...)
		r.cumul = append(r.cumul, h.measureListing(slices.Clone(all)))
	}
	for k := 0; k <= len(r.servers); k++ {
		servers, err := h.configs(r.servers[:k])
		if err != nil {
			return nil, err
		}
		progress("listing codemode with %d servers configured", k)
		p, err := h.startCodemode(ctx, cmOpts{backend: "native", spares: 0, servers: servers, record: true})
		if err != nil {
			return nil, err
		}
		tools, err := listToolsRaw(ctx, p.cs, p.rec)
		p.close()
		if err != nil {
			return nil, fmt.Errorf("listing codemode with %d servers: %w", k, err)
		}
		r.codemode = append(r.codemode, h.measureListing(tools))
	}
	return r, nil
}

func (r *contextResult) markdown() string {
	var b strings.Builder
	b.WriteString("### 1. Context economy: what a client puts in the model's prompt\n\n")
	b.WriteString("The `tools/list` result of each real server, listed directly by a go-sdk client (which declares the `roots` capability, " +
		"as Claude Code and the inspector do), against codemode's. Bytes are the compact JSON `{\"tools\":[...]}`; tokens are " +
		"o200k_base (`gpt-tokenizer`) counts of that text.\n\n")
	b.WriteString("| server (npm package) | tools | bytes | o200k tokens | start, spawn → initialized |\n|---|---:|---:|---:|---:|\n")
	for i, l := range r.direct {
		s := r.servers[i]
		fmt.Fprintf(&b, "| %s (`%s` %s) | %d | %s | %s | %s ms |\n", s.name, s.pkg, r.versions[i], len(l.tools), commas(int64(l.bytes)), commas(int64(l.tokens)), num(msOf(l.start)))
	}
	all := r.cumul[len(r.cumul)-1]
	cm := r.codemode[len(r.codemode)-1]
	fmt.Fprintf(&b, "| **all five, listed directly** | **%d** | **%s** | **%s** | |\n", len(all.tools), commas(int64(all.bytes)), commas(int64(all.tokens)))
	fmt.Fprintf(&b, "| **codemode, the same five configured** | **%d** | **%s** | **%s** | |\n\n", len(cm.tools), commas(int64(cm.bytes)), commas(int64(cm.tokens)))

	b.WriteString("Growth as servers are added (direct: the union of the listings; codemode: a codemode process with those servers in its config):\n\n")
	b.WriteString("| servers configured | direct tools | direct bytes | direct tokens | codemode bytes | codemode tokens | codemode / direct |\n|---|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| 0 | – | – | – | %s | %s | – |\n", commas(int64(r.codemode[0].bytes)), commas(int64(r.codemode[0].tokens)))
	for k := 1; k <= len(r.servers); k++ {
		d, c := r.cumul[k-1], r.codemode[k]
		label := fmt.Sprintf("%d (+ %s)", k, r.servers[k-1].name)
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %.1f %% |\n", label, len(d.tools), commas(int64(d.bytes)), commas(int64(d.tokens)),
			commas(int64(c.bytes)), commas(int64(c.tokens)), 100*float64(c.tokens)/float64(d.tokens))
	}
	return b.String()
}

// goals checks the targets: codemode's listing at most 200 tokens
// and 2.5 % of the five servers' direct listing, whatever is configured.
func (r *contextResult) goals() []goal {
	all := r.cumul[len(r.cumul)-1]
	cm := r.codemode[len(r.codemode)-1]
	flat := true
	for _, c := range r.codemode {
		flat = flat && c.tokens == r.codemode[0].tokens && c.bytes == r.codemode[0].bytes
	}
	pct := 100 * float64(cm.tokens) / float64(all.tokens)
	return []goal{
		{"codemode `tools/list`, five servers configured", "≤ 200 tokens", fmt.Sprintf("%d tokens", cm.tokens), cm.tokens <= 200},
		{"codemode `tools/list` / direct listing of the five servers", "≤ 2.5 %", fmt.Sprintf("%.1f %%", pct), pct <= 2.5},
		{"codemode `tools/list` from 0 to 5 servers", "flat", tokenRange(r.codemode), flat},
	}
}

// tokenRange is "209 tokens at every count", or the range when it varies.
func tokenRange(ls []listing) string {
	lo, hi := ls[0].tokens, ls[0].tokens
	for _, l := range ls {
		lo, hi = min(lo, l.tokens), max(hi, l.tokens)
	}
	if lo == hi {
		return fmt.Sprintf("%d tokens at every count", lo)
	}
	return fmt.Sprintf("%d–%d tokens", lo, hi)
}
