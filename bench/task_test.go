package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string
		texts []string
		want  []string
	}{
		{"no errors", []string{"a.log"}, []string{"t INFO api: ok\nt WARN db: slow\n"}, nil},
		{"counts and top component", []string{"a.log", "b.log"}, []string{
			"t ERROR db: x\nt INFO api: ok\nt ERROR api: y\nt ERROR db: z\n",
			"t INFO api: ok\n",
		}, []string{"a.log: 3 errors, mostly db"}},
		{"a tie goes to the first name", []string{"c.log"}, []string{"t ERROR queue: x\nt ERROR auth: y\n"}, []string{"c.log: 2 errors, mostly auth"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summarize(tc.names, tc.texts); !slices.Equal(got, tc.want) {
				t.Errorf("summarize = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTaskFiles checks the task's input: 20 files, and errors in some of
// them only (else the filter step would be trivial).
func TestTaskFiles(t *testing.T) {
	dir := t.TempDir()
	names, texts, err := writeTaskFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != taskFiles || len(texts) != taskFiles {
		t.Fatalf("%d names, %d texts, want %d", len(names), len(texts), taskFiles)
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, names[5]))
	if err != nil || string(onDisk) != texts[5] {
		t.Errorf("file %s on disk differs from its returned text (%v)", names[5], err)
	}
	obs := summarize(names, texts)
	if len(obs) == 0 || len(obs) == taskFiles {
		t.Errorf("%d of %d files have errors, want some but not all", len(obs), taskFiles)
	}
}

func TestSplitMultiple(t *testing.T) {
	paths := []string{"/d/a.log", "/d/b.log", "/d/c.log"}
	out := "/d/a.log:\nline 1\nline 2\n---\n/d/c.log:\nonly c\n---\n/d/b.log:\n"
	want := []string{"line 1\nline 2", "", "only c"}
	if got := splitMultiple(out, paths); !slices.Equal(got, want) {
		t.Errorf("splitMultiple = %q, want %q", got, want)
	}
}

func TestContentText(t *testing.T) {
	for _, tc := range []struct {
		name, result, want string
	}{
		{"text blocks joined by newlines", `{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, "a\nb"},
		{"other blocks as compact JSON", `{"content":[{"type":"image", "data":"eA==", "mimeType":"image/png"}]}`, `{"data":"eA==","mimeType":"image/png","type":"image"}`},
		{"structuredContent is not what the model reads", `{"content":[{"type":"text","text":"x"}],"structuredContent":{"big":true}}`, "x"},
		{"no content", `{}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := contentText([]byte(tc.result)); got != tc.want {
				t.Errorf("contentText = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestExchanges(t *testing.T) {
	rec := &recorder{}
	id1, _ := jsonrpc.MakeID(float64(1))
	id2, _ := jsonrpc.MakeID(float64(2))
	id3, _ := jsonrpc.MakeID(float64(3))
	rec.add(true, &jsonrpc.Request{ID: id1, Method: "tools/call", Params: []byte(`{"name":"a"}`)})
	rec.add(true, &jsonrpc.Request{ID: id2, Method: "tools/list"})
	rec.add(true, &jsonrpc.Request{Method: "notifications/progress", Params: []byte(`{}`)})
	rec.add(true, &jsonrpc.Request{ID: id3, Method: "tools/call", Params: []byte(`{"name":"b"}`)})
	// Answers out of order.
	rec.add(false, &jsonrpc.Response{ID: id3, Result: []byte(`{"content":[]}`)})
	rec.add(false, &jsonrpc.Response{ID: id2, Result: []byte(`{"tools":[]}`)})
	rec.add(false, &jsonrpc.Response{ID: id1, Result: []byte(`{"isError":true}`)})
	msgs := rec.take()
	if len(msgs) != 7 || len(rec.take()) != 0 {
		t.Fatalf("take: %d messages, then more; want 7, then none", len(msgs))
	}
	ex := exchanges(msgs, "tools/call")
	if len(ex) != 2 {
		t.Fatalf("%d tools/call exchanges, want 2", len(ex))
	}
	for i, want := range []struct{ params, result string }{{`{"name":"a"}`, `{"isError":true}`}, {`{"name":"b"}`, `{"content":[]}`}} {
		if string(ex[i].req.params) != want.params || string(ex[i].resp.result) != want.result {
			t.Errorf("exchange %d: %s → %s, want %s → %s", i, ex[i].req.params, ex[i].resp.result, want.params, want.result)
		}
		if !strings.Contains(string(ex[i].req.data), `"method":"tools/call"`) {
			t.Errorf("exchange %d: the whole message is not kept: %s", i, ex[i].req.data)
		}
	}
}

func TestReadEnvFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "env")
	os.WriteFile(path, []byte("# Written by scripts/testdeps.sh\n"+
		"export CODEMODE_TEST_PODMAN='podman --runtime runc'\n"+
		"export DOCKER_HOST=\"unix:///x/docker.sock\"\n"+
		"PLAIN=v=1\n"+
		"\n"+
		"not an assignment\n"), 0o644)
	got := readEnvFile(path)
	want := map[string]string{"CODEMODE_TEST_PODMAN": "podman --runtime runc", "DOCKER_HOST": "unix:///x/docker.sock", "PLAIN": "v=1"}
	if len(got) != len(want) {
		t.Errorf("readEnvFile = %q, want %q", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if m := readEnvFile(filepath.Join(t.TempDir(), "missing")); len(m) != 0 {
		t.Errorf("missing file: %q, want empty", m)
	}
}

func TestSplitList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"native,podman", []string{"native", "podman"}},
		{" native , ,native,gvisor ", []string{"native", "gvisor"}},
		{"", nil},
	} {
		if got := splitList(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("splitList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSynthToolsUnique: a server's tool names must be distinct (the scale
// curve's servers have up to 50 tools; names repeat only past 400), and
// every server a distinct domain and region up to 100 servers, so a query
// names one tool.
func TestSynthToolsUnique(t *testing.T) {
	for _, each := range []int{50, len(synthVerbs) * len(synthNouns), 1000} {
		seen := map[string]bool{}
		for i := range each {
			name, verb, noun := synthTool(3, i)
			if !strings.HasPrefix(name, verb+"_"+noun) {
				t.Fatalf("tool %d: name %q does not start with %s_%s", i, name, verb, noun)
			}
			if seen[name] {
				t.Fatalf("%d tools: name %q repeats", each, name)
			}
			seen[name] = true
		}
	}
	places := map[string]bool{}
	for id := range 100 {
		d, r := synthDomain(id)
		places[d+" "+r] = true
	}
	if len(places) != 100 {
		t.Errorf("100 servers cover %d domain-region pairs, want 100", len(places))
	}
}
