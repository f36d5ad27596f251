// Package uid keeps Kubernetes object UIDs in 16 bytes.
//
// An API server writes a UID as a random UUID in its canonical form (36
// characters, 8-4-4-4-12 lowercase hex digits: k8s.io/apiserver's
// rest.FillObjectMetaSystemFields). As a Go string that is a 16-byte header
// plus a 48-byte allocation; a Raw is its 16 bytes. Anything else (a test's
// "uid-1", an uppercase UUID) has no Raw form and is kept as a string by the
// caller.
package uid

import "k8s.io/apimachinery/pkg/types"

// Raw is a canonical UUID's 16 bytes.
type Raw [16]byte

// Parse returns u's bytes when u is a canonical lowercase UUID, and false
// for anything else. It does not allocate.
func Parse(u types.UID) (Raw, bool) {
	var r Raw
	if len(u) != 36 {
		return r, false
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if u[i] != '-' {
				return r, false
			}
			i++
			continue
		}
		hi, ok1 := hexValue(u[i])
		lo, ok2 := hexValue(u[i+1])
		if !ok1 || !ok2 {
			return r, false
		}
		r[j] = hi<<4 | lo
		j++
		i += 2
	}
	return r, true
}

func hexValue(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// UID formats r back into the string Parse read (one allocation).
func (r Raw) UID() types.UID {
	const hex = "0123456789abcdef"
	var b [36]byte
	j := 0
	for i, c := range r {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = hex[c>>4], hex[c&15]
		j += 2
	}
	return types.UID(b[:])
}
