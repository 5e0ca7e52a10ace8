package mcpserver

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// Tokens are the bearer tokens HTTP clients authenticate with. Only hashes
// are kept, and every comparison looks at every token, in constant time.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	name string
	hash [sha256.Size]byte
}

// LoadTokens reads tokens from a file ("name token" or "name:token" per
// line, # comments) and from a "name:token,name:token" list.
func LoadTokens(file, list string) (*Tokens, error) {
	t := &Tokens{}
	seen := map[string]bool{}
	add := func(name, token, where string) error {
		name, token = strings.TrimSpace(name), strings.TrimSpace(token)
		if name == "" || token == "" {
			return fmt.Errorf("%s: want name and token", where)
		}
		if len(token) < 16 {
			return fmt.Errorf("%s: token of %s is shorter than 16 characters", where, name)
		}
		if seen[name] {
			return fmt.Errorf("%s: token name %s used twice", where, name)
		}
		seen[name] = true
		t.entries = append(t.entries, tokenEntry{name: name, hash: sha256.Sum256([]byte(token))})
		return nil
	}
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("tokens file: %w", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			name, token, ok := strings.Cut(line, ":")
			if !ok || strings.ContainsAny(name, " \t") {
				fields := strings.Fields(line)
				if len(fields) != 2 {
					return nil, fmt.Errorf("%s:%d: want \"name token\"", file, n)
				}
				name, token = fields[0], fields[1]
			}
			if err := add(name, token, fmt.Sprintf("%s:%d", file, n)); err != nil {
				return nil, err
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("tokens file: %w", err)
		}
	}
	if list != "" {
		for i, item := range strings.Split(list, ",") {
			name, token, _ := strings.Cut(item, ":")
			if err := add(name, token, fmt.Sprintf("CODEMODE_TOKENS entry %d", i+1)); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// Len is the number of tokens.
func (t *Tokens) Len() int { return len(t.entries) }

// Lookup returns the name of the token, or "".
func (t *Tokens) Lookup(token string) string {
	h := sha256.Sum256([]byte(token))
	name := ""
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(h[:], e.hash[:]) == 1 {
			name = e.name
		}
	}
	return name
}

// IsLoopback reports whether a listen address only accepts local clients.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

var errNeedTokens = errors.New("refusing to serve a non-loopback address without bearer tokens")
