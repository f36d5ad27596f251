package sim

import (
	"math"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/taints"
)

// Pending is the work left when a run ended: nodes still waiting in their
// zone's tainting queue (legacy mode: eviction queue) and pod evictions
// scheduled, with when the last of each would happen if the run went on at
// the rates in force at its end and no kubelet came back. A run whose
// Pending is not Done was cut off by its duration.
type Pending struct {
	// Done is true when nothing is left: no node queued, no eviction
	// scheduled.
	Done bool `json:"done"`
	// NodesQueued and Evictions sum the zones' counts.
	NodesQueued int `json:"nodesQueued"`
	Evictions   int `json:"evictions"`
	// LastTaint and LastEviction are the projected instants (since the
	// start) of the last taint and the last eviction over all zones;
	// nil when none is pending or the rate is 0 (Never says which).
	LastTaint    *time.Duration `json:"lastTaint"`
	LastEviction *time.Duration `json:"lastEviction"`
	// Never is true when some queued node would never be tainted: its
	// zone's rate is 0.
	Never bool          `json:"never"`
	Zones []ZonePending `json:"zones"`
	// DeviceEvictions counts the device taint evictions scheduled, due or
	// waiting for their driver's rate (Summary.Devices.EvictionsPending);
	// pods a driver's breaker holds are not pending work (they wait for
	// no time). Done needs it 0 too.
	DeviceEvictions int `json:"deviceEvictions,omitempty"`
}

// ZonePending is the work left in one zone.
type ZonePending struct {
	Zone string `json:"zone"`
	// NodesQueued counts the nodes waiting in the zone's queue; Rate is the
	// rate the zone's queue runs at when the run ends, nodes/s: 0 for every
	// zone if it ends in full disruption mode, where every queue is
	// stopped.
	NodesQueued int     `json:"nodesQueued"`
	Rate        float64 `json:"rate"`
	// Evictions counts the zone's pods with an eviction scheduled (taint
	// mode: the Evictor's Scheduled, Due or Retrying pods on tainted nodes).
	Evictions int `json:"evictions"`
	// LastTaint is when the last queued node would be tainted (legacy
	// mode: leave the queue) if the run went on with nothing changing:
	// exact, from the zone queue's token bucket as the run left it (a
	// bucket part-way through its cycle counts) and the taint pass's 100ms
	// ticks, as a longer run of the same scenario taints it (nil: nothing
	// queued, or Rate 0).
	LastTaint *time.Duration `json:"lastTaint"`
	// LastEviction is the latest of the scheduled evictions and, for the
	// queued nodes, LastTaint plus the longest finite toleration of the
	// zone's pods (nil: none pending, or never).
	LastEviction *time.Duration `json:"lastEviction"`
}

// PodOutcome is what became of one pod.
type PodOutcome struct {
	Pod  types.NamespacedName
	Node string
	Zone string
	// Evicted is true when the pod was evicted, at EvictedAt (since the
	// start).
	Evicted   bool
	EvictedAt time.Duration
	// Explanation is Monitor.Explain at the end of the run for a pod still
	// there (taint mode): its state (NodeNotTainted, ToleratedForever,
	// Scheduled, ...), the binding taint and toleration, and when it will
	// go. Zero for an evicted pod and in legacy mode.
	Explanation taints.Explanation
	// EvictedByDevice is true when the pod was evicted for a device taint
	// (Evicted and EvictedAt are set too).
	EvictedByDevice bool
	// Device is the device taint eviction controller's explanation at the
	// end of the run (taints.DeviceEvictor.Explain) for a pod with a
	// device claim that is still there: held, scheduled, waiting for its
	// driver's rate, not tainted. nil otherwise.
	Device *taints.DeviceExplanation
}

// Why says in a few words why a pod that is still there was not evicted
// (or when it will be), from its Explanation; "" for an evicted pod.
func (o PodOutcome) Why() string {
	if o.Evicted {
		return ""
	}
	x := o.Explanation
	if evictionPending(x.State) {
		return "eviction " + x.State.String() + " for " + Offset(x.At.Sub(Epoch)) + " (" + string(x.Reason) + ")"
	}
	switch x.State {
	case taints.EvictionNodeNotTainted:
		return "its node has no NoExecute taint"
	case taints.EvictionToleratedForever:
		if x.Toleration != nil {
			return "it tolerates " + taintKey(x.Taint) + " forever (toleration " + tolerationString(*x.Toleration) + ")"
		}
		return "it tolerates every NoExecute taint of its node forever"
	case 0:
		return "legacy mode: its node was not evicted"
	}
	return x.State.String()
}

func taintKey(t *v1.Taint) string {
	if t == nil {
		return "its node's taints"
	}
	return t.Key + ":" + string(t.Effect)
}

// Pods returns every pod's outcome, in node then pod order. It asks the
// Monitor (as the run left it) to explain each pod still there, so it costs
// O(pods); a test may call it once and keep the slice. After Release it
// returns nil.
func (r *Result) Pods() []PodOutcome {
	s := r.sim
	if s == nil {
		return nil
	}
	type eviction struct {
		at     time.Duration
		device bool
	}
	evicted := make(map[string]eviction, r.Summary.PodsEvicted)
	for _, e := range r.Entries {
		if e.Kind == KindPodEvicted || e.Kind == KindDevicePodEvicted {
			evicted[e.Pod] = eviction{e.At, e.Kind == KindDevicePodEvicted}
		}
	}
	now := Epoch.Add(r.End)
	var out []PodOutcome
	for _, n := range s.nodes {
		zone := s.sc.Zones[n.zone].Name
		for gi, g := range podGroupsOf(s.sc, n.zone) {
			claimed := 0
			if s.dev != nil {
				claimed = s.dev.zones[n.zone].groups[gi].shape.pods
			}
			for j := range g.n {
				key := types.NamespacedName{Namespace: podNamespace, Name: podName(n.name, g.name, j)}
				o := PodOutcome{Pod: key, Node: n.name, Zone: zone}
				if ev, ok := evicted[key.String()]; ok {
					o.Evicted, o.EvictedAt, o.EvictedByDevice = true, ev.at, ev.device
				} else {
					if r.Options.PodEvictionTimeout == 0 {
						o.Explanation = s.m.Explain(now, key)
					}
					if j < claimed {
						x := s.dev.d.Explain(now, key)
						o.Device = &x
					}
				}
				out = append(out, o)
			}
		}
	}
	return out
}

// DeviceEvictedBy returns how many pods were evicted for taints of
// driver's devices ("" for every driver) at or before t (since the
// start): the KindDevicePodEvicted entries up to t. Like EvictedBy it
// reads the timeline and works after Release.
func (r *Result) DeviceEvictedBy(driver string, t time.Duration) int {
	n := 0
	for _, e := range r.Entries {
		if e.At > t {
			break
		}
		if e.Kind == KindDevicePodEvicted && (driver == "" || e.Driver == driver) {
			n++
		}
	}
	return n
}

// EvictedBy returns how many pods of zone (its scenario name; "" for every
// zone) were evicted at or before t (since the start): the KindPodEvicted
// entries up to t. It reads the timeline, O(entries up to t), and works
// after Release too.
func (r *Result) EvictedBy(zone string, t time.Duration) int {
	n := 0
	for _, e := range r.Entries {
		if e.At > t {
			break
		}
		if e.Kind == KindPodEvicted && (zone == "" || e.Zone == zone) {
			n++
		}
	}
	return n
}

// pending computes the work left at the end of the run.
func (s *sim) pending(res *Result) Pending {
	end := s.t
	p := Pending{Zones: make([]ZonePending, len(s.sc.Zones))}
	st := s.m.Stats()
	zoneIdx := func(name string) int {
		return slices.IndexFunc(s.sc.Zones, func(z Zone) bool { return z.Name == name })
	}
	rate := s.endRates(res)
	for i, z := range s.sc.Zones {
		p.Zones[i] = ZonePending{Zone: z.Name, Rate: rate[i]}
	}
	next := make([]time.Duration, len(s.sc.Zones))
	hasNext := make([]bool, len(s.sc.Zones))
	for key, n := range st.QueuedByZone {
		if zi := zoneIdx(s.zoneOfKey[key]); zi >= 0 && n > 0 {
			p.Zones[zi].NodesQueued += n
			if at, ok := st.NextByZone[key]; ok {
				next[zi], hasNext[zi] = at.Sub(Epoch), true
			}
		}
	}
	// Scheduled evictions: the pods still on nodes with a NoExecute taint.
	now := Epoch.Add(end)
	var latest []time.Duration = make([]time.Duration, len(s.sc.Zones))
	if s.opt.PodEvictionTimeout == 0 && st.Evictions > 0 {
		for _, n := range s.nodes {
			node := s.c.GetNode(n.name)
			if node == nil || !slices.ContainsFunc(node.Spec.Taints, func(t v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute }) {
				continue
			}
			for _, pod := range s.c.ListPodsOnNode(n.name) {
				x := s.m.Explain(now, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
				if evictionPending(x.State) {
					p.Zones[n.zone].Evictions++
					latest[n.zone] = max(latest[n.zone], max(x.At.Sub(Epoch), end))
				}
			}
		}
	}
	for i := range p.Zones {
		z := &p.Zones[i]
		if z.NodesQueued > 0 {
			if rate[i] > 0 {
				var last time.Duration
				if hasNext[i] {
					last = s.lastAdmission(next[i], z.NodesQueued, rate[i])
				} else { // the head is in flight: an upper bound
					last = end + time.Duration(math.Ceil(float64(z.NodesQueued)/rate[i]*1e9))
				}
				z.LastTaint = at(last)
				if s.opt.PodEvictionTimeout > 0 {
					// Legacy: a node's pods go when it leaves the queue.
					latest[i] = max(latest[i], last)
				} else if tol, ok := longestToleration(s.sc, i); ok {
					latest[i] = max(latest[i], last+tol)
				}
			} else {
				p.Never = true
			}
		}
		if latest[i] > 0 && (z.NodesQueued == 0 || rate[i] > 0) {
			z.LastEviction = at(latest[i])
		}
		p.NodesQueued += z.NodesQueued
		p.Evictions += z.Evictions
		p.LastTaint = maxPtr(p.LastTaint, z.LastTaint)
		p.LastEviction = maxPtr(p.LastEviction, z.LastEviction)
	}
	if d := res.Summary.Devices; d != nil {
		p.DeviceEvictions = d.EvictionsPending
	}
	p.Done = p.NodesQueued == 0 && p.Evictions == 0 && p.DeviceEvictions == 0
	return p
}

// endRates returns the rate each zone's queue runs at when the run ends:
// the zone's QPS in the Monitor's last zone decision, or, for a zone
// without one (none of its nodes counted), the policy's EvictionQPS
// (zonestate.Decision.UndecidedQPS); 0 for every zone while the run ends
// in full disruption mode, where every queue is stopped. A zone's state
// changes do not tell it: a zone already Full when the mode starts, or
// still Full when it ends, changes rate without changing state.
func (s *sim) endRates(res *Result) []float64 {
	rate := make([]float64, len(s.sc.Zones))
	if fd := res.Summary.FullDisruption; len(fd) > 0 && fd[len(fd)-1].To == nil {
		return rate
	}
	for i := range rate {
		rate[i] = s.cfg.Zones.EvictionQPS
	}
	for _, z := range s.m.AppendZones(nil) {
		if zi := slices.IndexFunc(s.sc.Zones, func(sz Zone) bool { return sz.Name == s.zoneOfKey[z.Key] }); zi >= 0 {
			rate[zi] = z.QPS
		}
	}
	return rate
}

// lastAdmission returns the tick at which the n-th node queued in a zone
// would leave the queue if the run went on at rate (nodes/s) with nothing
// else changing. The first leaves at the first tick after the end at or
// after next, when the queue's limiter, as the run left it, holds a token
// (monitor.Stats.NextByZone); each later one at the first tick at which the
// limiter (golang.org/x/time/rate, burst 1, emptied by the previous
// admission) holds a whole token again, computed as the limiter computes
// its tokens. So a bucket part-way through its cycle at the end counts, and
// admissions fall on the taint pass's 100ms ticks as in the run.
func (s *sim) lastAdmission(next time.Duration, n int, rate float64) time.Duration {
	tp := s.cfg.TaintPeriod
	// The limiter may grant up to a nanosecond before next.
	t := max((s.t/tp+1)*tp, (next-time.Nanosecond+tp-1)/tp*tp)
	whole := func(since time.Duration) bool { return since.Seconds()*rate >= 1 }
	step := max(time.Duration(math.Ceil(1/rate/tp.Seconds())), 1) * tp
	for range n - 1 {
		c := t + step
		for c-tp > t && whole(c-tp-t) {
			c -= tp
		}
		for !whole(c - t) {
			c += tp
		}
		t = c
	}
	return t
}

func maxPtr(a, b *time.Duration) *time.Duration {
	if a == nil || b != nil && *b > *a {
		return b
	}
	return a
}

// longestToleration returns the longest time any pod of zone zi tolerates
// a health NoExecute taint before eviction (0 for a pod that does not
// tolerate it), ignoring pods that tolerate it forever; false when every pod
// tolerates both taints forever.
func longestToleration(sc *Scenario, zi int) (time.Duration, bool) {
	var longest time.Duration
	found := false
	for _, g := range podGroupsOf(sc, zi) {
		if g.n == 0 {
			continue
		}
		for _, t := range []v1.Taint{taints.UnreachableTaint(), taints.NotReadyTaint()} {
			if d, forever := tolerationTime(g.tol, &t); !forever {
				longest, found = max(longest, d), true
			}
		}
	}
	return longest, found
}

// tolerationTime is upstream's getMinTolerationTime
// (pkg/controller/tainteviction/taint_eviction.go) for one taint, through
// taints.MatchingTolerations and taints.MinTolerationTime: 0 when no
// toleration tolerates it, forever when those that do have no
// TolerationSeconds.
func tolerationTime(tol []v1.Toleration, t *v1.Taint) (time.Duration, bool) {
	all, used := taints.MatchingTolerations([]v1.Taint{*t}, tol)
	if !all {
		return 0, false
	}
	return taints.MinTolerationTime(used)
}

// evictionPending reports whether a pod in state s still has an eviction
// coming (scheduled, due, retrying or handed out).
func evictionPending(s taints.EvictionState) bool {
	switch s {
	case taints.EvictionScheduled, taints.EvictionDue, taints.EvictionRetrying, taints.EvictionHandedOut:
		return true
	}
	return false
}
