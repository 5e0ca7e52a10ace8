package main

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestReportGolden renders a whole report from fixed results: every
// section, a backend that is not installed, a failed section and a note.
func TestReportGolden(t *testing.T) {
	rep := &report{
		command:    "make bench",
		machine:    "Machine: 2 × Test CPU, 24 GiB RAM, Debian GNU/Linux 12 (bookworm), kernel 6.1.0, cgroup v1 (hybrid).",
		took:       754 * time.Second,
		loadBefore: "0.10 0.20 0.30",
		loadAfter:  "2.50 2.00 1.00",
		sections: []sectionRun{
			{name: "context", res: fixedContext(), took: 8 * time.Second, load0: "0.10 0.20 0.30", load1: "0.50 0.30 0.30"},
			{name: "task", res: fixedTask(), took: 9 * time.Second, load0: "0.50 0.30 0.30", load1: "0.60 0.30 0.30", waited: 2340 * time.Millisecond, busy: 0.04},
			{name: "backends", res: fixedBackends(), took: 300 * time.Second, load0: "0.60 0.30 0.30", load1: "3.00 2.00 1.00"},
			{name: "scale", err: errors.New("scale with 100 servers: starting codemode (native): EOF"), took: 2 * time.Second, load0: "3.00 2.00 1.00", load1: "2.50 2.00 1.00", busy: -1},
		},
		notes: []string{"scale: codemode discovered 9 of 10 configured servers"},
	}
	golden(t, "report.golden.md", rep.markdown())
}

// TestScaleGolden covers the scale section, which the report test shows
// failed.
func TestScaleGolden(t *testing.T) {
	s := &scaleResults{each: 50, rs: []*scaleResult{
		{servers: 1, tools: 50, connect: 26600 * time.Microsecond, listTokens: 209, passP50: sample{0.555, 0.6, 0.5}, firstSearch: 11.4,
			searchP50: sample{0.231, 0.25, 0.2}, hits: 30, queries: 30, proxied: sample{437, 450, 420}, cmMem: mem{rss: 17818, pss: 12000}},
		{servers: 100, tools: 5000, connect: 20800 * time.Microsecond, listTokens: 209, passP50: sample{0.595}, firstSearch: 2673,
			searchP50: sample{1.2, 0.9, 1.4}, hits: 29, queries: 30, proxied: sample{541}, cmMem: mem{rss: 118682, pss: 90000}},
	}}
	golden(t, "scale.golden.md", s.markdown()+"\n"+goalsMarkdown(s.goals()))
}

func TestGoals(t *testing.T) {
	for _, tc := range []struct {
		name string
		gs   []goal
		want []bool
	}{
		{"context", fixedContext().goals(), []bool{false, true, true}},
		// native meets all but the start without a spare and the ratio;
		// podman only the start with a spare; gvisor is missing (no goals).
		{"backends", fixedBackends().goals(), []bool{false, true, true, false, true, false, true, false, false, false}},
		{"task sets none", fixedTask().goals(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.gs) != len(tc.want) {
				t.Fatalf("%d goals, want %d: %+v", len(tc.gs), len(tc.want), tc.gs)
			}
			for i, g := range tc.gs {
				if g.met != tc.want[i] {
					t.Errorf("goal %q (%s, this run %s): met = %v, want %v", g.what, g.target, g.result, g.met, tc.want[i])
				}
			}
		})
	}
}

func TestContextGoalFlat(t *testing.T) {
	r := fixedContext()
	r.codemode[3].tokens++
	if g := r.goals()[2]; g.met || g.result != "209–210 tokens" {
		t.Errorf("a listing that grows: %+v, want missed, 209–210 tokens", g)
	}
}

func fixedContext() *contextResult {
	r := &contextResult{servers: npmServers("/tmp/files", "/tmp/memory.jsonl")}
	perServer := []struct{ tools, bytes, tokens int }{{14, 8120, 1813}, {14, 12983, 2825}, {9, 10760, 2380}, {1, 4650, 1005}, {25, 20296, 4415}}
	var tools, bytes, tokens int
	for i, s := range perServer {
		r.versions = append(r.versions, "2026.8.31")
		r.direct = append(r.direct, listing{tools: fakeTools(s.tools), bytes: s.bytes, tokens: s.tokens, start: time.Duration(170+10*i) * time.Millisecond})
		tools, bytes, tokens = tools+s.tools, bytes+s.bytes, tokens+s.tokens
		r.cumul = append(r.cumul, listing{tools: fakeTools(tools), bytes: bytes, tokens: tokens})
	}
	for range 6 {
		r.codemode = append(r.codemode, listing{tools: fakeTools(1), bytes: 903, tokens: 209})
	}
	return r
}

func fakeTools(n int) []json.RawMessage {
	out := make([]json.RawMessage, n)
	for i := range out {
		out[i] = json.RawMessage(`{}`)
	}
	return out
}

func fixedTask() *taskResult {
	walls := func(ms ...float64) []time.Duration {
		var out []time.Duration
		for _, m := range ms {
			out = append(out, time.Duration(m*float64(time.Millisecond)))
		}
		return out
	}
	// Call counts are the totals of two repetitions, as the harness adds them.
	return &taskResult{
		fileBytes: 37376,
		perFile: &styleResult{label: "direct: list_directory, read_text_file × 20, create_entities", calls: 22, listTokens: 12422, listBytes: 56765,
			callTokens: 2 * 16752, callBytes: 2 * 40748, wireBytes: 2 * 83799, wall: walls(27.6, 30.1), summaryMatch: true},
		batched: &styleResult{label: "direct, batched: list_directory, read_multiple_files, create_entities", calls: 3, listTokens: 12422, listBytes: 56765,
			callTokens: 2 * 16922, callBytes: 2 * 41157, wireBytes: 2 * 82489, wall: walls(10.7, 11.2), summaryMatch: true},
		code: &styleResult{label: "codemode: one run_python", calls: 1, listTokens: 209, listBytes: 903,
			callTokens: 2 * 363, callBytes: 2 * 1246, wireBytes: 2 * 1685, wall: walls(22.2, 20.9), summaryMatch: false},
	}
}

func fixedBackends() backendResults {
	native := &backendResult{
		name:        "native",
		coldNoSpare: sample{47.7, 43.1, 52.3}, coldSpare: sample{5.01, 3.67, 6.34}, spareUsed: 3, spareTries: 3,
		passP50: sample{0.572, 0.567, 0.577}, passP99: sample{2.06, 1.99, 2.12},
		proxied: sample{533, 495, 571}, directCall: sample{275, 231, 319}, ratio: sample{1.94, 2.14, 1.79},
		seq: sample{1651, 1649, 1653}, gather: sample{59.4, 58.1, 60.7}, speedup: sample{27.8, 27.2, 28.4},
		cps: sample{3027, 2833, 3222}, concP50: sample{4.89, 4.52, 5.27}, concP99: sample{12.5, 12.2, 12.8},
		cmIdle: mem{13414, 9113}, cm16: mem{21708, 13414}, sbIdle: mem{23244, 16998}, sb16: mem{400384, 161690},
		sbIdleN: 1, sb16N: 17, sessionStartAll: 509 * time.Millisecond,
		warmRounds: 3, warmCalls: warmCalls, proxyCalls: proxyCalls, concRounds: 3,
	}
	podman := &backendResult{
		name:        "podman",
		coldNoSpare: sample{118}, coldSpare: sample{2.66}, spareUsed: 0, spareTries: 1,
		passP50: sample{1.1}, passP99: sample{2.65},
		proxied: sample{615}, directCall: sample{207}, ratio: sample{2.97},
		seq: sample{1654}, gather: sample{259.5}, speedup: sample{6.4},
		cps: sample{1785}, concP50: sample{7.59}, concP99: sample{31.3}, concErrors: 2,
		cmIdle: mem{13312, 13312}, cm16: mem{21914, 21914}, sbIdle: mem{51302, 47411}, sb16: mem{879206, 306074},
		sbIdleN: 1, sb16N: 17, sessionStartAll: 1175 * time.Millisecond,
		warmRounds: 1, warmCalls: warmCalls, proxyCalls: proxyCalls, concRounds: 1,
	}
	gvisor := &backendResult{name: "gvisor", missing: "no runsc binary (scripts/testdeps.sh builds it; or pass --oci-runtime)"}
	return backendResults{native, podman, gvisor}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the golden file (create it with go test -update): %v", err)
	}
	if got == string(want) {
		return
	}
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gotLines), len(wantLines)) {
		g, w := lineAt(gotLines, i), lineAt(wantLines, i)
		if g != w {
			t.Errorf("%s: line %d differs (rerun with -update if the change is intended):\ngot:  %s\nwant: %s", path, i+1, g, w)
			return
		}
	}
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of text)"
}
