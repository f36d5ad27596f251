package cidrfinalizer

import (
	"net/netip"
	"testing"
)

func TestPrefixContainsAddr(t *testing.T) {
	tests := []struct {
		p, a string
		want bool
	}{
		{"10.0.0.0/24", "10.0.0.1", true},
		{"10.0.0.0/24", "10.0.0.254", true},
		{"10.0.0.0/24", "10.0.0.0", false},   // network
		{"10.0.0.0/24", "10.0.0.255", false}, // IPv4 broadcast
		{"10.0.0.0/24", "10.0.1.1", false},
		{"10.0.0.77/24", "10.0.0.1", true},  // host bits ignored
		{"10.0.0.77/24", "10.0.0.0", false}, // network of the masked prefix
		{"10.0.0.1/32", "10.0.0.1", false},  // /32 holds nothing
		{"10.0.0.0/31", "10.0.0.0", false},  // /31: network
		{"10.0.0.0/31", "10.0.0.1", false},  // /31: broadcast
		{"10.0.0.0/30", "10.0.0.2", true},   // smallest useful IPv4 prefix
		{"0.0.0.0/0", "255.255.255.255", false},
		{"0.0.0.0/0", "255.255.255.254", true},
		{"2001:db8::/64", "2001:db8::1", true},
		{"2001:db8::/64", "2001:db8::", false},                   // network
		{"2001:db8::/64", "2001:db8::ffff:ffff:ffff:ffff", true}, // IPv6 all-ones is contained
		{"2001:db8::/127", "2001:db8::1", true},
		{"2001:db8::1/128", "2001:db8::1", false},
		{"::/0", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
		{"::/0", "::", false},
		{"10.0.0.0/8", "::ffff:10.0.0.1", false},               // 4in6 address is IPv6
		{"::ffff:10.0.0.0/104", "10.0.0.1", false},             // IPv4 address not in an IPv6 prefix
		{"::ffff:10.0.0.0/104", "::ffff:10.0.0.1", true},       // 4in6 in a 4in6 prefix
		{"::ffff:10.0.0.0/104", "::ffff:10.255.255.255", true}, // IPv6 rules: all-ones contained
		{"2001:db8::/64", "2001:db8::1%eth0", false},           // zones are never contained
		{"10.0.0.0/8", "", false},                              // invalid address
	}
	for _, tc := range tests {
		p := netip.MustParsePrefix(tc.p)
		var a netip.Addr
		if tc.a != "" {
			a = netip.MustParseAddr(tc.a)
		}
		if got := PrefixContainsAddr(p, a); got != tc.want {
			t.Errorf("PrefixContainsAddr(%s, %s) = %v, want %v", tc.p, tc.a, got, tc.want)
		}
	}
	if PrefixContainsAddr(netip.Prefix{}, netip.MustParseAddr("10.0.0.1")) {
		t.Errorf("PrefixContainsAddr(invalid prefix, 10.0.0.1) = true, want false")
	}
}

func TestLastAddr(t *testing.T) {
	tests := []struct{ p, want string }{
		{"10.0.0.0/24", "10.0.0.255"},
		{"10.0.0.0/8", "10.255.255.255"},
		{"10.0.0.7/32", "10.0.0.7"},
		{"0.0.0.0/0", "255.255.255.255"},
		{"2001:db8::/64", "2001:db8::ffff:ffff:ffff:ffff"},
		{"2001:db8::/32", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"},
		{"2001:db8::/65", "2001:db8::7fff:ffff:ffff:ffff"},
		{"::/0", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
		{"::ffff:10.0.0.0/104", "::ffff:10.255.255.255"},
	}
	for _, tc := range tests {
		if got := lastAddr(netip.MustParsePrefix(tc.p)); got != netip.MustParseAddr(tc.want) {
			t.Errorf("lastAddr(%s) = %s, want %s", tc.p, got, tc.want)
		}
	}
}

func TestKeyArithmetic(t *testing.T) {
	max := key{^uint64(0), ^uint64(0)}
	if _, ok := max.next(); ok {
		t.Errorf("max.next() ok = true, want false (overflow)")
	}
	if k, ok := (key{0, ^uint64(0)}).next(); !ok || k != (key{1, 0}) {
		t.Errorf("{0,max64}.next() = %v, %v, want {1,0}, true", k, ok)
	}
	if k := (key{1, 0}).prev(); k != (key{0, ^uint64(0)}) {
		t.Errorf("{1,0}.prev() = %v, want {0,max64}", k)
	}
	for _, s := range []string{"10.1.2.3", "2001:db8::1", "::ffff:10.1.2.3", "::", "255.255.255.255"} {
		a := netip.MustParseAddr(s)
		k, v6 := keyOf(a)
		if got := k.addr(v6); got != a {
			t.Errorf("keyOf(%s).addr() = %s, want %s", s, got, a)
		}
	}
}
