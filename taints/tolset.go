package taints

import (
	"encoding/binary"
	"hash/maphash"

	v1 "k8s.io/api/core/v1"
)

// tolSet is one distinct list of tolerations, shared by every pod that has
// it (nearly every pod has the same two admission defaults). The Evictor
// owns the list (a deep copy) and counts its users.
type tolSet struct {
	list []v1.Toleration
	hash uint64
	refs int
	next *tolSet // same hash bucket
}

// tolerations returns s's list; nil for a nil set (no tolerations).
func (s *tolSet) tolerations() []v1.Toleration {
	if s == nil {
		return nil
	}
	return s.list
}

// tolTable interns toleration lists: acquire returns the shared set equal
// to a pod's list (order and values, TolerationSeconds by value), creating
// it on first use, and release drops a user. Finding an existing set hashes
// and compares the list and allocates nothing. Not safe for concurrent use;
// the Evictor's mutex guards it.
type tolTable struct {
	sets map[uint64]*tolSet
	seed maphash.Seed
}

func newTolTable() tolTable {
	return tolTable{sets: make(map[uint64]*tolSet), seed: maphash.MakeSeed()}
}

// acquire returns the set for tol with one more user; nil when tol is
// empty.
func (t *tolTable) acquire(tol []v1.Toleration) *tolSet {
	if len(tol) == 0 {
		return nil
	}
	h := t.hash(tol)
	for s := t.sets[h]; s != nil; s = s.next {
		if equalTolerations(s.list, tol) {
			s.refs++
			return s
		}
	}
	s := &tolSet{list: copyTolerations(tol), hash: h, refs: 1, next: t.sets[h]}
	t.sets[h] = s
	return s
}

// release drops one user of s (nil is a no-op) and forgets s with its last.
func (t *tolTable) release(s *tolSet) {
	if s == nil {
		return
	}
	if s.refs--; s.refs > 0 {
		return
	}
	p := t.sets[s.hash]
	if p == s {
		if s.next == nil {
			delete(t.sets, s.hash)
		} else {
			t.sets[s.hash] = s.next
		}
	} else {
		for p.next != s {
			p = p.next
		}
		p.next = s.next
	}
	s.next = nil
}

// hash hashes every field of every toleration (the fields equalTolerations
// compares), seeded per Evictor (hash/maphash) so that lists crafted to
// collide cannot be prepared in advance. No allocation.
func (t *tolTable) hash(tol []v1.Toleration) uint64 {
	var h maphash.Hash
	h.SetSeed(t.seed)
	var buf [8]byte
	for i := range tol {
		x := &tol[i]
		for _, s := range [...]string{x.Key, string(x.Operator), x.Value, string(x.Effect)} {
			h.WriteString(s)
			h.WriteByte(0)
		}
		if x.TolerationSeconds == nil {
			h.WriteByte(1)
		} else {
			binary.LittleEndian.PutUint64(buf[:], uint64(*x.TolerationSeconds))
			h.WriteByte(2)
			h.Write(buf[:])
		}
	}
	return h.Sum64()
}
