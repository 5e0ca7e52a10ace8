package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// On protocol 2026-07-28 and later a server may not send requests (such as
// elicitation/create) while it serves one (SEP-2322): it returns the
// questions as InputRequests and the client calls again with the answers.
// run_python's code keeps running meanwhile, blocked in the question, so a
// call that needs input leaves a pendingRun behind, found again by its
// RequestState.

// pendingRun is a run_python call whose code is running while the client
// answers its questions.
type pendingRun struct {
	principal string
	state     string
	questions chan question            // from the running code
	done      chan *mcp.CallToolResult // the final result, once
	cancel    context.CancelFunc       // stops the run when its client gives up

	mu      sync.Mutex
	waiting map[string]chan *mcp.ElicitResult // input request id -> its asker
}

type question struct {
	params *mcp.ElicitParams
	answer chan *mcp.ElicitResult
}

// elicit is the run's way to ask its user: it hands the question to
// whichever request of the client is being served, and waits.
func (pr *pendingRun) elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	q := question{params: params, answer: make(chan *mcp.ElicitResult, 1)}
	select {
	case pr.questions <- q:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case res := <-q.answer:
		if res == nil {
			return nil, errors.New("the client sent no answer for this question")
		}
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pendingRuns holds the runs waiting for their client to come back.
type pendingRuns struct {
	mu   sync.Mutex
	runs map[string]*pendingRun
}

func (p *pendingRuns) add(pr *pendingRun) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runs == nil {
		p.runs = map[string]*pendingRun{}
	}
	p.runs[pr.state] = pr
}

func (p *pendingRuns) get(state, principal string) (*pendingRun, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr := p.runs[state]
	// Another principal's state is as unknown as a made-up one.
	if pr == nil || pr.principal != principal {
		return nil, errors.New("unknown or finished requestState: this run_python call has ended; call run_python again")
	}
	return pr, nil
}

func (p *pendingRuns) remove(state string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.runs, state)
}

// startPending runs run (the whole run_python call) in the background and
// waits for its first event.
func (s *Server) startPending(ctx context.Context, principal string, run func(ctx context.Context, elicit func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)) *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	// The run outlives this request when it needs input; its own timeouts
	// bound it, and cancel stops it when the client gives up.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	pr := &pendingRun{principal: principal, state: newState(), questions: make(chan question),
		done: make(chan *mcp.CallToolResult, 1), cancel: cancel, waiting: map[string]chan *mcp.ElicitResult{}}
	s.pending.add(pr)
	go func() {
		defer cancel()
		pr.done <- run(runCtx, pr.elicit)
		// Nobody may come back for the result (a client that gave up):
		// drop it after the longest a client could take to answer.
		time.AfterFunc(s.opts.InputWait, func() { s.pending.remove(pr.state) })
	}()
	return s.awaitPending(ctx, pr)
}

// resumePending delivers the client's answers and waits for the run's next
// question or its result.
func (s *Server) resumePending(ctx context.Context, principal string, params *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	pr, err := s.pending.get(params.RequestState, principal)
	if err != nil {
		return nil, err
	}
	pr.mu.Lock()
	for id, resp := range params.InputResponses {
		ch := pr.waiting[id]
		delete(pr.waiting, id)
		if ch == nil {
			continue
		}
		res, _ := resp.(*mcp.ElicitResult)
		ch <- res
	}
	pr.mu.Unlock()
	return s.awaitPending(ctx, pr)
}

// awaitPending returns the run's result, or its open questions as an
// input-required result.
func (s *Server) awaitPending(ctx context.Context, pr *pendingRun) (*mcp.CallToolResult, error) {
	select {
	case res := <-pr.done:
		s.pending.remove(pr.state)
		return res, nil
	case q := <-pr.questions:
		reqs := mcp.InputRequestMap{}
		pr.mu.Lock()
		add := func(q question) {
			id := "approval-" + newState()[:12]
			pr.waiting[id] = q.answer
			reqs[id] = q.params
		}
		add(q)
		// Questions asked together (calls awaited together) go out together.
		for more := true; more; {
			select {
			case q := <-pr.questions:
				add(q)
			default:
				more = false
			}
		}
		pr.mu.Unlock()
		return &mcp.CallToolResult{InputRequests: reqs, RequestState: pr.state}, nil
	case <-ctx.Done():
		pr.cancel() // the client gave up on this call
		s.pending.remove(pr.state)
		return nil, ctx.Err()
	}
}

func newState() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
