package taints

import (
	"hash/maphash"

	"k8s.io/apimachinery/pkg/types"
)

// podIndex finds a pod's record by name: an open-addressing hash table of
// record pointers with linear probing and backward-shift deletion. Beside
// each slot it keeps 16 bits of its record's hash (tags), so a probe reads
// a record only when the bits match (1 in 32,768 probes of another
// record): a lookup of a pod not in the index (every pod of an initial
// sync) reads no record at all, and at millions of pods each record read
// is a cache miss. It costs 10 bytes per slot (the
// key lives in the record), 13 to 27 bytes per pod between growths (load
// factor 3/8 to 3/4), against about 90 for a Go map keyed by
// types.NamespacedName. Hashes are seeded per Evictor (hash/maphash), so
// names chosen to collide cannot be prepared in advance. Operations are
// O(1) expected; growth doubles the table. Not safe for concurrent use; the
// Evictor's mutex guards it.
type podIndex struct {
	slots []*podRec // len is 0 or a power of two; nil is empty
	tags  []uint16  // tag(hash) of slots[i]'s record; 0 for an empty slot
	n     int
	seed  maphash.Seed
}

const podIndexMinSlots = 16

func newPodIndex() podIndex { return podIndex{seed: maphash.MakeSeed()} }

func (x *podIndex) hash(k types.NamespacedName) uint64 {
	h := maphash.String(x.seed, k.Namespace)
	return (h ^ maphash.String(x.seed, k.Name)*0x9E3779B97F4A7C15) * 0xBF58476D1CE4E5B9
}

// tag is the top 16 bits of a hash (the low bits pick the slot), never 0.
func tag(h uint64) uint16 { return uint16(h>>48) | 1 }

// get returns k's record, or nil.
func (x *podIndex) get(k types.NamespacedName) *podRec {
	if x.n == 0 {
		return nil
	}
	h := x.hash(k)
	t, mask := tag(h), uint64(len(x.slots)-1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch x.tags[i] {
		case 0:
			return nil
		case t:
			if r := x.slots[i]; r.key == k {
				return r
			}
		}
	}
}

// put adds r, which must not be in the index.
func (x *podIndex) put(r *podRec) {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.resize(max(podIndexMinSlots, 2*len(x.slots)))
	}
	x.insert(r)
	x.n++
}

// reserve grows the table to hold n records without growing again.
func (x *podIndex) reserve(n int) {
	size := max(podIndexMinSlots, len(x.slots))
	for n*4 > size*3 {
		size *= 2
	}
	if size > len(x.slots) {
		x.resize(size)
	}
}

func (x *podIndex) insert(r *podRec) {
	h := x.hash(r.key)
	mask := uint64(len(x.slots) - 1)
	i := h & mask
	for x.tags[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i], x.tags[i] = r, tag(h)
}

// remove deletes r (which must be in the index) and shifts later members of
// its probe run back, so no tombstones are needed. It shrinks the table when
// it is less than 1/8 full.
func (x *podIndex) remove(r *podRec) {
	mask := uint64(len(x.slots) - 1)
	i := x.hash(r.key) & mask
	for x.slots[i] != r {
		if x.slots[i] == nil {
			return
		}
		i = (i + 1) & mask
	}
	x.slots[i], x.tags[i] = nil, 0
	x.n--
	for j := (i + 1) & mask; x.slots[j] != nil; j = (j + 1) & mask {
		home := x.hash(x.slots[j].key) & mask
		// Move slots[j] into the hole at i unless its home lies cyclically
		// in (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			x.slots[i], x.slots[j] = x.slots[j], nil
			x.tags[i], x.tags[j] = x.tags[j], 0
			i = j
		}
	}
	if len(x.slots) > podIndexMinSlots && x.n*8 < len(x.slots) {
		x.resize(len(x.slots) / 2)
	}
	if x.n == 0 {
		x.slots, x.tags = nil, nil
	}
}

func (x *podIndex) resize(size int) {
	old := x.slots
	x.slots, x.tags = make([]*podRec, size), make([]uint16, size)
	for _, r := range old {
		if r != nil {
			x.insert(r)
		}
	}
}
