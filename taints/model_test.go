package taints

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// refEvictor is a reference model of the Evictor, written from the package
// doc with plain maps and linear scans: no heap, no per-node index, and the
// per-taint decision built from MatchingTolerations and MinTolerationTime
// instead of judge. The model test checks that the real Evictor agrees
// with it after every operation.
type refEvictor struct {
	seq   int // orders scheduling (ties in Due) and arrival on a node
	cfg   EvictorConfig
	last  time.Time
	nodes map[string][]taintEntry
	pods  map[types.NamespacedName]*refPod
}

type refPod struct {
	uid      types.UID
	node     string
	tols     []v1.Toleration
	start    time.Time
	state    recState
	at       time.Time
	reason   Reason
	attempts int
	sched    int // seq when the current fire time was set
	arrived  int // seq when the pod arrived on its node
}

// schedule sets p's fire time; ties are handed out in the order their fire
// time was set, and an unchanged fire time keeps its place.
func (r *refEvictor) schedule(p *refPod, at time.Time, reason Reason) {
	p.reason = reason
	if p.state == stScheduled && at.Equal(p.at) {
		return
	}
	r.seq++
	p.state, p.at, p.sched = stScheduled, at, r.seq
}

func newRef(cfg EvictorConfig) *refEvictor {
	return &refEvictor{cfg: cfg, nodes: map[string][]taintEntry{}, pods: map[types.NamespacedName]*refPod{}}
}

func (r *refEvictor) advance(now time.Time) time.Time {
	if now.Before(r.last) {
		return r.last
	}
	r.last = now
	return now
}

// decide returns kind and fire time for p on its node.
func (r *refEvictor) decide(p *refPod) (verdictKind, time.Time) {
	taints := r.nodes[p.node]
	if len(taints) == 0 {
		return vNone, time.Time{}
	}
	opts := MatchOptions{ComparisonOperators: r.cfg.ComparisonOperators}
	kind, best := vForever, time.Time{}
	for _, te := range taints {
		all, used := opts.MatchingTolerations([]v1.Taint{te.taint}, p.tols)
		if !all {
			return vNow, time.Time{}
		}
		d, forever := MinTolerationTime(used)
		if forever {
			continue
		}
		start := te.start
		if p.start.After(start) {
			start = p.start
		}
		if at := start.Add(d); kind != vAt || at.Before(best) {
			kind, best = vAt, at
		}
	}
	return kind, best
}

func (r *refEvictor) cancel(p *refPod) {
	if p.state == stScheduled {
		p.state, p.attempts = stIdle, 0
	}
}

func (r *refEvictor) evaluate(now time.Time, p *refPod) {
	if p.state == stHandedOut || p.state == stEvicted {
		return
	}
	kind, at := r.decide(p)
	switch kind {
	case vNone, vForever:
		r.cancel(p)
	case vNow:
		if p.state == stScheduled && (p.attempts > 0 || !p.at.After(now)) {
			return
		}
		r.schedule(p, now, ReasonNotTolerated)
	case vAt:
		if p.state == stScheduled {
			if p.attempts > 0 || r.cfg.Reschedule == RescheduleNever {
				return
			}
			if r.cfg.Reschedule == RescheduleEarlier && !at.Before(p.at) {
				return
			}
		}
		r.schedule(p, at, ReasonTolerationExpired)
	}
}

func (r *refEvictor) setNodeTaints(now time.Time, node string, in []v1.Taint) {
	now = r.advance(now)
	var kept []v1.Taint
	for _, t := range in {
		if t.Effect != v1.TaintEffectNoExecute || slices.ContainsFunc(kept, func(k v1.Taint) bool { return sameIdentity(&k, &t) }) {
			continue
		}
		kept = append(kept, t)
	}
	old := r.nodes[node]
	if len(old) == len(kept) && equalOrder(old, kept) {
		return // unchanged (in order, TimeAdded included)
	}
	var next []taintEntry
	for _, t := range kept {
		seen := now
		for _, o := range old {
			if sameIdentity(&o.taint, &t) {
				seen = o.seen
				break
			}
		}
		start := seen
		if r.cfg.UseTaintTimeAdded && t.TimeAdded != nil && !t.TimeAdded.IsZero() && !t.TimeAdded.After(now) {
			start = t.TimeAdded.Time
		}
		next = append(next, taintEntry{taint: t, seen: seen, start: start})
	}
	r.nodes[node] = next
	for _, p := range r.onNode(node) {
		r.evaluate(now, p)
	}
}

// sameIdentity reports same key, value and effect: the Evictor's identity of
// a taint (a different value may be tolerated differently).
func sameIdentity(a, b *v1.Taint) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
}

func equalOrder(old []taintEntry, kept []v1.Taint) bool {
	for i := range kept {
		if !sameTaint(&old[i].taint, &kept[i]) {
			return false
		}
	}
	return true
}

func (r *refEvictor) deleteNode(node string) {
	delete(r.nodes, node)
	for _, p := range r.pods {
		if p.node == node {
			r.cancel(p)
		}
	}
}

func (r *refEvictor) podStart(now time.Time, pod *v1.Pod) time.Time {
	if c := pod.CreationTimestamp.Time; r.cfg.UseTaintTimeAdded && !c.IsZero() && !c.After(now) {
		return c
	}
	return now
}

func (r *refEvictor) setPod(now time.Time, pod *v1.Pod) {
	now = r.advance(now)
	k := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	p := r.pods[k]
	if pod.Spec.NodeName == "" {
		delete(r.pods, k)
		return
	}
	if p != nil && p.uid != pod.UID {
		p = nil
	}
	if p == nil {
		r.seq++
		p = &refPod{uid: pod.UID, node: pod.Spec.NodeName, tols: slices.Clone(pod.Spec.Tolerations), start: r.podStart(now, pod), arrived: r.seq}
		r.pods[k] = p
		r.evaluate(now, p)
		return
	}
	moved := p.node != pod.Spec.NodeName
	changed := !equalTolerations(p.tols, pod.Spec.Tolerations)
	if !moved && !changed {
		return
	}
	p.tols = slices.Clone(pod.Spec.Tolerations)
	if moved {
		r.seq++
		p.node, p.arrived = pod.Spec.NodeName, r.seq
		r.cancel(p)
		p.start = r.podStart(now, pod)
	} else if r.cfg.Reschedule == RescheduleNever && !r.cfg.UseTaintTimeAdded {
		p.start = now
	}
	r.evaluate(now, p)
}

func (r *refEvictor) due(now time.Time) []Eviction {
	now = r.advance(now)
	var due []types.NamespacedName
	for k, p := range r.pods {
		if p.state == stScheduled && !p.at.After(now) {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, func(a, b types.NamespacedName) int {
		pa, pb := r.pods[a], r.pods[b]
		if c := pa.at.Compare(pb.at); c != 0 {
			return c
		}
		return pa.sched - pb.sched
	})
	var out []Eviction
	for _, k := range due {
		p := r.pods[k]
		p.state = stHandedOut
		out = append(out, Eviction{Pod: k, UID: p.uid, Node: p.node, At: p.at, Reason: p.reason, Attempt: p.attempts + 1})
	}
	return out
}

// onNode returns the pods on node in arrival order.
func (r *refEvictor) onNode(node string) []*refPod {
	var ps []*refPod
	for _, p := range r.pods {
		if p.node == node {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b *refPod) int { return a.arrived - b.arrived })
	return ps
}

// done is Done, or DoneEviction with checkUID.
func (r *refEvictor) done(k types.NamespacedName, uid types.UID, checkUID bool) {
	if p := r.pods[k]; p != nil && p.state == stHandedOut && (!checkUID || p.uid == uid) {
		p.state = stEvicted
	}
}

// retry is Retry, or RetryEviction with checkUID.
func (r *refEvictor) retry(now time.Time, k types.NamespacedName, uid types.UID, checkUID bool, after time.Duration) {
	now = r.advance(now)
	p := r.pods[k]
	if p == nil || p.state != stHandedOut || (checkUID && p.uid != uid) {
		return
	}
	p.attempts++
	kind, at := r.decide(p)
	if kind == vNone || kind == vForever {
		p.state, p.attempts = stIdle, 0
		return
	}
	when := now.Add(max(after, 0))
	if r.cfg.Reschedule == RescheduleRecompute && kind == vAt && at.After(when) {
		when, p.reason = at, ReasonTolerationExpired
	}
	r.schedule(p, when, p.reason)
}

func (r *refEvictor) next() (time.Time, bool) {
	var best time.Time
	ok := false
	for _, p := range r.pods {
		if p.state == stScheduled && (!ok || p.at.Before(best)) {
			best, ok = p.at, true
		}
	}
	return best, ok
}

// state is what Explain must report for k.
func (r *refEvictor) state(now time.Time, k types.NamespacedName) (EvictionState, time.Time, Reason, int) {
	if now.Before(r.last) {
		now = r.last
	}
	p := r.pods[k]
	if p == nil {
		return EvictionNotTracked, time.Time{}, 0, 0
	}
	switch p.state {
	case stEvicted:
		return EvictionDone, time.Time{}, p.reason, p.attempts
	case stHandedOut:
		return EvictionHandedOut, p.at, p.reason, p.attempts
	case stScheduled:
		switch {
		case p.attempts > 0:
			return EvictionRetrying, p.at, p.reason, p.attempts
		case !p.at.After(now):
			return EvictionDue, p.at, p.reason, p.attempts
		}
		return EvictionScheduled, p.at, p.reason, p.attempts
	}
	if kind, _ := r.decide(p); kind == vNone {
		return EvictionNodeNotTainted, time.Time{}, 0, p.attempts
	}
	return EvictionToleratedForever, time.Time{}, 0, p.attempts
}

// The model's alphabets.
var (
	modelNodes = []string{"n0", "n1", "n2"}
	modelPods  = []string{"p0", "p1", "p2", "p3", "p4"}
)

func modelTaints(i int) []v1.Taint {
	switch i % 8 {
	case 1:
		return []v1.Taint{ne("x")}
	case 2:
		return []v1.Taint{ne("x"), ne("y")}
	case 3:
		return []v1.Taint{added(ne("x"), -50*time.Second)}
	case 4:
		return []v1.Taint{ne("y"), ns("z")}
	case 5:
		return []v1.Taint{withValue(ne("x"), "5"), ne("x")}
	case 6:
		return []v1.Taint{ne("x"), ne("x"), added(ne("y"), 30*time.Second)}
	case 7:
		return []v1.Taint{added(ne("y"), time.Hour)}
	}
	return nil
}

func modelTolerations(i int) []v1.Toleration {
	switch i % 8 {
	case 1:
		return []v1.Toleration{tolFor("x", 10)}
	case 2:
		return []v1.Toleration{tolForever("x")}
	case 3:
		return []v1.Toleration{tolFor("x", 30), tolFor("y", 5)}
	case 4:
		return []v1.Toleration{tolForever("")}
	case 5:
		return []v1.Toleration{tolFor("", 0)}
	case 6:
		return []v1.Toleration{{Key: "x", Operator: v1.TolerationOpLt, Value: "10", Effect: v1.TaintEffectNoExecute, TolerationSeconds: testutil.Seconds(20)}, tolForever("y")}
	case 7:
		return []v1.Toleration{tolFor("y", 20), tolForever("x")}
	}
	return nil
}

// runModel applies operations decoded from next (which reports false when
// the input is exhausted) to an Evictor and to the reference, and compares
// them after every operation.
func runModel(t *testing.T, cfg EvictorConfig, next func() (int, bool)) {
	runModelAt(t, testutil.Epoch, cfg, next)
}

// runModelAt is runModel with the clock starting at base (whose wall clock
// must read testutil.Epoch; base may carry a monotonic reading).
func runModelAt(t *testing.T, base time.Time, cfg EvictorConfig, next func() (int, bool)) {
	e, err := NewEvictor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := newRef(cfg)
	now := base
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("cfg %+v after\n  %s\n%s", cfg, joinLines(log), fmt.Sprintf(format, args...))
	}
	for step := 0; step < 400; step++ {
		op, more := next()
		if !more {
			break
		}
		a, _ := next()
		b, _ := next()
		switch a % 9 {
		case 0, 1, 2, 3:
			now = now.Add(time.Duration(a%4) * 5 * time.Second)
		case 8:
			now = now.Add(-10 * time.Second) // backwards
		}
		node, name := modelNodes[a%len(modelNodes)], modelPods[b%len(modelPods)]
		k := key(name)
		var desc string
		switch op % 10 {
		case 0, 1:
			ts := modelTaints(b)
			desc = fmt.Sprintf("SetNodeTaints(+%v, %s, %s)", now.Sub(testutil.Epoch), node, renderTaints(ts))
			e.SetNodeTaints(now, node, ts)
			r.setNodeTaints(now, node, ts)
		case 2, 3:
			if a%7 == 0 {
				node = ""
			}
			p := podUID(name, node, types.UID(fmt.Sprintf("u%d", (a/7)%2)), modelTolerations(a/3+b)...)
			switch b % 3 {
			case 1:
				p.CreationTimestamp = *testutil.MetaTime(testutil.At(-100 * time.Second))
			case 2:
				p.CreationTimestamp = *testutil.MetaTime(now.Add(time.Minute))
			}
			desc = fmt.Sprintf("SetPod(+%v, %s uid=%s node=%q tol=%s)", now.Sub(testutil.Epoch), name, p.UID, node, renderTols(p.Spec.Tolerations))
			e.SetPod(now, p)
			r.setPod(now, p)
		case 4:
			desc = "DeletePod(" + name + ")"
			e.DeletePod(k)
			delete(r.pods, k)
		case 5:
			desc = "DeleteNode(" + node + ")"
			e.DeleteNode(node)
			r.deleteNode(node)
		case 6, 7:
			desc = fmt.Sprintf("Due(+%v)", now.Sub(testutil.Epoch))
			got, want := renderEvictions(e.Due(now)), renderEvictions(r.due(now))
			log = append(log, desc)
			if got != want {
				fail("Due() = %q, want %q", got, want)
			}
			desc = ""
		case 8:
			if a%2 == 0 {
				desc = "Done(" + name + ")"
				e.Done(k)
				r.done(k, "", false)
			} else {
				uid := types.UID(fmt.Sprintf("u%d", b%2))
				desc = fmt.Sprintf("DoneEviction(%s uid=%s)", name, uid)
				e.DoneEviction(Eviction{Pod: k, UID: uid})
				r.done(k, uid, true)
			}
		case 9:
			after := time.Duration(b%3) * 7 * time.Second
			if a%2 == 0 {
				desc = fmt.Sprintf("Retry(+%v, %s, %v)", now.Sub(testutil.Epoch), name, after)
				e.Retry(now, k, after)
				r.retry(now, k, "", false, after)
			} else {
				uid := types.UID(fmt.Sprintf("u%d", b%2))
				desc = fmt.Sprintf("RetryEviction(+%v, %s uid=%s, %v)", now.Sub(testutil.Epoch), name, uid, after)
				e.RetryEviction(now, Eviction{Pod: k, UID: uid}, after)
				r.retry(now, k, uid, true, after)
			}
		}
		if desc != "" {
			log = append(log, desc)
		}
		if msg := e.check(); msg != "" {
			fail("invariant: %s", msg)
		}
		gotAt, gotOK := e.NextDeadline()
		wantAt, wantOK := r.next()
		if gotOK != wantOK || !gotAt.Equal(wantAt) {
			fail("NextDeadline() = %s, %v, want %s, %v", rel(gotAt), gotOK, rel(wantAt), wantOK)
		}
		for _, n := range modelPods {
			x := e.Explain(now, key(n))
			ws, wat, wr, wa := r.state(now, key(n))
			if x.State != ws || !x.At.Equal(wat) || x.Reason != wr || x.Attempts != wa {
				fail("Explain(%s) = %v@%s %v attempts %d, want %v@%s %v attempts %d", n, x.State, rel(x.At), x.Reason, x.Attempts, ws, rel(wat), wr, wa)
			}
		}
	}
}

func joinLines(s []string) string {
	out := ""
	for i, l := range s {
		if i > 0 {
			out += "\n  "
		}
		out += l
	}
	return out
}

// TestEvictorMatchesModel runs seeded random operation sequences under every
// configuration.
func TestEvictorMatchesModel(t *testing.T) {
	for c := range 12 {
		cfg := EvictorConfig{Reschedule: ReschedulePolicy(c % 3), UseTaintTimeAdded: c/3%2 == 1, ComparisonOperators: c/6 == 1}
		for seed := range uint64(25) {
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			runModel(t, cfg, func() (int, bool) { return rng.IntN(1 << 16), true })
		}
	}
}

// TestEvictorMatchesModelMonotonic runs the model with a real clock's
// instants (a monotonic reading, wall clock at the epoch): fire times
// derived from now go to the monotonic lane, those from TimeAdded and
// creationTimestamp (wall only) to the wall lane, and with no wall-clock
// step the decisions are the fake clock's.
func TestEvictorMatchesModelMonotonic(t *testing.T) {
	n := time.Now()
	base := testutil.StepWallClock(n, testutil.Epoch.Sub(n.Round(0)))
	for c := range 12 {
		cfg := EvictorConfig{Reschedule: ReschedulePolicy(c % 3), UseTaintTimeAdded: c/3%2 == 1, ComparisonOperators: c/6 == 1}
		for seed := range uint64(10) {
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			runModelAt(t, base, cfg, func() (int, bool) { return rng.IntN(1 << 16), true })
		}
	}
}
