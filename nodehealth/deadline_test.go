package nodehealth

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
)

// nextDeadline formats NextDeadline for the step tests.
func nextDeadline(tr *Tracker) string {
	at, ok := tr.NextDeadline()
	if !ok {
		return "none"
	}
	return rel(at)
}

// TestNextDeadline steps through what moves the earliest deadline: it is one
// nanosecond after the earliest Deadline of a node not stale at its last
// evaluation.
func TestNextDeadline(t *testing.T) {
	tr := newTracker(t) // GracePeriod 50s, StartupGracePeriod 60s
	steps := []struct {
		desc string
		do   func()
		want string
	}{
		{"empty", func() {}, "none"},
		{"n1 first seen at 0s", func() { tr.Observe(sec(0), readyNode("n1", T, 0, 0), nil) }, "50.000000001s"},
		{"n2 without Ready, created at -10s", func() { tr.Observe(sec(0), mkNode("n2", -10), nil) }, "50.000000001s"},
		{"n1 heartbeats at 20s", func() { tr.Observe(sec(20), readyNode("n1", T, 20, 0), nil) }, "50.000000001s"},
		{"n2 gets a Ready condition at 20s", func() { tr.Observe(sec(20), mkNode("n2", -10, rc(T, 20, 20)), nil) }, "70.000000001s"},
		{"heartbeat ObserveLease at 30s", func() { tr.ObserveLease(sec(30), "agent", mkLease("agent", 30)) }, "70.000000001s"},
		{"n1 at its deadline: fresh", func() { tr.Observe(sec(70), readyNode("n1", T, 20, 0), nil) }, "70.000000001s"},
		{"n1 a nanosecond later: stale, leaves", func() { tr.Observe(sec(70).Add(1), readyNode("n1", T, 20, 0), nil) }, "70.000000001s"},
		{"n2 stale too", func() { tr.Observe(sec(71), mkNode("n2", -10, rc(T, 20, 20)), nil) }, "80.000000001s"},
		{"stale n1 evaluated again: stays out", func() { tr.Observe(sec(72), readyNode("n1", T, 20, 0), nil) }, "80.000000001s"},
		{"Forget the heartbeat", func() { tr.Forget("agent") }, "none"},
		{"n1 heartbeats again at 90s", func() { tr.Observe(sec(90), readyNode("n1", T, 90, 90), nil) }, "140.000000001s"},
		{"ResetProbes at 100s", func() { tr.ResetProbes(sec(100)) }, "150.000000001s"},
		{"Restore n3 with an old probe", func() { tr.Restore(sec(100), []Record{{Name: "n3", Probe: sec(10), Ready: ptrCond(rc(T, 0, 0))}}) }, "60.000000001s"},
		{"Restore n3 again, without Ready: the shorter grace", func() { tr.Restore(sec(100), []Record{{Name: "n3", Probe: sec(30)}}) }, "80.000000001s"},
		{"n3 evaluated: stale (probe 30s + startup 60s), leaves", func() { tr.Observe(sec(100), mkNode("n3", 0), nil) }, "150.000000001s"},
		{"Forget n3", func() { tr.Forget("n3") }, "150.000000001s"},
	}
	for i, s := range steps {
		s.do()
		if got := nextDeadline(tr); got != s.want {
			t.Errorf("step %d (%s): NextDeadline() = %s, want %s", i, s.desc, got, s.want)
		}
	}
}

func ptrCond(c v1.NodeCondition) *v1.NodeCondition { return &c }

// TestNextDeadlineIsWhenTheOutcomeChanges checks the contract on random
// histories against every node: evaluated a nanosecond before NextDeadline
// no node goes stale, evaluated at it at least one does.
func TestNextDeadlineIsWhenTheOutcomeChanges(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		tr, err := NewTracker(Config{GracePeriod: time.Duration(1+rng.IntN(40)) * time.Second, StartupGracePeriod: time.Duration(1+rng.IntN(40)) * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		const n = 12
		nodes := make([]*v1.Node, n)
		leases := make([]*coordinationv1.Lease, n)
		stale := make([]bool, n)
		eval := func(now time.Time, i int) (bool, bool) {
			var isStale bool
			if i%4 == 3 { // a heartbeat timed by ObserveLease
				r, err := tr.ObserveLease(now, fmt.Sprintf("hb%d", i), leases[i])
				if err != nil {
					t.Fatal(err)
				}
				isStale = r.Stale
			} else {
				r, err := tr.Observe(now, nodes[i], leases[i])
				if err != nil {
					t.Fatal(err)
				}
				isStale = r.Stale
			}
			became := isStale && !stale[i]
			stale[i] = isStale
			return isStale, became
		}
		now := sec(0)
		for i := range nodes {
			if rng.IntN(3) == 0 {
				nodes[i] = mkNode(fmt.Sprintf("n%d", i), float64(-rng.IntN(30)))
			} else {
				nodes[i] = readyNode(fmt.Sprintf("n%d", i), T, 0, 0)
			}
			eval(now, i)
		}
		for step := 0; step < 60; step++ {
			switch op := rng.IntN(10); {
			case op < 5: // a node heartbeats or renews
				i := rng.IntN(n)
				now = now.Add(time.Duration(rng.IntN(20)) * time.Second)
				if rng.IntN(2) == 0 {
					nodes[i] = readyNode(nodes[i].Name, T, now.Sub(sec(0)).Seconds(), 0)
				} else {
					leases[i] = mkLease(nodes[i].Name, now.Sub(sec(0)).Seconds())
				}
				eval(now, i)
			case op == 5:
				now = now.Add(time.Duration(rng.IntN(20)) * time.Second)
				tr.ResetProbes(now)
				clear(stale)
			default: // jump to NextDeadline and check it
				// Never late, also right after ResetProbes: a nanosecond
				// before NextDeadline no node goes stale.
				if at, ok := tr.NextDeadline(); ok {
					if before := at.Add(-1); before.After(now) {
						now = before
						for i := range nodes {
							if _, became := eval(now, i); became {
								t.Fatalf("seed %d step %d: node %d went stale at %s, before NextDeadline() = %s", seed, step, i, rel(now), rel(at))
							}
						}
					}
				}
				// After a pass over every node it is exact: at it, some
				// node goes stale; without it, every node is stale.
				for i := range nodes {
					eval(now, i)
				}
				at, ok := tr.NextDeadline()
				if !ok {
					for i := range nodes {
						if !stale[i] {
							t.Fatalf("seed %d step %d: NextDeadline() = none with node %d not stale", seed, step, i)
						}
					}
					continue
				}
				if !at.After(now) {
					t.Fatalf("seed %d step %d: NextDeadline() = %s after a pass at %s, want later", seed, step, rel(at), rel(now))
				}
				for i := range nodes {
					if _, became := eval(at.Add(-1), i); became {
						t.Fatalf("seed %d step %d: node %d went stale at %s, before NextDeadline() = %s", seed, step, i, rel(at.Add(-1)), rel(at))
					}
				}
				now = at
				any := false
				for i := range nodes {
					if _, became := eval(now, i); became {
						any = true
					}
				}
				if !any {
					t.Fatalf("seed %d step %d: no node went stale at NextDeadline() = %s", seed, step, rel(at))
				}
			}
		}
	}
}

// TestNextDeadlineAllocatesNothing pins the O(1), allocation-free read.
func TestNextDeadlineAllocatesNothing(t *testing.T) {
	tr := newTracker(t)
	for i := range 100 {
		tr.Observe(sec(float64(i)), readyNode(fmt.Sprintf("n%d", i), T, 0, 0), nil)
	}
	if n := testing.AllocsPerRun(100, func() { tr.NextDeadline() }); n != 0 {
		t.Errorf("NextDeadline allocates %v times, want 0", n)
	}
}
