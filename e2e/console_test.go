package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/codemode/codemode/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// browser starts a headless Debian chromium driven by chromedp; tabs of it
// share cookies.
func browser(t *testing.T) context.Context {
	t.Helper()
	testenv.Slow(t, "the web console in a headless browser")
	bin := testenv.LookPath(t, "chromium", "apt-get install chromium (scripts/testdeps.sh installs it)")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.UserDataDir(t.TempDir()))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // chromium refuses its sandbox as root
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancel(); cancelTab(); cancelAlloc() })
	return ctx
}

var loginURL = regexp.MustCompile(`http://\S+/console/\?token=[0-9a-f]+`)

// consoleLogin waits for the one-time login URL codemode prints.
func consoleLogin(t *testing.T, stderr *lockedBuffer) string {
	t.Helper()
	for range 300 {
		if u := loginURL.FindString(stderr.String()); u != "" {
			return u
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("codemode printed no console login URL:\n%s", stderr.String())
	return ""
}

// screenshot saves the page as docs/console/NAME.png when
// CODEMODE_SCREENSHOTS=1 (how the README's pictures are made).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("CODEMODE_SCREENSHOTS") != "1" {
		return
	}
	png := get(t, ctx, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join("..", "docs", "console", name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// dom is the page as the browser has it now.
func dom(t *testing.T, ctx context.Context) string {
	t.Helper()
	return get(t, ctx, chromedp.OuterHTML(chromedp.CSS("html")))
}

// textOf reads the text of the first match of css in one step (the page
// redraws as events arrive, so a node found earlier may be gone).
func textOf(t *testing.T, ctx context.Context, css string) string {
	t.Helper()
	return get(t, ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).textContent`, css)))
}

// click clicks the first match of css in one step.
func click(t *testing.T, ctx context.Context, css string) {
	t.Helper()
	get(t, ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q).click(), true`, css)))
}

// get runs one action that returns a value.
func get[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// do runs actions in order.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// TestConsoleWatchAndApprove: over stdio with --console, a user logs in
// with the printed URL, sees the code the agent ran and its output as
// text (markup in it stays text), and answers the policy's asks.
func TestConsoleWatchAndApprove(t *testing.T) {
	ctx := browser(t)
	root, config := policyServers(t)
	s := startServer(t, config, policyFile("ask.toml"), "CODEMODE_APPROVAL_TIMEOUT=90s", "CODEMODE_CONSOLE=127.0.0.1:0",
		"CODEMODE_AUDIT_LOG="+filepath.Join(t.TempDir(), "audit.log"))
	login := consoleLogin(t, s.stderr)
	page := strings.Split(login, "?")[0]
	hostile := `print("<script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\">")`
	s.run(t, hostile)

	// Without a login: the form, and nothing of any session.
	do(t, ctx, chromedp.EmulateViewport(1200, 800), chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#login")))
	screenshot(t, ctx, "login")
	if html := dom(t, ctx); strings.Contains(html, "pwned") || strings.Contains(html, "default") {
		t.Fatalf("the page shows a session before login:\n%s", html)
	}

	do(t, ctx, chromedp.Navigate(login), chromedp.WaitVisible(chromedp.CSS(".cell pre.output")))
	location := get(t, ctx, chromedp.Location())
	output := textOf(t, ctx, ".cell pre.output")
	pwned := get(t, ctx, chromedp.Evaluate[int](`window.pwned === undefined ? 0 : window.pwned`))
	images := get(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("img, main script").length`))
	if strings.Contains(location, "token") {
		t.Errorf("the token stayed in the URL: %s", location)
	}
	if !strings.Contains(output, `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`) || pwned != 0 || images != 0 {
		t.Errorf("output rendered as markup: text %q, pwned %d, elements %d", output, pwned, images)
	}
	if html := dom(t, ctx); !strings.Contains(html, "window.pwned=1&lt;/script&gt;") {
		t.Errorf("the code is not shown as text:\n%s", html)
	}

	how := `to allow it without asking, add a rule with decision = "allow" for server "fs" and tool "write_file" to the policy file`
	for _, c := range []struct {
		button, file, want, outcome string
	}{
		{"button.approve", "approved.txt", "ok Successfully wrote to " + filepath.Join(root, "approved.txt"), ".call.outcome-ok"},
		{"button.deny", "denied.txt", "denied the user did not approve fs.write_file (decline); " + how, ".call.outcome-denied"},
	} {
		t.Run(c.file, func(t *testing.T) {
			got := make(chan string, 1)
			go func() { got <- attemptAsync(s, root, "mcp_fs.write_file(path=ROOT + '/"+c.file+"', content='hello')") }()
			do(t, ctx, chromedp.WaitVisible(chromedp.CSS(".approval "+c.button)))
			args := textOf(t, ctx, ".approval pre.args")
			if c.file == "approved.txt" {
				screenshot(t, ctx, "approval")
			}
			click(t, ctx, ".approval "+c.button)
			if !strings.Contains(args, c.file) {
				t.Errorf("the approval shows arguments %q", args)
			}
			select {
			case g := <-got:
				if g != c.want {
					t.Errorf("got:  %q\nwant: %q", g, c.want)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the call did not complete after the console's answer")
			}
			do(t, ctx, chromedp.WaitVisible(chromedp.CSS(c.outcome)))
			call := textOf(t, ctx, c.outcome)
			if c.file == "denied.txt" {
				screenshot(t, ctx, "timeline")
			}
			if !strings.Contains(call, "fs.write_file") || !strings.Contains(call, "[policy: ask") {
				t.Errorf("nested call shown as %q", call)
			}
		})
	}

	// The audit log, filtered, with the chain's status; the servers.
	do(t, ctx, chromedp.SendKeys(chromedp.CSS("#audit-q"), "denied"), chromedp.Sleep(time.Second))
	status, rows := textOf(t, ctx, "#audit-status"), textOf(t, ctx, "#audit-list")
	if !strings.HasPrefix(status, "chain verified: ok") || !strings.Contains(rows, "fs.write_file") || !strings.Contains(rows, "console:default") || strings.Contains(rows, "approved.txt") {
		t.Errorf("audit view: status %q, rows %q", status, rows)
	}
	if servers := textOf(t, ctx, "#server-list"); !strings.Contains(servers, "fs") || !strings.Contains(servers, "running") {
		t.Errorf("servers view: %q", servers)
	}
	screenshot(t, ctx, "audit")
}

// attemptAsync is server.attempt for another goroutine: it returns what
// went wrong instead of failing the test.
func attemptAsync(s *server, root, call string) string {
	code := fmt.Sprintf("import json\nROOT = %q\ntry:\n    r = await %s\n    out = 'ok ' + (r.text or '')\nexcept runtime.MCPError as e:\n    out = '%%s %%s' %% (e.kind, e)\nprint(json.dumps(out))", root, call)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
	if err != nil {
		return err.Error()
	}
	var sc struct {
		Stdout []string `json:"stdout"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &sc); err != nil || len(sc.Stdout) != 1 {
		return fmt.Sprintf("unexpected result %s", b)
	}
	var out string
	json.Unmarshal([]byte(sc.Stdout[0]), &out)
	return out
}

// TestConsoleOtherPrincipalsAreInvisible: over HTTP, a token sees its own
// sessions only.
func TestConsoleOtherPrincipalsAreInvisible(t *testing.T) {
	ctx := browser(t)
	h := startHTTP(t)
	alice, err := h.connect(t, aliceToken)
	if err != nil {
		t.Fatal(err)
	}
	runOver(t, alice, `print("alice-secret-marker")`)
	// Closed now, not at the end: codemode's shutdown does not wait for a
	// connection's sessions still being closed. The console keeps the
	// closed session's timeline.
	alice.Close()
	page := strings.TrimSuffix(h.url, "/mcp") + "/console/"
	see := func(token string) string {
		t.Helper()
		do(t, ctx, chromedp.Navigate(page+"?token="+token), chromedp.WaitVisible(chromedp.CSS("#sessions")), chromedp.Sleep(300*time.Millisecond))
		return dom(t, ctx)
	}
	if html := see(bobToken); strings.Contains(html, "alice-secret-marker") || !strings.Contains(html, "No sessions yet.") {
		t.Errorf("bob's console:\n%s", html)
	}
	if html := see(aliceToken); !strings.Contains(html, "alice-secret-marker") || !strings.Contains(html, ">closed<") {
		t.Errorf("alice's console lacks her session:\n%s", html)
	}
}
