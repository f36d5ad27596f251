package podworker

import "errors"

var (
	// ErrInvalidConfig is wrapped by New when a Config field is out of range.
	ErrInvalidConfig = errors.New("podworker: invalid config")
	// ErrInvalidUpdate is wrapped by UpdateResult.Err when UpdatePod rejects
	// malformed input (OutcomeRejected). The wrapping error names the
	// problem: an invalid Type, no Pod and no RunningPod, an empty UID, or a
	// RunningPod with an update that is not a kill.
	ErrInvalidUpdate = errors.New("podworker: invalid update")
)
