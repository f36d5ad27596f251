package nodehealth

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
)

// TestObserveHandleMatchesObserve drives two Trackers with the same random
// (seeded) sequence of calls, one observing by name, the other through
// Handles, and requires the same Result from every observation. The Handles
// go stale on purpose: Forget, Restore and ObserveLease of a name, a Handle
// filled by another Tracker, and one Handle shared by two names.
func TestObserveHandleMatchesObserve(t *testing.T) {
	names := []string{"a", "b", "c"}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		byName, byHandle := newTracker(t), newTracker(t)
		other := newTracker(t)
		handles := map[string]*Handle{}
		var shared Handle
		handle := func(name string) *Handle {
			switch rng.IntN(8) {
			case 0:
				return &shared // one Handle for every name
			case 1:
				h := &Handle{}
				_, _ = other.ObserveHandle(sec(0), h, readyNode(name, v1.ConditionTrue, 0, 0), nil)
				return h // filled by another Tracker
			}
			if handles[name] == nil {
				handles[name] = &Handle{}
			}
			return handles[name]
		}
		now := 0.0
		for i := range 300 {
			now += float64(rng.IntN(30))
			name := names[rng.IntN(len(names))]
			switch op := rng.IntN(20); {
			case op < 14:
				hb := now - float64(rng.IntN(100))
				var node *v1.Node
				switch rng.IntN(4) {
				case 0:
					node = mkNode(name, 0) // no Ready condition
				case 1:
					node = readyNode(name, v1.ConditionUnknown, hb, hb)
				default:
					node = readyNode(name, v1.ConditionTrue, hb, 0)
				}
				var lease *coordinationv1.Lease
				if rng.IntN(2) == 0 {
					lease = mkLease(name, now-float64(rng.IntN(100)))
				}
				want, werr := byName.Observe(sec(now), node, lease)
				got, gerr := byHandle.ObserveHandle(sec(now), handle(name), node, lease)
				require.Equal(t, werr, gerr, "seed %d step %d", seed, i)
				require.Equal(t, summary(want), summary(got), "seed %d step %d: ObserveHandle(%s) at %gs", seed, i, name, now)
				require.Equal(t, want.ReadyTransition, got.ReadyTransition, "seed %d step %d", seed, i)
			case op < 16:
				byName.Forget(name)
				byHandle.Forget(name)
			case op < 17:
				for _, tr := range []*Tracker{byName, byHandle} {
					tr.Restore(sec(now), []Record{{Name: name, Probe: sec(now - 40), ReadyTransition: sec(now - 40)}})
				}
			case op < 18:
				l := mkLease(name, now)
				w, _ := byName.ObserveLease(sec(now), name, l)
				g, _ := byHandle.ObserveLease(sec(now), name, l)
				require.Equal(t, w, g, "seed %d step %d", seed, i)
			case op < 19:
				byName.ResetProbes(sec(now))
				byHandle.ResetProbes(sec(now))
			default:
				byName.AckPodsNotReady(name)
				byHandle.AckPodsNotReady(name)
			}
		}
		require.Equal(t, byName.Snapshot(), byHandle.Snapshot(), "seed %d", seed)
		wd, wok := byName.NextDeadline()
		gd, gok := byHandle.NextDeadline()
		require.Equal(t, wok, gok)
		require.True(t, wd.Equal(gd), "NextDeadline = %v, want %v", gd, wd)
	}
}

// TestObserveHandleStale: a Handle to a forgotten or restored node is not
// used; the node is seen for the first time (Forget) or with its restored
// state (Restore), and the Handle is refilled.
func TestObserveHandleStale(t *testing.T) {
	tr := newTracker(t)
	var h Handle
	_, err := tr.ObserveHandle(sec(0), &h, readyNode("n", v1.ConditionTrue, 0, 0), nil)
	require.NoError(t, err)
	first := h.rec
	require.NotNil(t, first)

	tr.Forget("n")
	// Same heartbeat as before: only a first sight refreshes the probe.
	r, err := tr.ObserveHandle(sec(45), &h, readyNode("n", v1.ConditionTrue, 0, 0), nil)
	require.NoError(t, err)
	assert.Equal(t, "45s", rel(r.Deadline.Add(-r.GracePeriod)), "probe after Forget: a first sight")
	assert.NotSame(t, first, h.rec, "Handle refilled after Forget")

	ready := rc(v1.ConditionTrue, 0, 0)
	tr.Restore(sec(50), []Record{{Name: "n", Probe: sec(10), ReadyTransition: sec(10), Ready: &ready}})
	r, err = tr.ObserveHandle(sec(55), &h, readyNode("n", v1.ConditionTrue, 0, 0), nil)
	require.NoError(t, err)
	assert.Equal(t, "10s", rel(r.Deadline.Add(-r.GracePeriod)), "probe after Restore: the restored one")

	// An error leaves the Handle alone.
	before := h
	_, err = tr.ObserveHandle(sec(60), &h, nil, nil)
	require.Error(t, err)
	assert.Equal(t, before, h)
}

// TestObserveHandleAllocations: the steady state (a known node, not stale)
// allocates nothing through a Handle either.
func TestObserveHandleAllocations(t *testing.T) {
	tr := newTracker(t)
	var hs [10]Handle
	nodes := make([]*v1.Node, len(hs))
	leases := make([]*coordinationv1.Lease, len(hs))
	for i := range hs {
		nodes[i] = readyNode(fmt.Sprintf("n%d", i), v1.ConditionTrue, 0, 0)
		leases[i] = mkLease(nodes[i].Name, 0)
		_, _ = tr.ObserveHandle(sec(0), &hs[i], nodes[i], leases[i])
	}
	n := testing.AllocsPerRun(100, func() {
		for i := range hs {
			if _, err := tr.ObserveHandle(sec(1), &hs[i], nodes[i], leases[i]); err != nil {
				t.Fatal(err)
			}
		}
	})
	assert.Zero(t, n, "steady ObserveHandle allocations")
}
