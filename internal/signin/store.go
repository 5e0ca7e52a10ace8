// Package signin signs codemode in to remote MCP servers that require
// OAuth, per the MCP authorization specification. The discovery, client
// registration, PKCE and token exchange are the Go SDK's
// (auth.AuthorizationCodeHandler, oauthex); this package adds what a
// command-line client needs around them: a loopback redirect and a browser
// for "codemode auth login", tokens kept per server in files of mode 0600
// under the state directory, refresh before expiry (with the RFC 8707
// resource parameter) with the tokens in the OS keyring where there is one,
// and, while serving, an OAuth handler that uses the
// stored tokens and turns a server's 401 or insufficient_scope 403 into a
// RequiredError naming the command that signs in.
package signin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// Record is what a sign-in leaves for later use: the token and what
// refreshing it takes.
type Record struct {
	URL          string           `json:"url"`      // the server's URL when it was signed in to
	Resource     string           `json:"resource"` // the RFC 8707 resource the token is for
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	AuthURL      string           `json:"auth_url"`
	TokenURL     string           `json:"token_url"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style"`
	Scopes       []string         `json:"scopes,omitempty"`
	Token        *oauth2.Token    `json:"token"`
	// NeedScopes are scopes a server asked for (insufficient_scope) since
	// the sign-in; the next sign-in requests them too.
	NeedScopes []string  `json:"need_scopes,omitempty"`
	SignedIn   time.Time `json:"signed_in"`
	// InKeyring says the token and client secret are in the OS keyring;
	// the file keeps the token's type and expiry only.
	InKeyring bool `json:"in_keyring,omitempty"`
}

// secretPart is what the keyring keeps of a record.
type secretPart struct {
	Token        *oauth2.Token `json:"token"`
	ClientSecret string        `json:"client_secret,omitempty"`
}

func (r *Record) config() *oauth2.Config {
	return &oauth2.Config{ClientID: r.ClientID, ClientSecret: r.ClientSecret, Scopes: r.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: r.AuthURL, TokenURL: r.TokenURL, AuthStyle: r.AuthStyle}}
}

// Store keeps one record per server in a directory of its own (mode 0700,
// files 0600), with the secrets in the OS keyring when there is one.
type Store struct {
	dir     string
	secrets Secrets
}

// NewStore returns the store in dir (created on first save); secrets (nil
// for none) keeps the tokens where it accepts them.
func NewStore(dir string, secrets Secrets) *Store { return &Store{dir: dir, secrets: secrets} }

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func (s *Store) path(server string) string {
	// Server names come from configuration files: keep them to one safe
	// path element.
	name := unsafeName.ReplaceAllString(server, "_")
	if name == "" || name == "." || name == ".." {
		name = "_" + name
	}
	return filepath.Join(s.dir, name+".json")
}

// Load returns the server's record, or nil when it has none.
func (s *Store) Load(server string) (*Record, error) {
	data, err := os.ReadFile(s.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("signin: load %s: %w", server, err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("signin: load %s: %w", server, err)
	}
	if r.InKeyring {
		if s.secrets == nil {
			return nil, fmt.Errorf("signin: load %s: the tokens are in an OS keyring that is not available now", server)
		}
		blob, err := s.secrets.Get(server)
		if err != nil {
			return nil, fmt.Errorf("signin: load %s from the keyring: %w", server, err)
		}
		var sp secretPart
		if err := json.Unmarshal([]byte(blob), &sp); err != nil {
			return nil, fmt.Errorf("signin: load %s from the keyring: %w", server, err)
		}
		r.Token, r.ClientSecret, r.InKeyring = sp.Token, sp.ClientSecret, false
	}
	return &r, nil
}

// modTime is when the server's record last changed (zero when none).
func (s *Store) modTime(server string) time.Time {
	fi, err := os.Stat(s.path(server))
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// Save writes the server's record atomically, readable by the user only.
func (s *Store) Save(server string, r *Record) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("signin: save %s: %w", server, err)
	}
	if s.secrets != nil && r.Token != nil {
		blob, err := json.Marshal(secretPart{Token: r.Token, ClientSecret: r.ClientSecret})
		if err != nil {
			return fmt.Errorf("signin: save %s: %w", server, err)
		}
		// Where the keyring refuses (locked, entry too big), the file
		// keeps everything, readable by the user only.
		if s.secrets.Set(server, string(blob)) == nil {
			kept := *r
			kept.Token = &oauth2.Token{TokenType: r.Token.TokenType, Expiry: r.Token.Expiry}
			kept.ClientSecret, kept.InKeyring = "", true
			r = &kept
		}
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("signin: save %s: %w", server, err)
	}
	f, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("signin: save %s: %w", server, err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("signin: save %s: %w", server, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("signin: save %s: %w", server, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("signin: save %s: %w", server, err)
	}
	if err := os.Rename(f.Name(), s.path(server)); err != nil {
		return fmt.Errorf("signin: save %s: %w", server, err)
	}
	return nil
}

// Delete removes the server's record; it reports whether there was one.
func (s *Store) Delete(server string) (bool, error) {
	var r Record
	if data, err := os.ReadFile(s.path(server)); err == nil && json.Unmarshal(data, &r) == nil && r.InKeyring && s.secrets != nil {
		if err := s.secrets.Delete(server); err != nil {
			return false, fmt.Errorf("signin: delete %s from the keyring: %w", server, err)
		}
	}
	err := os.Remove(s.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("signin: delete %s: %w", server, err)
	}
	return true, nil
}

// Status is a server's sign-in state, for "codemode auth status".
type Status struct {
	Server   string    `json:"server"`
	SignedIn bool      `json:"signed_in"`
	Expiry   time.Time `json:"expiry,omitzero"` // of the access token; zero when it does not expire or none
	Refresh  bool      `json:"refreshable"`     // a refresh token is kept
	Scopes   []string  `json:"scopes,omitempty"`
	Need     []string  `json:"need_scopes,omitempty"`
}

// Describe returns the state of each server.
func (s *Store) Describe(servers []string) ([]Status, error) {
	servers = append([]string(nil), servers...)
	sort.Strings(servers)
	out := make([]Status, 0, len(servers))
	for _, name := range servers {
		r, err := s.Load(name)
		if err != nil {
			return nil, err
		}
		st := Status{Server: name}
		if r != nil && r.Token != nil {
			st.SignedIn = true
			st.Expiry = r.Token.Expiry
			st.Refresh = r.Token.RefreshToken != ""
			st.Scopes, st.Need = r.Scopes, r.NeedScopes
		}
		out = append(out, st)
	}
	return out, nil
}

// String is one line of "codemode auth status".
func (st Status) String() string {
	switch {
	case !st.SignedIn:
		return st.Server + ": not signed in"
	}
	var b strings.Builder
	b.WriteString(st.Server + ": signed in")
	switch {
	case st.Expiry.IsZero():
	case time.Until(st.Expiry) > 0:
		fmt.Fprintf(&b, ", token expires %s", st.Expiry.Local().Format(time.RFC3339))
	case st.Refresh:
		b.WriteString(", token expired (refreshed on next use)")
	default:
		b.WriteString(", token expired: sign in again")
	}
	if len(st.Scopes) > 0 {
		fmt.Fprintf(&b, ", scopes %s", strings.Join(st.Scopes, " "))
	}
	if len(st.Need) > 0 {
		fmt.Fprintf(&b, "; the server asked for %s: sign in again", strings.Join(st.Need, " "))
	}
	return b.String()
}
