// Package activity records what happens in codemode for the web console:
// each session, each run_python call (cell) with its code, status, duration
// and an output preview, the nested tool calls under it with their policy
// decision and outcome, and the approvals waiting for a human. It is fed by
// the executor (an executor.CallWatcher), the tool-call chain (a
// hostrpc.ToolMiddleware), the gate (Decided) and the approver (a
// approval.Board), and tells watchers when anything changed.
package activity

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/codemode/codemode/internal/approval"
	"github.com/codemode/codemode/internal/executor"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/peer"
	"github.com/codemode/codemode/internal/policy"
	jsonv2 "github.com/go-json-experiment/json"
)

// Options bound what a Recorder keeps.
type Options struct {
	MaxSessions int // sessions kept, live or ended (default 200)
	MaxCells    int // cells kept per session, the newest (default 50)
	MaxCalls    int // nested calls kept per cell (default 100)
	Preview     int // characters of output, code and arguments kept (default 4000)
}

// Recorder keeps recent activity in memory. Its methods are safe for
// concurrent use.
type Recorder struct {
	opts Options

	mu       sync.Mutex
	version  uint64
	changed  chan struct{} // closed and replaced at every change
	sessions map[sessionKey]*Session
	pending  map[string]*pendingAsk
}

// sessionKey finds a session's timeline: gen is "" while the session
// lives, and its id once it ended, so a later session under the same name
// starts a timeline of its own.
type sessionKey struct{ owner, name, gen string }

// Session is one run_python session as the console shows it.
type Session struct {
	ID         string    `json:"id"`
	Principal  string    `json:"principal"`
	Client     string    `json:"client"`
	Name       string    `json:"name"`
	Started    time.Time `json:"started"`
	LastActive time.Time `json:"last_active"`
	Ended      time.Time `json:"ended,omitzero"` // closed, expired or disconnected
	Cells      []*Cell   `json:"cells"`
	owner      string
}

// Cell is one run_python call.
type Cell struct {
	ID         string    `json:"id"`
	Code       string    `json:"code"`
	Reset      bool      `json:"reset,omitempty"`
	Status     string    `json:"status"` // "running", then the result's status
	Started    time.Time `json:"started"`
	DurationMS int64     `json:"duration_ms"`
	Output     string    `json:"output"`
	Error      string    `json:"error,omitempty"`
	// Files are what the call published, and its full output when the
	// result had to cut it: resources the client reads (resources/read).
	Files []executor.File `json:"files,omitempty"`
	Calls []*Call         `json:"calls"`
}

// Call is one nested tool call of a cell.
type Call struct {
	ID         string    `json:"id"`
	Server     string    `json:"server"`
	Tool       string    `json:"tool"`
	Arguments  string    `json:"arguments"`
	Started    time.Time `json:"started"`
	DurationMS int64     `json:"duration_ms"`
	Outcome    string    `json:"outcome"`            // "running", "ok", "error", "denied", "limit"
	Decision   string    `json:"decision,omitempty"` // the policy's: "allow", "ask", "deny"; "" without a policy
	Rule       string    `json:"rule,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// Approval is an ask waiting for a human.
type Approval struct {
	ID        string    `json:"id"`
	SessionID string    `json:"session_id"`
	Principal string    `json:"principal"`
	Session   string    `json:"session"`
	Server    string    `json:"server"`
	Tool      string    `json:"tool"`
	Action    string    `json:"action,omitempty"` // what is asked instead of a tool call (adding a server)
	Arguments string    `json:"arguments"`
	Reason    string    `json:"reason"`
	Rule      string    `json:"rule"`
	Asked     time.Time `json:"asked"`
}

type pendingAsk struct {
	Approval
	owner   string
	replies chan approval.Reply
}

// View is what one watcher may see.
type View struct {
	Version   uint64      `json:"version"`
	Sessions  []*Session  `json:"sessions"`
	Approvals []*Approval `json:"approvals"`
}

// New returns a Recorder.
func New(opts Options) *Recorder {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 200
	}
	if opts.MaxCells <= 0 {
		opts.MaxCells = 50
	}
	if opts.MaxCalls <= 0 {
		opts.MaxCalls = 100
	}
	if opts.Preview <= 0 {
		opts.Preview = 4000
	}
	return &Recorder{opts: opts, changed: make(chan struct{}), sessions: map[sessionKey]*Session{}, pending: map[string]*pendingAsk{}}
}

// Changed returns a channel closed at the next change, and the version of
// what is recorded now.
func (r *Recorder) Changed() (<-chan struct{}, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed, r.version
}

// touch records a change; r.mu is held.
func (r *Recorder) touch() {
	r.version++
	close(r.changed)
	r.changed = make(chan struct{})
}

type cellKey struct{}

type cellRef struct {
	s *Session
	c *Cell
}

type callKey struct{}

var _ executor.CallWatcher = (*Recorder)(nil)

// CallStarted files a new cell under its session.
func (r *Recorder) CallStarted(ctx context.Context, info executor.CallInfo) context.Context {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	k := sessionKey{info.Owner, info.Session, ""}
	s := r.sessions[k]
	if s == nil {
		s = &Session{ID: newID(), Principal: info.Principal, Name: info.Session, Started: now, LastActive: now, owner: info.Owner}
		r.sessions[k] = s
		r.prune()
	}
	if p := peer.From(ctx); p != nil && p.ClientName != "" {
		s.Client = p.ClientName
	}
	s.LastActive = now
	c := &Cell{ID: newID(), Code: r.cut(info.Code), Reset: info.Reset, Status: "running", Started: now, Calls: []*Call{}}
	s.Cells = append(s.Cells, c)
	if len(s.Cells) > r.opts.MaxCells {
		s.Cells = append([]*Cell(nil), s.Cells[len(s.Cells)-r.opts.MaxCells:]...)
	}
	r.touch()
	return context.WithValue(ctx, cellKey{}, cellRef{s, c})
}

// SessionClosed ends the timeline of a session that ended (closed, idle,
// its connection gone): it stays in view, and a new session under the same
// name starts its own.
func (r *Recorder) SessionClosed(owner, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := sessionKey{owner, name, ""}
	s := r.sessions[k]
	if s == nil {
		return
	}
	delete(r.sessions, k)
	s.Ended = time.Now()
	r.sessions[sessionKey{owner, name, s.ID}] = s
	r.touch()
}

// CallEnded completes the cell of ctx.
func (r *Recorder) CallEnded(ctx context.Context, res *executor.Result) {
	ref, ok := ctx.Value(cellKey{}).(cellRef)
	if !ok {
		return
	}
	var out strings.Builder
	for _, o := range []executor.Output{res.Stdout, res.Stderr} {
		for _, l := range o.Lines() {
			out.WriteString(l)
			out.WriteByte('\n')
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ref.c.Status = res.Status
	ref.c.DurationMS = time.Since(ref.c.Started).Milliseconds()
	ref.c.Output = r.cut(out.String())
	ref.c.Error = r.cut(res.Error)
	ref.c.Files = append([]executor.File(nil), res.Files...)
	ref.s.LastActive = time.Now()
	r.touch()
}

// prune drops the least recently active sessions beyond the cap; r.mu is
// held.
func (r *Recorder) prune() {
	if len(r.sessions) <= r.opts.MaxSessions {
		return
	}
	keys := make([]sessionKey, 0, len(r.sessions))
	for k := range r.sessions {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return r.sessions[keys[i]].LastActive.Before(r.sessions[keys[j]].LastActive) })
	for _, k := range keys[:len(keys)-r.opts.MaxSessions] {
		delete(r.sessions, k)
	}
}

// Middleware records each nested tool call under the cell that made it. It
// goes before the gate, so calls the policy refuses are recorded too.
func (r *Recorder) Middleware(next hostrpc.ToolCaller) hostrpc.ToolCaller {
	return func(ctx context.Context, tc *hostrpc.ToolCall) (any, error) {
		ref, ok := ctx.Value(cellKey{}).(cellRef)
		if !ok {
			return next(ctx, tc)
		}
		args, _ := jsonv2.Marshal(tc.Arguments, jsonv2.Deterministic(true))
		c := &Call{ID: newID(), Server: tc.Server, Tool: tc.Tool, Arguments: r.cut(string(args)), Started: time.Now(), Outcome: "running"}
		r.mu.Lock()
		if len(ref.c.Calls) < r.opts.MaxCalls {
			ref.c.Calls = append(ref.c.Calls, c)
		}
		r.touch()
		r.mu.Unlock()
		res, err := next(context.WithValue(ctx, callKey{}, c), tc)
		r.mu.Lock()
		defer r.mu.Unlock()
		c.DurationMS = time.Since(c.Started).Milliseconds()
		c.Outcome = "ok"
		if err != nil {
			c.Outcome, c.Error = "error", r.cut(err.Error())
			var he *hostrpc.Error
			if errors.As(err, &he) && (he.Kind == "denied" || he.Kind == "limit") {
				c.Outcome = he.Kind
			}
		}
		r.touch()
		return res, err
	}
}

// Decided notes the policy's decision on the call of ctx (gate.Options.Decided).
func (r *Recorder) Decided(ctx context.Context, d policy.Decision) {
	c, ok := ctx.Value(callKey{}).(*Call)
	if !ok {
		return
	}
	r.mu.Lock()
	c.Decision, c.Rule = d.Effect.String(), d.Rule.Label
	r.touch()
	r.mu.Unlock()
}

var _ approval.Board = (*Recorder)(nil)

// Post shows an ask until withdraw is called; Answer replies to it.
func (r *Recorder) Post(ctx context.Context, req approval.Request) (<-chan approval.Reply, func()) {
	p := &pendingAsk{owner: req.Owner, replies: make(chan approval.Reply, 1), Approval: Approval{
		ID: newID(), Principal: req.Principal, Session: req.Session, Server: req.Server, Tool: req.Tool, Action: req.Action,
		Arguments: r.cut(string(req.Arguments)), Reason: req.Reason, Rule: req.Rule, Asked: time.Now(),
	}}
	r.mu.Lock()
	if s := r.sessions[sessionKey{req.Owner, req.Session, ""}]; s != nil {
		p.SessionID = s.ID
	}
	r.pending[p.ID] = p
	r.touch()
	r.mu.Unlock()
	return p.replies, func() {
		r.mu.Lock()
		delete(r.pending, p.ID)
		r.touch()
		r.mu.Unlock()
	}
}

// ErrNotFound is returned for an approval or session that is not there (or
// not visible to the one asking).
var ErrNotFound = errors.New("not found")

// Answer replies to a pending ask that see allows; the first answer wins.
func (r *Recorder) Answer(id string, see func(principal string) bool, reply approval.Reply) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending[id]
	if p == nil || !see(p.Principal) {
		return ErrNotFound
	}
	delete(r.pending, id)
	p.replies <- reply
	r.touch()
	return nil
}

// Session returns the owner and name of a live session that see allows.
func (r *Recorder) Session(id string, see func(principal string) bool) (owner, name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, s := range r.sessions {
		if s.ID == id && k.gen == "" && see(s.Principal) {
			return k.owner, k.name, nil
		}
	}
	return "", "", ErrNotFound
}

// Owner returns the executor owner of a session (for joining with the
// executor's list of live sessions).
func (s *Session) Owner() string { return s.owner }

// View returns a copy of what see allows, sessions most recently active
// first.
func (r *Recorder) View(see func(principal string) bool) View {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := View{Version: r.version, Sessions: []*Session{}, Approvals: []*Approval{}}
	for _, s := range r.sessions {
		if !see(s.Principal) {
			continue
		}
		cp := *s
		cp.Cells = make([]*Cell, len(s.Cells))
		for i, c := range s.Cells {
			cc := *c
			cc.Calls = make([]*Call, len(c.Calls))
			for j, call := range c.Calls {
				x := *call
				cc.Calls[j] = &x
			}
			cp.Cells[i] = &cc
		}
		v.Sessions = append(v.Sessions, &cp)
	}
	sort.Slice(v.Sessions, func(i, j int) bool { return v.Sessions[i].LastActive.After(v.Sessions[j].LastActive) })
	for _, p := range r.pending {
		if see(p.Principal) {
			a := p.Approval
			v.Approvals = append(v.Approvals, &a)
		}
	}
	sort.Slice(v.Approvals, func(i, j int) bool { return v.Approvals[i].Asked.Before(v.Approvals[j].Asked) })
	return v
}

// cut bounds a text kept for display.
func (r *Recorder) cut(s string) string {
	if len(s) <= r.opts.Preview {
		return s
	}
	n := r.opts.Preview
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
