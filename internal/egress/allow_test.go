package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParsePattern(t *testing.T) {
	tests := []struct{ in, err string }{
		{"example.com", ""}, {"Example.COM.", ""}, {"example.com:8443", ""}, {"example.com:*", ""},
		{"*.example.com", ""}, {"10.0.0.0/8", ""}, {"10.0.0.0/8:5432", ""}, {"[fd00::/8]:443", ""},
		{"::1", ""}, {"[::1]:8080", ""}, {"127.0.0.1:3000", ""},
		{"", "empty"}, {"example.com:0", "port"}, {"example.com:65536", "port"}, {"example.com:08", "port"},
		{"2130706433", "non-standard form"}, {"0177.0.0.1", "non-standard form"}, {"0x7f.1", "non-standard form"},
		{"[::1", "missing ]"}, {"[::1]x", "expected :port"}, {"fe80::1%eth0", "zones"},
		{"exämple.com", "xn--"}, {"a..b", "empty or overlong label"}, {"10.0.0.0/33", "CIDR"},
		{"::ffff:10.0.0.0/104", "IPv4 form"}, {"host:", "empty port"},
	}
	for _, tc := range tests {
		_, err := ParsePattern(tc.in)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one mentioning %q", tc.in, err, tc.err)
		}
	}
}

func TestListAllows(t *testing.T) {
	l, err := ParseList([]string{"api.example.com", "*.data.example.org:8443", "pypi.test:*", "10.1.0.0/16:5432", "::1", "[2001:4860::1]:8080"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		port int
		want bool
	}{
		{"api.example.com", 443, true}, {"API.Example.com.", 80, true}, {"api.example.com", 8080, false},
		{"x.api.example.com", 443, false}, {"b.data.example.org", 8443, true}, {"data.example.org", 8443, false},
		{"a.b.data.example.org", 8443, true}, {"b.data.example.org", 443, false}, {"pypi.test", 1, true},
		{"10.1.2.3", 5432, true}, {"10.2.0.1", 5432, false}, {"10.1.2.3", 443, false},
		{"[::1]", 443, true}, {"::1", 80, true}, {"::ffff:10.1.0.1", 5432, true},
		{"2001:4860::1", 8080, true}, {"2001:4860::1", 443, false},
		{"example.com", 443, false}, {"10.1.2.3.nip.io", 5432, false},
	}
	for _, tc := range tests {
		target, err := ParseTarget(tc.host, tc.port)
		if err != nil {
			t.Errorf("%s:%d: %v", tc.host, tc.port, err)
			continue
		}
		if got := l.Allows(target); got != tc.want {
			t.Errorf("Allows(%s:%d) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
}

func TestAddrAllowed(t *testing.T) {
	l, _ := ParseList([]string{"example.com", "127.0.0.1:8080", "10.0.0.0/8"})
	tests := []struct {
		addr string
		port int
		want bool
	}{
		{"93.184.216.34", 443, true}, {"2606:2800:220:1::1", 443, true},
		{"127.0.0.1", 8080, true}, {"127.0.0.1", 80, false}, {"127.0.0.2", 8080, false}, {"::1", 8080, false},
		{"10.9.9.9", 443, true}, {"10.9.9.9", 22, false}, {"::ffff:127.0.0.1", 8080, true},
		{"169.254.169.254", 80, false}, {"fd00:ec2::254", 80, false}, {"100.100.100.200", 80, false},
		{"192.168.1.1", 443, false}, {"0.0.0.0", 443, false}, {"::", 443, false}, {"fe80::1", 443, false},
		{"64:ff9b::7f00:1", 443, false}, {"2002:7f00:1::", 443, false}, {"224.0.0.1", 443, false}, {"255.255.255.255", 443, false},
	}
	for _, tc := range tests {
		if got := l.AddrAllowed(netip.MustParseAddr(tc.addr), tc.port); got != tc.want {
			t.Errorf("AddrAllowed(%s, %d) = %v, want %v", tc.addr, tc.port, got, tc.want)
		}
	}
}

// FuzzParsePattern: no input panics, an accepted pattern keeps its text,
// and a target that parses is either a name or an address, never both;
// a name target is never a non-standard address form.
func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"example.com", "*.a.b:8080", "10.0.0.0/8:*", "[::1]:80", "0x7f.1", "2130706433", "[fe80::1%lo]:1", "ÿ.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := ParsePattern(s); err == nil {
			if p.String() != s {
				t.Fatalf("pattern %q became %q", s, p.String())
			}
			if p.prefix.IsValid() == (p.name != "") {
				t.Fatalf("pattern %q is both or neither a name and a block", s)
			}
		}
		if tg, err := ParseTarget(s, 443); err == nil {
			if tg.Addr.IsValid() == (tg.Name != "") {
				t.Fatalf("target %q is both or neither a name and an address", s)
			}
			if tg.Name != "" {
				if _, err := netip.ParseAddr(tg.Name); err == nil {
					t.Fatalf("target %q kept an address as a name", s)
				}
				last := tg.Name[strings.LastIndexByte(tg.Name, '.')+1:]
				if strings.Trim(last, "0123456789") == "" {
					t.Fatalf("target %q has a numeric last label", s)
				}
			}
		}
	})
}
