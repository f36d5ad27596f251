package taints

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrInvalidConfig is wrapped by NewEvictor's errors for an invalid
// EvictorConfig.
var ErrInvalidConfig = errors.New("taints: invalid config")

// ReschedulePolicy says what the Evictor does with an eviction that is
// already scheduled when a pod's tolerations or its node's NoExecute taints
// change and the pod is still tolerated for a finite time. Whatever the
// policy, a pod that stops tolerating a taint is due at once, and a pod
// tolerated forever (or whose node loses its NoExecute taints) has its
// eviction cancelled. The zero value is RescheduleNever, upstream's
// behaviour.
type ReschedulePolicy uint8

const (
	// RescheduleNever keeps a scheduled fire time: neither a longer nor a
	// shorter toleration, nor a new taint with a shorter toleration, moves it
	// (upstream parity: #102993, #108982, #85980).
	RescheduleNever ReschedulePolicy = iota
	// RescheduleEarlier recomputes the fire time and keeps the earlier of the
	// scheduled and the recomputed one ("earliest wins"): shortening a
	// toleration or adding a taint with a shorter toleration brings the
	// eviction forward; lengthening never postpones it. Safe against a pod
	// that keeps itself alive by editing its tolerations.
	RescheduleEarlier
	// RescheduleRecompute always uses the recomputed fire time, so a longer
	// toleration postpones the eviction and a shorter one brings it forward
	// (what #102993 and #108982 ask for).
	RescheduleRecompute
)

// String returns the policy's name.
func (p ReschedulePolicy) String() string {
	switch p {
	case RescheduleNever:
		return "Never"
	case RescheduleEarlier:
		return "Earlier"
	case RescheduleRecompute:
		return "Recompute"
	}
	return "ReschedulePolicy(" + strconv.Itoa(int(p)) + ")"
}

// EvictorConfig configures an Evictor. The zero value reproduces the
// upstream v1.37.2 taint eviction controller's decisions (apart from the bug
// fixes listed in the package doc) and is what DefaultEvictorConfig returns.
type EvictorConfig struct {
	// Reschedule says whether a scheduled eviction moves when tolerations or
	// taints change. Zero: RescheduleNever (upstream).
	Reschedule ReschedulePolicy
	// UseTaintTimeAdded starts each taint's countdown at its TimeAdded (when
	// set and not after now) and each pod's at its creationTimestamp (same
	// rule), so a controller restart or leader change does not restart the
	// countdowns (#108268). Zero: false, the countdown starts when the
	// Evictor first sees the taint and the pod on the node (upstream).
	UseTaintTimeAdded bool
	// ComparisonOperators enables the Lt and Gt toleration operators, as
	// MatchOptions.ComparisonOperators. Zero: false (upstream gate default).
	ComparisonOperators bool
}

// DefaultEvictorConfig returns the upstream behaviour: the zero EvictorConfig.
func DefaultEvictorConfig() EvictorConfig { return EvictorConfig{} }

// validate reports the first invalid field.
func (c EvictorConfig) validate() error {
	if c.Reschedule > RescheduleRecompute {
		return fmt.Errorf("%w: unknown Reschedule policy %d", ErrInvalidConfig, c.Reschedule)
	}
	return nil
}
