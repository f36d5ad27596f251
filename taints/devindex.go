package taints

import (
	"hash/maphash"

	"k8s.io/apimachinery/pkg/types"
)

// devIndex is podIndex (podindex.go) for the DeviceEvictor's pod records:
// the same open-addressing table with 16-bit tags and backward-shift
// deletion, 13 to 27 bytes a pod against about 90 for a Go map keyed by
// types.NamespacedName, hashes seeded per DeviceEvictor. A copy rather
// than a generic: podIndex is the node Evictor's hot path, and through
// Go's generics its key accessor would be an indirect call. Not safe for
// concurrent use; the DeviceEvictor's mutex guards it.
type devIndex struct {
	slots []*devPod // len is 0 or a power of two; nil is empty
	tags  []uint16  // tag(hash) of slots[i]'s record; 0 for an empty slot
	n     int
	seed  maphash.Seed
}

const devIndexMinSlots = 16

func newDevIndex() devIndex { return devIndex{seed: maphash.MakeSeed()} }

func (x *devIndex) hash(k types.NamespacedName) uint64 {
	h := maphash.String(x.seed, k.Namespace)
	return (h ^ maphash.String(x.seed, k.Name)*0x9E3779B97F4A7C15) * 0xBF58476D1CE4E5B9
}

// get returns k's record, or nil.
func (x *devIndex) get(k types.NamespacedName) *devPod {
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
func (x *devIndex) put(r *devPod) {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.resize(max(devIndexMinSlots, 2*len(x.slots)))
	}
	x.insert(r)
	x.n++
}

func (x *devIndex) insert(r *devPod) {
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
func (x *devIndex) remove(r *devPod) {
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
	if len(x.slots) > devIndexMinSlots && x.n*8 < len(x.slots) {
		x.resize(len(x.slots) / 2)
	}
	if x.n == 0 {
		x.slots, x.tags = nil, nil
	}
}

func (x *devIndex) resize(size int) {
	old := x.slots
	x.slots, x.tags = make([]*devPod, size), make([]uint16, size)
	for _, r := range old {
		if r != nil {
			x.insert(r)
		}
	}
}

func (x *devIndex) len() int { return x.n }

// each calls fn for every record, in table order.
func (x *devIndex) each(fn func(*devPod)) {
	for _, r := range x.slots {
		if r != nil {
			fn(r)
		}
	}
}
