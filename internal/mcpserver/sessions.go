package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"

	"github.com/codemode/codemode/internal/executor"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Who owns a session. MCP revision 2026-07-28 drops protocol sessions, so a
// run_python session cannot hang on a connection: it belongs to the
// principal and is addressed by name, from any connection, until reset,
// idle expiry or close. A principal's sessions live in its own namespace, so
// two principals using the same name reach different interpreters. Only a
// connection's default session (no `session` argument) stays the
// connection's, closed when it ends, as older clients expect; a request
// outside any connection (stateless HTTP) has no default to reach, so such a
// call starts a session under a handle codemode mints, which the result
// returns and the client passes back as `session`.

// target is the session a call addresses.
type target struct {
	owner, name string
	existing    bool // a handle: it must be live
	minted      bool // this call minted the handle
}

// lasting: a principal's session (a name or a handle), not a connection's,
// so it may outlive this replica where the backend allows.
func (t target) lasting() bool { return strings.HasPrefix(t.owner, principalPrefix) }

// handle matches the names codemode mints; nobody else may create one, so
// a handle that is not live is an error rather than a fresh session.
var handle = regexp.MustCompile(`^h-[0-9a-f]{32}$`)

func newHandle() string {
	var b [16]byte
	rand.Read(b[:])
	return "h-" + hex.EncodeToString(b[:])
}

// principalOwner is the executor owner of a principal's sessions;
// connection owners ("conn-N") cannot collide with it.
func principalOwner(principal string) string { return principalPrefix + principal }

const principalPrefix = "principal:"

// connectionless reports whether a request came outside any MCP session:
// streamable HTTP served statelessly (protocol 2026-07-28), whose SDK
// session lives for one request and has no id.
func connectionless(ss *mcp.ServerSession, extra *mcp.RequestExtra) bool {
	return ss != nil && ss.ID() == "" && extra != nil && extra.Header != nil
}

// target resolves the session a run_python call addresses.
func (s *Server) target(req *mcp.CallToolRequest, name, client string) target {
	switch {
	case name != "":
		return target{owner: principalOwner(client), name: name, existing: handle.MatchString(name)}
	case connectionless(req.Session, req.Extra):
		return target{owner: principalOwner(client), name: newHandle(), minted: true}
	default:
		return target{owner: s.connOwner(req.Session), name: executor.DefaultSession}
	}
}

// settleMinted tells the client the handle a call minted, or closes the
// session when the client went away before it could learn the handle
// (nobody could ever reach it again).
func (s *Server) settleMinted(ctx context.Context, t target, res *executor.Result) {
	if !t.minted || !s.opts.Executor.Live(t.owner, t.name) {
		return
	}
	if ctx.Err() != nil {
		s.opts.Executor.CloseSession(t.owner, t.name)
		return
	}
	res.Notes = append(res.Notes, "this call started session "+t.name+`; pass "session": "`+t.name+`" to keep its state`)
}

// connOwner returns the owner id of a client connection's default session,
// watching for the connection's end so that session can be closed.
func (s *Server) connOwner(ss *mcp.ServerSession) string {
	if ss == nil {
		return "local"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.owners[ss]; ok {
		return id
	}
	id := "conn-" + strconv.FormatUint(s.nextID.Add(1), 10)
	s.owners[ss] = id
	go func() {
		ss.Wait()
		s.mu.Lock()
		delete(s.owners, ss)
		s.mu.Unlock()
		s.log.Debug("client disconnected; closing its default session", "owner", id)
		s.opts.Executor.CloseOwner(id)
	}()
	return id
}
