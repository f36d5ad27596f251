package evictionqueue

import "strconv"

// KeyState is what a Queue knows about one key; see Queue.State. The zero
// value, KeyAbsent, is the natural answer for a key the queue has never seen
// or has forgotten.
type KeyState uint8

const (
	// KeyAbsent: the key is not known; Add would accept it.
	KeyAbsent KeyState = iota
	// KeyPending: the key waits in the queue, either never attempted or
	// waiting for a retry. It is counted by Len and listed by Items.
	KeyPending
	// KeyInFlight: the key has been handed to a Try callback that has not
	// returned yet.
	KeyInFlight
	// KeyDone: a callback reported the key done. The queue remembers it, so
	// Add refuses it, until Remove or Clear forgets it.
	KeyDone
)

// String returns "absent", "pending", "in-flight" or "done".
func (s KeyState) String() string {
	switch s {
	case KeyAbsent:
		return "absent"
	case KeyPending:
		return "pending"
	case KeyInFlight:
		return "in-flight"
	case KeyDone:
		return "done"
	}
	return "KeyState(" + strconv.Itoa(int(s)) + ")"
}
