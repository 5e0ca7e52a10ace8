package console

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codemode/codemode/internal/activity"
	"github.com/codemode/codemode/internal/approval"
	"github.com/codemode/codemode/internal/executor"
	"github.com/codemode/codemode/internal/hostrpc"
)

// liveSessions stands in for the executor's session table.
type liveSessions struct{ reset, closed []string }

func (l *liveSessions) Sessions() []executor.SessionInfo {
	return []executor.SessionInfo{{Owner: "c-alice", Name: "default", Principal: "alice", Sandbox: "sb1", MemoryBytes: 42 << 20}}
}

func (l *liveSessions) ResetSession(owner, name, why string) bool {
	l.reset = append(l.reset, owner+"/"+name)
	return true
}

func (l *liveSessions) CloseSession(owner, name string) bool {
	l.closed = append(l.closed, owner+"/"+name)
	return true
}

var tokens = map[string]Identity{
	"alice-token-0123456789": {Principal: "alice"},
	"bob-token-0123456789":   {Principal: "bob"},
	"admin-token-0123456789": {Principal: "root", Admin: true},
}

type fixture struct {
	srv  *httptest.Server
	rec  *activity.Recorder
	live *liveSessions
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	rec := activity.New(activity.Options{})
	live := &liveSessions{}
	c := New(Options{Recorder: rec, Sessions: live, Login: func(tok string) (Identity, bool) {
		id, ok := tokens[tok]
		return id, ok
	}})
	mux := http.NewServeMux()
	mux.Handle(Prefix, c)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for _, s := range []struct{ principal, owner string }{{"alice", "c-alice"}, {"bob", "c-bob"}} {
		ctx := rec.CallStarted(context.Background(), executor.CallInfo{Principal: s.principal, Owner: s.owner, Session: "default", Code: "print('<img src=x onerror=alert(1)>')"})
		rec.CallEnded(ctx, &executor.Result{Status: executor.StatusSuccess})
	}
	return &fixture{srv: srv, rec: rec, live: live}
}

// client returns a browser-like client logged in with token ("" = not
// logged in); it does not follow redirects.
func (f *fixture) client(t *testing.T, token string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if token != "" {
		res, err := c.Get(f.srv.URL + Prefix + "?token=" + url.QueryEscape(token))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != Prefix {
			t.Fatalf("login: %s, Location %q", res.Status, res.Header.Get("Location"))
		}
	}
	return c
}

func (f *fixture) state(t *testing.T, c *http.Client) (State, int) {
	t.Helper()
	res, err := c.Get(f.srv.URL + Prefix + "api/state")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st State
	if res.StatusCode == http.StatusOK {
		if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
	}
	return st, res.StatusCode
}

func TestLoginSetsAStrictCookieAndDropsTheToken(t *testing.T) {
	f := newFixture(t)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		name, token string
		wantCookie  bool
		wantTo      string
	}{
		{"valid", "alice-token-0123456789", true, Prefix},
		{"wrong", "nope-nope-nope-nope-nope", false, Prefix + "?login=failed"},
		{"empty", "", false, Prefix + "?login=failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Get(f.srv.URL + Prefix + "?token=" + url.QueryEscape(tc.token))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if loc := res.Header.Get("Location"); loc != tc.wantTo || strings.Contains(loc, "token") {
				t.Errorf("redirect to %q, want %q", loc, tc.wantTo)
			}
			cookies := res.Cookies()
			if !tc.wantCookie {
				if len(cookies) != 0 {
					t.Errorf("cookies after a failed login: %v", cookies)
				}
				return
			}
			if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Path != Prefix {
				t.Fatalf("cookie = %+v", cookies)
			}
		})
	}
	// The login form posts the token instead.
	jar, _ := cookiejar.New(nil)
	c.Jar = jar
	res, err := c.PostForm(f.srv.URL+Prefix+"login", url.Values{"token": {"bob-token-0123456789"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if st, code := f.state(t, c); code != http.StatusOK || st.Principal != "bob" {
		t.Errorf("after the form: %d %+v", code, st)
	}
}

func TestNothingWithoutLogin(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, "")
	for _, path := range []string{"api/state", "api/events"} {
		res, err := c.Get(f.srv.URL + Prefix + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "alice") {
			t.Errorf("%s: %s %q", path, res.Status, body)
		}
	}
	res, err := c.Get(f.srv.URL + Prefix)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `name="token"`) || strings.Contains(string(body), "onerror") {
		t.Errorf("page: %s", res.Status)
	}
	for h, want := range map[string]string{"Content-Security-Policy": "script-src 'self'", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
		if !strings.Contains(res.Header.Get(h), want) {
			t.Errorf("%s = %q, want %q", h, res.Header.Get(h), want)
		}
	}
	if strings.Contains(res.Header.Get("Content-Security-Policy"), "unsafe-inline") {
		t.Error("the CSP allows inline code")
	}
}

func TestEachPrincipalSeesItsOwn(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		token string
		want  []string
	}{
		{"alice-token-0123456789", []string{"alice"}},
		{"bob-token-0123456789", []string{"bob"}},
		{"admin-token-0123456789", []string{"alice", "bob"}},
	}
	for _, tc := range tests {
		st, code := f.state(t, f.client(t, tc.token))
		var got []string
		for _, s := range st.Sessions {
			got = append(got, s.Principal)
		}
		if code != http.StatusOK || strings.Join(slices.Sorted(slices.Values(got)), ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s sees %v (%d), want %v", tc.token, got, code, tc.want)
		}
		for _, s := range st.Sessions {
			want := map[string]string{"alice": "idle", "bob": "closed"}[s.Principal]
			if s.State != want {
				t.Errorf("%s's session is %q, want %q", s.Principal, s.State, want)
			}
			// The live session shows its sandbox's memory; a closed one none.
			if wantMem := map[string]int64{"alice": 42 << 20, "bob": -1}[s.Principal]; s.MemoryBytes != wantMem {
				t.Errorf("%s's session uses %d bytes, want %d", s.Principal, s.MemoryBytes, wantMem)
			}
		}
	}
}

func post(t *testing.T, c *http.Client, u, csrf, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if csrf != "" {
		req.Header.Set("X-CSRF-Token", csrf)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func TestActionsNeedCSRFAndVisibility(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.client(t, "alice-token-0123456789"), f.client(t, "bob-token-0123456789")
	ast, _ := f.state(t, alice)
	bst, _ := f.state(t, bob)
	sid := ast.Sessions[0].ID
	reset := f.srv.URL + Prefix + "api/sessions/" + sid + "/reset"
	tests := []struct {
		name   string
		c      *http.Client
		csrf   string
		url    string
		status int
	}{
		{"no CSRF token", alice, "", reset, http.StatusForbidden},
		{"another login's CSRF token", alice, bst.CSRF, reset, http.StatusForbidden},
		{"another principal's session", bob, bst.CSRF, reset, http.StatusNotFound},
		{"unknown action", alice, ast.CSRF, f.srv.URL + Prefix + "api/sessions/" + sid + "/explode", http.StatusNotFound},
		{"reset", alice, ast.CSRF, reset, http.StatusNoContent},
		{"close", alice, ast.CSRF, f.srv.URL + Prefix + "api/sessions/" + sid + "/close", http.StatusNoContent},
	}
	for _, tc := range tests {
		if got := post(t, tc.c, tc.url, tc.csrf, ""); got != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.status)
		}
	}
	if strings.Join(f.live.reset, ",") != "c-alice/default" || strings.Join(f.live.closed, ",") != "c-alice/default" {
		t.Errorf("reset %v, closed %v", f.live.reset, f.live.closed)
	}
	// A cross-site form post is refused before anything else.
	req, _ := http.NewRequest(http.MethodPost, reset, nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("X-CSRF-Token", ast.CSRF)
	if res, err := alice.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site post: %v %v", res.Status, err)
	}
}

func TestApproveFromTheConsole(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.client(t, "alice-token-0123456789"), f.client(t, "bob-token-0123456789")
	replies, withdraw := f.rec.Post(context.Background(), approval.Request{Principal: "alice", Owner: "c-alice", Session: "default", Server: "fs", Tool: "rm", Reason: "deletes"})
	defer withdraw()
	if st, _ := f.state(t, bob); len(st.Approvals) != 0 {
		t.Fatalf("bob sees alice's approval: %+v", st.Approvals)
	}
	st, _ := f.state(t, alice)
	if len(st.Approvals) != 1 || st.Approvals[0].Tool != "rm" {
		t.Fatalf("approvals = %+v", st.Approvals)
	}
	bst, _ := f.state(t, bob)
	u := f.srv.URL + Prefix + "api/approvals/" + st.Approvals[0].ID
	if code := post(t, bob, u, bst.CSRF, `{"allow":true}`); code != http.StatusNotFound {
		t.Errorf("bob answered: %d", code)
	}
	if code := post(t, alice, u, st.CSRF, `{"allow":true,"remember":true}`); code != http.StatusNoContent {
		t.Fatalf("approve: %d", code)
	}
	if r := <-replies; !r.Allowed || !r.Remember || r.Approver != "console:alice" {
		t.Errorf("reply = %+v", r)
	}
	if code := post(t, alice, u, st.CSRF, `{"allow":false}`); code != http.StatusNotFound {
		t.Errorf("second answer: %d", code)
	}
}

func TestEventsStreamChanges(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, "alice-token-0123456789")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+Prefix+"api/events", nil)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	lines := bufio.NewScanner(res.Body)
	next := func() string {
		for lines.Scan() {
			if v, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				return v
			}
		}
		t.Fatalf("stream ended: %v", lines.Err())
		return ""
	}
	first := next()
	f.rec.CallStarted(context.Background(), executor.CallInfo{Principal: "alice", Owner: "c-alice", Session: "default", Code: "1"})
	if second := next(); second == first {
		t.Errorf("no new version after a change: %s then %s", first, second)
	}
}

// The page's script must never turn text into markup: every text is set
// with textContent or a text node.
func TestScriptBuildsNoMarkup(t *testing.T) {
	js, err := fs.ReadFile(static, "static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	bad := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function|setAttribute\("on`)
	if m := bad.FindString(string(js)); m != "" {
		t.Errorf("app.js uses %s", m)
	}
	html, _ := fs.ReadFile(static, "static/index.html")
	if regexp.MustCompile(`<script>|\son[a-z]+=|style=`).Match(html) {
		t.Error("index.html has inline script, handlers or style (the CSP forbids them)")
	}
}

func TestOneTimeLogin(t *testing.T) {
	token, login := OneTimeLogin(Identity{Principal: "default", Admin: true}, func(t string) (Identity, bool) { return tokens[t], t == "alice-token-0123456789" })
	if id, ok := login(token); !ok || id.Principal != "default" || !id.Admin {
		t.Fatalf("first use: %+v %v", id, ok)
	}
	if _, ok := login(token); ok {
		t.Error("the one-time token worked twice")
	}
	if id, ok := login("alice-token-0123456789"); !ok || id.Principal != "alice" {
		t.Errorf("other tokens: %+v %v", id, ok)
	}
}

func TestEventsEndAtStop(t *testing.T) {
	stop := make(chan struct{})
	rec := activity.New(activity.Options{})
	c := New(Options{Recorder: rec, Stop: stop, Login: func(tok string) (Identity, bool) { return tokens[tok], tok == "alice-token-0123456789" }})
	mux := http.NewServeMux()
	mux.Handle(Prefix, c)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	f := &fixture{srv: srv, rec: rec}
	res, err := f.client(t, "alice-token-0123456789").Get(srv.URL + Prefix + "api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	close(stop)
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(res.Body); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("stream ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the event stream outlived Stop")
	}
}

// BenchmarkState50Sessions is the page's first request with 50 sessions of
// 50 cells, each with a few nested calls (the first paint waits for it).
func BenchmarkState50Sessions(b *testing.B) {
	rec := activity.New(activity.Options{})
	for i := range 50 {
		owner := fmt.Sprintf("c%d", i)
		for range 50 {
			ctx := rec.CallStarted(context.Background(), executor.CallInfo{Principal: "alice", Owner: owner, Session: "default", Code: strings.Repeat("x = 1\n", 20)})
			for range 3 {
				rec.Middleware(func(context.Context, *hostrpc.ToolCall) (any, error) { return "ok", nil })(ctx, &hostrpc.ToolCall{Server: "fs", Tool: "read"})
			}
			rec.CallEnded(ctx, &executor.Result{Status: executor.StatusSuccess, Stdout: executor.Output{Head: []byte(strings.Repeat("out\n", 50)), Total: 200}})
		}
	}
	c := New(Options{Recorder: rec})
	l := &login{Identity: Identity{Principal: "alice"}}
	b.ReportAllocs()
	for b.Loop() {
		rr := httptest.NewRecorder()
		c.state(rr, nil, l)
	}
}

// TestEndedTimelineIsClosed: after alice's session ended and a new one took
// its name, the page shows the old timeline closed and the new one live.
func TestEndedTimelineIsClosed(t *testing.T) {
	f := newFixture(t)
	f.rec.SessionClosed("c-alice", "default")
	ctx := f.rec.CallStarted(context.Background(), executor.CallInfo{Principal: "alice", Owner: "c-alice", Session: "default", Code: "1"})
	f.rec.CallEnded(ctx, &executor.Result{Status: executor.StatusSuccess})
	st, code := f.state(t, f.client(t, "alice-token-0123456789"))
	var states []string
	for _, s := range st.Sessions {
		states = append(states, s.State)
	}
	slices.Sort(states)
	if code != http.StatusOK || strings.Join(states, ",") != "closed,idle" {
		t.Errorf("alice's sessions are %v (%d), want one closed and one idle", states, code)
	}
}
