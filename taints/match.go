package taints

import (
	"math"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// MatchOptions selects optional toleration-matching behaviour. The zero value
// matches exactly as a default v1.37 cluster does (and v1.36: the
// TaintTolerationComparisonOperators gate is alpha, off, in both).
type MatchOptions struct {
	// ComparisonOperators enables the Lt and Gt toleration operators (upstream
	// feature gate TaintTolerationComparisonOperators, alpha since 1.35 and off
	// by default). When false, a toleration with operator Lt or Gt tolerates
	// nothing, as upstream with the gate off.
	ComparisonOperators bool
}

// MatchingTolerations reports whether tolerations tolerate every taint in
// taints and, if so, which toleration tolerates each taint: used[i] is the
// first toleration, in pod order, that tolerates taints[i] (so the order of
// the pod's tolerations matters, as upstream). It follows upstream
// GetMatchingTolerations: empty taints give (true, nil); taints with no
// tolerations give (false, nil); when some taint is not tolerated, used is
// nil. Matching is v1.Toleration.ToleratesTaint with the Lt/Gt operators off;
// see MatchOptions.MatchingTolerations to turn them on.
//
// The elements of used are copies, but their TolerationSeconds pointers are
// shared with tolerations. MatchingTolerations allocates the result slice
// once; AppendMatchingTolerations does not allocate.
func MatchingTolerations(taints []v1.Taint, tolerations []v1.Toleration) (all bool, used []v1.Toleration) {
	return MatchOptions{}.MatchingTolerations(taints, tolerations)
}

// AppendMatchingTolerations is MatchingTolerations that appends used to dst
// instead of allocating. When some taint is not tolerated it returns false
// and dst unchanged (same length). It allocates nothing when dst has room for
// len(taints) more elements.
func AppendMatchingTolerations(dst []v1.Toleration, taints []v1.Taint, tolerations []v1.Toleration) (all bool, used []v1.Toleration) {
	return MatchOptions{}.AppendMatchingTolerations(dst, taints, tolerations)
}

// MatchingTolerations is the package function MatchingTolerations with the
// options o.
func (o MatchOptions) MatchingTolerations(taints []v1.Taint, tolerations []v1.Toleration) (all bool, used []v1.Toleration) {
	if len(taints) == 0 {
		return true, nil
	}
	if len(tolerations) == 0 {
		return false, nil
	}
	all, used = o.AppendMatchingTolerations(make([]v1.Toleration, 0, len(taints)), taints, tolerations)
	if !all {
		return false, nil
	}
	return true, used
}

// AppendMatchingTolerations is the package function AppendMatchingTolerations
// with the options o.
func (o MatchOptions) AppendMatchingTolerations(dst []v1.Toleration, taints []v1.Taint, tolerations []v1.Toleration) (all bool, used []v1.Toleration) {
	n := len(dst)
	for i := range taints {
		j := firstToleration(&taints[i], tolerations, o.ComparisonOperators)
		if j < 0 {
			return false, dst[:n]
		}
		dst = append(dst, tolerations[j])
	}
	return true, dst
}

// firstToleration returns the index of the first toleration that tolerates
// taint, or -1. It is the single place where matching happens, and it only
// delegates to v1.Toleration.ToleratesTaint (the zero klog.Logger discards
// the parse errors that ToleratesTaint would log for Lt/Gt values).
func firstToleration(taint *v1.Taint, tolerations []v1.Toleration, cmpOps bool) int {
	for j := range tolerations {
		if tolerations[j].ToleratesTaint(klog.Logger{}, taint, cmpOps) {
			return j
		}
	}
	return -1
}

// MinTolerationTime returns how long a pod whose taints are tolerated by used
// (as returned by MatchingTolerations) may stay, following upstream
// getMinTolerationTime: an empty used gives 0 (evict now); any toleration
// with TolerationSeconds <= 0 gives 0, even when others have none; otherwise
// the smallest TolerationSeconds; when no toleration has TolerationSeconds,
// forever is true (and d is 0). Seconds too large for a time.Duration
// saturate at the largest Duration. MinTolerationTime does not allocate.
func MinTolerationTime(used []v1.Toleration) (d time.Duration, forever bool) {
	if len(used) == 0 {
		return 0, false
	}
	minSec := int64(-1)
	for i := range used {
		s := used[i].TolerationSeconds
		if s == nil {
			continue
		}
		if *s <= 0 {
			return 0, false
		}
		if minSec < 0 || *s < minSec {
			minSec = *s
		}
	}
	if minSec < 0 {
		return 0, true
	}
	return seconds(minSec), false
}

// seconds converts TolerationSeconds to a Duration: negative → 0, too large →
// the largest Duration.
func seconds(s int64) time.Duration {
	switch {
	case s <= 0:
		return 0
	case s > math.MaxInt64/int64(time.Second):
		return math.MaxInt64
	}
	return time.Duration(s) * time.Second
}

// verdictKind is what the toleration rules decide for one pod on one node.
type verdictKind uint8

const (
	vNone    verdictKind = iota // the node has no NoExecute taints
	vNow                        // some taint is not tolerated: evict at once
	vForever                    // every taint tolerated without TolerationSeconds
	vAt                         // every taint tolerated; the earliest expiry is at
)

// verdict is the outcome of judge: the decision and its binding constraint.
type verdict struct {
	kind  verdictKind
	at    time.Time // vAt: when the binding toleration runs out
	start time.Time // vAt: the countdown start of the binding taint
	taint int       // binding taint: the first untolerated one (vNow), the earliest expiry (vAt), the first (vForever); -1 for vNone
	tol   int       // index of the toleration used for taint; -1 when none
}

// taintEntry is one NoExecute taint as the Evictor keeps it.
type taintEntry struct {
	taint v1.Taint  // our own copy (TimeAdded deep-copied)
	seen  time.Time // first SetNodeTaints that carried it, continuously since
	start time.Time // countdown start: seen, or TimeAdded under UseTaintTimeAdded
}

// judge applies upstream processPodOnNode's decision
// (pkg/controller/tainteviction/taint_eviction.go: GetMatchingTolerations,
// getMinTolerationTime) with per-taint countdown starts. For each taint
// the first tolerating toleration (pod order) is used; a taint without one
// decides vNow. A used toleration with TolerationSeconds expires at
// max(taint start, podStart) + seconds (<= 0 seconds: at that start); nil
// seconds never expire. The binding constraint is the earliest expiry (the
// first taint on ties). With equal starts this is upstream's now + the
// minimum TolerationSeconds. It does not allocate.
func judge(taints []taintEntry, tolerations []v1.Toleration, podStart time.Time, cmpOps bool) verdict {
	if len(taints) == 0 {
		return verdict{kind: vNone, taint: -1, tol: -1}
	}
	v := verdict{kind: vForever, taint: 0, tol: -1}
	for i := range taints {
		j := firstToleration(&taints[i].taint, tolerations, cmpOps)
		if j < 0 {
			return verdict{kind: vNow, taint: i, tol: -1}
		}
		if i == 0 {
			v.tol = j
		}
		s := tolerations[j].TolerationSeconds
		if s == nil {
			continue
		}
		start := taints[i].start
		if podStart.After(start) {
			start = podStart
		}
		at := start.Add(seconds(*s))
		if v.kind != vAt || at.Before(v.at) {
			v = verdict{kind: vAt, at: at, start: start, taint: i, tol: j}
		}
	}
	return v
}
