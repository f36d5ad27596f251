package taints

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/internal/uid"
)

// A pod record keeps its pod's UID in 16 bytes (uid.Raw) instead of a
// string that costs another 48: an API server's UIDs are canonical UUIDs.
// Any other UID (a test's "uid-1") is kept in Evictor.otherUIDs, a map
// entry of about 60 bytes more, and the record holds otherUID, which is
// also where the one canonical UUID equal to it goes.
var otherUID = uid.Raw{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// setUID records id as rec's UID.
func (e *Evictor) setUID(rec *podRec, id types.UID) {
	if rec.uid == otherUID {
		delete(e.otherUIDs, rec)
	}
	if r, ok := uid.Parse(id); ok && r != otherUID {
		rec.uid = r
		return
	}
	rec.uid = otherUID
	if e.otherUIDs == nil {
		e.otherUIDs = make(map[*podRec]types.UID)
	}
	e.otherUIDs[rec] = id
}

// uidOf returns rec's UID (formatting it allocates).
func (e *Evictor) uidOf(rec *podRec) types.UID {
	if rec.uid == otherUID {
		return e.otherUIDs[rec]
	}
	return rec.uid.UID()
}

// hasUID reports whether rec's UID is id, without allocating.
func (e *Evictor) hasUID(rec *podRec, id types.UID) bool {
	if r, ok := uid.Parse(id); ok && r != otherUID {
		return rec.uid == r
	}
	return rec.uid == otherUID && e.otherUIDs[rec] == id
}

// dropUID forgets rec's UID (rec is being dropped).
func (e *Evictor) dropUID(rec *podRec) {
	if rec.uid == otherUID {
		delete(e.otherUIDs, rec)
	}
}
