package cidrfinalizer

import (
	"encoding/binary"
	"net/netip"
)

// PrefixContainsAddr reports whether a ServiceCIDR covering p can hold the
// address a, with the upstream rules (PrefixContainsIP):
//
//   - the network address of p is never contained;
//   - for IPv4 the broadcast address (all host bits set) is not contained
//     either; for IPv6 the all-ones host address is contained;
//   - address families never mix, in the net/netip sense: an IPv4-mapped IPv6
//     address (::ffff:a.b.c.d) is an IPv6 address, so it is never contained in
//     an IPv4 prefix, and inside an IPv6 prefix (::ffff:0:0/96 for example)
//     the IPv6 rules apply to it. Nothing is unmapped, here or anywhere in
//     this package;
//   - an address with an IPv6 zone, an invalid address and an invalid prefix
//     are never contained.
//
// p need not be masked (its host bits are ignored, like netip.Prefix.Contains).
func PrefixContainsAddr(p netip.Prefix, a netip.Addr) bool {
	if !p.IsValid() || !a.IsValid() || a.Zone() != "" || !p.Contains(a) {
		return false
	}
	if a == p.Masked().Addr() {
		return false
	}
	if a.Is4() && a == lastAddr(p) {
		return false
	}
	return true
}

// lastAddr returns the address of p with every host bit set.
func lastAddr(p netip.Prefix) netip.Addr {
	k, v6 := keyOf(p.Addr())
	return k.or(hostMask(p.Bits(), v6)).addr(v6)
}

// key is an address as a 128-bit unsigned integer (IPv4 in the low 32 bits).
// The Index keeps one tree per family, so a key never needs its family.
type key struct{ hi, lo uint64 }

// keyOf returns a's key and whether a is an IPv6 address (IPv4-mapped ones
// included). a must be valid.
func keyOf(a netip.Addr) (key, bool) {
	if a.Is4() {
		b := a.As4()
		return key{lo: uint64(binary.BigEndian.Uint32(b[:]))}, false
	}
	b := a.As16()
	return key{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:])}, true
}

// addr converts k back to an address of the given family.
func (k key) addr(v6 bool) netip.Addr {
	if !v6 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(k.lo))
		return netip.AddrFrom4(b)
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], k.hi)
	binary.BigEndian.PutUint64(b[8:], k.lo)
	return netip.AddrFrom16(b)
}

func (k key) cmp(o key) int {
	switch {
	case k.hi < o.hi:
		return -1
	case k.hi > o.hi:
		return 1
	case k.lo < o.lo:
		return -1
	case k.lo > o.lo:
		return 1
	}
	return 0
}

func (k key) less(o key) bool { return k.hi < o.hi || k.hi == o.hi && k.lo < o.lo }

func (k key) or(o key) key { return key{k.hi | o.hi, k.lo | o.lo} }

func (k key) andNot(o key) key { return key{k.hi &^ o.hi, k.lo &^ o.lo} }

// next returns k+1; ok is false on overflow of 128 bits.
func (k key) next() (key, bool) {
	if k.lo != ^uint64(0) {
		return key{k.hi, k.lo + 1}, true
	}
	if k.hi != ^uint64(0) {
		return key{k.hi + 1, 0}, true
	}
	return key{}, false
}

// prev returns k-1; k must not be zero.
func (k key) prev() key {
	if k.lo != 0 {
		return key{k.hi, k.lo - 1}
	}
	return key{k.hi - 1, ^uint64(0)}
}

// hostMask returns the key with the host bits of a /bits prefix set.
func hostMask(bits int, v6 bool) key {
	width := 32
	if v6 {
		width = 128
	}
	host := width - bits
	switch {
	case host <= 0:
		return key{}
	case host >= 128:
		return key{^uint64(0), ^uint64(0)}
	case host >= 64:
		return key{hi: ^uint64(0) >> (128 - host), lo: ^uint64(0)}
	default:
		return key{lo: ^uint64(0) >> (64 - host)}
	}
}

// span is an inclusive range of keys in one family.
type span struct{ lo, hi key }

// containedSpan returns the range of keys PrefixContainsAddr accepts for p,
// and whether p is valid and the range is not empty. An IPv4 /31 or /32 and an
// IPv6 /128 contain nothing.
func containedSpan(p netip.Prefix) (s span, v6, ok bool) {
	if !p.IsValid() {
		return span{}, false, false
	}
	k, v6 := keyOf(p.Addr())
	width := 32
	if v6 {
		width = 128
	}
	bits := p.Bits()
	if bits >= width || !v6 && bits >= width-1 {
		return span{}, v6, false
	}
	m := hostMask(bits, v6)
	network := k.andNot(m)
	last := network.or(m)
	lo, _ := network.next() // cannot overflow: at least one host bit is clear
	hi := last
	if !v6 {
		hi = last.prev()
	}
	return span{lo, hi}, v6, true
}

// parseAddrName parses an IPAddress name. Names that do not parse, and
// addresses with an IPv6 zone (which no prefix contains), are not usable.
func parseAddrName(name string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(name)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a, true
}
