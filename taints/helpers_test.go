package taints

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Builders for this package's tests.

const (
	notReady    = v1.TaintNodeNotReady
	unreachable = v1.TaintNodeUnreachable
)

// ne returns a NoExecute taint key[=value] without TimeAdded.
func ne(key string, value ...string) v1.Taint {
	t := v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute}
	if len(value) > 0 {
		t.Value = value[0]
	}
	return t
}

// ns returns a NoSchedule taint.
func ns(key string) v1.Taint { return v1.Taint{Key: key, Effect: v1.TaintEffectNoSchedule} }

// added returns t with TimeAdded = Epoch + d.
func added(t v1.Taint, d time.Duration) v1.Taint {
	t.TimeAdded = testutil.MetaTime(testutil.At(d))
	return t
}

// tolFor tolerates key:NoExecute (Exists) for s seconds.
func tolFor(key string, s int64) v1.Toleration {
	return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: testutil.Seconds(s)}
}

// tolForever tolerates key:NoExecute (Exists) forever.
func tolForever(key string) v1.Toleration {
	return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
}

// pod returns pod default/name on node with tolerations.
func pod(name, node string, tol ...v1.Toleration) *v1.Pod {
	return testutil.WithTolerations(testutil.Pod("default", name, node), tol...)
}

// podUID is pod with a given UID.
func podUID(name, node string, uid types.UID, tol ...v1.Toleration) *v1.Pod {
	p := pod(name, node, tol...)
	p.UID = uid
	return p
}

// key returns default/name.
func key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "default", Name: name}
}

// rel renders t as an offset from the epoch ("+300s"), or "zero".
func rel(t time.Time) string {
	if t.IsZero() {
		return "zero"
	}
	return fmt.Sprintf("%+gs", t.Sub(testutil.Epoch).Seconds())
}

// renderEvictions renders Due's result: "default/a@+300s:TolerationExpired#1 ...".
func renderEvictions(evs []Eviction) string {
	var parts []string
	for _, x := range evs {
		parts = append(parts, fmt.Sprintf("%s@%s:%s#%d", x.Pod, rel(x.At), x.Reason, x.Attempt))
	}
	return strings.Join(parts, " ")
}

// Evictor step tests: each row is a call at a time and the rendered result.

type call interface {
	run(e *Evictor, now time.Time) string
	String() string
}

type step struct {
	at   time.Duration
	call call
	want string
}

func runSteps(tb interface {
	Helper()
	Fatalf(string, ...any)
	Errorf(string, ...any)
}, cfg EvictorConfig, steps []step) *Evictor {
	tb.Helper()
	e, err := NewEvictor(cfg)
	if err != nil {
		tb.Fatalf("NewEvictor(%+v) error %v", cfg, err)
	}
	for i, s := range steps {
		got := s.call.run(e, testutil.At(s.at))
		if got != s.want {
			tb.Errorf("step %d at +%v: %v = %q, want %q", i, s.at, s.call, got, s.want)
		}
		if msg := e.check(); msg != "" {
			tb.Fatalf("step %d at +%v: after %v: invariant broken: %s", i, s.at, s.call, msg)
		}
	}
	return e
}

type setTaints struct {
	node   string
	taints []v1.Taint
}

func (c setTaints) run(e *Evictor, now time.Time) string {
	e.SetNodeTaints(now, c.node, c.taints)
	return ""
}
func (c setTaints) String() string {
	var s []string
	for i := range c.taints {
		s = append(s, c.taints[i].ToString())
	}
	return fmt.Sprintf("SetNodeTaints(%s, [%s])", c.node, strings.Join(s, " "))
}

type setPod struct{ pod *v1.Pod }

func (c setPod) run(e *Evictor, now time.Time) string { e.SetPod(now, c.pod); return "" }
func (c setPod) String() string {
	if c.pod == nil {
		return "SetPod(nil)"
	}
	var s []string
	for i := range c.pod.Spec.Tolerations {
		t := &c.pod.Spec.Tolerations[i]
		d := "forever"
		if t.TolerationSeconds != nil {
			d = fmt.Sprint(*t.TolerationSeconds)
		}
		s = append(s, tolerationString(t)+"/"+d)
	}
	return fmt.Sprintf("SetPod(%s/%s uid=%s node=%q tol=[%s])", c.pod.Namespace, c.pod.Name, c.pod.UID, c.pod.Spec.NodeName, strings.Join(s, " "))
}

type deletePod struct{ name string }

func (c deletePod) run(e *Evictor, _ time.Time) string { e.DeletePod(key(c.name)); return "" }
func (c deletePod) String() string                     { return "DeletePod(default/" + c.name + ")" }

type deleteNode struct{ node string }

func (c deleteNode) run(e *Evictor, _ time.Time) string { e.DeleteNode(c.node); return "" }
func (c deleteNode) String() string                     { return "DeleteNode(" + c.node + ")" }

type due struct{}

func (due) run(e *Evictor, now time.Time) string { return renderEvictions(e.Due(now)) }
func (due) String() string                       { return "Due()" }

type done struct{ name string }

func (c done) run(e *Evictor, _ time.Time) string { e.Done(key(c.name)); return "" }
func (c done) String() string                     { return "Done(default/" + c.name + ")" }

type retry struct {
	name  string
	after time.Duration
}

func (c retry) run(e *Evictor, now time.Time) string { e.Retry(now, key(c.name), c.after); return "" }
func (c retry) String() string                       { return fmt.Sprintf("Retry(default/%s, %v)", c.name, c.after) }

// doneEv and retryEv acknowledge with the UID-checked DoneEviction and
// RetryEviction, for the pod name with uid.
type doneEv struct {
	name string
	uid  types.UID
}

func (c doneEv) run(e *Evictor, _ time.Time) string {
	e.DoneEviction(Eviction{Pod: key(c.name), UID: c.uid})
	return ""
}
func (c doneEv) String() string { return fmt.Sprintf("DoneEviction(default/%s uid=%s)", c.name, c.uid) }

type retryEv struct {
	name  string
	uid   types.UID
	after time.Duration
}

func (c retryEv) run(e *Evictor, now time.Time) string {
	e.RetryEviction(now, Eviction{Pod: key(c.name), UID: c.uid}, c.after)
	return ""
}
func (c retryEv) String() string {
	return fmt.Sprintf("RetryEviction(default/%s uid=%s, %v)", c.name, c.uid, c.after)
}

type next struct{}

func (next) run(e *Evictor, _ time.Time) string {
	at, ok := e.NextDeadline()
	if !ok {
		return "none"
	}
	return rel(at)
}
func (next) String() string { return "NextDeadline()" }

// explain renders State, At and the binding taint/toleration briefly:
// "Scheduled@+300s unreachable/300s".
type explain struct{ name string }

func (c explain) run(e *Evictor, now time.Time) string {
	x := e.Explain(now, key(c.name))
	s := x.State.String()
	if !x.At.IsZero() {
		s += "@" + rel(x.At)
	}
	if x.Taint != nil {
		s += " " + strings.TrimPrefix(x.Taint.Key, "node.kubernetes.io/")
		if x.Taint.Value != "" {
			s += "=" + x.Taint.Value
		}
		switch {
		case x.Toleration == nil:
			s += "/untolerated"
		case x.Toleration.TolerationSeconds == nil:
			s += "/forever"
		default:
			s += fmt.Sprintf("/%ds from %s", *x.Toleration.TolerationSeconds, rel(x.Start))
		}
	}
	if x.Attempts > 0 {
		s += fmt.Sprintf(" attempts=%d", x.Attempts)
	}
	return s
}
func (c explain) String() string { return "Explain(default/" + c.name + ")" }

// check verifies the Evictor's internal invariants and returns a description
// of the first violation, or "".
func (e *Evictor) check() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	inQueue, bad := 0, ""
	e.queue.each(func(b *bucket, r *podRec) {
		inQueue++
		if r.state != stScheduled || e.pods.get(r.key) != r || r.bkt != b || laneOf(r.at) != b.lane || r.at.After(b.at) || (b.lane == laneMono && !r.at.Equal(b.at)) {
			bad = fmt.Sprintf("%s queued in bucket %s with state %d at %s", r.key, rel(b.at), r.state, rel(r.at))
		}
	})
	if bad != "" {
		return bad
	}
	if inQueue != e.queue.len() {
		return fmt.Sprintf("queue counts %d, holds %d", e.queue.len(), inQueue)
	}
	for li := range e.queue.lanes {
		l := &e.queue.lanes[li]
		if len(l.buckets) != l.heap.Len() {
			return fmt.Sprintf("lane %d: %d buckets, %d in heap", li, len(l.buckets), l.heap.Len())
		}
		for k, b := range l.buckets {
			cnt := 0
			for r := b.head; r != nil; r = r.next {
				cnt++
			}
			if b.key != k || int(b.lane) != li || laneOf(b.at) != b.lane || b.head == nil || !b.elem.InHeap() || cnt != b.n {
				return fmt.Sprintf("bucket %s inconsistent", rel(b.at))
			}
		}
	}
	scheduled := 0
	e.pods.each(func(r *podRec) {
		k := r.key
		switch {
		case bad != "":
		case e.pods.get(k) != r:
			bad = fmt.Sprintf("pod %s not found under its key", k)
		case r.state == stScheduled:
			scheduled++
			if r.bkt == nil {
				bad = fmt.Sprintf("%s scheduled but not queued", k)
			}
		case r.bkt != nil || r.prev != nil || r.next != nil:
			bad = fmt.Sprintf("%s queued with state %d", k, r.state)
		}
		if bad == "" && (r.node == nil || e.nodes[r.node.name] != r.node) {
			bad = fmt.Sprintf("%s on unknown node", k)
		}
		if bad == "" && r.tols != nil && (r.tols.refs <= 0 || !slices.Contains(tolSetsOf(e), r.tols)) {
			bad = fmt.Sprintf("%s has a released toleration set", k)
		}
	})
	if bad != "" {
		return bad
	}
	refs := map[*tolSet]int{}
	e.pods.each(func(r *podRec) {
		if r.tols != nil {
			refs[r.tols]++
		}
	})
	for _, ts := range tolSetsOf(e) {
		if refs[ts] != ts.refs {
			return fmt.Sprintf("toleration set %v: %d users, counts %d", ts.list, refs[ts], ts.refs)
		}
	}
	if scheduled != inQueue {
		return fmt.Sprintf("%d scheduled, %d queued", scheduled, inQueue)
	}
	onNodes := 0
	for name, n := range e.nodes {
		if len(n.taints) == 0 && n.head == nil {
			return fmt.Sprintf("empty node %q kept", name)
		}
		var prev *podRec
		for p := n.head; p != nil; p = p.nodeNext {
			if p.nodePrev != prev || p.node != n || n.name != name || e.pods.get(p.key) != p {
				return fmt.Sprintf("node %q pod %s inconsistent", name, p.key)
			}
			onNodes++
			prev = p
		}
		if n.tail != prev {
			return fmt.Sprintf("node %q tail inconsistent", name)
		}
		for _, te := range n.taints {
			if te.taint.Effect != v1.TaintEffectNoExecute {
				return fmt.Sprintf("node %q keeps %s", name, te.taint.ToString())
			}
		}
	}
	if onNodes != e.pods.len() {
		return fmt.Sprintf("%d pods on nodes, %d tracked", onNodes, e.pods.len())
	}
	return ""
}

// tolSetsOf lists every interned toleration set.
func tolSetsOf(e *Evictor) []*tolSet {
	var out []*tolSet
	for h, s := range e.tols.sets {
		for ; s != nil; s = s.next {
			if s.hash != h {
				panic("toleration set in the wrong hash chain")
			}
			out = append(out, s)
		}
	}
	return out
}

// len returns the number of records (tests).
func (x *podIndex) len() int { return x.n }

// each calls fn for every record, in no particular order (tests).
func (x *podIndex) each(fn func(*podRec)) {
	for _, r := range x.slots {
		if r != nil {
			fn(r)
		}
	}
}
