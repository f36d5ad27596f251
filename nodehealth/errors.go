package nodehealth

import "errors"

// ErrInvalidConfig is returned (wrapped) by NewTracker and NewOrphanTracker
// for a Config or OrphanPolicy they reject.
var ErrInvalidConfig = errors.New("nodehealth: invalid configuration")

// ErrInvalidNode is returned (wrapped) by Tracker.Observe for a nil node or a
// node without a name. The tracker state is not changed.
var ErrInvalidNode = errors.New("nodehealth: invalid node")

// ErrLeaseMismatch is returned (wrapped) by Tracker.Observe when the Lease
// passed in is named after another node (a caller bug: a node's Lease in
// kube-node-lease carries the node's name). The tracker state is not changed.
var ErrLeaseMismatch = errors.New("nodehealth: lease belongs to another node")

// ErrNotPending is returned (wrapped) by Tracker.Confirm for a node whose
// last Observe asked for no confirmation (Result.Confirm was zero), or whose
// confirmation was already given. The tracker state is not changed.
var ErrNotPending = errors.New("nodehealth: no confirmation pending")
