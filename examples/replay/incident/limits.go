package incident

import (
	"errors"
	"time"
)

// ErrLimit is wrapped by the error of a log over one of its Limits; the
// error names the limit and the flag that raises it.
var ErrLimit = errors.New("incident: over a limit")

// Limits bound what a log may make the replay hold, so that a hostile or
// runaway log costs bounded memory. Zero fields take DefaultLimits'.
type Limits struct {
	// MaxNodes bounds the nodes the log names (-max-nodes).
	MaxNodes int
	// MaxPods bounds the pods the log names (-max-pods).
	MaxPods int
	// MaxObjectBytes bounds a body decoded (-max-object-bytes).
	MaxObjectBytes int64
	// MaxLabels bounds the labels of one object (-max-labels).
	MaxLabels int
	// MaxTaints bounds the taints or tolerations of one object (-max-taints).
	MaxTaints int
	// MaxDecisions bounds the recorded and the replayed decisions, each
	// (-max-decisions).
	MaxDecisions int
	// MaxSpan bounds the time from the log's first event to its last
	// (-max-span).
	MaxSpan time.Duration
	// MaxMonitorPasses bounds a replay's monitor passes: the span over
	// --node-monitor-period (-max-monitor-passes).
	MaxMonitorPasses int64
}

// DefaultLimits returns the limits applied to fields left zero: room for
// a 20,000-node cluster with a million pods, a month of log.
func DefaultLimits() Limits {
	return Limits{MaxNodes: 20_000, MaxPods: 1_000_000, MaxObjectBytes: 4 << 20, MaxLabels: 1024, MaxTaints: 256, MaxDecisions: 2_000_000,
		MaxSpan: 31 * 24 * time.Hour, MaxMonitorPasses: 10_000_000}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	l.MaxNodes = positiveOr(l.MaxNodes, d.MaxNodes)
	l.MaxPods = positiveOr(l.MaxPods, d.MaxPods)
	l.MaxObjectBytes = positiveOr(l.MaxObjectBytes, d.MaxObjectBytes)
	l.MaxLabels = positiveOr(l.MaxLabels, d.MaxLabels)
	l.MaxTaints = positiveOr(l.MaxTaints, d.MaxTaints)
	l.MaxDecisions = positiveOr(l.MaxDecisions, d.MaxDecisions)
	l.MaxSpan = positiveOr(l.MaxSpan, d.MaxSpan)
	l.MaxMonitorPasses = positiveOr(l.MaxMonitorPasses, d.MaxMonitorPasses)
	return l
}

// positiveOr returns v, or def when v is zero or negative.
func positiveOr[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
