// Package peer carries the MCP client behind a run_python call down to the
// layers that need it while the call's code runs: the principal it acts for,
// its name, and a way to ask its user a question (elicitation). mcpserver
// attaches it to the call's context; the executor hands that context's
// values to every request the code makes.
package peer

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Peer is the client of one run_python call.
type Peer struct {
	Principal  string         // token name or OAuth subject; "default" over stdio
	ClientName string         // the client's self-reported name (initialize clientInfo)
	Claims     map[string]any // the OAuth access token's claims, when it is a JWT
	// Elicit asks the client's user; nil when the client cannot be asked
	// (it did not declare form elicitation).
	Elicit func(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// ElicitURL is whether Elicit may ask in URL mode (the client declared it).
	ElicitURL bool
	// ElicitComplete tells the client that the out-of-band interaction of
	// a URL-mode question has completed; nil when it cannot be told.
	ElicitComplete func(ctx context.Context, elicitationID string)
	// Progress reports progress of the run_python call to its client; nil
	// when the client asked for none. Downstream servers' progress of
	// nested calls arrives here.
	Progress func(progress, total float64, message string)
}

type key struct{}

// With returns ctx carrying p.
func With(ctx context.Context, p *Peer) context.Context { return context.WithValue(ctx, key{}, p) }

// From returns the peer ctx carries, or nil.
func From(ctx context.Context) *Peer {
	p, _ := ctx.Value(key{}).(*Peer)
	return p
}

// FromSession describes the client of ss acting for principal.
func FromSession(ss *mcp.ServerSession, principal string) *Peer {
	p := &Peer{Principal: principal}
	if ss == nil {
		return p
	}
	ip := ss.InitializeParams()
	if ip != nil && ip.ClientInfo != nil {
		p.ClientName = ip.ClientInfo.Name
	}
	if canAsk, inline := Asking(ss); canAsk && !inline {
		p.Elicit = ss.Elicit
	}
	if ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil {
		p.ElicitURL = ip.Capabilities.Elicitation.URL != nil
	}
	if p.ElicitURL {
		p.ElicitComplete = func(ctx context.Context, id string) {
			ss.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: id})
		}
	}
	return p
}

// multiRoundTrip is the first protocol version where a server may not send
// requests while serving one; it returns them as InputRequests (SEP-2322).
const multiRoundTrip = "2026-07-28"

// Asking reports whether the client of ss can be asked a form question, and
// whether the question must travel inside the call's result (protocol
// 2026-07-28 and later) rather than as a request of its own.
func Asking(ss *mcp.ServerSession) (canAsk, inResult bool) {
	if ss == nil {
		return false, false
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return false, false
	}
	caps := ip.Capabilities.Elicitation
	// No sub-capability at all means form, for older clients.
	canAsk = caps.Form != nil || caps.URL == nil
	return canAsk, ip.ProtocolVersion >= multiRoundTrip
}
