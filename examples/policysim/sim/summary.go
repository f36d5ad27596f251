package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/taints"
)

// Summary is the outcome of a run, per zone and in all. Times are
// durations since the start of the run (Epoch), as Entry.At is; a nil time
// means it never happened. In JSON they are seconds (see MarshalJSON).
type Summary struct {
	Scenario           string         `json:"scenario"`
	Mode               string         `json:"mode"`                         // "taint" or "legacy"
	PodEvictionTimeout *time.Duration `json:"podEvictionTimeout,omitempty"` // legacy mode only
	Duration           time.Duration  `json:"duration"`
	Nodes              int            `json:"nodes"`
	Pods               int            `json:"pods"`
	PodsMarkedNotReady int            `json:"podsMarkedNotReady"`
	PodsReadyAgain     int            `json:"podsReadyAgain"` // made Ready again by their kubelet (resumed, or undoing the controller's Ready=False)
	PodsEvicted        int            `json:"podsEvicted"`
	// NodeSecondsDown, LongestNodeDown, NodesDownAtEnd, PodSecondsNotReady,
	// LongestPodNotReady and PodsNotReadyAtEnd are the zones' (see
	// ZoneSummary): sums, and the longest of any zone.
	NodeSecondsDown    float64       `json:"nodeSecondsDown"`
	LongestNodeDown    time.Duration `json:"longestNodeDown"`
	NodesDownAtEnd     int           `json:"nodesDownAtEnd"`
	PodSecondsNotReady float64       `json:"podSecondsNotReady"`
	LongestPodNotReady time.Duration `json:"longestPodNotReady"`
	PodsNotReadyAtEnd  int           `json:"podsNotReadyAtEnd"`
	// FullDisruption lists the spans in full disruption mode (no Ready node
	// in any zone: every eviction stops).
	FullDisruption []Span        `json:"fullDisruption"`
	Zones          []ZoneSummary `json:"zones"`
	// Pending is the work left when the run ended (nil only in a Summary
	// built by hand).
	Pending *Pending `json:"pending,omitempty"`
	// Devices is what the device taint eviction controller did, in a run
	// with devices (nil without). PodsEvicted counts its evictions too.
	Devices       *DeviceSummary `json:"devices,omitempty"`
	MonitorPasses int            `json:"monitorPasses"`
	TaintPasses   int            `json:"taintPasses"`
	zoneIndex     map[string]int // zone name → index in Zones
}

// Span is an interval; To is nil when it lasted until the end of the run.
type Span struct {
	From time.Duration  `json:"from"`
	To   *time.Duration `json:"to"`
}

// ZoneSummary is what happened in one zone.
type ZoneSummary struct {
	Zone  string `json:"zone"`
	Nodes int    `json:"nodes"`
	Pods  int    `json:"pods"`
	// KubeletsDown counts the nodes whose kubelet the scenario stopped or
	// made report Ready=False; OutageAt is the first such event.
	KubeletsDown int            `json:"kubeletsDown"`
	OutageAt     *time.Duration `json:"outageAt"`
	// NodesUnknown counts the nodes that became Unknown (or NotReady).
	NodesUnknown int            `json:"nodesUnknown"`
	TimesUnknown int            `json:"timesUnknown"` // node-unknown and node-not-ready events
	FirstUnknown *time.Duration `json:"firstUnknown"`
	LastUnknown  *time.Duration `json:"lastUnknown"`
	// NodesTainted counts the nodes that got a NoExecute health taint.
	NodesTainted int            `json:"nodesTainted"`
	TimesTainted int            `json:"timesTainted"` // NoExecute health taints added
	FirstTaint   *time.Duration `json:"firstTaint"`
	LastTaint    *time.Duration `json:"lastTaint"`
	// NodesEvicting counts, in legacy mode, the nodes queued for eviction.
	NodesEvicting     int            `json:"nodesEvicting"`
	FirstNodeEvicting *time.Duration `json:"firstNodeEvicting"`
	PodsEvicted       int            `json:"podsEvicted"`
	FirstEviction     *time.Duration `json:"firstEviction"`
	LastEviction      *time.Duration `json:"lastEviction"`
	// DevicePodsEvicted counts the zone's pods deleted for device taints
	// (not in PodsEvicted, which are the node lifecycle's).
	DevicePodsEvicted int `json:"devicePodsEvicted,omitempty"`
	// PodsMarkedNotReady counts the controller's writes that took one of
	// the zone's pods from Ready to not ready (a pod marked in two outages
	// counts twice).
	PodsMarkedNotReady int `json:"podsMarkedNotReady"`
	// How long the zone's nodes and pods were down. A node is down while
	// its Ready condition in the API server is not True: from the
	// controller's Unknown (or the kubelet's False) until the kubelet posts
	// True. A pod is down from the controller's Ready=False until the
	// kubelet puts Ready back or the pod is evicted. NodeSecondsDown and
	// PodSecondsNotReady add up every node's and pod's time down (node-
	// and pod-seconds), LongestNodeDown and LongestPodNotReady are the
	// longest single spans; spans still open at the end count up to it,
	// and NodesDownAtEnd and PodsNotReadyAtEnd count them.
	NodeSecondsDown    float64       `json:"nodeSecondsDown"`
	LongestNodeDown    time.Duration `json:"longestNodeDown"`
	NodesDownAtEnd     int           `json:"nodesDownAtEnd"`
	PodSecondsNotReady float64       `json:"podSecondsNotReady"`
	LongestPodNotReady time.Duration `json:"longestPodNotReady"`
	PodsNotReadyAtEnd  int           `json:"podsNotReadyAtEnd"`
	// States lists the zone's state changes; FinalState is its last state.
	States     []StateChange `json:"states"`
	FinalState string        `json:"finalState"`
	// Slowest is the last pod evicted in the zone and what bound its time.
	Slowest *SlowestPod `json:"slowestPod,omitempty"`
	// NotEvicted explains the pods still on the zone's down nodes (nodes
	// that went Unknown or NotReady) at the end, grouped by reason, from
	// Monitor.Explain (taint mode).
	NotEvicted []KeptPods `json:"notEvicted,omitempty"`
}

// KeptPods is a number of pods of down nodes that were not evicted, and
// why.
type KeptPods struct {
	Pods int    `json:"pods"`
	Why  string `json:"why"`
	// DaemonSet is true when they are DaemonSet pods.
	DaemonSet bool `json:"daemonSet,omitempty"`
}

// StateChange is a zone entering State at T.
type StateChange struct {
	T     time.Duration `json:"t"`
	State string        `json:"state"`
	Rate  float64       `json:"rate"` // the zone's tainting rate from then on, nodes/s
}

// SlowestPod is the binding constraint of the last eviction in a zone, from
// Monitor.Explain while the eviction was handed out (taint mode), or from
// the node's eviction timeline (legacy mode).
type SlowestPod struct {
	Pod       string        `json:"pod"`
	Node      string        `json:"node"`
	EvictedAt time.Duration `json:"evictedAt"`
	// NodeDownAt is when the node last became Unknown or NotReady before
	// the eviction; NodeTaintedAt when it got its NoExecute taint (legacy:
	// when it was queued for eviction); ZoneRate the zone's tainting rate
	// then.
	NodeDownAt    *time.Duration `json:"nodeDownAt"`
	NodeTaintedAt *time.Duration `json:"nodeTaintedAt"`
	ZoneRate      *float64       `json:"zoneRate"`
	// Taint is the binding NoExecute taint and Toleration the pod's
	// toleration of it ("" when not tolerated); the countdown of its
	// TolerationFor (the toleration's tolerationSeconds; JSON
	// "tolerationSeconds") started at CountdownStart.
	Taint          string         `json:"taint,omitempty"`
	Toleration     string         `json:"toleration,omitempty"`
	TolerationFor  *time.Duration `json:"tolerationSeconds,omitempty"`
	CountdownStart *time.Duration `json:"countdownStart,omitempty"`
	// Constraint says in one line what bound the eviction time.
	Constraint string `json:"constraint"`
}

// at returns a pointer to d, for the optional times.
func at(d time.Duration) *time.Duration { return &d }

// summarize computes the Summary from the timeline and the run's state.
func summarize(res *Result, s *sim) Summary {
	sc := res.Scenario
	counts := s.c.Counts()
	sum := Summary{
		FullDisruption: []Span{},
		Scenario:       sc.Name, Mode: res.Options.Mode(), Duration: sc.Duration.D(),
		Nodes: len(res.Nodes), PodsMarkedNotReady: counts.PodsMarkedNotReady, PodsReadyAgain: counts.PodsMarkedReady, PodsEvicted: counts.PodsEvicted,
		MonitorPasses: res.MonitorPasses, TaintPasses: res.TaintPasses, zoneIndex: map[string]int{},
	}
	if res.Options.PodEvictionTimeout > 0 {
		sum.PodEvictionTimeout = at(res.Options.PodEvictionTimeout)
	}
	for i, z := range sc.Zones {
		pods := 0
		for _, g := range z.PodGroups() {
			pods += g.PerNode * z.Nodes
		}
		sum.Pods += pods
		sum.Zones = append(sum.Zones, ZoneSummary{Zone: z.Name, Nodes: z.Nodes, Pods: pods, States: []StateChange{}})
		sum.zoneIndex[z.Name] = i
	}
	type nodeSets struct{ down, unknown, tainted, evicting map[string]bool }
	sets := make([]nodeSets, len(sum.Zones))
	for i := range sets {
		sets[i] = nodeSets{map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}}
	}
	first := func(p **time.Duration, t time.Duration) {
		if *p == nil {
			*p = at(t)
		}
	}
	for _, e := range res.Entries {
		if e.Kind == KindDisruptionMode {
			switch {
			case e.Entered:
				sum.FullDisruption = append(sum.FullDisruption, Span{From: e.At})
			case len(sum.FullDisruption) > 0:
				sum.FullDisruption[len(sum.FullDisruption)-1].To = at(e.At)
			}
			continue
		}
		zi, ok := sum.zoneIndex[e.Zone]
		if !ok {
			continue
		}
		z, set := &sum.Zones[zi], sets[zi]
		switch e.Kind {
		case KindKubeletStopped, KindKubeletNotReady:
			first(&z.OutageAt, e.At)
			set.down[e.Node] = true
		case KindNodeUnknown, KindNodeNotReady:
			first(&z.FirstUnknown, e.At)
			z.LastUnknown = at(e.At)
			z.TimesUnknown++
			set.unknown[e.Node] = true
		case KindTaintAdded:
			if isHealthNoExecute(e.Taint) {
				first(&z.FirstTaint, e.At)
				z.LastTaint = at(e.At)
				z.TimesTainted++
				set.tainted[e.Node] = true
			}
		case KindNodeEvicting:
			first(&z.FirstNodeEvicting, e.At)
			set.evicting[e.Node] = true
		case KindPodEvicted:
			z.PodsEvicted++
			first(&z.FirstEviction, e.At)
			z.LastEviction = at(e.At)
		case KindDevicePodEvicted:
			z.DevicePodsEvicted++
		case KindZoneState:
			z.States = append(z.States, StateChange{T: e.At, State: e.State, Rate: e.Rate})
			z.FinalState = e.State
		}
	}
	for i := range sum.Zones {
		z, set := &sum.Zones[i], sets[i]
		z.KubeletsDown, z.NodesUnknown, z.NodesTainted, z.NodesEvicting = len(set.down), len(set.unknown), len(set.tainted), len(set.evicting)
		if sp := s.slowest[i]; sp.set {
			z.Slowest = slowest(res, sp)
		}
		d := s.downs[i]
		z.PodsMarkedNotReady = d.marked
		z.NodeSecondsDown, z.LongestNodeDown, z.NodesDownAtEnd = d.nodeSeconds, d.longestNode, d.nodesAtEnd
		z.PodSecondsNotReady, z.LongestPodNotReady, z.PodsNotReadyAtEnd = d.podSeconds, d.longestPod, d.podsAtEnd
		sum.NodeSecondsDown += d.nodeSeconds
		sum.LongestNodeDown = max(sum.LongestNodeDown, d.longestNode)
		sum.NodesDownAtEnd += d.nodesAtEnd
		sum.PodSecondsNotReady += d.podSeconds
		sum.LongestPodNotReady = max(sum.LongestPodNotReady, d.longestPod)
		sum.PodsNotReadyAtEnd += d.podsAtEnd
		z.NotEvicted = s.notEvicted(res, set.unknown)
	}
	if s.dev != nil {
		sum.Devices = summarizeDevices(res, s)
	}
	return sum
}

// notEvicted groups the pods still on the down nodes by why they are
// still there. Pods of one group on one node are alike: one of them is
// explained for all.
func (s *sim) notEvicted(res *Result, down map[string]bool) []KeptPods {
	nodes := make([]string, 0, len(down))
	for n := range down {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	now := Epoch.Add(s.t)
	var out []KeptPods
	index := map[string]int{}
	for _, name := range nodes {
		pods := s.c.ListPodsOnNode(name)
		for i := 0; i < len(pods); {
			group := podGroupName(name, pods[i].Name)
			j := i + 1
			for j < len(pods) && podGroupName(name, pods[j].Name) == group {
				j++
			}
			p := pods[i]
			ds := isDaemonSetPod(p)
			var why string
			if res.Options.PodEvictionTimeout > 0 {
				why = "its node was not evicted (yet)"
				if ds {
					why = "legacy node eviction never deletes DaemonSet pods"
				}
			} else {
				o := PodOutcome{Explanation: s.m.Explain(now, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})}
				switch x := o.Explanation; {
				case evictionPending(x.State):
					why = "eviction scheduled after the end (" + string(x.Reason) + ")"
				case x.State == taints.EvictionNodeNotTainted:
					why = "its node has no NoExecute taint (recovered, or not tainted yet)"
				default:
					why = o.Why()
				}
				if ds {
					why += "; DaemonSet pods get not-ready and unreachable tolerations without tolerationSeconds"
				}
			}
			k, ok := index[why]
			if !ok {
				k = len(out)
				index[why] = k
				out = append(out, KeptPods{Why: why, DaemonSet: ds})
			}
			out[k].Pods += j - i
			i = j
		}
	}
	return out
}

// podGroupName returns the group of a pod named <node>-<group>-<index>.
func podGroupName(node, pod string) string {
	g := strings.TrimPrefix(pod, node+"-")
	if i := strings.LastIndexByte(g, '-'); i >= 0 {
		g = g[:i]
	}
	return g
}

func isDaemonSetPod(p *v1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

// isHealthNoExecute reports whether t is one of the two NoExecute health
// taints.
func isHealthNoExecute(t v1.Taint) bool {
	nr, ur := taints.NotReadyTaint(), taints.UnreachableTaint()
	return t.MatchTaint(&nr) || t.MatchTaint(&ur)
}

// slowest describes what bound the eviction of sp.
func slowest(res *Result, sp slowPod) *SlowestPod {
	out := &SlowestPod{Pod: sp.pod.String(), Node: sp.node, EvictedAt: sp.at}
	zone := ""
	for _, n := range res.Nodes {
		if n.Name == sp.node {
			zone = n.Zone
			break
		}
	}
	legacy := res.Options.PodEvictionTimeout > 0
	var rate *float64
	for _, e := range res.Entries {
		if e.At > sp.at {
			break
		}
		switch {
		case e.Kind == KindZoneState && e.Zone == zone:
			r := e.Rate
			rate = &r
		case e.Node != sp.node:
		case e.Kind == KindNodeUnknown || e.Kind == KindNodeNotReady:
			out.NodeDownAt = at(e.At)
		case !legacy && e.Kind == KindTaintAdded && isHealthNoExecute(e.Taint),
			legacy && e.Kind == KindNodeEvicting:
			out.NodeTaintedAt = at(e.At)
			if rate != nil {
				r := *rate
				out.ZoneRate = &r
			}
		}
	}
	var b strings.Builder
	if x := sp.x; x != nil {
		if x.Taint != nil {
			out.Taint = x.Taint.Key + ":" + string(x.Taint.Effect)
			if x.Taint.Value != "" {
				out.Taint = x.Taint.Key + "=" + x.Taint.Value + ":" + string(x.Taint.Effect)
			}
		}
		if x.Toleration != nil {
			out.Toleration = tolerationString(*x.Toleration)
			if x.Toleration.TolerationSeconds != nil {
				out.TolerationFor = at(time.Duration(*x.Toleration.TolerationSeconds) * time.Second)
				out.CountdownStart = at(x.Start.Sub(Epoch))
			}
		}
		switch {
		case out.Taint == "":
			fmt.Fprintf(&b, "%v (%v)", x.State, x.Reason)
		case out.Toleration == "":
			fmt.Fprintf(&b, "%s not tolerated: evicted as soon as its node was tainted", out.Taint)
		case out.TolerationFor != nil:
			fmt.Fprintf(&b, "%s tolerated for %gs (toleration %s) from %s", out.Taint, out.TolerationFor.Seconds(), out.Toleration, Offset(x.Start.Sub(Epoch)))
			if end := x.Start.Add(*out.TolerationFor); !end.Equal(x.At) {
				// Under RescheduleNever (upstream) a scheduled eviction
				// keeps its time when the taints change.
				fmt.Fprintf(&b, ", which would end at %s, but the eviction scheduled for %s under an earlier taint stands (upstream never moves a scheduled eviction, kubernetes/kubernetes#102993)",
					Offset(end.Sub(Epoch)), Offset(x.At.Sub(Epoch)))
			}
		default:
			fmt.Fprintf(&b, "%s, %v", out.Taint, x.Reason)
		}
	} else {
		// Upstream (v1.26 processNoTaintBaseEviction) counts the timeout of
		// an Unknown node from its last heartbeat, of a NotReady one from
		// its Ready transition.
		from := "the node's last heartbeat"
		if downWord(res, sp.node, sp.at) == "NotReady" {
			from = "the node's Ready=False transition"
		}
		fmt.Fprintf(&b, "legacy node eviction: pod-eviction-timeout %v after %s, then the zone queue", res.Options.PodEvictionTimeout, from)
	}
	if out.NodeTaintedAt != nil {
		verb := "tainted"
		if legacy {
			verb = "queued for eviction"
		}
		fmt.Fprintf(&b, "; node %s", verb)
		fmt.Fprintf(&b, " at %s", Offset(*out.NodeTaintedAt))
		if out.NodeDownAt != nil {
			wait := *out.NodeTaintedAt - *out.NodeDownAt
			fmt.Fprintf(&b, ", %s after it went %s", Dur(wait), downWord(res, sp.node, sp.at))
			if !legacy && out.ZoneRate != nil {
				fmt.Fprintf(&b, " (zone queue at %g nodes/s)", *out.ZoneRate)
			}
		}
	}
	out.Constraint = b.String()
	return out
}

// downWord says whether the node went Unknown or NotReady last before t.
func downWord(res *Result, node string, t time.Duration) string {
	w := "Unknown"
	for _, e := range res.Entries {
		if e.At > t {
			break
		}
		if e.Node == node {
			switch e.Kind {
			case KindNodeUnknown:
				w = "Unknown"
			case KindNodeNotReady:
				w = "NotReady"
			}
		}
	}
	return w
}

func tolerationString(t v1.Toleration) string {
	var b strings.Builder
	if t.Key == "" {
		b.WriteString("*")
	} else {
		b.WriteString(t.Key)
	}
	if t.Operator == "Exists" || t.Operator == "" && t.Value == "" && t.Key == "" {
		b.WriteString(" Exists")
	} else {
		b.WriteString("=" + t.Value)
	}
	if t.Effect != "" {
		b.WriteString(" " + string(t.Effect))
	}
	if t.TolerationSeconds != nil {
		fmt.Fprintf(&b, " %ds", *t.TolerationSeconds)
	}
	return b.String()
}
