package nodehealth

import (
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	T = v1.ConditionTrue
	F = v1.ConditionFalse
	U = v1.ConditionUnknown
)

// tryUpdateNodeHealth, no record yet: a node first seen with a Ready condition
// gets a full grace period from first sight, whatever its heartbeat says;
// tryUpdateNodeHealth: stale strictly after probe + grace.
func TestObserveFirstSightWithReady(t *testing.T) {
	n := readyNode("n1", T, -100, -200)
	runSteps(t, newTracker(t), []step{
		{10, observe{n, nil}, "fresh grace=50s deadline=60s trans=10s ready=True->True"},
		{60, observe{n, nil}, "fresh grace=50s deadline=60s trans=10s ready=True->True"},
		{60.5, observe{n, nil}, "stale grace=50s deadline=60s trans=60.5s ready=True->Unknown write pods"},
	})
}

// tryUpdateNodeHealth: heartbeat and transition comparisons.
func TestObserveHeartbeat(t *testing.T) {
	runSteps(t, newTracker(t), []step{
		{0, observe{readyNode("n1", T, 0, -50), nil}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		// A newer heartbeat refreshes the probe; same transition keeps ReadyTransition.
		{20, observe{readyNode("n1", T, 20, -50), nil}, "fresh grace=50s deadline=70s trans=0s ready=True->True"},
		// Any difference counts, even a heartbeat going backwards.
		{30, observe{readyNode("n1", T, 10, -50), nil}, "fresh grace=50s deadline=80s trans=0s ready=True->True"},
		// An equal heartbeat changes nothing.
		{40, observe{readyNode("n1", T, 10, -50), nil}, "fresh grace=50s deadline=80s trans=0s ready=True->True"},
		// A transition without a heartbeat change is not seen (the saved
		// condition is kept)...
		{45, observe{readyNode("n1", F, 10, 45), nil}, "fresh grace=50s deadline=80s trans=0s ready=False->False"},
		// ...until the next heartbeat: then ReadyTransition = now.
		{50, observe{readyNode("n1", F, 50, 45), nil}, "fresh grace=50s deadline=100s trans=50s ready=False->False"},
		{60, observe{readyNode("n1", F, 60, 45), nil}, "fresh grace=50s deadline=110s trans=50s ready=False->False"},
		// A kubelet reporting False that goes silent is written Unknown,
		// without the pods-not-ready edge (the kubelet manages its pods).
		{111, observe{readyNode("n1", F, 60, 45), nil}, "stale grace=50s deadline=110s trans=111s ready=False->Unknown write"},
	})
}

// tryUpdateNodeHealth: a node without a Ready condition gets the startup
// grace from its creation time; once written Unknown and then posting its
// first status, it gets a fresh grace period.
func TestObserveReadyMissing(t *testing.T) {
	written := mkNode("n2", -30, v1.NodeCondition{Type: v1.NodeReady, Status: U,
		Reason: ReasonNeverUpdated, Message: MessageNeverUpdated,
		LastHeartbeatTime: metav1.NewTime(sec(-30)), LastTransitionTime: metav1.NewTime(sec(31))})
	runSteps(t, newTracker(t), []step{
		{0, observe{mkNode("n2", -30), nil}, "fresh grace=1m0s deadline=30s trans=-30s ready=Unknown->nil"},
		{30, observe{mkNode("n2", -30), nil}, "fresh grace=1m0s deadline=30s trans=-30s ready=Unknown->nil"},
		{31, observe{mkNode("n2", -30), nil}, "stale grace=1m0s deadline=30s trans=31s ready=Unknown->Unknown write"},
		// The cache shows the written status: same heartbeat, already Unknown, no write.
		{36, observe{written, nil}, "stale grace=50s deadline=20s trans=31s ready=Unknown->Unknown"},
		// The kubelet posts its first status.
		{40, observe{readyNode("n2", T, 40, 40), nil}, "fresh grace=50s deadline=90s trans=40s ready=True->True"},
	})
	// Posting a first status inside the startup grace: probe = now.
	runSteps(t, newTracker(t), []step{
		{5, observe{mkNode("n3", 0), nil}, "fresh grace=1m0s deadline=60s trans=0s ready=Unknown->nil"},
		{20, observe{readyNode("n3", T, 19, 19), nil}, "fresh grace=50s deadline=70s trans=20s ready=True->True"},
	})
}

// When the cache lags behind the NeverUpdated write, the saved Ready is
// replaced by the cached (missing) one, so the write is produced again, and
// the written status, once seen, counts as a first status (upstream parity).
func TestObserveReadyMissingCacheLag(t *testing.T) {
	written := mkNode("n2", -30, v1.NodeCondition{Type: v1.NodeReady, Status: U,
		Reason: ReasonNeverUpdated, Message: MessageNeverUpdated,
		LastHeartbeatTime: metav1.NewTime(sec(-30)), LastTransitionTime: metav1.NewTime(sec(36))})
	runSteps(t, newTracker(t), []step{
		{31, observe{mkNode("n2", -30), nil}, "stale grace=1m0s deadline=30s trans=31s ready=Unknown->Unknown write"},
		{36, observe{mkNode("n2", -30), nil}, "stale grace=1m0s deadline=30s trans=36s ready=Unknown->Unknown write"},
		// The second write is assumed to land too, so its Ready is saved and
		// the cached copy of it is no news.
		{41, observe{written, nil}, "stale grace=50s deadline=20s trans=36s ready=Unknown->Unknown"},
	})
	// A Ready condition seen after a pass without one always counts as a
	// first status: probe = ReadyTransition = now, whatever it says.
	tr := newTracker(t)
	runSteps(t, tr, []step{
		{0, observe{readyNode("n5", T, 0, 0), nil}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{10, observe{mkNode("n5", 0), nil}, "fresh grace=1m0s deadline=60s trans=0s ready=Unknown->nil"},
		{20, observe{readyNode("n5", U, 0, 0), nil}, "fresh grace=50s deadline=70s trans=20s ready=Unknown->Unknown"},
	})
}

// Found reading tryUpdateNodeHealth (no upstream issue): a creation timestamp in the future (clock skew)
// is clamped to now, so it cannot postpone the first deadline. Upstream
// would wait until creation + 60s, here an hour later.
func TestObserveFutureCreationTimestampClamped(t *testing.T) {
	n := mkNode("n1", 3600)
	runSteps(t, newTracker(t), []step{
		{0, observe{n, nil}, "fresh grace=1m0s deadline=60s trans=0s ready=Unknown->nil"},
		{61, observe{n, nil}, "stale grace=1m0s deadline=60s trans=61s ready=Unknown->Unknown write"},
	})
}

// tryUpdateNodeHealth, "saved present, current missing": upstream's reset branch is
// dead code; the old probe is kept and the grace becomes the startup grace.
func TestObserveReadyRemoved(t *testing.T) {
	runSteps(t, newTracker(t), []step{
		{0, observe{readyNode("n1", T, 0, 0), nil}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{30, observe{mkNode("n1", 0), nil}, "fresh grace=1m0s deadline=60s trans=0s ready=Unknown->nil"},
		{55, observe{mkNode("n1", 0), nil}, "fresh grace=1m0s deadline=60s trans=0s ready=Unknown->nil"},
		{61, observe{mkNode("n1", 0), nil}, "stale grace=1m0s deadline=60s trans=61s ready=Unknown->Unknown write"},
		{70, observe{readyNode("n1", T, 70, 70), nil}, "fresh grace=50s deadline=120s trans=70s ready=True->True"},
	})
}

// tryUpdateNodeHealth's Lease step: the Lease refreshes the probe when first
// seen or when its RenewTime changes, even backwards (unlike upstream, which
// needs a strictly newer one); an equal RenewTime or a nil lease changes
// nothing; after a write the saved lease is the observed one.
func TestObserveLease(t *testing.T) {
	old := readyNode("n4", T, -100, -200)
	written := readyNode("n4", U, -100, 136)
	runSteps(t, newTracker(t), []step{
		{0, observe{old, mkLease("n4", -100)}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{40, observe{old, mkLease("n4", 40)}, "fresh grace=50s deadline=90s trans=0s ready=True->True"},
		{80, observe{old, mkLease("n4", 40)}, "fresh grace=50s deadline=90s trans=0s ready=True->True"},
		{85, observe{old, mkLease("n4", 30)}, "fresh grace=50s deadline=135s trans=0s ready=True->True"},
		{89, observe{old, nil}, "fresh grace=50s deadline=135s trans=0s ready=True->True"},
		{136, observe{old, mkLease("n4", 30)}, "stale grace=50s deadline=135s trans=136s ready=True->Unknown write pods"},
		{140, observe{written, mkLease("n4", 30)}, "stale grace=50s deadline=135s trans=136s ready=Unknown->Unknown pods"},
		// The kubelet renews again: fresh, but Ready stays Unknown (the
		// controller never writes True), and the edge stays pending.
		{150, observe{written, mkLease("n4", 150)}, "fresh grace=50s deadline=200s trans=136s ready=Unknown->Unknown pods"},
	})
}

// A kubelet whose clock ran an hour ahead renews its Lease once; its clock
// is corrected and it goes on renewing every 10s. Every renewal is a
// signal, so the node stays fresh. Upstream (and this package before the
// fix) counts only a RenewTime strictly after the saved one, ignores every
// renewal for an hour, and writes the node Unknown at 61s.
func TestObserveLeaseFutureRenewTimeDoesNotStarve(t *testing.T) {
	n := readyNode("n1", T, 0, 0)
	steps := []step{
		{0, observe{n, mkLease("n1", 0)}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{10, observe{n, mkLease("n1", 3610)}, "fresh grace=50s deadline=60s trans=0s ready=True->True"},
	}
	for at := 20.0; at <= 200; at += 10 {
		steps = append(steps, step{at, observe{n, mkLease("n1", at)},
			fmt.Sprintf("fresh grace=50s deadline=%gs trans=0s ready=True->True", at+50)})
	}
	runSteps(t, newTracker(t), steps)
}

// Unlike upstream, a heartbeat change (or a first Ready condition) does not
// forget the saved Lease. Upstream rebuilds its record without it in those
// branches, so on the next pass the same, unrenewed Lease is a "first
// sight" and refreshes the probe once more (here it would give deadline=85s
// at 35s and no write at 81s). Only a changed RenewTime is a signal.
func TestObserveHeartbeatKeepsSavedLease(t *testing.T) {
	runSteps(t, newTracker(t), []step{
		{0, observe{readyNode("n1", T, 0, 0), mkLease("n1", 0)}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{30, observe{readyNode("n1", T, 30, 0), mkLease("n1", 0)}, "fresh grace=50s deadline=80s trans=0s ready=True->True"},
		{35, observe{readyNode("n1", T, 30, 0), mkLease("n1", 0)}, "fresh grace=50s deadline=80s trans=0s ready=True->True"},
		{81, observe{readyNode("n1", T, 30, 0), mkLease("n1", 0)}, "stale grace=50s deadline=80s trans=81s ready=True->Unknown write pods"},
	})
	// The same after a first Ready condition.
	runSteps(t, newTracker(t), []step{
		{0, observe{mkNode("n1", 0), mkLease("n1", 0)}, "fresh grace=1m0s deadline=60s trans=0s ready=Unknown->nil"},
		{10, observe{readyNode("n1", T, 10, 10), mkLease("n1", 0)}, "fresh grace=50s deadline=60s trans=10s ready=True->True"},
		{15, observe{readyNode("n1", T, 10, 10), mkLease("n1", 0)}, "fresh grace=50s deadline=60s trans=10s ready=True->True"},
	})
}

// A lease with a nil RenewTime counts on first sight only; unlike upstream
// (whose nil-safe MicroTime.Before returns false), it does not block the
// renewals that follow.
func TestObserveLeaseNilRenewTime(t *testing.T) {
	n := readyNode("n1", T, 0, 0)
	nilRenew := mkLease("n1", 0)
	nilRenew.Spec.RenewTime = nil
	runSteps(t, newTracker(t), []step{
		{0, observe{n, nil}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{20, observe{n, nilRenew}, "fresh grace=50s deadline=70s trans=0s ready=True->True"},
		{40, observe{n, mkLease("n1", 40)}, "fresh grace=50s deadline=90s trans=0s ready=True->True"},
		{50, observe{n, nilRenew}, "fresh grace=50s deadline=90s trans=0s ready=True->True"},
		{91, observe{n, mkLease("n1", 40)}, "stale grace=50s deadline=90s trans=91s ready=True->Unknown write pods"},
		{92, observe{readyNode("n1", U, 0, 91), mkLease("n1", 92)}, "fresh grace=50s deadline=142s trans=91s ready=Unknown->Unknown pods"},
	})
}

// tryUpdateNodeHealth after a write: the record saved holds the Lease passed in, so a
// write made while no Lease was observed forgets the old one, and the next
// Lease counts as a first sight, whatever its RenewTime (upstream parity).
// A RenewTime from a kubelet clock that ran ahead does not block the
// renewals that follow (any change counts).
func TestObserveLeaseAfterWrite(t *testing.T) {
	runSteps(t, newTracker(t), []step{
		{0, observe{readyNode("n1", T, 0, 0), mkLease("n1", 0)}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{51, observe{readyNode("n1", T, 0, 0), nil}, "stale grace=50s deadline=50s trans=51s ready=True->Unknown write pods"},
		{55, observe{readyNode("n1", U, 0, 51), mkLease("n1", 0)}, "fresh grace=50s deadline=105s trans=51s ready=Unknown->Unknown pods"},
	})
	runSteps(t, newTracker(t), []step{
		{0, observe{readyNode("n1", T, 0, 0), mkLease("n1", 3600)}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{10, observe{readyNode("n1", T, 0, 0), mkLease("n1", 10)}, "fresh grace=50s deadline=60s trans=0s ready=True->True"},
		{40, observe{readyNode("n1", T, 0, 0), mkLease("n1", 40)}, "fresh grace=50s deadline=90s trans=0s ready=True->True"},
	})
}

// tryUpdateNodeHealth's Lease step (documented upstream): a node that never posts a
// status but keeps renewing its Lease stays healthy forever and never gets
// conditions written.
func TestObserveLeaseOnlyNodeStaysHealthy(t *testing.T) {
	n := mkNode("n1", 0)
	var steps []step
	for s := 0.0; s <= 600; s += 10 {
		steps = append(steps, step{s, observe{n, mkLease("n1", s)},
			fmt.Sprintf("fresh grace=1m0s deadline=%gs trans=0s ready=Unknown->nil", s+60)})
	}
	steps = append(steps, step{661, observe{n, mkLease("n1", 600)},
		"stale grace=1m0s deadline=660s trans=661s ready=Unknown->Unknown write"})
	runSteps(t, newTracker(t), steps)
}

// tryUpdateNodeHealth: which conditions are turned Unknown, how, and in what order;
// everything else in the status is copied untouched.
func TestObserveStaleConditions(t *testing.T) {
	n := mkNode("n1", -1000,
		v1.NodeCondition{Type: v1.NodeReady, Status: T, Reason: "KubeletReady", Message: "ok",
			LastHeartbeatTime: metav1.NewTime(sec(-10)), LastTransitionTime: metav1.NewTime(sec(-500))},
		cond(v1.NodeMemoryPressure, F, -10, -500),
		cond(v1.NodeDiskPressure, U, -10, -400),
		cond(v1.NodeNetworkUnavailable, F, -10, -500),
		cond("example.com/FooProblem", T, -10, -500),
	)
	n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}}
	n.Status.Capacity = v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")}
	tr := newTracker(t)
	if _, err := observeChecked(t, tr, sec(0), n, nil); err != nil {
		t.Fatal(err)
	}
	r, err := observeChecked(t, tr, sec(51), n, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.StatusUpdate == nil {
		t.Fatalf("Observe(51s).StatusUpdate = nil, want a status")
	}
	now := metav1.NewTime(sec(51))
	created := metav1.NewTime(sec(-1000))
	want := []v1.NodeCondition{
		{Type: v1.NodeReady, Status: U, Reason: ReasonStoppedPosting, Message: MessageStoppedPosting,
			LastHeartbeatTime: metav1.NewTime(sec(-10)), LastTransitionTime: now},
		{Type: v1.NodeMemoryPressure, Status: U, Reason: ReasonStoppedPosting, Message: MessageStoppedPosting,
			LastHeartbeatTime: metav1.NewTime(sec(-10)), LastTransitionTime: now},
		cond(v1.NodeDiskPressure, U, -10, -400), // already Unknown: untouched
		cond(v1.NodeNetworkUnavailable, F, -10, -500),
		cond("example.com/FooProblem", T, -10, -500),
		{Type: v1.NodePIDPressure, Status: U, Reason: ReasonNeverUpdated, Message: MessageNeverUpdated,
			LastHeartbeatTime: created, LastTransitionTime: now},
	}
	if got := r.StatusUpdate.Conditions; !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("Observe(51s).StatusUpdate.Conditions =\n%v\nwant\n%v", got, want)
	}
	if !apiequality.Semantic.DeepEqual(r.StatusUpdate.Addresses, n.Status.Addresses) ||
		!apiequality.Semantic.DeepEqual(r.StatusUpdate.Capacity, n.Status.Capacity) {
		t.Errorf("Observe(51s).StatusUpdate lost fields: %v", r.StatusUpdate)
	}
	if &r.StatusUpdate.Addresses[0] == &n.Status.Addresses[0] {
		t.Errorf("Observe(51s).StatusUpdate shares Addresses with the input node, want a deep copy")
	}
	if r.CurrentReady != &r.StatusUpdate.Conditions[0] {
		t.Errorf("Observe(51s).CurrentReady does not point at the StatusUpdate's Ready condition")
	}
	if r.ObservedReady != &n.Status.Conditions[0] {
		t.Errorf("Observe(51s).ObservedReady does not alias the input's Ready condition")
	}
}

// tryUpdateNodeHealth for a node that never posted anything: all four conditions
// appended as NeverUpdated, heartbeat = creation time.
func TestObserveStaleNeverPosted(t *testing.T) {
	n := mkNode("n1", -30)
	tr := newTracker(t)
	r, err := observeChecked(t, tr, sec(0), n, nil)
	if err != nil || r.Stale {
		t.Fatalf("Observe(0s) = %s, %v; want fresh", summary(r), err)
	}
	if r.ObservedReady.Status != U || !r.ObservedReady.LastHeartbeatTime.Time.Equal(sec(-30)) ||
		!r.ObservedReady.LastTransitionTime.Time.Equal(sec(-30)) || r.ObservedReady.Reason != "" {
		t.Errorf("Observe(0s).ObservedReady = %v, want synthetic {Unknown, hb=tr=creation}", r.ObservedReady)
	}
	r, _ = observeChecked(t, tr, sec(31), n, nil)
	if r.StatusUpdate == nil {
		t.Fatalf("Observe(31s) = %s, want a write", summary(r))
	}
	var got []string
	for _, c := range r.StatusUpdate.Conditions {
		got = append(got, fmt.Sprintf("%s=%s/%s hb=%s tr=%s", c.Type, c.Status, c.Reason, rel(c.LastHeartbeatTime.Time), rel(c.LastTransitionTime.Time)))
	}
	want := []string{
		"Ready=Unknown/NodeStatusNeverUpdated hb=-30s tr=31s",
		"MemoryPressure=Unknown/NodeStatusNeverUpdated hb=-30s tr=31s",
		"DiskPressure=Unknown/NodeStatusNeverUpdated hb=-30s tr=31s",
		"PIDPressure=Unknown/NodeStatusNeverUpdated hb=-30s tr=31s",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Observe(31s).StatusUpdate.Conditions = %v, want %v", got, want)
	}
	if c := r.StatusUpdate.Conditions[0]; c.Message != MessageNeverUpdated {
		t.Errorf("Observe(31s) Ready message = %q, want %q", c.Message, MessageNeverUpdated)
	}
}

// tryUpdateNodeHealth: only the Ready condition decides the write, so a node already
// Unknown gets none even with stale pressure conditions (upstream parity).
func TestObserveAlreadyUnknownNoWrite(t *testing.T) {
	n := mkNode("n1", 0, rc(U, 0, 0), cond(v1.NodeMemoryPressure, F, 0, 0))
	runSteps(t, newTracker(t), []step{
		{0, observe{n, nil}, "fresh grace=50s deadline=50s trans=0s ready=Unknown->Unknown"},
		{51, observe{n, nil}, "stale grace=50s deadline=50s trans=0s ready=Unknown->Unknown"},
		{500, observe{n, nil}, "stale grace=50s deadline=50s trans=0s ready=Unknown->Unknown"},
	})
}

// An unknown Ready status value (not True/False/Unknown) is turned Unknown
// like any other non-Unknown value.
func TestObserveBogusReadyStatus(t *testing.T) {
	n := readyNode("n1", "Maybe", 0, 0)
	runSteps(t, newTracker(t), []step{
		{0, observe{n, nil}, "fresh grace=50s deadline=50s trans=0s ready=Maybe->Maybe"},
		{51, observe{n, nil}, "stale grace=50s deadline=50s trans=51s ready=Maybe->Unknown write"},
	})
}

// With duplicate Ready conditions the first one counts, as upstream's
// GetNodeCondition.
func TestObserveDuplicateReady(t *testing.T) {
	n := readyNode("n1", T, 0, 0)
	n.Status.Conditions = append(n.Status.Conditions, rc(F, 40, 40))
	tr := newTracker(t)
	runSteps(t, tr, []step{
		{0, observe{n, nil}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{51, observe{n, nil}, "stale grace=50s deadline=50s trans=51s ready=True->Unknown write pods"},
	})
	r, _ := tr.Observe(sec(52), n, nil)
	if got := r.StatusUpdate.Conditions[1]; !apiequality.Semantic.DeepEqual(got, rc(F, 40, 40)) {
		t.Errorf("Observe(52s) changed the duplicate Ready condition: %v", got)
	}
}

// MarkPodsNotReady: set by the Tracker's own True→Unknown flip, kept until
// AckPodsNotReady or until the kubelet reports Ready=True again; a write the
// caller could not make is produced again with the edge still set.
func TestMarkPodsNotReady(t *testing.T) {
	alive := readyNode("n1", T, 0, 0)
	written := readyNode("n1", U, 0, 51)
	t.Run("ack", func(t *testing.T) {
		runSteps(t, newTracker(t), []step{
			{0, observe{alive, nil}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
			{51, observe{alive, nil}, "stale grace=50s deadline=50s trans=51s ready=True->Unknown write pods"},
			{56, observe{written, nil}, "stale grace=50s deadline=50s trans=51s ready=Unknown->Unknown pods"},
			{57, ack("n1"), ""},
			{61, observe{written, nil}, "stale grace=50s deadline=50s trans=51s ready=Unknown->Unknown"},
			{70, observe{readyNode("n1", T, 70, 70), nil}, "fresh grace=50s deadline=120s trans=70s ready=True->True"},
		})
	})
	t.Run("ready again clears", func(t *testing.T) {
		runSteps(t, newTracker(t), []step{
			{0, observe{alive, nil}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
			{51, observe{alive, nil}, "stale grace=50s deadline=50s trans=51s ready=True->Unknown write pods"},
			{60, observe{readyNode("n1", T, 60, 60), nil}, "fresh grace=50s deadline=110s trans=60s ready=True->True"},
			{65, observe{readyNode("n1", T, 65, 60), nil}, "fresh grace=50s deadline=115s trans=60s ready=True->True"},
		})
	})
	t.Run("kubelet false keeps it", func(t *testing.T) {
		runSteps(t, newTracker(t), []step{
			{0, observe{alive, nil}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
			{51, observe{alive, nil}, "stale grace=50s deadline=50s trans=51s ready=True->Unknown write pods"},
			{60, observe{readyNode("n1", F, 60, 60), nil}, "fresh grace=50s deadline=110s trans=60s ready=False->False pods"},
			{61, ack("n1"), ""},
			{62, observe{readyNode("n1", F, 60, 60), nil}, "fresh grace=50s deadline=110s trans=60s ready=False->False"},
		})
	})
	t.Run("forget clears", func(t *testing.T) {
		runSteps(t, newTracker(t), []step{
			{0, observe{alive, nil}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
			{51, observe{alive, nil}, "stale grace=50s deadline=50s trans=51s ready=True->Unknown write pods"},
			{52, forget("n1"), ""},
			{53, observe{written, nil}, "fresh grace=50s deadline=103s trans=53s ready=Unknown->Unknown"},
		})
	})
	t.Run("ack of unknown node", func(t *testing.T) {
		runSteps(t, newTracker(t), []step{
			{0, ack("nope"), ""},
			{0, observe{alive, nil}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		})
	})
}

// Regression for #135205: upstream loses the pods-not-ready edge when the
// Unknown write or the pod marking fails. Here a failed write (the caller
// skips it and the cache keeps Ready=True) re-produces the same update and
// the edge, pass after pass, until the write lands and the caller acks.
func TestIssue135205FailedWriteKeepsPodsNotReadyEdge(t *testing.T) {
	alive := readyNode("n1", T, 0, 0)
	runSteps(t, newTracker(t), []step{
		{0, observe{alive, nil}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{51, observe{alive, nil}, "stale grace=50s deadline=50s trans=51s ready=True->Unknown write pods"},
		// write failed: the cache still says True
		{56, observe{alive, nil}, "stale grace=50s deadline=50s trans=56s ready=True->Unknown write pods"},
		{61, observe{alive, nil}, "stale grace=50s deadline=50s trans=61s ready=True->Unknown write pods"},
		// write landed, pod marking failed: the edge stays
		{66, observe{readyNode("n1", U, 0, 61), nil}, "stale grace=50s deadline=50s trans=61s ready=Unknown->Unknown pods"},
		{71, observe{readyNode("n1", U, 0, 61), nil}, "stale grace=50s deadline=50s trans=61s ready=Unknown->Unknown pods"},
		{72, ack("n1"), ""},
		{76, observe{readyNode("n1", U, 0, 61), nil}, "stale grace=50s deadline=50s trans=61s ready=Unknown->Unknown"},
	})
}

// Regression for #108268 (restart resets grace): with Snapshot/Restore a
// restarted controller keeps every node's probe time, so a node that went
// silent before the restart goes stale on time, not a full grace later.
func TestIssue108268RestoreKeepsGrace(t *testing.T) {
	n := readyNode("n1", T, 0, 0)
	runSteps(t, newTracker(t), []step{
		{0, observe{n, mkLease("n1", 0)}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{30, restart{}, ""},
		{40, observe{n, mkLease("n1", 0)}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{51, observe{n, mkLease("n1", 0)}, "stale grace=50s deadline=50s trans=51s ready=True->Unknown write pods"},
	})
	// Without the snapshot (upstream): fresh grace from the restart.
	runSteps(t, newTracker(t), []step{
		{40, observe{n, mkLease("n1", 0)}, "fresh grace=50s deadline=90s trans=40s ready=True->True"},
	})
}

// Regression for #50067: a restart between the Unknown write and the pod
// marking loses the edge upstream; Snapshot/Restore keeps it.
func TestIssue50067RestoreKeepsPodsNotReadyEdge(t *testing.T) {
	alive := readyNode("n1", T, 0, 0)
	written := readyNode("n1", U, 0, 51)
	runSteps(t, newTracker(t), []step{
		{0, observe{alive, nil}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{51, observe{alive, nil}, "stale grace=50s deadline=50s trans=51s ready=True->Unknown write pods"},
		{52, restart{}, ""},
		{55, observe{written, nil}, "stale grace=50s deadline=50s trans=51s ready=Unknown->Unknown pods"},
		{56, ack("n1"), ""},
		{60, restart{}, ""},
		{61, observe{written, nil}, "stale grace=50s deadline=50s trans=51s ready=Unknown->Unknown"},
	})
}

// ResetProbes (exit from full disruption) gives every node a fresh grace.
func TestResetProbes(t *testing.T) {
	runSteps(t, newTracker(t), []step{
		{0, observe{readyNode("a", T, 0, 0), nil}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{10, observe{mkNode("b", 0), nil}, "fresh grace=1m0s deadline=60s trans=0s ready=Unknown->nil"},
		{51, observe{readyNode("a", T, 0, 0), nil}, "stale grace=50s deadline=50s trans=51s ready=True->Unknown write pods"},
		{55, reset{}, ""},
		{56, observe{readyNode("a", U, 0, 51), nil}, "fresh grace=50s deadline=105s trans=55s ready=Unknown->Unknown pods"},
		{57, observe{mkNode("b", 0), nil}, "fresh grace=1m0s deadline=115s trans=55s ready=Unknown->nil"},
		{106, observe{readyNode("a", U, 0, 51), nil}, "stale grace=50s deadline=105s trans=55s ready=Unknown->Unknown pods"},
	})
}

// Forget drops the record: the next Observe is a first sight.
func TestForget(t *testing.T) {
	n := readyNode("n1", T, 0, 0)
	runSteps(t, newTracker(t), []step{
		{0, observe{n, nil}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{40, forget("n1"), ""},
		{40, forget("never-seen"), ""},
		{45, observe{n, nil}, "fresh grace=50s deadline=95s trans=45s ready=True->True"},
	})
}

// Time going backwards is treated as no time elapsed: the Tracker keeps the
// latest now it has seen.
func TestObserveTimeBackwards(t *testing.T) {
	runSteps(t, newTracker(t), []step{
		{100, observe{readyNode("a", T, 0, 0), nil}, "fresh grace=50s deadline=150s trans=100s ready=True->True"},
		// An earlier now is read as 100s: b's first sight is at 100s.
		{50, observe{readyNode("b", T, 0, 0), nil}, "fresh grace=50s deadline=150s trans=100s ready=True->True"},
		{151, observe{readyNode("a", T, 0, 0), nil}, "stale grace=50s deadline=150s trans=151s ready=True->Unknown write pods"},
		// Still stale when the clock jumps back; the write is produced at 151s.
		{120, observe{readyNode("a", T, 0, 0), nil}, "stale grace=50s deadline=150s trans=151s ready=True->Unknown write pods"},
		// A heartbeat seen "at 120s" refreshes at 151s.
		{120, observe{readyNode("a", T, 120, 0), nil}, "fresh grace=50s deadline=201s trans=151s ready=True->True"},
		{10, reset{}, ""},
		{20, observe{readyNode("b", T, 0, 0), nil}, "fresh grace=50s deadline=201s trans=151s ready=True->True"},
	})
}

// Bad input: a nil or unnamed node and a foreign lease are errors and leave
// no trace; nil conditions, nil leases and odd leases are fine.
func TestObserveBadInput(t *testing.T) {
	tr := newTracker(t)
	unnamed := readyNode("", T, 0, 0)
	if _, err := tr.Observe(sec(0), nil, nil); !errors.Is(err, ErrInvalidNode) {
		t.Errorf("Observe(nil node) error = %v, want ErrInvalidNode", err)
	}
	if _, err := tr.Observe(sec(0), unnamed, nil); !errors.Is(err, ErrInvalidNode) {
		t.Errorf("Observe(unnamed node) error = %v, want ErrInvalidNode", err)
	}
	if _, err := tr.Observe(sec(0), readyNode("n1", T, 0, 0), mkLease("n2", 0)); !errors.Is(err, ErrLeaseMismatch) {
		t.Errorf("Observe(n1, lease of n2) error = %v, want ErrLeaseMismatch", err)
	}
	if got := tr.Snapshot(); len(got) != 0 {
		t.Errorf("Snapshot() after rejected calls = %v, want empty", got)
	}
	// Lease without a name (no way to tell it apart) and a lease with a
	// nil spec are accepted.
	anon := mkLease("", 0)
	runSteps(t, tr, []step{
		{0, observe{&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}, nil}, "fresh grace=1m0s deadline=60s trans=0s ready=Unknown->nil"},
		{0, observe{readyNode("n1", T, 0, 0), anon}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
	})
}

func TestNewTrackerConfig(t *testing.T) {
	if got, want := DefaultConfig(), (Config{GracePeriod: 50 * time.Second, StartupGracePeriod: 60 * time.Second, MaxHold: 5 * time.Minute}); got != want {
		t.Errorf("DefaultConfig() = %+v, want %+v", got, want)
	}
	tests := []struct {
		cfg     Config
		wantErr bool
	}{
		{Config{}, false},
		{DefaultConfig(), false},
		{Config{GracePeriod: -1}, true},
		{Config{StartupGracePeriod: -time.Second}, true},
		{Config{MaxHold: -time.Second}, true},
	}
	for _, tt := range tests {
		tr, err := NewTracker(tt.cfg)
		if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrInvalidConfig)) || (err == nil) == (tr == nil) {
			t.Errorf("NewTracker(%+v) = %v, %v; want error %v", tt.cfg, tr, err, tt.wantErr)
		}
	}
	// Zero grace is literal: stale as soon as any time passes.
	tr, _ := NewTracker(Config{})
	runSteps(t, tr, []step{
		{0, observe{readyNode("n1", T, 0, 0), nil}, "fresh grace=0s deadline=0s trans=0s ready=True->True"},
		{0.001, observe{readyNode("n1", T, 0, 0), nil}, "stale grace=0s deadline=0s trans=0.001s ready=True->Unknown write pods"},
	})
}

// The steady state allocates nothing: a known node renewing its lease, a
// dead node already Unknown, and a lease-only node without conditions.
func TestObserveSteadyStateAllocatesNothing(t *testing.T) {
	tr := newTracker(t)
	alive := readyNode("alive", T, 0, 0)
	dead := readyNode("dead", U, 0, 0)
	bare := mkNode("bare", 0)
	lAlive, lBare := mkLease("alive", 0), mkLease("bare", 0)
	if _, err := tr.Observe(sec(-100), dead, nil); err != nil { // stale from -50s on
		t.Fatal(err)
	}
	now := sec(0)
	if _, err := tr.Observe(now, alive, lAlive); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Observe(now, bare, lBare); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		now = now.Add(10 * time.Second)
		lAlive.Spec.RenewTime.Time = now
		lBare.Spec.RenewTime.Time = now
		r1, _ := tr.Observe(now, alive, lAlive)
		r2, _ := tr.Observe(now, dead, nil)
		r3, _ := tr.Observe(now, bare, lBare)
		if r1.Stale || !r2.Stale || r2.StatusUpdate != nil || r3.Stale || r2.Confirm == 0 {
			t.Fatalf("unexpected results: %s / %s / %s", summary(r1), summary(r2), summary(r3))
		}
		// The stale Unknown node is confirmed every pass, as upstream does.
		if v, err := tr.Confirm(now, "dead", Live{}); err != nil || v != VerdictStale {
			t.Fatalf("Confirm(dead) = %v, %v", v, err)
		}
	})
	if allocs != 0 {
		t.Errorf("steady-state Observe (and Confirm) allocates %v times per pass, want 0", allocs)
	}
}

// The synthetic observed Ready of a node without one is shared between
// calls, never modified, and replaced if the creation time changes.
func TestSyntheticReadyShared(t *testing.T) {
	tr := newTracker(t)
	r1, _ := tr.Observe(sec(0), mkNode("n", -5), nil)
	r2, _ := tr.Observe(sec(1), mkNode("n", -5), nil)
	if r1.ObservedReady != r2.ObservedReady {
		t.Errorf("Observe twice: synthetic ObservedReady not shared")
	}
	r3, _ := tr.Observe(sec(2), mkNode("n", -6), nil)
	if r3.ObservedReady == r1.ObservedReady || !r1.ObservedReady.LastHeartbeatTime.Time.Equal(sec(-5)) ||
		!r3.ObservedReady.LastHeartbeatTime.Time.Equal(sec(-6)) {
		t.Errorf("synthetic ObservedReady after a creation-time change = %v (old %v)", r3.ObservedReady, r1.ObservedReady)
	}
}

// An asynchronous caller acknowledges the flip it handled. The kubelet
// comes back and the node flips again before the late acknowledgement of
// the first flip arrives: the second flip must stay pending (with
// AckPodsNotReady(name) it was cleared and its pods never marked).
func TestAckPodsNotReadyEdgeKeepsNewerFlip(t *testing.T) {
	tr := newTracker(t)
	res, _ := tr.Observe(sec(0), readyNode("n1", T, 0, 0), nil)
	res, _ = tr.Observe(sec(51), readyNode("n1", T, 0, 0), nil)
	if !res.MarkPodsNotReady || !res.PodsNotReadyEdge.Equal(sec(51)) {
		t.Fatalf("first flip: MarkPodsNotReady=%v edge=%s, want true at 51s", res.MarkPodsNotReady, rel(res.PodsNotReadyEdge))
	}
	first := res.PodsNotReadyEdge
	// The write failed: the next pass produces it again, same flip.
	res, _ = tr.Observe(sec(55), readyNode("n1", T, 0, 0), nil)
	if res.StatusUpdate == nil || !res.PodsNotReadyEdge.Equal(first) {
		t.Fatalf("write produced again: update=%v edge=%s, want an update and the same edge %s", res.StatusUpdate != nil, rel(res.PodsNotReadyEdge), rel(first))
	}
	// The kubelet is back (clears the edge), then goes silent again.
	res, _ = tr.Observe(sec(60), readyNode("n1", T, 60, 0), nil)
	if res.MarkPodsNotReady || !res.PodsNotReadyEdge.IsZero() {
		t.Fatalf("kubelet back: MarkPodsNotReady=%v edge=%s, want false and zero", res.MarkPodsNotReady, rel(res.PodsNotReadyEdge))
	}
	res, _ = tr.Observe(sec(111), readyNode("n1", T, 60, 0), nil)
	second := res.PodsNotReadyEdge
	if !res.MarkPodsNotReady || !second.Equal(sec(111)) {
		t.Fatalf("second flip: MarkPodsNotReady=%v edge=%s, want true at 111s", res.MarkPodsNotReady, rel(second))
	}
	// The worker that handled the first flip acknowledges late.
	if tr.AckPodsNotReadyEdge("n1", first) {
		t.Fatal("AckPodsNotReadyEdge(first flip) = true, want false: a newer flip is pending")
	}
	res, _ = tr.Observe(sec(115), readyNode("n1", U, 60, 111), nil)
	if !res.MarkPodsNotReady || !res.PodsNotReadyEdge.Equal(second) {
		t.Fatalf("after a stale ack: MarkPodsNotReady=%v edge=%s, want the second flip pending", res.MarkPodsNotReady, rel(res.PodsNotReadyEdge))
	}
	// Snapshot/Restore keeps the edge, and the right ack clears it.
	restart{}.do(t, tr, sec(116))
	res, _ = tr.Observe(sec(117), readyNode("n1", U, 60, 111), nil)
	if !res.PodsNotReadyEdge.Equal(second) {
		t.Fatalf("after restart: edge=%s, want %s", rel(res.PodsNotReadyEdge), rel(second))
	}
	if !tr.AckPodsNotReadyEdge("n1", second) {
		t.Fatal("AckPodsNotReadyEdge(second flip) = false, want true")
	}
	if tr.AckPodsNotReadyEdge("n1", second) || tr.AckPodsNotReadyEdge("unknown", second) {
		t.Fatal("AckPodsNotReadyEdge with nothing pending = true, want false")
	}
	res, _ = tr.Observe(sec(120), readyNode("n1", U, 60, 111), nil)
	if res.MarkPodsNotReady || !res.PodsNotReadyEdge.IsZero() {
		t.Fatalf("after the ack: MarkPodsNotReady=%v edge=%s, want false and zero", res.MarkPodsNotReady, rel(res.PodsNotReadyEdge))
	}
}

// A record saved before PodsNotReadyEdge existed (pending flip, zero edge)
// gets the Restore instant as its edge, so it can be acknowledged.
func TestRestorePendingFlipWithoutEdge(t *testing.T) {
	tr := newTracker(t)
	tr.Restore(sec(100), []Record{{Name: "n1", Probe: sec(0), ReadyTransition: sec(51), PodsNotReady: true,
		Ready: &v1.NodeCondition{Type: v1.NodeReady, Status: U}}})
	res, _ := tr.Observe(sec(101), readyNode("n1", U, 0, 51), nil)
	if !res.MarkPodsNotReady || !res.PodsNotReadyEdge.Equal(sec(100)) {
		t.Fatalf("restored pending flip: MarkPodsNotReady=%v edge=%s, want true at 100s", res.MarkPodsNotReady, rel(res.PodsNotReadyEdge))
	}
	if !tr.AckPodsNotReadyEdge("n1", res.PodsNotReadyEdge) {
		t.Fatal("AckPodsNotReadyEdge(restored edge) = false, want true")
	}
}
