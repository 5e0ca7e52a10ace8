package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// OAuth configures the resource-server mode: clients present JWT access
// tokens from an authorization server, which codemode verifies itself
// (signature against the issuer's published keys, issuer, audience,
// expiry, scopes) without talking to the issuer per request.
type OAuth struct {
	// Issuer is the authorization server's issuer URL (https, or http on
	// loopback for tests).
	Issuer string
	// Audience is the "aud" a token must carry: this server's canonical
	// URL (RFC 8707), the MCP endpoint's public URL by default.
	Audience string
	// Scopes must all be granted by a token.
	Scopes []string
}

// asymmetricAlgs are the signature algorithms accepted. Never "none" or
// HMAC: a shared secret would let whoever knows it mint tokens.
var asymmetricAlgs = []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}

// oauthVerifier verifies JWT access tokens of one issuer.
type oauthVerifier struct {
	v      *oidc.IDTokenVerifier
	scopes []string
}

// newOAuthVerifier discovers the issuer's metadata (RFC 8414, then OpenID
// Connect discovery) to find its key set. The keys themselves are fetched
// on first use and again when a token names an unknown key (rotation).
func newOAuthVerifier(ctx context.Context, o OAuth, client *http.Client) (*oauthVerifier, error) {
	if o.Audience == "" {
		return nil, errors.New("oauth: an audience is required")
	}
	var meta *oauthex.AuthServerMeta
	var errs []error
	for _, u := range metadataURLs(o.Issuer) {
		m, err := oauthex.GetAuthServerMeta(ctx, u, o.Issuer, client)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u, err))
			continue
		}
		if m != nil && m.JWKSURI != "" {
			meta = m
			break
		}
	}
	if meta == nil {
		return nil, fmt.Errorf("oauth: no authorization server metadata with a jwks_uri for issuer %s: %w", o.Issuer, errors.Join(errs...))
	}
	keyCtx := oidc.ClientContext(context.WithoutCancel(ctx), client)
	keys := oidc.NewRemoteKeySet(keyCtx, meta.JWKSURI)
	v := oidc.NewVerifier(o.Issuer, keys, &oidc.Config{ClientID: o.Audience, SupportedSigningAlgs: asymmetricAlgs})
	return &oauthVerifier{v: v, scopes: o.Scopes}, nil
}

// metadataURLs are where RFC 8414 and OpenID Connect publish an issuer's
// metadata: the well-known path inserted before the issuer's path, then
// OpenID's appended form.
func metadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	path := strings.TrimSuffix(u.Path, "/")
	origin := u.Scheme + "://" + u.Host
	return []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + "/.well-known/openid-configuration" + path,
		origin + path + "/.well-known/openid-configuration",
	}
}

// accessClaims are the claims read from an access token besides those the
// verifier checks (RFC 9068 names scope; some issuers use scp).
type accessClaims struct {
	Scope    string   `json:"scope"`
	Scp      []string `json:"scp"`
	ClientID string   `json:"client_id"`
}

// verify checks a token and returns what the SDK's middleware needs. The
// user id carries the subject, so one subject cannot take over another's
// MCP session, and names the client in logs and per-client limits.
func (o *oauthVerifier) verify(ctx context.Context, raw string) (*auth.TokenInfo, error) {
	tok, err := o.v.Verify(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	var c accessClaims
	if err := tok.Claims(&c); err != nil {
		return nil, fmt.Errorf("%w: reading claims: %v", auth.ErrInvalidToken, err)
	}
	scopes := append(strings.Fields(c.Scope), c.Scp...)
	if tok.Subject == "" {
		return nil, fmt.Errorf("%w: no subject", auth.ErrInvalidToken)
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return nil, fmt.Errorf("%w: reading claims: %v", auth.ErrInvalidToken, err)
	}
	// The claims reach policy conditions (`claims.groups`, ...).
	return &auth.TokenInfo{UserID: "oauth:" + tok.Subject, Scopes: scopes, Expiration: tok.Expiry, Extra: map[string]any{"claims": claims}}, nil
}

// resourceMetadataPath is where RFC 9728 puts the metadata of the resource
// at endpoint path p.
func resourceMetadataPath(p string) string {
	return "/.well-known/oauth-protected-resource" + strings.TrimSuffix(p, "/")
}

// bearerVerifier accepts the static tokens and, when configured, OAuth
// access tokens. Static tokens are granted the required scopes: whoever
// holds one was given it by the operator.
func bearerVerifier(tokens *Tokens, oauth *oauthVerifier) auth.TokenVerifier {
	return func(ctx context.Context, token string, req *http.Request) (*auth.TokenInfo, error) {
		if tokens != nil {
			if name := tokens.Lookup(token); name != "" {
				ti := &auth.TokenInfo{UserID: name, Expiration: time.Now().Add(24 * time.Hour)}
				if oauth != nil {
					ti.Scopes = oauth.scopes
				}
				return ti, nil
			}
		}
		if oauth != nil && strings.Count(token, ".") == 2 {
			return oauth.verify(ctx, token)
		}
		return nil, fmt.Errorf("%w: unknown bearer token", auth.ErrInvalidToken)
	}
}
