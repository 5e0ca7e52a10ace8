package signin

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Transport gives a transport that has no OAuth handler (the SDK's SSE
// client) what Handler gives the streamable one: the stored token on every
// request, and a RequiredError for a 401 or an insufficient_scope 403.
type Transport struct {
	Base    http.RoundTripper // nil for http.DefaultTransport
	Handler *Handler
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	ts, err := t.Handler.TokenSource(req.Context())
	if err != nil {
		return nil, err
	}
	if ts != nil {
		if tok, err := ts.Token(); err == nil {
			req = req.Clone(req.Context())
			tok.SetAuthHeader(req)
		}
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
	case http.StatusForbidden:
		challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		if code, _ := bearerChallenge(challenges); code != "insufficient_scope" {
			return resp, nil
		}
	default:
		return resp, nil
	}
	err = t.Handler.Authorize(req.Context(), req, resp)
	if err == nil {
		err = &RequiredError{Server: t.Handler.server, Reason: "the server refused the request"}
	}
	return nil, err
}
