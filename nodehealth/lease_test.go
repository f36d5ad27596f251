package nodehealth

import (
	"errors"
	"fmt"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
)

func leaseSummary(r LeaseResult) string {
	s := fmt.Sprintf("grace=%s deadline=%s", r.GracePeriod, rel(r.Deadline))
	for _, f := range []struct {
		on   bool
		name string
	}{{r.Renewed, "renewed"}, {r.Stale, "stale"}, {r.Expired, "expired"}} {
		if f.on {
			s += " " + f.name
		}
	}
	return s
}

// TestObserveLeaseHeartbeat times a heartbeat that is not a kubelet's: an agent's
// Lease in its own namespace, under its own name, with no Node object.
func TestObserveLeaseHeartbeat(t *testing.T) {
	agent := func(renew float64) *coordinationv1.Lease {
		l := mkLease("my-agent-7f9c", renew)
		l.Namespace = "my-system"
		return l
	}
	noRenew := agent(0)
	noRenew.Spec.RenewTime = nil
	tr := newTracker(t) // GracePeriod 50s, StartupGracePeriod 60s
	for i, s := range []struct {
		at    float64
		lease *coordinationv1.Lease
		want  string
	}{
		{0, nil, "grace=1m0s deadline=60s"}, // no Lease yet: startup grace from first sight
		{60, nil, "grace=1m0s deadline=60s"},
		{61, nil, "grace=1m0s deadline=60s stale expired"},
		{62, nil, "grace=1m0s deadline=60s stale"},
		{70, agent(65), "grace=50s deadline=120s renewed"},   // first Lease: fresh, whatever its RenewTime says
		{80, agent(65), "grace=50s deadline=120s"},           // same RenewTime: no signal
		{90, agent(3600), "grace=50s deadline=140s renewed"}, // agent clock ahead: still a change
		{100, agent(95), "grace=50s deadline=150s renewed"},  // and back: any change counts
		{120, nil, "grace=50s deadline=150s"},                // Lease deleted: no signal
		{151, agent(95), "grace=50s deadline=150s stale expired"},
		{40, agent(95), "grace=50s deadline=150s stale"}, // clock stepped back: no time elapsed
		{160, noRenew, "grace=50s deadline=150s stale"},  // a nil RenewTime counts on first sight only
		{170, agent(165), "grace=50s deadline=220s renewed"},
	} {
		got, err := tr.ObserveLease(sec(s.at), "my-system/my-agent", s.lease)
		if err != nil {
			t.Fatalf("row %d: ObserveLease(%gs) error %v", i, s.at, err)
		}
		if g := leaseSummary(got); g != s.want {
			t.Errorf("row %d: ObserveLease(%gs, %s) = %q, want %q", i, s.at, leaseDesc(s.lease), g, s.want)
		}
	}
	if _, err := tr.ObserveLease(sec(0), "", nil); !errors.Is(err, ErrInvalidNode) {
		t.Errorf("ObserveLease(empty name) error = %v, want ErrInvalidNode", err)
	}
}

// TestObserveLeaseSnapshotRestore: a heartbeat survives a restart like a
// node, with its kind, so the restored grace and expiry edge are right.
func TestObserveLeaseSnapshotRestore(t *testing.T) {
	tr := newTracker(t)
	tr.ObserveLease(sec(0), "hb", mkLease("hb", 0))
	snap := tr.Snapshot()
	if len(snap) != 1 || !snap[0].LeaseOnly {
		t.Fatalf("Snapshot() = %+v, want one LeaseOnly record", snap)
	}
	back := newTracker(t)
	back.Restore(sec(30), snap)
	if at, ok := back.NextDeadline(); !ok || rel(at) != "50.000000001s" {
		t.Errorf("NextDeadline() after Restore = %s, %v; want 50.000000001s, true", rel(at), ok)
	}
	for _, s := range []struct {
		at   float64
		want string
	}{
		{40, "grace=50s deadline=50s"}, // the same Lease is no fresh signal after the restart
		{51, "grace=50s deadline=50s stale expired"},
	} {
		got, _ := back.ObserveLease(sec(s.at), "hb", mkLease("hb", 0))
		if g := leaseSummary(got); g != s.want {
			t.Errorf("ObserveLease(%gs) after Restore = %q, want %q", s.at, g, s.want)
		}
	}
}

// TestObserveLeaseSteadyStateAllocatesNothing pins the per-heartbeat cost.
func TestObserveLeaseSteadyStateAllocatesNothing(t *testing.T) {
	tr := newTracker(t)
	l := mkLease("hb", 0)
	now := sec(0)
	tr.ObserveLease(now, "hb", l)
	if n := testing.AllocsPerRun(100, func() {
		now = now.Add(10e9)
		l.Spec.RenewTime.Time = now
		if r, _ := tr.ObserveLease(now, "hb", l); !r.Renewed {
			t.Fatalf("ObserveLease = %s, want renewed", leaseSummary(r))
		}
	}); n != 0 {
		t.Errorf("steady-state ObserveLease allocates %v times, want 0", n)
	}
}
