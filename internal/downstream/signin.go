package downstream

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/codemode/codemode/internal/peer"
	"github.com/codemode/codemode/internal/signin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// needsSignIn reports whether err is a server's demand for sign-in.
func needsSignIn(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == "auth_required"
}

// signInThroughClient signs in to the server while a call waits, when the
// client of the run_python call can show the user a URL (URL-mode
// elicitation) and the pool may sign in (Options.Login). It reports
// whether the call should be tried again. Calls that need the same sign-in
// wait for the one in progress rather than ask the user twice.
func (s *server) signInThroughClient(ctx context.Context) bool {
	who := peer.From(ctx)
	if s.pool.opts.Login == nil || who == nil || who.Elicit == nil || !who.ElicitURL {
		return false
	}
	s.mu.Lock()
	gen := s.signIns
	s.mu.Unlock()
	s.signInMu.Lock()
	defer s.signInMu.Unlock()
	s.mu.Lock()
	done := s.signIns != gen
	s.mu.Unlock()
	if done {
		return true // signed in by a call that asked first
	}
	id := rand.Text()
	open := func(ctx context.Context, url string) error {
		res, err := who.Elicit(ctx, &mcp.ElicitParams{Mode: "url", URL: url, ElicitationID: id,
			Message: fmt.Sprintf("codemode needs you to sign in to %s: open the link and approve.", s.cfg.Name)})
		switch {
		case err != nil:
			return fmt.Errorf("%w: %v", signin.ErrDeclined, err)
		case res.Action != "accept":
			return fmt.Errorf("%w (%s)", signin.ErrDeclined, res.Action)
		}
		return nil
	}
	if err := s.pool.opts.Login(ctx, s.cfg, open); err != nil {
		s.log.InfoContext(ctx, "sign-in through the client did not complete", "error", err)
		return false
	}
	if who.ElicitComplete != nil {
		who.ElicitComplete(ctx, id)
	}
	s.mu.Lock()
	s.signIns++
	s.mu.Unlock()
	s.log.InfoContext(ctx, "signed in through the client")
	return true
}
