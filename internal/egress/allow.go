package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// A Pattern is one entry of the allow-list.
type Pattern struct {
	raw      string
	name     string       // an exact host name, or for a wildcard the suffix after "*."
	wildcard bool         // "*.example.com": any name under example.com, not example.com itself
	prefix   netip.Prefix // set for the IP and CIDR forms
	port     int          // 0: 80 and 443; anyPort: every port; else that port
}

const anyPort = -1

// String returns the pattern as written.
func (p Pattern) String() string { return p.raw }

// ParsePattern reads one allow-list entry: host, host:port, host:*,
// *.example.com[:port], an IP address ([v6] with a port), or a CIDR
// (10.0.0.0/8:5432, [fd00::/8]:443). Without a port, 80 and 443 are allowed.
func ParsePattern(s string) (Pattern, error) {
	p := Pattern{raw: s}
	host, port, err := splitPattern(strings.TrimSpace(s))
	if err != nil {
		return Pattern{}, fmt.Errorf("egress pattern %q: %w", s, err)
	}
	switch port {
	case "":
	case "*":
		p.port = anyPort
	default:
		if p.port, err = parsePort(port); err != nil {
			return Pattern{}, fmt.Errorf("egress pattern %q: %w", s, err)
		}
	}
	if strings.Contains(host, "/") {
		pf, err := netip.ParsePrefix(host)
		if err != nil || pf.Addr().Zone() != "" {
			return Pattern{}, fmt.Errorf("egress pattern %q: not a CIDR block", s)
		}
		if pf.Addr().Is4In6() {
			return Pattern{}, fmt.Errorf("egress pattern %q: write IPv4-mapped blocks in IPv4 form", s)
		}
		p.prefix = pf.Masked()
		return p, nil
	}
	if a, ok, err := parseIP(host); err != nil {
		return Pattern{}, fmt.Errorf("egress pattern %q: %w", s, err)
	} else if ok {
		p.prefix = netip.PrefixFrom(a, a.BitLen())
		return p, nil
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		p.wildcard, host = true, rest
	}
	if p.name, err = normalizeName(host); err != nil {
		return Pattern{}, fmt.Errorf("egress pattern %q: %w", s, err)
	}
	return p, nil
}

// splitPattern separates a pattern's host (or block) from its port.
func splitPattern(s string) (host, port string, err error) {
	if s == "" {
		return "", "", errors.New("empty")
	}
	if rest, ok := strings.CutPrefix(s, "["); ok {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return "", "", errors.New("missing ]")
		}
		host, rest = rest[:end], rest[end+1:]
		if rest == "" {
			return host, "", nil
		}
		port, ok = strings.CutPrefix(rest, ":")
		if !ok || port == "" {
			return "", "", errors.New("expected :port after ]")
		}
		return host, port, nil
	}
	if strings.Count(s, ":") > 1 { // a bare IPv6 address or block, no port
		return s, "", nil
	}
	if h, p, ok := strings.Cut(s, ":"); ok {
		if p == "" {
			return "", "", errors.New("empty port")
		}
		return h, p, nil
	}
	return s, "", nil
}

func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != s {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return n, nil
}

// parseIP reads an IP address in its one standard form. ok is false for a
// host name; a name that only looks like an address in another notation
// (2130706433, 0x7f.1, 0177.0.0.1) is an error: resolvers and clients
// disagree on what those mean.
func parseIP(host string) (netip.Addr, bool, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return netip.Addr{}, false, errors.New("IPv6 zones are not allowed")
		}
		return a.Unmap(), true, nil
	}
	if strings.Contains(host, ":") {
		return netip.Addr{}, false, fmt.Errorf("%q is not an IP address", host)
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	last := strings.ToLower(labels[len(labels)-1])
	numeric := last != "" && strings.Trim(last, "0123456789") == ""
	if numeric || (strings.HasPrefix(last, "0x") && len(labels) <= 4) {
		return netip.Addr{}, false, fmt.Errorf("%q looks like an IP address in a non-standard form; write it as a dotted quad or an IPv6 address", host)
	}
	return netip.Addr{}, false, nil
}

// normalizeName lowercases a host name and checks it is a plain ASCII DNS
// name (an internationalized name must be given in its xn-- form).
func normalizeName(s string) (string, error) {
	s = strings.TrimSuffix(strings.ToLower(s), ".")
	if s == "" || len(s) > 253 {
		return "", errors.New("host name is empty or too long")
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return "", fmt.Errorf("host name %q has an empty or overlong label", s)
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("host name %q has the character %q (only letters, digits, - and _ are allowed; write international names in xn-- form)", s, c)
			}
		}
	}
	return s, nil
}

func (p Pattern) portMatches(port int) bool {
	switch p.port {
	case anyPort:
		return true
	case 0:
		return port == 80 || port == 443
	}
	return p.port == port
}

// A Target is where a request goes: a normalized host name or IP address,
// and a port.
type Target struct {
	Name string     // lowercase host name; "" for an IP address
	Addr netip.Addr // the IP address of an IP literal
	Port int
}

// ParseTarget normalizes a request's host (a name, an IPv4 address, or an
// IPv6 address with or without brackets) and port. Ambiguous address forms,
// zones and non-ASCII names are refused.
func ParseTarget(host string, port int) (Target, error) {
	if port < 1 || port > 65535 {
		return Target{}, fmt.Errorf("port %d out of range", port)
	}
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, ok, err := parseIP(h); err != nil {
		return Target{}, err
	} else if ok {
		return Target{Addr: a, Port: port}, nil
	}
	name, err := normalizeName(h)
	if err != nil {
		return Target{}, err
	}
	return Target{Name: name, Port: port}, nil
}

// Host is the target's host as it appears in logs, policy and metrics.
func (t Target) Host() string {
	if t.Name != "" {
		return t.Name
	}
	return t.Addr.String()
}

// HostPort is host:port, bracketing IPv6 addresses.
func (t Target) HostPort() string {
	if t.Name != "" {
		return t.Name + ":" + strconv.Itoa(t.Port)
	}
	return netip.AddrPortFrom(t.Addr, uint16(t.Port)).String()
}

// List is the allow-list. The zero List allows nothing.
type List struct {
	patterns []Pattern
}

// ParseList reads the entries; every bad entry is reported.
func ParseList(entries []string) (*List, error) {
	l := &List{}
	var errs []error
	for _, e := range entries {
		p, err := ParsePattern(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		l.patterns = append(l.patterns, p)
	}
	return l, errors.Join(errs...)
}

// Empty reports whether nothing is allowed (the sandbox gets no proxy).
func (l *List) Empty() bool { return l == nil || len(l.patterns) == 0 }

// Patterns are the entries as written.
func (l *List) Patterns() []string {
	out := make([]string, len(l.patterns))
	for i, p := range l.patterns {
		out[i] = p.raw
	}
	return out
}

// Allows reports whether some pattern names t: an IP target must be in an
// IP or CIDR pattern, a name must equal a name pattern or fall under a
// wildcard.
func (l *List) Allows(t Target) bool {
	_, ok := l.Match(t)
	return ok
}

// Match returns the first entry that allows t, as written.
func (l *List) Match(t Target) (string, bool) {
	if l == nil {
		return "", false
	}
	for _, p := range l.patterns {
		if !p.portMatches(t.Port) {
			continue
		}
		switch {
		case t.Name == "":
			if p.prefix.IsValid() && p.prefix.Contains(t.Addr) {
				return p.raw, true
			}
		case p.prefix.IsValid():
		case p.wildcard:
			if strings.HasSuffix(t.Name, "."+p.name) {
				return p.raw, true
			}
		case p.name == t.Name:
			return p.raw, true
		}
	}
	return "", false
}

// AddrAllowed reports whether a connection may go to a, an address t
// resolved to (or t's own address): a public address may, and any other
// (loopback, private, link-local, metadata, ...) only when an IP or CIDR
// pattern names it, so that no public name leads inside.
func (l *List) AddrAllowed(a netip.Addr, port int) bool {
	a = a.Unmap()
	if Public(a) {
		return true
	}
	for _, p := range l.patterns {
		if p.prefix.IsValid() && p.prefix.Contains(a) && p.portMatches(port) {
			return true
		}
	}
	return false
}

// notPublic are blocks that are not the open internet, besides those
// netip's predicates name.
var notPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network"
		"100.64.0.0/10",   // carrier-grade NAT
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"240.0.0.0/4",     // reserved, broadcast
		"64:ff9b::/96",    // NAT64: embeds any IPv4 address
		"64:ff9b:1::/48",  // local NAT64
		"100::/64",        // discard
		"2001::/23",       // IETF protocol assignments (Teredo among them)
		"2001:db8::/32",   // documentation
		"2002::/16",       // 6to4: embeds any IPv4 address
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// Public reports whether a is an ordinary unicast address of the internet.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || !a.IsGlobalUnicast() {
		return false
	}
	for _, p := range notPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}
