package incident

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubelifecycle/lifecycle/taints"
)

// Match is a decision both the recording and the replay made.
type Match struct {
	Kind               Kind
	Node, Pod, Detail  string
	Recorded, Replayed time.Time
}

// Delta is the replay's time minus the recording's.
func (m Match) Delta() time.Duration { return m.Replayed.Sub(m.Recorded) }

// Divergence is where the replay first differs from the recording: a
// decision missing from it, an extra one, or one more than a monitor
// period early or late.
type Divergence struct {
	Time     time.Time
	What     string // "missing", "extra", "early", "late"
	Decision Decision
	Delta    time.Duration // early, late
}

// PodOutcome is a pod the replay saved or newly lost, and why.
type PodOutcome struct {
	Pod, Node string
	// Evicted is when the recording (saved) or the replay (newly lost)
	// evicted it.
	Evicted time.Time
	Reason  string
}

// Comparison is the replay against the recording.
type Comparison struct {
	// Matched pairs each object's decisions in time order (the first
	// recorded node-unknown of a node with the first replayed one, ...).
	Matched []Match
	// Missing are recorded decisions the replay did not make; Extra are
	// replayed decisions the recording does not have.
	Missing, Extra []Decision
	// First is the first divergence (nil: none).
	First *Divergence
	// Saved are pods the recording evicted and the replay did not;
	// NewlyLost are pods the replay evicted and the recording did not.
	Saved, NewlyLost []PodOutcome
}

// Compare compares the replay run with the recording in h. Decisions
// within one monitor period of each other count as the same.
func Compare(h *History, run *Run) *Comparison {
	c := &Comparison{}
	rec := map[string][]Decision{}
	rep := map[string][]Decision{}
	var keys []string
	for _, d := range h.Recorded {
		k := d.object()
		if _, ok := rec[k]; !ok {
			if _, ok := rep[k]; !ok {
				keys = append(keys, k)
			}
		}
		rec[k] = append(rec[k], d)
	}
	for _, d := range run.Replayed {
		k := d.object()
		if _, ok := rep[k]; !ok {
			if _, ok := rec[k]; !ok {
				keys = append(keys, k)
			}
		}
		rep[k] = append(rep[k], d)
	}
	for _, k := range keys {
		a, b := rec[k], rep[k]
		n := min(len(a), len(b))
		for i := range n {
			c.Matched = append(c.Matched, Match{Kind: a[i].Kind, Node: a[i].Node, Pod: a[i].Pod, Detail: a[i].Detail, Recorded: a[i].Time, Replayed: b[i].Time})
		}
		c.Missing = append(c.Missing, a[n:]...)
		c.Extra = append(c.Extra, b[n:]...)
	}
	slices.SortStableFunc(c.Matched, func(x, y Match) int {
		return compareDecisions(Decision{Time: x.Recorded, Kind: x.Kind, Node: x.Node, Pod: x.Pod, Detail: x.Detail},
			Decision{Time: y.Recorded, Kind: y.Kind, Node: y.Node, Pod: y.Pod, Detail: y.Detail})
	})
	sortDecisions(c.Missing)
	sortDecisions(c.Extra)
	period := run.Policy.NodeMonitorPeriod
	var divs []Divergence
	for _, d := range c.Missing {
		divs = append(divs, Divergence{Time: d.Time, What: "missing", Decision: d})
	}
	for _, d := range c.Extra {
		divs = append(divs, Divergence{Time: d.Time, What: "extra", Decision: d})
	}
	for _, m := range c.Matched {
		d := Decision{Time: m.Recorded, Kind: m.Kind, Node: m.Node, Pod: m.Pod, Detail: m.Detail}
		switch delta := m.Delta(); {
		case delta > period:
			divs = append(divs, Divergence{Time: m.Recorded, What: "late", Decision: d, Delta: delta})
		case delta < -period:
			d.Time = m.Replayed
			divs = append(divs, Divergence{Time: m.Replayed, What: "early", Decision: d, Delta: delta})
		}
	}
	if len(divs) > 0 {
		first := slices.MinFunc(divs, func(a, b Divergence) int {
			if x := a.Time.Compare(b.Time); x != 0 {
				return x
			}
			return compareDecisions(a.Decision, b.Decision)
		})
		c.First = &first
	}
	// Pods saved and newly lost.
	recEv := map[string]Decision{}
	repEv := map[string]Decision{}
	for _, d := range h.Recorded {
		if _, ok := recEv[d.Pod]; d.Kind == KindPodEvicted && !ok {
			recEv[d.Pod] = d
		}
	}
	for _, d := range run.Replayed {
		if _, ok := repEv[d.Pod]; d.Kind == KindPodEvicted && !ok {
			repEv[d.Pod] = d
		}
	}
	for _, d := range h.Recorded {
		if d.Kind != KindPodEvicted || recEv[d.Pod].Source != d.Source {
			continue
		}
		if _, ok := repEv[d.Pod]; !ok {
			c.Saved = append(c.Saved, PodOutcome{Pod: d.Pod, Node: d.Node, Evicted: d.Time, Reason: savedReason(h, run, d)})
		}
	}
	recUnknown := map[string]bool{}
	for _, d := range h.Recorded {
		if d.Kind == KindNodeUnknown {
			recUnknown[d.Node] = true
		}
	}
	for _, d := range run.Replayed {
		if d.Kind != KindPodEvicted || !repEv[d.Pod].Time.Equal(d.Time) {
			continue
		}
		if _, ok := recEv[d.Pod]; !ok {
			c.NewlyLost = append(c.NewlyLost, PodOutcome{Pod: d.Pod, Node: d.Node, Evicted: d.Time, Reason: lostReason(h, run, d, recUnknown[d.Node])})
		}
	}
	return c
}

// Offset formats t as an offset from the origin, "+47s".
func Offset(origin, t time.Time) string {
	d := t.Sub(origin)
	if d < 0 {
		return "-" + (-d).Round(time.Millisecond).String()
	}
	return "+" + d.Round(time.Millisecond).String()
}

func savedReason(h *History, run *Run, d Decision) string {
	o := func(t time.Time) string { return Offset(run.Origin, t) }
	f := run.nodes[d.Node]
	grace := run.Policy.NodeMonitorGracePeriod
	if why, ok := run.deleted[d.Pod]; ok {
		return why + " (not the controller), so not the replay's to evict"
	}
	switch {
	case d.Node == "":
		return "the pod's node is unknown to the log: it is not in the replay"
	case f == nil:
		return fmt.Sprintf("node %s never appears in the replay", d.Node)
	case f.unknownAt.IsZero() && f.held > 0:
		return fmt.Sprintf("node %s never went Unknown: the Lease circuit breaker held its passes %d times (the Lease cache was behind)", d.Node, f.held)
	case f.unknownAt.IsZero() && f.gapEnd.IsZero():
		return fmt.Sprintf("node %s never went Unknown: silent from %s to the log's end (%s), %v, not past grace %v plus a pass", d.Node, o(f.gapStart), o(run.End), f.maxGap.Round(time.Millisecond), grace)
	case f.unknownAt.IsZero():
		return fmt.Sprintf("node %s never went Unknown: heartbeat at %s after a gap of %v, within grace %v", d.Node, o(f.gapEnd), f.maxGap.Round(time.Millisecond), grace)
	case f.taintedAt.IsZero():
		return fmt.Sprintf("node %s went Unknown at %s but was not tainted NoExecute (its zone's rate or state held it)", d.Node, o(f.unknownAt))
	}
	x, ok := run.pending[d.Pod]
	if !ok {
		return fmt.Sprintf("node %s tainted NoExecute at %s; the pod was not evicted", d.Node, o(f.taintedAt))
	}
	switch x.State {
	case taints.EvictionScheduled, taints.EvictionDue:
		return fmt.Sprintf("node %s tainted NoExecute at %s; the pod's toleration runs out at %s, after the log ends (%s)", d.Node, o(f.taintedAt), o(x.At), o(run.End))
	case taints.EvictionNodeNotTainted:
		why := fmt.Sprintf("node %s tainted NoExecute at %s", d.Node, o(f.taintedAt))
		if !f.gapEnd.IsZero() && f.gapEnd.After(f.taintedAt) {
			why += fmt.Sprintf(", its Lease renewed at %s after a gap of %v", o(f.gapEnd), f.maxGap.Round(time.Millisecond))
		}
		why += ", untainted before the pod's toleration"
		if tol, ok := unreachableToleration(h, d.Pod); ok {
			why += fmt.Sprintf(" (%v, to %s)", tol, o(f.taintedAt.Add(tol)))
		}
		return why + " ran out"
	case taints.EvictionToleratedForever:
		return fmt.Sprintf("node %s tainted NoExecute at %s; the pod tolerates it forever", d.Node, o(f.taintedAt))
	}
	return fmt.Sprintf("node %s tainted NoExecute at %s; the pod's eviction: %s", d.Node, o(f.taintedAt), strings.ToLower(x.State.String()))
}

func lostReason(h *History, run *Run, d Decision, recUnknown bool) string {
	why := lostWhy(run, d, recUnknown)
	if ns, name, _ := cut(d.Pod); h.Pod(ns, name) != nil && !h.Pod(ns, name).TolerationsKnown {
		why += "; its tolerations are not in the log (the 300s defaults assumed: a DaemonSet pod would tolerate forever)"
	}
	return why
}

func lostWhy(run *Run, d Decision, recUnknown bool) string {
	o := func(t time.Time) string { return Offset(run.Origin, t) }
	f := run.nodes[d.Node]
	if f == nil || f.unknownAt.IsZero() {
		return fmt.Sprintf("evicted at %s", o(d.Time))
	}
	why := fmt.Sprintf("node %s written Unknown at %s", d.Node, o(f.unknownAt))
	if f.maxGap > run.Policy.NodeMonitorGracePeriod {
		why += fmt.Sprintf(" (heartbeat gap %v from %s, past grace %v)", f.maxGap.Round(time.Millisecond), o(f.gapStart), run.Policy.NodeMonitorGracePeriod)
	} else {
		why += fmt.Sprintf(" (longest heartbeat gap %v, within grace %v: its Lease cache was behind)", f.maxGap.Round(time.Millisecond), run.Policy.NodeMonitorGracePeriod)
	}
	if !recUnknown {
		why += "; the recorded controller never wrote it Unknown"
	}
	if !f.taintedAt.IsZero() {
		why += fmt.Sprintf(", tainted NoExecute at %s, evicted at %s", o(f.taintedAt), o(d.Time))
	}
	return why
}

// unreachableToleration returns how long the pod tolerates the unreachable
// NoExecute taint, with the admission plugin's default; false: forever.
func unreachableToleration(h *History, pod string) (time.Duration, bool) {
	ns, name, _ := cut(pod)
	p := h.Pod(ns, name)
	if p == nil {
		return 0, false
	}
	taint := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}
	for _, t := range taints.WithDefaultTolerations(p.Tolerations, defaultToleration, defaultToleration) {
		if t.ToleratesTaint(klog.Logger{}, &taint, false) {
			if t.TolerationSeconds == nil {
				return 0, false
			}
			return time.Duration(max(*t.TolerationSeconds, 0)) * time.Second, true
		}
	}
	return 0, true
}
