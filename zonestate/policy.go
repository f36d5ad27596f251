package zonestate

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidPolicy is returned (wrapped, match it with errors.Is) by
// NewTracker when a Policy field is out of range.
var ErrInvalidPolicy = errors.New("zonestate: invalid policy")

// Policy holds the rates and thresholds that turn zone states into tainting
// rates (upstream kube-controller-manager flags in parentheses).
//
// Fields are literal: the zero Policy is valid and means every rate is 0
// (nothing is ever tainted), every partially disrupted zone with at least one
// node counts as large, and any zone with more than 2 not-ready nodes and a
// Ready one is PartialDisruption. Use DefaultPolicy for upstream behaviour.
type Policy struct {
	// EvictionQPS is the tainting rate, in nodes per second per zone, of a
	// Normal zone, and of a FullDisruption zone while some other zone is not
	// fully disrupted and FullDisruptionQPS is nil (--node-eviction-rate,
	// 0.1). 0 stops the zone's queue. Must be finite and >= 0.
	EvictionQPS float64
	// SecondaryEvictionQPS is the rate of a PartialDisruption zone that has
	// more than LargeClusterThreshold nodes (--secondary-node-eviction-rate,
	// 0.01); smaller partially disrupted zones get 0. Must be finite and >= 0.
	SecondaryEvictionQPS float64
	// LargeClusterThreshold is the zone size (counted nodes, per zone, not
	// per cluster) above which a PartialDisruption zone keeps
	// SecondaryEvictionQPS instead of stopping (--large-cluster-size-threshold,
	// 50). Must be >= 0.
	LargeClusterThreshold int
	// UnhealthyZoneThreshold is the fraction of not-ready nodes (with more
	// than 2 of them) at which a zone is PartialDisruption
	// (--unhealthy-zone-threshold, 0.55). Compared in float32, as upstream
	// (see Compute). Must be in [0, 1].
	UnhealthyZoneThreshold float64
	// FullDisruptionQPS, when non-nil, is the rate of a FullDisruption zone
	// while at least one other zone is not fully disrupted; 0 pauses such
	// zones. nil keeps upstream behaviour: such a zone is tainted at
	// EvictionQPS so its workload moves to the healthy zones
	// (kubernetes/kubernetes#70501, #110114, #131182). It never applies in
	// full disruption mode, where every rate is 0. When non-nil it must be
	// finite and >= 0. NewTracker copies the pointed-to value. To pause such
	// zones, HoldFullyDisruptedZones says it without a pointer.
	FullDisruptionQPS *float64
	// HoldFullyDisruptedZones, when true, stops tainting in a FullDisruption
	// zone while at least one other zone is not fully disrupted: the
	// per-zone hold, a rate of 0, the same as FullDisruptionQPS pointing to
	// 0. false (the default) keeps upstream behaviour: only full disruption
	// mode (every zone dark at once) stops tainting, and a single dark zone
	// next to healthy ones is tainted at EvictionQPS. It may be combined
	// with FullDisruptionQPS only when that points to 0.
	HoldFullyDisruptedZones bool
}

// DefaultPolicy returns the upstream defaults (kube-controller-manager
// v1.37.2, unchanged since v1.36): EvictionQPS 0.1, SecondaryEvictionQPS
// 0.01, LargeClusterThreshold 50, UnhealthyZoneThreshold 0.55,
// FullDisruptionQPS nil, HoldFullyDisruptedZones false.
func DefaultPolicy() Policy {
	return Policy{
		EvictionQPS:            0.1,
		SecondaryEvictionQPS:   0.01,
		LargeClusterThreshold:  50,
		UnhealthyZoneThreshold: 0.55,
	}
}

// validate reports every out-of-range field, each wrapping ErrInvalidPolicy.
func (p Policy) validate() error {
	var errs []error
	rate := func(name string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			errs = append(errs, fmt.Errorf("%w: %s = %v, want a finite rate >= 0", ErrInvalidPolicy, name, v))
		}
	}
	rate("EvictionQPS", p.EvictionQPS)
	rate("SecondaryEvictionQPS", p.SecondaryEvictionQPS)
	if p.FullDisruptionQPS != nil {
		rate("FullDisruptionQPS", *p.FullDisruptionQPS)
		if p.HoldFullyDisruptedZones && *p.FullDisruptionQPS != 0 {
			errs = append(errs, fmt.Errorf("%w: HoldFullyDisruptedZones = true with FullDisruptionQPS = %v, want FullDisruptionQPS nil or 0 (set one of them)",
				ErrInvalidPolicy, *p.FullDisruptionQPS))
		}
	}
	if p.LargeClusterThreshold < 0 {
		errs = append(errs, fmt.Errorf("%w: LargeClusterThreshold = %d, want >= 0", ErrInvalidPolicy, p.LargeClusterThreshold))
	}
	if t := p.UnhealthyZoneThreshold; math.IsNaN(t) || t < 0 || t > 1 {
		errs = append(errs, fmt.Errorf("%w: UnhealthyZoneThreshold = %v, want a fraction in [0, 1]", ErrInvalidPolicy, t))
	}
	return errors.Join(errs...)
}
