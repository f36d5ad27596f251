package nodehealth

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// refTracker is a deliberately naive reference for Tracker: it keeps, like
// upstream's nodeHealthData, a deep copy of the whole status and of the
// Lease, and follows upstream tryUpdateNodeHealth's steps literally, comparing with
// apiequality.Semantic.DeepEqual. It includes our documented differences
// from upstream (creation time clamped, time never going backwards, the
// pods-not-ready edge kept until acknowledged, the saved Lease kept when a
// heartbeat change rebuilds upstream's record) and nothing else.
type refTracker struct {
	cfg  Config
	last time.Time
	m    map[string]*refRecord
}

type refRecord struct {
	status            *v1.NodeStatus
	probe, transition time.Time
	lease             *coordinationv1.Lease
	pods              bool
}

type refResult struct {
	grace             time.Duration
	observed, current *v1.NodeCondition
	update            *v1.NodeStatus
	pods, stale       bool
	deadline, trans   time.Time
}

func refCondition(st *v1.NodeStatus, ct v1.NodeConditionType) *v1.NodeCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == ct {
			return &st.Conditions[i]
		}
	}
	return nil
}

func (r *refTracker) observe(now time.Time, in *v1.Node, inLease *coordinationv1.Lease) refResult {
	if now.Before(r.last) {
		now = r.last
	}
	r.last = now
	node := in.DeepCopy()
	lease := inLease.DeepCopy()
	rec := r.m[node.Name]
	var res refResult
	var observed v1.NodeCondition
	cur := refCondition(&node.Status, v1.NodeReady)
	if cur == nil {
		observed = v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionUnknown,
			LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: node.CreationTimestamp}
		res.grace = r.cfg.StartupGracePeriod
		if rec != nil {
			rec.status = &node.Status
		} else {
			start := node.CreationTimestamp.Time
			if start.IsZero() || start.After(now) {
				start = now
			}
			rec = &refRecord{status: &node.Status, probe: start, transition: start}
			r.m[node.Name] = rec
		}
	} else {
		observed = *cur
		res.grace = r.cfg.GracePeriod
	}
	var saved *v1.NodeCondition
	var savedLease *coordinationv1.Lease
	if rec != nil {
		saved = refCondition(rec.status, v1.NodeReady)
		savedLease = rec.lease
	}
	switch {
	case rec == nil:
		rec = &refRecord{status: &node.Status, probe: now, transition: now}
		r.m[node.Name] = rec
	case saved == nil && cur != nil:
		// Upstream builds a new record here and in the next case, dropping
		// rec.lease; we keep it (documented difference).
		rec.status, rec.probe, rec.transition = &node.Status, now, now
	case saved != nil && cur == nil:
		panic("unreachable, as upstream")
	case saved != nil && cur != nil && !saved.LastHeartbeatTime.Equal(&cur.LastHeartbeatTime):
		if !saved.LastTransitionTime.Equal(&cur.LastTransitionTime) {
			rec.transition = now
		}
		rec.status, rec.probe = &node.Status, now
	}
	if lease != nil && (savedLease == nil || (lease.Spec.RenewTime != nil && // any change of a set RenewTime
		(savedLease.Spec.RenewTime == nil || !savedLease.Spec.RenewTime.Equal(lease.Spec.RenewTime)))) {
		rec.lease, rec.probe = lease, now
	}
	res.observed, res.current = &observed, cur
	res.deadline = rec.probe.Add(res.grace)
	if now.After(res.deadline) {
		res.stale = true
		for _, ct := range []v1.NodeConditionType{v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
			c := refCondition(&node.Status, ct)
			if c == nil {
				node.Status.Conditions = append(node.Status.Conditions, v1.NodeCondition{Type: ct, Status: v1.ConditionUnknown,
					Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.",
					LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: metav1.NewTime(now)})
			} else if c.Status != v1.ConditionUnknown {
				c.Status, c.Reason, c.Message = v1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
				c.LastTransitionTime = metav1.NewTime(now)
			}
		}
		res.current = refCondition(&node.Status, v1.NodeReady)
		if !apiequality.Semantic.DeepEqual(res.current, &observed) {
			res.update = &node.Status
			rec.status, rec.transition, rec.lease = &node.Status, now, lease
			if observed.Status == v1.ConditionTrue {
				rec.pods = true
			}
		}
	}
	if res.current != nil && res.current.Status == v1.ConditionTrue {
		rec.pods = false
	}
	res.pods, res.trans = rec.pods, rec.transition
	return res
}

// source yields the choices a model run makes.
type source interface{ intn(n int) (int, bool) }

type randSource struct{ r *rand.Rand }

func (s randSource) intn(n int) (int, bool) { return s.r.IntN(n), true }

type byteSource struct{ b []byte }

func (s *byteSource) intn(n int) (int, bool) {
	if len(s.b) == 0 {
		return 0, false
	}
	v := int(s.b[0]) % n
	s.b = s.b[1:]
	return v, true
}

// runModel drives a Tracker and the reference with the same operations on
// three nodes until src runs dry or maxOps is reached, and fails on the
// first decision where they differ. Writes the Tracker asks for succeed or
// fail at random; restarts go through Snapshot/Restore on the Tracker only,
// so they must be invisible.
func runModel(t *testing.T, src source, maxOps int) {
	t.Helper()
	cfg := Config{GracePeriod: 40 * time.Second, StartupGracePeriod: 60 * time.Second}
	tr, err := NewTracker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ref := &refTracker{cfg: cfg, m: map[string]*refRecord{}}
	names := []string{"a", "b", "c"}
	nodes := map[string]*v1.Node{}
	leases := map[string]*coordinationv1.Lease{}
	for i, name := range names {
		nodes[name] = mkNode(name, float64(-20*i))
	}
	now := sec(0)
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("after %v:\n"+format, append([]any{log}, args...)...)
	}
	for op := 0; op < maxOps; op++ {
		k, ok := src.intn(12)
		if !ok {
			return
		}
		i, _ := src.intn(len(names))
		name := names[i]
		n := nodes[name]
		x, _ := src.intn(60)
		switch k {
		case 0, 1: // time passes (rarely backwards)
			d := time.Duration(x) * time.Second
			if x == 59 {
				d = -30 * time.Second
			}
			now = now.Add(d)
			log = append(log, fmt.Sprintf("t+=%v", d))
		case 2: // kubelet heartbeat, maybe a transition
			hb := now.Add(time.Duration(x%7-2) * time.Second) // sometimes behind
			c := findCondition(n.Status.Conditions, v1.NodeReady)
			st, tt := v1.ConditionTrue, hb
			if x%3 == 0 {
				st = v1.ConditionFalse
			}
			if c != nil && c.Status == st {
				tt = c.LastTransitionTime.Time
			}
			n = n.DeepCopy()
			testutilCondition(n, v1.NodeCondition{Type: v1.NodeReady, Status: st,
				LastHeartbeatTime: metav1.NewTime(hb), LastTransitionTime: metav1.NewTime(tt)})
			if x%4 == 0 {
				testutilCondition(n, cond(v1.NodeMemoryPressure, v1.ConditionFalse, hb.Sub(sec(0)).Seconds(), 0))
			}
			log = append(log, fmt.Sprintf("%s: kubelet %s hb=%s", name, st, rel(hb)))
		case 3: // Ready disappears
			n = n.DeepCopy()
			var keep []v1.NodeCondition
			for _, c := range n.Status.Conditions {
				if c.Type != v1.NodeReady {
					keep = append(keep, c)
				}
			}
			n.Status.Conditions = keep
			log = append(log, name+": Ready removed")
		case 4: // lease renewals of all kinds
			var l *coordinationv1.Lease
			switch x % 5 {
			case 0:
				l = nil
			case 1:
				l = mkLease(name, 0)
				l.Spec.RenewTime = nil
			default:
				l = testLease(name, now.Add(time.Duration(x%11-5)*time.Second))
			}
			leases[name] = l
			log = append(log, fmt.Sprintf("%s: lease %s", name, leaseDesc(l)))
		case 5, 6, 7, 8: // a monitor pass over this node
			got, err := tr.Observe(now, n, leases[name])
			want := ref.observe(now, n, leases[name])
			log = append(log, fmt.Sprintf("%s: Observe at %s", name, rel(now)))
			if err != nil {
				fail("Observe(%s) error %v", nodeDesc(n), err)
			}
			compareRef(t, fail, got, want)
			if got.StatusUpdate != nil && x%3 != 0 { // the write lands two times in three
				n = n.DeepCopy()
				n.Status = *got.StatusUpdate.DeepCopy()
				log = append(log, name+": written")
			}
		case 9:
			tr.AckPodsNotReady(name)
			if rec := ref.m[name]; rec != nil {
				rec.pods = false
			}
			log = append(log, name+": ack")
		case 10:
			if x%4 == 0 {
				tr.Forget(name)
				delete(ref.m, name)
				log = append(log, name+": forget")
			} else {
				tr.ResetProbes(now)
				at := now
				if at.Before(ref.last) {
					at = ref.last
				}
				ref.last = at
				for _, rec := range ref.m {
					rec.probe, rec.transition = at, at
				}
				log = append(log, "reset probes")
			}
		case 11: // restart through Snapshot/Restore
			// The new process starts no earlier than the old one's latest
			// clock reading (a real restart cannot observe the past).
			at := now
			if at.Before(ref.last) {
				at = ref.last
			}
			restart{}.do(t, tr, at)
			ref.last = at // Restore(now) is a clock reading too
			log = append(log, "restart")
		}
		nodes[name] = n
		if len(log) > 40 {
			log = log[len(log)-40:]
		}
	}
}

func compareRef(t *testing.T, fail func(string, ...any), got Result, want refResult) {
	t.Helper()
	gotSum := summary(got)
	wantSum := summary(Result{GracePeriod: want.grace, ObservedReady: want.observed, CurrentReady: want.current,
		StatusUpdate: want.update, MarkPodsNotReady: want.pods, Stale: want.stale, Deadline: want.deadline, ReadyTransition: want.trans})
	if gotSum != wantSum {
		fail("Observe = %s, want %s", gotSum, wantSum)
	}
	if got.MarkPodsNotReady == got.PodsNotReadyEdge.IsZero() {
		fail("MarkPodsNotReady = %v with PodsNotReadyEdge %v", got.MarkPodsNotReady, got.PodsNotReadyEdge)
	}
	if !apiequality.Semantic.DeepEqual(got.ObservedReady, want.observed) {
		fail("ObservedReady = %v, want %v", got.ObservedReady, want.observed)
	}
	if !apiequality.Semantic.DeepEqual(got.CurrentReady, want.current) {
		fail("CurrentReady = %v, want %v", got.CurrentReady, want.current)
	}
	if !apiequality.Semantic.DeepEqual(got.StatusUpdate, want.update) {
		fail("StatusUpdate = %v, want %v", got.StatusUpdate, want.update)
	}
}

func testutilCondition(n *v1.Node, c v1.NodeCondition) {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == c.Type {
			n.Status.Conditions[i] = c
			return
		}
	}
	n.Status.Conditions = append(n.Status.Conditions, c)
}

func testLease(name string, renew time.Time) *coordinationv1.Lease {
	l := mkLease(name, 0)
	l.Spec.RenewTime = &metav1.MicroTime{Time: renew}
	return l
}

// TestTrackerMatchesReference runs random operation sequences against the
// Tracker and the reference model.
func TestTrackerMatchesReference(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			runModel(t, randSource{rand.New(rand.NewPCG(seed, 0x6e6f6465))}, 400)
		})
	}
}

// FuzzTrackerMatchesReference explores the same model with fuzzed operation
// sequences (go test -fuzz=FuzzTrackerMatchesReference).
func FuzzTrackerMatchesReference(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{5, 0, 0, 0, 0, 50, 5, 0, 0})
	f.Add([]byte{2, 1, 3, 4, 1, 7, 0, 1, 45, 5, 1, 0, 0, 1, 50, 5, 1, 1, 11, 1, 0, 5, 1, 0})
	f.Add([]byte{3, 2, 0, 0, 2, 59, 5, 2, 1, 9, 2, 0, 10, 2, 1, 5, 2, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		runModel(t, &byteSource{data}, 1000)
	})
}
