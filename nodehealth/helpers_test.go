package nodehealth

import (
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// sec turns a number of seconds after the epoch into a time.
func sec(s float64) time.Time { return testutil.At(time.Duration(s * float64(time.Second))) }

// rel formats t as seconds after the epoch ("61s", "-30s").
func rel(t time.Time) string { return fmt.Sprintf("%gs", t.Sub(testutil.Epoch).Seconds()) }

// rc is a Ready condition with heartbeat hb and transition tr (seconds).
func rc(s v1.ConditionStatus, hb, tr float64) v1.NodeCondition {
	return testutil.NodeCondition(v1.NodeReady, s, sec(hb), sec(tr))
}

// cond is a condition of type ct.
func cond(ct v1.NodeConditionType, s v1.ConditionStatus, hb, tr float64) v1.NodeCondition {
	return testutil.NodeCondition(ct, s, sec(hb), sec(tr))
}

// mkNode returns node name created at created (seconds) with conditions cs.
func mkNode(name string, created float64, cs ...v1.NodeCondition) *v1.Node {
	n := testutil.Node(name, sec(created))
	for _, c := range cs {
		testutil.WithCondition(n, c)
	}
	return n
}

// readyNode is node name, created at the epoch, with Ready s (heartbeat hb,
// transition tr).
func readyNode(name string, s v1.ConditionStatus, hb, tr float64) *v1.Node {
	return mkNode(name, 0, rc(s, hb, tr))
}

// mkLease is node name's Lease renewed at renew seconds.
func mkLease(name string, renew float64) *coordinationv1.Lease {
	return testutil.Lease(name, sec(renew))
}

// call is one operation of a step test.
type call interface {
	// do performs the operation and returns a description of the call and a
	// summary of what it returned ("" for calls that return nothing).
	do(t *testing.T, tr *Tracker, now time.Time) (desc, got string)
}

// step is one row of a step test: at (seconds after the epoch), call, want.
type step struct {
	at   float64
	call call
	want string
}

// runSteps runs rows in order against tr.
func runSteps(t *testing.T, tr *Tracker, steps []step) {
	t.Helper()
	for i, s := range steps {
		desc, got := s.call.do(t, tr, sec(s.at))
		if got != s.want {
			t.Errorf("step %d: %s at %gs = %q, want %q", i, desc, s.at, got, s.want)
		}
	}
}

// observe calls Observe on copies it checks for mutation.
type observe struct {
	node  *v1.Node
	lease *coordinationv1.Lease
}

func (o observe) do(t *testing.T, tr *Tracker, now time.Time) (string, string) {
	t.Helper()
	desc := "Observe(" + nodeDesc(o.node) + ", " + leaseDesc(o.lease) + ")"
	r, err := observeChecked(t, tr, now, o.node, o.lease)
	if err != nil {
		return desc, "error: " + err.Error()
	}
	return desc, summary(r)
}

// observeChecked calls Observe and checks the invariants every call must
// keep: inputs unchanged, Stale iff now is after Deadline, a StatusUpdate
// only when stale.
func observeChecked(t *testing.T, tr *Tracker, now time.Time, node *v1.Node, lease *coordinationv1.Lease) (Result, error) {
	t.Helper()
	nodeBefore, leaseBefore := node.DeepCopy(), lease.DeepCopy()
	r, err := tr.Observe(now, node, lease)
	if !apiequality.Semantic.DeepEqual(node, nodeBefore) {
		t.Errorf("Observe modified its node: %v, was %v", node, nodeBefore)
	}
	if !apiequality.Semantic.DeepEqual(lease, leaseBefore) {
		t.Errorf("Observe modified its lease: %v, was %v", lease, leaseBefore)
	}
	if err != nil {
		return r, err
	}
	if r.ObservedReady == nil {
		t.Errorf("Observe(%s).ObservedReady = nil, want non-nil", nodeDesc(node))
	}
	if r.StatusUpdate != nil && !r.Stale {
		t.Errorf("Observe(%s) returned a StatusUpdate for a node that is not stale", nodeDesc(node))
	}
	return r, nil
}

// summary renders the decision-relevant part of a Result on one line.
func summary(r Result) string {
	var b strings.Builder
	if r.Stale {
		b.WriteString("stale")
	} else {
		b.WriteString("fresh")
	}
	fmt.Fprintf(&b, " grace=%v deadline=%s trans=%s ready=%s->%s",
		r.GracePeriod, rel(r.Deadline), rel(r.ReadyTransition), status(r.ObservedReady), status(r.CurrentReady))
	if r.StatusUpdate != nil {
		b.WriteString(" write")
	}
	if r.MarkPodsNotReady {
		b.WriteString(" pods")
	}
	return b.String()
}

func status(c *v1.NodeCondition) string {
	if c == nil {
		return "nil"
	}
	return string(c.Status)
}

func nodeDesc(n *v1.Node) string {
	if n == nil {
		return "nil"
	}
	c := findCondition(n.Status.Conditions, v1.NodeReady)
	if c == nil {
		return n.Name + "{no Ready}"
	}
	return fmt.Sprintf("%s{%s hb=%s tr=%s}", n.Name, c.Status, rel(c.LastHeartbeatTime.Time), rel(c.LastTransitionTime.Time))
}

func leaseDesc(l *coordinationv1.Lease) string {
	switch {
	case l == nil:
		return "no lease"
	case l.Spec.RenewTime == nil:
		return "lease{renew=nil}"
	}
	return "lease{renew=" + rel(l.Spec.RenewTime.Time) + "}"
}

// ack, reset, forget and snapshotRestore are the other calls.
type ack string

func (a ack) do(_ *testing.T, tr *Tracker, _ time.Time) (string, string) {
	tr.AckPodsNotReady(string(a))
	return "AckPodsNotReady(" + string(a) + ")", ""
}

type reset struct{}

func (reset) do(_ *testing.T, tr *Tracker, now time.Time) (string, string) {
	tr.ResetProbes(now)
	return "ResetProbes()", ""
}

type forget string

func (f forget) do(_ *testing.T, tr *Tracker, _ time.Time) (string, string) {
	tr.Forget(string(f))
	return "Forget(" + string(f) + ")", ""
}

// restart moves the state of tr into a fresh Tracker through Snapshot and
// Restore, as a restarting controller would, and swaps it in place.
type restart struct{}

func (restart) do(t *testing.T, tr *Tracker, now time.Time) (string, string) {
	t.Helper()
	fresh, err := NewTracker(tr.cfg)
	if err != nil {
		t.Fatal(err)
	}
	fresh.Restore(now, tr.Snapshot())
	tr.mu.Lock()
	fresh.mu.Lock()
	tr.nodes, tr.last, tr.edge, tr.due = fresh.nodes, fresh.last, fresh.edge, fresh.due
	fresh.mu.Unlock()
	tr.mu.Unlock()
	return "restart via Snapshot/Restore", ""
}

// newTracker returns a Tracker with the default config.
func newTracker(t testing.TB) *Tracker {
	t.Helper()
	tr, err := NewTracker(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
