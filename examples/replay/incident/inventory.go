package incident

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Options selects how a log is read.
type Options struct {
	// ControllerUsers are the users whose writes are the recorded
	// controller's (nil: DefaultControllerUsers).
	ControllerUsers []string
	// Limits bound the log; zero fields take DefaultLimits'.
	Limits Limits
}

// NodeInfo is one node of the log.
type NodeInfo struct {
	Name, UID string
	// Zone and Region are its topology labels ("" when the log never
	// showed them).
	Zone, Region string
	// LabelsKnown: a body in the log carried the node's labels.
	LabelsKnown bool
	// Created is when the log shows it created; zero when it existed
	// before the log (FirstSeen is then when the log first names it).
	Created, FirstSeen time.Time
	// Deleted is when it was deleted (zero: never in the log).
	Deleted time.Time
	// HasLease: its kubelet renews a Lease in the log.
	HasLease bool
}

// Existed reports whether the node existed before the log began.
func (n *NodeInfo) Existed() bool { return n.Created.IsZero() }

// PodInfo is one pod of the log.
type PodInfo struct {
	Namespace, Name, UID string
	// Node is the node it is bound to ("" when the log never says).
	Node string
	// NodeInferred: the log never names the pod's node; it is the node
	// the recorded controller wrote Unknown just before it marked the pod
	// Ready=False (the only one within a second).
	NodeInferred bool
	// Tolerations as the log shows them (the admission plugin's defaults
	// are added in the replay when missing); TolerationsKnown is false when
	// the log never carried its spec.
	Tolerations      []v1.Toleration
	TolerationsKnown bool
	// Created is when the log shows it created (zero: it existed before
	// the log); FirstSeen when the log first names it.
	Created, FirstSeen time.Time
}

// Key returns "namespace/name".
func (p *PodInfo) Key() string { return p.Namespace + "/" + p.Name }

// History is what the first pass over a log found: the cluster's nodes
// and pods, and what the recorded controller wrote. It holds nothing per
// renewal: the replay reads the log again (Replay).
type History struct {
	// First and Last are the first and last StageTimestamp of the events
	// that play a part; Origin is First (the replay's t=0).
	First, Last time.Time
	// Events counts the audit events read, Used those that play a part.
	Events, Used int64
	Nodes        []NodeInfo // by name
	Pods         []PodInfo  // by namespace/name
	// Recorded are the recorded controller's decisions, in time order.
	Recorded []Decision
	// Facts are what the doctor reports.
	Facts Facts
	// Guess is what the log tells of the policy the recorded controller
	// ran with (PolicyGuess.Apply sets it on a Policy).
	Guess PolicyGuess

	opt     Options
	nodeIdx map[string]int
	podIdx  map[podKey]int
}

// Node returns the named node, or nil.
func (h *History) Node(name string) *NodeInfo {
	if i, ok := h.nodeIdx[name]; ok {
		return &h.Nodes[i]
	}
	return nil
}

// Pod returns the pod "namespace/name", or nil.
func (h *History) Pod(ns, name string) *PodInfo {
	if i, ok := h.podIdx[podKey{ns, name}]; ok {
		return &h.Pods[i]
	}
	return nil
}

// inventory is the first pass in progress.
type inventory struct {
	h     *History
	lim   Limits
	nodes map[string]*NodeInfo
	pods  map[podKey]*PodInfo
	// The recorded view: each node's Ready status and taints, each pod's
	// Ready status, as the writes in the log leave them.
	ready  map[string]v1.ConditionStatus
	taints map[string][]v1.Taint
	podRdy map[podKey]v1.ConditionStatus
	last   time.Time
	// recent are the controller's node Unknown writes of the last second.
	recent []recentUnknown
	// reactions counts the kubelets' reactions to the controller's
	// writes (Facts.ReactionNodePosts, ReactionPodPosts).
	reactions *reactionWatch
	// guess gathers the evidence of the recorded controller's policy.
	guess *guessWatch
}

type recentUnknown struct {
	at   time.Time
	node string
}

// inferNode returns the one node the controller wrote Unknown within a
// second before at, if there is exactly one.
func (in *inventory) inferNode(at time.Time) (string, bool) {
	in.recent = slices.DeleteFunc(in.recent, func(r recentUnknown) bool { return at.Sub(r.at) > time.Second })
	node := ""
	for _, r := range in.recent {
		if node != "" && r.node != node {
			return "", false
		}
		node = r.node
	}
	return node, node != ""
}

// Inventory reads src to its end (the first pass) and returns the
// cluster's history. Bodies the log lacks (level Metadata) or that cannot
// be read leave gaps the Facts name; a log over opt.Limits is an error
// wrapping ErrLimit.
func Inventory(src Source, opt Options) (*History, error) {
	lim := opt.Limits.withDefaults()
	c := newClassifier(opt.ControllerUsers, lim)
	in := &inventory{h: &History{opt: opt}, lim: lim, nodes: map[string]*NodeInfo{}, pods: map[podKey]*PodInfo{},
		ready: map[string]v1.ConditionStatus{}, taints: map[string][]v1.Taint{}, podRdy: map[podKey]v1.ConditionStatus{},
		reactions: newReactionWatch(DefaultKubeletReaction), guess: newGuessWatch(opt.ControllerUsers, lim)}
	in.h.Facts.levels = map[string]int64{}
	in.h.Facts.ops = map[op]*opFacts{}
	for {
		e, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("incident: reading the log: %w", err)
		}
		in.h.Events++
		it, ok, err := c.classify(e)
		if err != nil {
			return nil, err
		}
		in.guess.observe(e)
		if !ok {
			continue
		}
		if err := in.add(&it); err != nil {
			return nil, err
		}
	}
	return in.finish()
}

func (in *inventory) add(it *item) error {
	h := in.h
	h.Used++
	if h.First.IsZero() || it.at.Before(h.First) {
		h.First = it.at
	}
	if it.at.After(h.Last) {
		h.Last = it.at
	}
	if span := h.Last.Sub(h.First); span > in.lim.MaxSpan {
		return fmt.Errorf("%w: %s: the log spans %v (%s to %s), over MaxSpan=%v (-max-span)", ErrLimit, it.src, span,
			h.First.Format(time.RFC3339Nano), h.Last.Format(time.RFC3339Nano), in.lim.MaxSpan)
	}
	if it.at.Before(in.last) {
		h.Facts.OutOfOrder++
	} else {
		in.last = it.at
	}
	h.Facts.note(it)
	if it.bad != "" {
		h.Facts.BadBodies++
		h.Facts.firstBad(it.src, it.bad)
	}
	if d := it.at.Sub(it.recv); d > h.Facts.MaxLatency {
		h.Facts.MaxLatency = d
	}
	b := it.body
	switch it.op {
	case opLease:
		n, err := in.node(it.node, it.at)
		if err != nil {
			return err
		}
		n.HasLease = true
		in.guess.heartbeat(it.node, it.at, true, it.src)
	case opNodeStatus:
		if _, err := in.node(it.node, it.at); err != nil {
			return err
		}
		in.guess.heartbeat(it.node, it.at, false, it.src)
		r := b.ready(string(v1.NodeReady))
		if r != "" {
			in.ready[it.node] = r
		}
		if _, ok := in.reactions.nodePost(it.node, it.at, r); ok {
			h.Facts.ReactionNodePosts++
		}
		in.nodeBody(it.node, b)
	case opNodeCreate:
		n, err := in.node(it.node, it.at)
		if err != nil {
			return err
		}
		if n.FirstSeen.Equal(it.at) {
			n.Created = it.at
		}
		in.nodeBody(it.node, b)
		if ts, ok, _ := b.taints(); ok {
			in.taints[it.node] = ts
		}
	case opNodeDelete:
		n, err := in.node(it.node, it.at)
		if err != nil {
			return err
		}
		n.Deleted = it.at
	case opNodeWrite:
		if _, err := in.node(it.node, it.at); err != nil {
			return err
		}
		in.nodeBody(it.node, b)
		if ts, ok, err := b.taints(); err == nil && ok {
			in.taints[it.node] = ts
		}
	case opCtlNodeStatus:
		n, err := in.node(it.node, it.at)
		if err != nil {
			return err
		}
		in.nodeBody(it.node, b)
		r := b.ready(string(v1.NodeReady))
		inferred := false
		if b == nil {
			// Level Metadata: the node lifecycle controller writes a
			// node's status only to mark it Unknown (or keep it so).
			r, inferred = v1.ConditionUnknown, true
			h.Facts.InferredUnknown++
		}
		if r == v1.ConditionUnknown {
			in.recent = append(in.recent, recentUnknown{it.recv, it.node})
		}
		if r == v1.ConditionUnknown && in.ready[it.node] != v1.ConditionUnknown {
			in.guess.unknown(it.node, it.recv, !n.Existed(), it.src)
			if err := in.record(Decision{Time: it.recv, Kind: KindNodeUnknown, Node: it.node, Inferred: inferred, Source: it.src.String()}); err != nil {
				return err
			}
		}
		if r != "" {
			in.ready[it.node] = r
		}
		in.reactions.ctlNode(it.node, it.at, r)
	case opCtlNodeWrite:
		if _, err := in.node(it.node, it.at); err != nil {
			return err
		}
		in.nodeBody(it.node, b)
		ts, ok, err := b.taints()
		switch {
		case err != nil:
			h.Facts.BadBodies++
			h.Facts.firstBad(it.src, err.Error())
			return nil
		case b == nil:
			h.Facts.CtlNodeWritesNoBody++
			return nil
		case !ok:
			return nil
		}
		if len(ts) > in.lim.MaxTaints {
			return fmt.Errorf("%w: %s: node %s has %d taints, over MaxTaints=%d (-max-taints)", ErrLimit, it.src, it.node, len(ts), in.lim.MaxTaints)
		}
		before := in.taints[it.node]
		for _, t := range ts {
			if slices.ContainsFunc(before, func(o v1.Taint) bool { return o.MatchTaint(&t) }) {
				continue
			}
			at := it.recv
			if t.TimeAdded != nil && !t.TimeAdded.IsZero() {
				at = t.TimeAdded.Time
			} else if t.Effect == v1.TaintEffectNoExecute {
				h.Facts.TaintsNoTimeAdded++
			}
			if err := in.record(Decision{Time: at, Kind: KindTaintAdded, Node: it.node, Detail: t.Key + ":" + string(t.Effect), Source: it.src.String()}); err != nil {
				return err
			}
			if t.Effect == v1.TaintEffectNoExecute {
				in.guess.noExecute(in.zoneSnap(it.node, it.recv, it.src.String()))
			}
		}
		for _, t := range before {
			if slices.ContainsFunc(ts, func(o v1.Taint) bool { return o.MatchTaint(&t) }) {
				continue
			}
			if err := in.record(Decision{Time: it.recv, Kind: KindTaintRemoved, Node: it.node, Detail: t.Key + ":" + string(t.Effect), Source: it.src.String()}); err != nil {
				return err
			}
		}
		in.taints[it.node] = ts
	case opPodCreate, opPodBind, opPodDelete, opPodStatus, opCtlPodStatus, opCtlPodDelete:
		p, err := in.pod(it.pod, it.at)
		if err != nil {
			return err
		}
		if it.op == opPodCreate && p.FirstSeen.Equal(it.at) {
			p.Created = it.at
		}
		in.podBody(p, it, b)
		switch it.op {
		case opPodStatus:
			r := b.ready(string(v1.PodReady))
			if r != "" {
				in.podRdy[it.pod] = r
			}
			if _, ok := in.reactions.podPost(it.pod, it.at, r); ok {
				h.Facts.ReactionPodPosts++
			}
		case opCtlPodStatus:
			if b == nil {
				h.Facts.CtlPodStatusNoBody++
				return nil
			}
			if b.ready(string(v1.DisruptionTarget)) == v1.ConditionTrue {
				h.Facts.DisruptionTargets++
			}
			r := b.ready(string(v1.PodReady))
			in.reactions.ctlPod(it.pod, it.at, r)
			if r == v1.ConditionFalse && p.Node == "" {
				if n, ok := in.inferNode(it.recv); ok {
					p.Node, p.NodeInferred = n, true
				}
			}
			if r == v1.ConditionFalse && in.podRdy[it.pod] != v1.ConditionFalse {
				if err := in.record(Decision{Time: it.recv, Kind: KindPodNotReady, Pod: it.pod.String(), Source: it.src.String()}); err != nil {
					return err
				}
			}
			if r != "" {
				in.podRdy[it.pod] = r
			}
		case opCtlPodDelete:
			if err := in.record(Decision{Time: it.recv, Kind: KindPodEvicted, Pod: it.pod.String(), Source: it.src.String()}); err != nil {
				return err
			}
		}
	}
	return nil
}

// zoneSnap returns node's zone then: its size and the nodes the recorded
// view has Unknown (a scan of the nodes: called for a bounded number of
// taints).
func (in *inventory) zoneSnap(node string, at time.Time, src string) taintSnap {
	t := taintSnap{node: node, at: at, src: src}
	n := in.nodes[node]
	if n == nil || !n.LabelsKnown {
		return t
	}
	t.zone = n.Zone
	for name, o := range in.nodes {
		if !o.LabelsKnown || o.Zone != t.zone || (!o.Deleted.IsZero() && !o.Deleted.After(at)) {
			continue
		}
		t.size++
		if in.ready[name] == v1.ConditionUnknown {
			t.unknown++
		}
	}
	return t
}

func (in *inventory) record(d Decision) error {
	if len(in.h.Recorded) >= in.lim.MaxDecisions {
		return fmt.Errorf("%w: %s: more than MaxDecisions=%d recorded decisions (-max-decisions)", ErrLimit, d.Source, in.lim.MaxDecisions)
	}
	in.h.Recorded = append(in.h.Recorded, d)
	return nil
}

func (in *inventory) node(name string, at time.Time) (*NodeInfo, error) {
	if n, ok := in.nodes[name]; ok {
		return n, nil
	}
	if len(in.nodes) >= in.lim.MaxNodes {
		return nil, fmt.Errorf("%w: more than MaxNodes=%d nodes (-max-nodes); node %s first seen at %s", ErrLimit, in.lim.MaxNodes, name, at.Format(time.RFC3339Nano))
	}
	n := &NodeInfo{Name: name, FirstSeen: at}
	in.nodes[name] = n
	return n, nil
}

func (in *inventory) nodeBody(name string, b *object) {
	if b == nil {
		return
	}
	n := in.nodes[name]
	if b.Metadata.UID != "" && n.UID == "" {
		n.UID = b.Metadata.UID
	}
	if b.whole || b.Metadata.Labels != nil {
		if z, r := zoneOf(b.Metadata.Labels); z != "" || r != "" || b.whole {
			n.Zone, n.Region, n.LabelsKnown = z, r, true
		}
	}
}

func (in *inventory) pod(k podKey, at time.Time) (*PodInfo, error) {
	if p, ok := in.pods[k]; ok {
		return p, nil
	}
	if len(in.pods) >= in.lim.MaxPods {
		return nil, fmt.Errorf("%w: more than MaxPods=%d pods (-max-pods); pod %s first seen at %s", ErrLimit, in.lim.MaxPods, k, at.Format(time.RFC3339Nano))
	}
	p := &PodInfo{Namespace: k.Namespace, Name: k.Name, FirstSeen: at}
	in.pods[k] = p
	return p, nil
}

func (in *inventory) podBody(p *PodInfo, it *item, b *object) {
	if it.op == opPodStatus && (p.Node == "" || p.NodeInferred) {
		p.Node, p.NodeInferred = it.node, false // the kubelet posting it runs it
	}
	if b == nil {
		return
	}
	if it.op == opPodBind {
		if b.Target.Name != "" {
			p.Node, p.NodeInferred = b.Target.Name, false
		}
		return
	}
	if b.Metadata.UID != "" && p.UID == "" {
		p.UID = b.Metadata.UID
	}
	if b.Spec.NodeName != "" {
		p.Node, p.NodeInferred = b.Spec.NodeName, false
	}
	if b.whole && !p.TolerationsKnown {
		// A whole pod (a create's or an UpdateStatus's request, a
		// response) carries its spec.
		p.Tolerations, p.TolerationsKnown = b.Spec.Tolerations, true
	}
}

func (in *inventory) finish() (*History, error) {
	h := in.h
	for _, n := range in.nodes {
		h.Nodes = append(h.Nodes, *n)
	}
	slices.SortFunc(h.Nodes, func(a, b NodeInfo) int { return cmp.Compare(a.Name, b.Name) })
	h.nodeIdx = make(map[string]int, len(h.Nodes))
	for i, n := range h.Nodes {
		h.nodeIdx[n.Name] = i
	}
	for _, p := range in.pods {
		if p.UID == "" {
			p.UID = string(types.UID("uid-" + p.Namespace + "-" + p.Name))
		}
		h.Pods = append(h.Pods, *p)
	}
	slices.SortFunc(h.Pods, func(a, b PodInfo) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	h.podIdx = make(map[podKey]int, len(h.Pods))
	for i, p := range h.Pods {
		h.podIdx[podKey{p.Namespace, p.Name}] = i
	}
	// The pod decisions name their node.
	for i := range h.Recorded {
		d := &h.Recorded[i]
		if d.Pod != "" {
			ns, name, _ := cut(d.Pod)
			if p := h.Pod(ns, name); p != nil {
				d.Node = p.Node
			}
		}
	}
	sortDecisions(h.Recorded)
	h.Facts.finish(h)
	h.Guess = in.guess.finish()
	return h, nil
}

func cut(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return "", s, false
}
