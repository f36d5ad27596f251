package cidrfinalizer

import (
	"net/netip"
	"testing"
)

// refContains is the reference for PrefixContainsAddr, built from
// netip.Prefix.Contains and a bit-by-bit broadcast address.
func refContains(p netip.Prefix, a netip.Addr) bool {
	if !p.IsValid() || !p.Contains(a) { // Contains: families never mix, zones never match
		return false
	}
	network := p.Masked().Addr()
	if a == network {
		return false
	}
	if a.Is4() {
		b := network.As4()
		for i := p.Bits(); i < 32; i++ {
			b[i/8] |= 0x80 >> (i % 8)
		}
		if a == netip.AddrFrom4(b) {
			return false
		}
	}
	return true
}

// FuzzPrefixContainsAddr checks PrefixContainsAddr, and the address ranges
// the Index queries (containedSpan), against refContains.
func FuzzPrefixContainsAddr(f *testing.F) {
	seeds := []struct {
		p    string
		bits int
		a    string
	}{
		{"10.0.0.0", 24, "10.0.0.1"},
		{"10.0.0.0", 24, "10.0.0.0"},
		{"10.0.0.0", 24, "10.0.0.255"},
		{"10.0.0.5", 31, "10.0.0.4"},
		{"10.0.0.5", 32, "10.0.0.5"},
		{"0.0.0.0", 0, "255.255.255.255"},
		{"2001:db8::", 64, "2001:db8::ffff:ffff:ffff:ffff"},
		{"2001:db8::", 64, "2001:db8::"},
		{"2001:db8::1", 128, "2001:db8::1"},
		{"::", 0, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
		{"::ffff:10.0.0.0", 104, "::ffff:10.255.255.255"},
		{"10.0.0.0", 8, "::ffff:10.0.0.1"},
		{"::ffff:10.0.0.0", 104, "10.0.0.1"},
		{"fe80::", 64, "fe80::1%eth0"},
	}
	for _, s := range seeds {
		f.Add(s.p, s.bits, s.a)
	}
	f.Fuzz(func(t *testing.T, ps string, bits int, as string) {
		pa, err := netip.ParseAddr(ps)
		if err != nil || pa.Zone() != "" {
			return
		}
		if _, err := pa.Prefix(bits); err != nil { // rejects bits outside 0..BitLen
			return
		}
		p := netip.PrefixFrom(pa, bits) // keep the host bits: they must be ignored
		a, err := netip.ParseAddr(as)
		if err != nil {
			return
		}
		want := refContains(p, a)
		if got := PrefixContainsAddr(p, a); got != want {
			t.Fatalf("PrefixContainsAddr(%s, %s) = %v, want %v", p, a, got, want)
		}
		// The Index's range for p must hold exactly the contained addresses.
		s, v6, ok := containedSpan(p.Masked())
		inSpan := false
		if ok && a.Zone() == "" && a.BitLen() == p.Addr().BitLen() {
			k, av6 := keyOf(a)
			inSpan = av6 == v6 && !k.less(s.lo) && !s.hi.less(k)
		}
		if inSpan != want {
			t.Fatalf("containedSpan(%s) holds %s = %v, want %v", p, a, inSpan, want)
		}
	})
}
