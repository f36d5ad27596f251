package cidrfinalizer

import "strconv"

// Action is what the caller must do with a ServiceCIDR's finalizer. The zero
// value is invalid; a Decision from this package always carries one of the
// named actions.
type Action uint8

const (
	// ActionNone: nothing to do with the finalizer (it is present and the
	// object is not being deleted, or the object is being deleted and does not
	// carry our finalizer).
	ActionNone Action = 1 + iota
	// ActionAddFinalizer: the object is not being deleted and lacks Finalizer;
	// add it.
	ActionAddFinalizer
	// ActionWait: the object is being deleted, nothing blocks it, and the grace
	// period has not passed; ask again after Decision.RequeueAfter.
	ActionWait
	// ActionBlock: the object is being deleted but IPAddresses that no other
	// ServiceCIDR covers still exist (Decision.Blocking); keep the finalizer.
	ActionBlock
	// ActionRemoveFinalizer: the object is being deleted, nothing blocks it and
	// the grace period has passed; remove Finalizer.
	ActionRemoveFinalizer
)

var actionNames = [...]string{
	ActionNone:            "none",
	ActionAddFinalizer:    "add-finalizer",
	ActionWait:            "wait",
	ActionBlock:           "block",
	ActionRemoveFinalizer: "remove-finalizer",
}

// String returns the action's name ("none", "add-finalizer", "wait", "block",
// "remove-finalizer"), or "Action(n)" for an invalid value.
func (a Action) String() string {
	if a >= ActionNone && int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}
