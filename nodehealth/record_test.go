package nodehealth

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSnapshotContents(t *testing.T) {
	tr := newTracker(t)
	nilRenew := mkLease("c", 0)
	nilRenew.Spec.RenewTime = nil
	if _, err := tr.Observe(sec(0), readyNode("b", T, -5, -9), mkLease("b", -3)); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Observe(sec(1), mkNode("a", -20), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Observe(sec(2), readyNode("c", T, 0, 0), nilRenew); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Observe(sec(60), readyNode("c", T, 0, 0), nilRenew); err != nil { // stale: pods edge
		t.Fatal(err)
	}
	renewB := sec(-3)
	want := []Record{
		{Name: "a", Probe: sec(-20), ReadyTransition: sec(-20)},
		{Name: "b", Probe: sec(0), ReadyTransition: sec(0), LeaseSeen: true, LeaseRenewTime: &renewB,
			Ready: &v1.NodeCondition{Type: v1.NodeReady, Status: T,
				LastHeartbeatTime: metav1.NewTime(sec(-5)), LastTransitionTime: metav1.NewTime(sec(-9))}},
		{Name: "c", Probe: sec(2), ReadyTransition: sec(60), LeaseSeen: true, PodsNotReady: true, PodsNotReadyEdge: sec(60),
			Ready: &v1.NodeCondition{Type: v1.NodeReady, Status: U,
				LastHeartbeatTime: metav1.NewTime(sec(0)), LastTransitionTime: metav1.NewTime(sec(60))}},
	}
	got := tr.Snapshot()
	if fmtRecords(got) != fmtRecords(want) {
		t.Errorf("Snapshot() =\n%s\nwant\n%s", fmtRecords(got), fmtRecords(want))
	}
	// The snapshot shares nothing with the Tracker.
	*got[1].LeaseRenewTime = sec(1000)
	got[1].Ready.Status = F
	if again := tr.Snapshot(); fmtRecords(again) != fmtRecords(want) {
		t.Errorf("Snapshot() after mutating an earlier snapshot =\n%s\nwant\n%s", fmtRecords(again), fmtRecords(want))
	}
}

// Snapshot → JSON → Restore round-trips every field.
func TestSnapshotJSONRoundTrip(t *testing.T) {
	tr := newTracker(t)
	tr.Observe(sec(0), readyNode("b", T, -5, -9), mkLease("b", -3))
	tr.Observe(sec(1), mkNode("a", -20), nil)
	tr.Observe(sec(60), readyNode("b", T, -5, -9), nil)
	before := tr.Snapshot()
	data, err := json.Marshal(before)
	if err != nil {
		t.Fatal(err)
	}
	var decoded []Record
	if err := json.Unmarshal(data, &decoded); err != nil {
		t.Fatal(err)
	}
	restored := newTracker(t)
	restored.Restore(sec(70), decoded)
	if after := restored.Snapshot(); fmtRecords(after) != fmtRecords(before) {
		t.Errorf("Restore(JSON(Snapshot())) then Snapshot() =\n%s\nwant\n%s", fmtRecords(after), fmtRecords(before))
	}
}

func TestRestoreInput(t *testing.T) {
	renew := sec(5)
	tr := newTracker(t)
	tr.Observe(sec(0), readyNode("keep", T, 0, 0), nil)
	tr.Restore(sec(100), []Record{
		{Name: ""}, // skipped
		{Name: "future", Probe: sec(500), ReadyTransition: sec(400)},
		{Name: "dup", Probe: sec(10)},
		{Name: "dup", Probe: sec(20), ReadyTransition: sec(20), LeaseRenewTime: &renew},
	})
	got := tr.Snapshot()
	want := []Record{
		{Name: "dup", Probe: sec(20), ReadyTransition: sec(20), LeaseSeen: true, LeaseRenewTime: &renew},
		{Name: "future", Probe: sec(100), ReadyTransition: sec(100)}, // clamped
		{Name: "keep", Probe: sec(0), ReadyTransition: sec(0),
			Ready: &v1.NodeCondition{Type: v1.NodeReady, Status: T, LastHeartbeatTime: metav1.NewTime(sec(0)), LastTransitionTime: metav1.NewTime(sec(0))}},
	}
	if fmtRecords(got) != fmtRecords(want) {
		t.Errorf("Snapshot() after Restore =\n%s\nwant\n%s", fmtRecords(got), fmtRecords(want))
	}
	// The restored lease is compared for "newer" as if never restarted.
	runSteps(t, tr, []step{
		{101, observe{readyNode("dup", T, 0, 0), mkLease("dup", 5)}, "fresh grace=50s deadline=151s trans=101s ready=True->True"},
	})
	// (Ready was missing in the record: first status, probe = now; the
	// equal RenewTime did not refresh, the new status did.)
	runSteps(t, tr, []step{
		{102, observe{readyNode("dup", T, 0, 0), mkLease("dup", 5)}, "fresh grace=50s deadline=151s trans=101s ready=True->True"},
		{103, observe{readyNode("dup", T, 0, 0), mkLease("dup", 6)}, "fresh grace=50s deadline=153s trans=101s ready=True->True"},
	})
}

// Every exported method may be called from many goroutines at once.
func TestTrackerConcurrentUse(t *testing.T) {
	tr := newTracker(t)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			names := []string{"a", "b", "c", "d"}
			for i := 0; i < 300; i++ {
				name := names[(g+i)%len(names)]
				now := sec(float64(i))
				var n *v1.Node
				if i%5 == 0 {
					n = mkNode(name, 0)
				} else {
					n = readyNode(name, T, float64(i-i%70), 0)
				}
				r, err := tr.Observe(now, n, mkLease(name, float64(i-i%90)))
				if err != nil {
					t.Error(err)
					return
				}
				_ = r.ObservedReady.Status // read what the Tracker may share
				switch i % 50 {
				case 7:
					tr.AckPodsNotReady(name)
				case 17:
					tr.ResetProbes(now)
				case 27:
					tr.Restore(now, tr.Snapshot())
				case 37:
					tr.Forget(name)
				}
			}
		}(g)
	}
	wg.Wait()
	if n := len(tr.Snapshot()); n > 4 {
		t.Errorf("Snapshot() has %d records, want at most 4", n)
	}
}

// fmtRecords renders records one per line, times relative to the epoch, with
// the instant (not the location) of every time.
func fmtRecords(rs []Record) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%q probe=%s trans=%s", r.Name, rel(r.Probe), rel(r.ReadyTransition))
		if r.Ready != nil {
			fmt.Fprintf(&b, " ready={%s %s hb=%s tr=%s}", r.Ready.Type, r.Ready.Status,
				rel(r.Ready.LastHeartbeatTime.Time), rel(r.Ready.LastTransitionTime.Time))
		}
		fmt.Fprintf(&b, " leaseSeen=%v", r.LeaseSeen)
		if r.LeaseRenewTime != nil {
			fmt.Fprintf(&b, " renew=%s", rel(*r.LeaseRenewTime))
		}
		fmt.Fprintf(&b, " pods=%v", r.PodsNotReady)
		if !r.PodsNotReadyEdge.IsZero() {
			fmt.Fprintf(&b, " edge=%s", rel(r.PodsNotReadyEdge))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestRestoreZeroProbeGetsGrace: a record with zero Probe and
// ReadyTransition (hand-written, truncated) must not make the node Unknown
// on its first Observe: the zero times are read as the Restore instant.
func TestRestoreZeroProbeGetsGrace(t *testing.T) {
	tr := newTracker(t)
	tr.Restore(sec(100), []Record{{Name: "n1",
		Ready: &v1.NodeCondition{Type: v1.NodeReady, Status: T, LastHeartbeatTime: metav1.NewTime(sec(90))}}})
	runSteps(t, tr, []step{
		{101, observe{readyNode("n1", T, 90, 0), nil}, "fresh grace=50s deadline=150s trans=100s ready=True->True"},
		{150, observe{readyNode("n1", T, 90, 0), nil}, "fresh grace=50s deadline=150s trans=100s ready=True->True"},
		{151, observe{readyNode("n1", T, 90, 0), nil}, "stale grace=50s deadline=150s trans=151s ready=True->Unknown write pods"},
	})
}

// TestRestoreFutureRenewTime: a saved LeaseRenewTime in the future (the
// kubelet's clock ran ahead when it was saved, or a corrupt record) must
// not make the real renewals that follow look older: the node renewing
// every 10s stays fresh. And it is restored as it is: clamped to the
// Restore instant, the same unrenewed Lease of a dead kubelet would look
// renewed on the first Observe and get a fresh grace period (stale only at
// 151s instead of 146s).
func TestRestoreFutureRenewTime(t *testing.T) {
	future := sec(3600)
	rec := Record{Name: "n1", Probe: sec(95), ReadyTransition: sec(0), LeaseSeen: true, LeaseRenewTime: &future,
		Ready: &v1.NodeCondition{Type: v1.NodeReady, Status: T, LastHeartbeatTime: metav1.NewTime(sec(0))}}
	dead := newTracker(t)
	dead.Restore(sec(100), []Record{rec})
	runSteps(t, dead, []step{
		{101, observe{readyNode("n1", T, 0, 0), mkLease("n1", 3600)}, "fresh grace=50s deadline=145s trans=0s ready=True->True"},
		{146, observe{readyNode("n1", T, 0, 0), mkLease("n1", 3600)}, "stale grace=50s deadline=145s trans=146s ready=True->Unknown write pods"},
	})

	tr := newTracker(t)
	tr.Restore(sec(100), []Record{rec})
	if got := tr.Snapshot()[0].LeaseRenewTime; got == nil || !got.Equal(future) {
		t.Fatalf("restored LeaseRenewTime = %v, want it kept (%v)", got, future)
	}
	var steps []step
	for at := 110.0; at <= 300; at += 10 {
		steps = append(steps, step{at, observe{readyNode("n1", T, 0, 0), mkLease("n1", at)},
			fmt.Sprintf("fresh grace=50s deadline=%gs trans=0s ready=True->True", at+50)})
	}
	runSteps(t, tr, steps)
}
