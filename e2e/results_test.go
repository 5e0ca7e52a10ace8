package e2e

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func images(res *mcp.CallToolResult) []*mcp.ImageContent {
	var out []*mcp.ImageContent
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok {
			out = append(out, img)
		}
	}
	return out
}

func links(res *mcp.CallToolResult) []*mcp.ResourceLink {
	var out []*mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			out = append(out, l)
		}
	}
	return out
}

func TestMatplotlibFigureIsAnImage(t *testing.T) {
	s := startServer(t, rootfsEnv(t), "CODEMODE_IMAGE_MAX_PIXELS=200000")
	res := s.run(t, "import matplotlib.pyplot as plt\nfig = plt.figure(figsize=(12, 9), dpi=100)\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title('squares')\nplt.show()\nprint('plotted')")
	if res.IsError {
		t.Fatalf("plot failed: %s", text(res))
	}
	imgs := images(res)
	if len(imgs) != 1 || imgs[0].MIMEType != "image/png" {
		t.Fatalf("want one PNG image, got %d: %s", len(imgs), text(res))
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(imgs[0].Data))
	if err != nil {
		t.Fatalf("not a valid PNG: %v", err)
	}
	if cfg.Width*cfg.Height > 200000 || cfg.Width < 200 {
		t.Fatalf("image %dx%d, want within 200000 pixels and not degenerate", cfg.Width, cfg.Height)
	}
	st := structured(t, res)
	list, _ := st["images"].([]any)
	if len(list) != 1 || !strings.Contains(text(res), "[image ") {
		t.Fatalf("image not listed: %v / %s", st["images"], text(res))
	}
	// Closed after being returned: the next call returns no image.
	if res := s.run(t, "print(1)"); len(images(res)) != 0 {
		t.Fatal("the figure came back twice")
	}
}

func TestShowImageDownscalesToBudget(t *testing.T) {
	s := startServer(t, rootfsEnv(t), "CODEMODE_IMAGE_MAX_PIXELS=100000", "CODEMODE_IMAGE_MAX_BYTES=200k")
	res := s.run(t, "from PIL import Image\nimport random\nimg = Image.effect_noise((2000, 1500), 64).convert('RGB')\nimg")
	imgs := images(res)
	if len(imgs) != 1 {
		t.Fatalf("want an image from a PIL last expression: %s", text(res))
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(imgs[0].Data))
	if err != nil || cfg.Width*cfg.Height > 100000 || len(imgs[0].Data) > 200<<10 {
		t.Fatalf("image %dx%d %d bytes, err %v: over budget", cfg.Width, cfg.Height, len(imgs[0].Data), err)
	}
	if !strings.Contains(text(res), "downscaled") {
		t.Errorf("downscaling not reported: %s", text(res))
	}
	res = s.run(t, "show_image(b'not an image')")
	if st := structured(t, res); st["status"] != "error" || !strings.Contains(st["error"].(string), "not a PNG") {
		t.Fatalf("bad image data: %v", st)
	}
}

func TestPublishedFilesAreResources(t *testing.T) {
	s := startServer(t)
	res := s.run(t, "import os\nos.makedirs('out/sub', exist_ok=True)\nopen('out/result.csv', 'w').write('a,b\\n1,2\\n')\nopen('out/sub/x.bin', 'wb').write(bytes(range(256)))\nopen('notes.txt', 'w').write('kept')\npublish('notes.txt')")
	ls := links(res)
	if len(ls) != 3 {
		t.Fatalf("want 3 resource links, got %d: %s", len(ls), text(res))
	}
	byName := map[string]*mcp.ResourceLink{}
	for _, l := range ls {
		byName[l.Name] = l
	}
	read := func(uri string) *mcp.ResourceContents {
		t.Helper()
		r, err := s.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("resources/read %s: %v", uri, err)
		}
		return r.Contents[0]
	}
	if c := read(byName["result.csv"].URI); c.Text != "a,b\n1,2\n" || c.MIMEType != "text/csv; charset=utf-8" {
		t.Errorf("result.csv = %q %q", c.Text, c.MIMEType)
	}
	if c := read(byName["sub/x.bin"].URI); len(c.Blob) != 256 || c.Blob[255] != 255 {
		t.Errorf("x.bin = %d bytes", len(c.Blob))
	}
	if c := read(byName["notes.txt"].URI); c.Text != "kept" {
		t.Errorf("notes.txt = %q", c.Text)
	}
	// Unchanged files are not published again.
	if res := s.run(t, "print('again')"); len(links(res)) != 0 {
		t.Errorf("unchanged files came back: %v", links(res))
	}
	// Files end with their session.
	uri := byName["result.csv"].URI
	s.call(t, map[string]any{"code": "1", "reset": true})
	if _, err := s.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri}); err == nil {
		t.Error("a file of an ended session is still readable")
	}
}

func TestBigOutputBecomesAResource(t *testing.T) {
	s := startServer(t)
	res := s.run(t, "for i in range(100_000):\n    print(f'line {i:06d} ' + 'x' * 40)")
	st := structured(t, res)
	if st["truncated"] == nil {
		t.Fatalf("5 MB of output not cut: %v", st["truncated"])
	}
	out := lines(st["stdout"])
	if out[0] != "line 000000 "+strings.Repeat("x", 40) || out[len(out)-1] != "line 099999 "+strings.Repeat("x", 40) {
		t.Fatalf("preview lacks the head or the tail: %q ... %q", out[0], out[len(out)-1])
	}
	ls := links(res)
	if len(ls) != 1 || !strings.HasPrefix(ls[0].Name, "output/stdout-") {
		t.Fatalf("no resource for the full output: %v", ls)
	}
	r, err := s.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: ls[0].URI})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Contents[0].Text; len(got) != 100_000*53 || !strings.HasSuffix(got, "line 099999 "+strings.Repeat("x", 40)+"\n") {
		t.Fatalf("full output: %d bytes", len(got))
	}
}

func TestProgressNotifications(t *testing.T) {
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	client := mcp.NewClient(&mcp.Implementation{Name: "progress-test"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
		}})
	cs := connectWith(t, client)
	params := &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "import time\nfor i in range(6):\n    print('step', i, flush=True)\n    runtime.progress(i + 1, 6, f'step {i}') if i >= 3 else None\n    time.sleep(0.5)"}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	var ticker, fromCode int
	last := 0.0
	for _, p := range got {
		if p.ProgressToken != "tok-1" || p.Progress <= last {
			t.Errorf("bad notification %+v after %v", p, last)
		}
		last = p.Progress
		if p.Total == 6 {
			fromCode++
		} else if strings.HasPrefix(p.Message, "running for ") && strings.Contains(p.Message, "step") {
			ticker++
		}
	}
	if ticker == 0 || fromCode == 0 {
		t.Fatalf("progress: %d elapsed-time notifications with output, %d from runtime.progress; want both: %+v", ticker, fromCode, got)
	}
}

func TestCancellationInterruptsAndSessionSurvives(t *testing.T) {
	s := startServer(t)
	s.run(t, "kept = 'yes'")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{
			"code": "import time\nt0 = time.monotonic()\nwhile True: ran = time.monotonic() - t0", "timeout": 60}})
		done <- err
	}()
	time.Sleep(time.Second)
	cancel()
	<-done
	// The cancelled code was interrupted, and the session survived: the
	// loop kept how long it ran, far less than the 60 s it would have run
	// until its timeout (a loaded machine delays the cancellation, but not
	// by that much). 0: the cancellation came before the code started.
	got := s.stdoutOf(t, "print(kept)\nprint(globals().get('ran', 0))")
	if len(got) != 2 || got[0] != "yes" {
		t.Fatalf("after cancel: %q", got)
	}
	if ran, err := strconv.ParseFloat(got[1], 64); err != nil || ran > 30 {
		t.Fatalf("the cancelled code ran for %s s", got[1])
	}
	if !strings.Contains(s.stderr.String(), "status=error") {
		t.Errorf("the cancelled call was not logged as ended")
	}
}

func TestSavedToolsAndMemoryOutliveCodemode(t *testing.T) {
	state := "CODEMODE_STATE_DIR=" + t.TempDir()
	s := startServer(t, state)
	got := s.stdoutOf(t, "def area(w, h):\n    'Area of a rectangle.'\n    return w * h\nprint(save_tool(area))\nsave_memory('project', {'name': 'codemode', 'stars': 1})\nprint(update_memory('project', lambda p: {**p, 'stars': p['stars'] + 1}))")
	if len(got) != 2 || !strings.HasPrefix(got[0], "Tool 'area' saved.") || got[1] != "{'name': 'codemode', 'stars': 2}" {
		t.Fatalf("save: %q", got)
	}
	// Another session of the same codemode.
	got = lines(structured(t, s.call(t, map[string]any{"code": "from user_tools import area\nprint(area(3, 4))", "session": "other"}))["stdout"])
	if !slices.Equal(got, []string{"12"}) {
		t.Fatalf("saved tool in a new session: %q", got)
	}
	s.cs.Close()
	// A new codemode process.
	s2 := startServer(t, state)
	got = s2.stdoutOf(t, "from user_tools import area\nprint(area(2, 5), load_memory('project')['stars'], list_memories(), load_memory('missing', 'default'))")
	if !slices.Equal(got, []string{"10 2 ['project'] default"}) {
		t.Fatalf("after restart: %q", got)
	}
}

func TestFilesArgumentAndDataDir(t *testing.T) {
	// The sandbox runs as an unprivileged uid: the directory must be readable by others.
	data, err := os.MkdirTemp("", "codemode-data-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(data) })
	os.Chmod(data, 0o755)
	os.WriteFile(filepath.Join(data, "input.csv"), []byte("x\n1\n2\n"), 0o644)
	s := startServer(t, "CODEMODE_DATA_DIR="+data)
	res := s.call(t, map[string]any{"code": "print(open('hello.txt').read(), open('sub/b.bin','rb').read(), open('data/input.csv').read().split())\ntry:\n    open('data/new.txt', 'w')\nexcept OSError as e:\n    print('read-only', e.errno)",
		"files": map[string]any{"hello.txt": "hi there", "sub/b.bin": map[string]any{"base64": "AAEC"}}})
	if got := lines(structured(t, res)["stdout"]); !slices.Equal(got, []string{"hi there b'\\x00\\x01\\x02' ['x', '1', '2']", "read-only 30"}) {
		t.Fatalf("files and data dir: %q (%s)", got, text(res))
	}
	st := structured(t, s.call(t, map[string]any{"code": "1", "files": map[string]any{"../escape": "x"}}))
	if st["status"] != "validation_error" {
		t.Fatalf("escaping file name accepted: %v", st)
	}
}

// connectWith connects a given client to a fresh codemode.
func connectWith(t *testing.T, client *mcp.Client) *mcp.ClientSession {
	t.Helper()
	cmd := execCommand(t)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestTOONOutputMode(t *testing.T) {
	s := startServer(t, "MCP_BRIDGE_OUTPUT_MODE=toon")
	res := s.run(t, "print('a')\nprint('b')")
	txt := text(res)
	want := "```toon\nstatus: success\nsummary: Success\nexitCode: 0\nstdout[2]: a,b\nsession: default\n```"
	if txt != want {
		t.Fatalf("toon text = %q, want %q", txt, want)
	}
	if st := structured(t, res); st["status"] != "success" || st["summary"] != "Success" {
		t.Fatalf("structuredContent does not mirror the payload: %v", st)
	}
	got := s.stdoutOf(t, "print(runtime.to_toon([{'id': 1, 'name': 'a'}, {'id': 2, 'name': 'b'}]))")
	if strings.Join(got, "\n") != "[2]{id,name}:\n  1,a\n  2,b" {
		t.Fatalf("to_toon: %q", got)
	}
}
