package incident

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// Facts are what a log holds and lacks, for the doctor.
type Facts struct {
	levels map[string]int64
	ops    map[op]*opFacts

	// OutOfOrder counts events whose StageTimestamp was before an earlier
	// event's (the reader promises none).
	OutOfOrder int64
	// MaxLatency is the longest request seen (StageTimestamp minus
	// RequestReceivedTimestamp).
	MaxLatency time.Duration
	// BadBodies counts bodies that could not be read; FirstBad names the
	// first.
	BadBodies int64
	FirstBad  string
	// InferredUnknown counts the controller's node status writes without a
	// body, read as Ready=Unknown writes.
	InferredUnknown int64
	// CtlNodeWritesNoBody and CtlPodStatusNoBody count the controller's
	// node writes and pod status writes without a body (their taints and
	// Ready status are unknown).
	CtlNodeWritesNoBody, CtlPodStatusNoBody int64
	// DisruptionTargets counts the controller's pod status writes setting
	// DisruptionTarget (written before a deletion; not compared: the
	// replay's deletion carries it).
	DisruptionTargets int64
	// TaintsNoTimeAdded counts NoExecute taints the controller added
	// without timeAdded (their time is the request's).
	TaintsNoTimeAdded int64
	// NodesBeforeLog and PodsBeforeLog count objects that existed before
	// the log; NodesNoZone the nodes whose zone is unknown, PodsNoNode the
	// pods whose node is unknown, PodsNoTolerations those whose spec the
	// log never carried.
	NodesBeforeLog, PodsBeforeLog, NodesNoZone, PodsNoNode, PodsNoTolerations int
	// PodsNodeInferred counts the pods whose node is inferred
	// (PodInfo.NodeInferred).
	PodsNodeInferred int
	// ReactionNodePosts and ReactionPodPosts count the kubelets' status
	// posts that put Ready back within DefaultKubeletReaction of the
	// recorded controller's Ready=Unknown write of their node, Ready=False
	// write of their pod: reactions, left out of a replay that has not
	// made the write (NoteReactionDropped).
	ReactionNodePosts, ReactionPodPosts int64
}

type opFacts struct{ n, withBody int64 }

func (f *Facts) note(it *item) {
	f.levels[it.level]++
	o := f.ops[it.op]
	if o == nil {
		o = &opFacts{}
		f.ops[it.op] = o
	}
	o.n++
	if it.body != nil {
		o.withBody++
	}
}

func (f *Facts) firstBad(src audit.Position, why string) {
	if f.FirstBad == "" {
		f.FirstBad = src.String() + ": " + why
	}
}

func (f *Facts) finish(h *History) {
	for _, n := range h.Nodes {
		if n.Existed() {
			f.NodesBeforeLog++
		}
		if n.Zone == "" {
			f.NodesNoZone++
		}
	}
	for _, p := range h.Pods {
		if p.Created.IsZero() {
			f.PodsBeforeLog++
		}
		if p.Node == "" {
			f.PodsNoNode++
		}
		if p.NodeInferred {
			f.PodsNodeInferred++
		}
		if !p.TolerationsKnown {
			f.PodsNoTolerations++
		}
	}
}

func (f *Facts) count(o op) (n, withBody int64) {
	if x := f.ops[o]; x != nil {
		return x.n, x.withBody
	}
	return 0, 0
}

// Check is one line of the doctor's report.
type Check struct {
	// What is a decision kind or an input.
	What string `json:"what"`
	// From says what in the log it is rebuilt from, and how much of it the
	// log holds.
	From string `json:"from"`
	// Warning says what is missing ("" when nothing is).
	Warning string `json:"warning,omitempty"`
}

// Doctor is what a log can rebuild: each decision kind and input, what it
// comes from and what is missing, and every input the replay models
// rather than reads.
type Doctor struct {
	First, Last time.Time
	Events      int64
	// Levels counts the events that play a part by audit level.
	Levels    []LevelCount
	Decisions []Check
	Inputs    []Check
	// Modelled lists what the replay assumes because no log can tell.
	Modelled []string
	// Reader is what the caller's log reader reports (files, lines
	// skipped and why); Doctor leaves it empty.
	Reader []string
	// Watch lists the watch stalls derived from an informer recording or
	// inferred from the log (Stall.String lines); Doctor leaves it empty.
	Watch []string
	// Policy lists each flag's guess from the log (or why there is none)
	// and what the guess rests on (PolicyGuess.Lines); Doctor fills it for
	// DefaultPolicy, a caller with flags given refills it.
	Policy []string
}

// LevelCount is how many events of an audit level the log holds.
type LevelCount struct {
	Level string `json:"level"`
	N     int64  `json:"events"`
}

// Warnings returns the warnings of every check, in order.
func (d Doctor) Warnings() []string {
	var out []string
	for _, c := range append(slices.Clone(d.Decisions), d.Inputs...) {
		if c.Warning != "" {
			out = append(out, c.What+": "+c.Warning)
		}
	}
	return out
}

// Doctor returns what the log can rebuild and what it lacks.
func (h *History) Doctor() Doctor {
	f := &h.Facts
	d := Doctor{First: h.First, Last: h.Last, Events: h.Events, Policy: h.Guess.Lines(DefaultPolicy())}
	for l, n := range f.levels {
		if l == "" {
			l = "(none)"
		}
		d.Levels = append(d.Levels, LevelCount{l, n})
	}
	slices.SortFunc(d.Levels, func(a, b LevelCount) int { return cmp.Compare(a.Level, b.Level) })
	users := h.opt.ControllerUsers
	if len(users) == 0 {
		users = DefaultControllerUsers
	}
	ctlAny := false
	for _, o := range []op{opCtlNodeStatus, opCtlNodeWrite, opCtlPodStatus, opCtlPodDelete} {
		if n, _ := f.count(o); n > 0 {
			ctlAny = true
		}
	}
	bodies := func(o op) string {
		n, b := f.count(o)
		return fmt.Sprintf("%d, %d with a body", n, b)
	}
	// Decisions.
	n, b := f.count(opCtlNodeStatus)
	c := Check{What: string(KindNodeUnknown), From: "the controller's nodes/status writes with Ready=Unknown (" + bodies(opCtlNodeStatus) + ")"}
	if n > b {
		c.Warning = fmt.Sprintf("%d status writes without a body (level Metadata) are read as Ready=Unknown writes (inferred)", n-b)
	}
	d.Decisions = append(d.Decisions, c)
	n, b = f.count(opCtlNodeWrite)
	c = Check{What: string(KindTaintAdded) + ", " + string(KindTaintRemoved), From: "the controller's node patches and updates: spec.taints before and after (" + bodies(opCtlNodeWrite) + "); time: the taint's timeAdded"}
	var ws []string
	if n > b {
		ws = append(ws, fmt.Sprintf("%d node writes without a body (level Metadata): their taints are unknown", n-b))
	}
	if f.TaintsNoTimeAdded > 0 {
		ws = append(ws, fmt.Sprintf("%d NoExecute taints without timeAdded: their time is the request's", f.TaintsNoTimeAdded))
	}
	c.Warning = strings.Join(ws, "; ")
	d.Decisions = append(d.Decisions, c)
	n, b = f.count(opCtlPodStatus)
	c = Check{What: string(KindPodNotReady), From: "the controller's pods/status writes with Ready=False (" + bodies(opCtlPodStatus) + ")"}
	if n > b {
		c.Warning = fmt.Sprintf("%d pod status writes without a body (level Metadata): Ready=False or DisruptionTarget cannot be told apart, not counted", n-b)
	}
	d.Decisions = append(d.Decisions, c)
	n, _ = f.count(opCtlPodDelete)
	c = Check{What: string(KindPodEvicted), From: fmt.Sprintf("the controller's pod deletions (%d; level Metadata is enough; %d DisruptionTarget conditions written before them, not compared)", n, f.DisruptionTargets)}
	if k := evictionsWithoutTaint(h.Recorded); k > 0 {
		c.Warning = fmt.Sprintf("%d recorded evictions with no NoExecute taint added to their node before them in the log: the log may begin mid-outage (or the node's taint writes have no body); the replay cannot reproduce them", k)
	}
	d.Decisions = append(d.Decisions, c)
	if !ctlAny {
		d.Decisions = append(d.Decisions, Check{What: "recorded controller", From: "writes by " + strings.Join(users, ", "),
			Warning: "none in the log: nothing to compare with (name the controller's user with -controller-user)"})
	}
	// Inputs.
	n, _ = f.count(opLease)
	c = Check{What: "Lease renewals", From: fmt.Sprintf("kube-node-lease Lease updates by system:node:<name> (%d; level Metadata is enough)", n)}
	if n == 0 {
		c.Warning = "none: the audit policy does not log them, so every node looks silent"
	}
	d.Inputs = append(d.Inputs, c)
	n, b = f.count(opNodeStatus)
	c = Check{What: "kubelet Ready conditions", From: "nodes/status writes by system:node:<name> (" + bodies(opNodeStatus) + ")"}
	if n > b {
		c.Warning = fmt.Sprintf("%d status posts without a body (level Metadata): the kubelet's Ready status is assumed unchanged (True unless a body said otherwise); NotReady kubelets cannot be told", n-b)
	}
	d.Inputs = append(d.Inputs, c)
	c = Check{What: "pods and tolerations", From: fmt.Sprintf("pod creates, bindings, whole pod bodies (%d pods, %d with their spec)", len(h.Pods), len(h.Pods)-f.PodsNoTolerations)}
	ws = nil
	if f.PodsNoTolerations > 0 {
		ws = append(ws, fmt.Sprintf("%d pods without tolerations in the log: given the admission plugin's defaults (300s)", f.PodsNoTolerations))
	}
	if f.PodsNodeInferred > 0 {
		ws = append(ws, fmt.Sprintf("%d pods whose node the log never names: placed on the node the controller wrote Unknown just before it marked them Ready=False (inferred)", f.PodsNodeInferred))
	}
	if f.PodsNoNode > 0 {
		ws = append(ws, fmt.Sprintf("%d pods without a known node: left out of the replay", f.PodsNoNode))
	}
	c.Warning = strings.Join(ws, "; ")
	d.Inputs = append(d.Inputs, c)
	c = Check{What: "zones", From: fmt.Sprintf("topology.kubernetes.io/zone of whole node bodies (%d nodes, %d without)", len(h.Nodes), f.NodesNoZone)}
	if f.NodesNoZone > 0 {
		c.Warning = fmt.Sprintf("%d nodes without a known zone: put in the zone \"\"", f.NodesNoZone)
	}
	d.Inputs = append(d.Inputs, c)
	if f.BadBodies > 0 {
		d.Inputs = append(d.Inputs, Check{What: "bodies", From: "requestObject, responseObject", Warning: fmt.Sprintf("%d could not be read (first: %s)", f.BadBodies, f.FirstBad)})
	}
	if f.OutOfOrder > 0 {
		d.Inputs = append(d.Inputs, Check{What: "order", From: "stageTimestamp", Warning: fmt.Sprintf("%d events before an earlier one: applied at the later time", f.OutOfOrder)})
	}
	d.Modelled = []string{
		"watch delivery: the controller's caches see each write at its stageTimestamp, without delay, except in the stalls given (-lease-watch-stall, -node-watch-stall); only an informer-side recording tells the real delays",
		fmt.Sprintf("apiserver clock skew: none; every time is the apiserver's (longest request in the log: %v); taint times are the controller's timeAdded", f.MaxLatency),
		fmt.Sprintf("objects older than the log: %d nodes and %d pods existed before %s; each node is taken as Ready with its Lease renewed then, each pod as running and Ready", f.NodesBeforeLog, f.PodsBeforeLog, h.First.Format(time.RFC3339Nano)),
		"kubelets facing a replayed write the recording lacks: a node written Unknown is posted Ready again, and pods written Ready=False are put back Ready, at the kubelet's next recorded write within 10s (node status update and pod status sync periods); a kubelet silent for 10s does not react",
		fmt.Sprintf("kubelets reacting to the recorded controller's writes: %d node status posts and %d pod status posts put Ready back within 10s of the recorded controller's Ready=Unknown (node) or Ready=False (pod) write; a replay that has not made that write (the node not Unknown, the pod not Ready=False, and not written so within 10s) leaves each out, as the kubelet would not have posted then (its Lease renewals stay: they are periodic); the run's notes list each (recorded-reaction-dropped; -keep-reactions keeps them)", f.ReactionNodePosts, f.ReactionPodPosts),
		"tolerations: the admission plugin's defaults (not-ready and unreachable, 300s) are added to pods without their own",
		"nodes created in the log: with the taints of their create (the response's when logged) and the NodeTaint admission plugin's not-ready:NoSchedule",
		"pods the log never names (older than it and never written in it) are not in the replay: it cannot evict them, so newly lost pods are a lower bound",
		"monitor passes: every --node-monitor-period from the log's first event plus a phase (-phases); the real controller's phase is unknown",
	}
	return d
}

// evictionsWithoutTaint counts the recorded pod evictions whose node the
// log does not show tainted NoExecute before them.
func evictionsWithoutTaint(recorded []Decision) int {
	tainted := map[string]time.Time{}
	n := 0
	for _, d := range recorded { // in time order
		switch {
		case d.Kind == KindTaintAdded && strings.HasSuffix(d.Detail, ":NoExecute"):
			if _, ok := tainted[d.Node]; !ok {
				tainted[d.Node] = d.Time
			}
		case d.Kind == KindPodEvicted && d.Node != "": // an unknown node is its own warning
			if _, ok := tainted[d.Node]; !ok {
				n++
			}
		}
	}
	return n
}
