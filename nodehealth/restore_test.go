package nodehealth

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncCache calls SyncCache and reports what it said.
type syncCache struct {
	cache Cache
	rv    string
}

func (s syncCache) do(_ *testing.T, tr *Tracker, now time.Time) (string, string) {
	r := tr.SyncCache(now, s.cache, s.rv)
	got := fmt.Sprintf("held=%v", r.Held)
	if r.Ended.Cache != 0 {
		got += fmt.Sprintf(" ended=%s(%s since %s)", r.End, r.Ended.LiveVersion, rel(r.Ended.Since))
	}
	if r.Rewound {
		got += " rewound from " + r.Previous
	}
	return fmt.Sprintf("SyncCache(%v, %q)", s.cache, s.rv), got
}

// An etcd restore from a snapshot while a hold is active: the hold was
// taken on a live resourceVersion (5000) above the snapshot's revision
// (300), so the informer, which relists at the restored revision, reports
// a synced version that goes back (4000, then 310) and stays below the
// hold's target until 4,690 new writes have passed it. The hold used to
// last until then (33 minutes at 300 writes/s in a probe): no node written
// Unknown, no zone decided. It now ends on the rewind (HoldEndRewound), and
// the node that really died is confirmed and written once its restored
// Lease is past grace. Only the API of before (CacheSynced) is used: this
// test failed on the old code at "CacheSynced(leases, 310) = held=true".
func TestHoldEndsWhenSyncedVersionGoesBack(t *testing.T) {
	a, d := rvNode("a", T, 0, "1"), rvNode("d", T, 0, "2")
	la, ld := rvLease("a", 0, "3990"), rvLease("d", 0, "3991")
	// What the restored store holds: the Leases of the snapshot.
	ra, rd := rvLease("a", -20, "290"), rvLease("d", -20, "280")
	runSteps(t, newTracker(t), []step{
		{0, synced{CacheLease, "4000"}, "held=false"},
		{0, observeC{a, la}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{0, observeC{d, ld}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		// The Lease watch stalls at 4000; a keeps renewing (live 5000).
		{55, synced{CacheLease, "4000"}, "held=false"},
		{55, observeC{a, la}, "stale grace=50s deadline=50s trans=55s ready=True->Unknown write pods confirm=lease"},
		{55, confirm{"a", Live{Lease: rvLease("a", 54, "5000")}}, "cache-behind hold{read version: 3990 is not as new as written version: 5000 for group resource leases.coordination.k8s.io}"},
		{55, observeC{d, ld}, "stale grace=50s deadline=50s trans=0s ready=True->True held"},
		{60, synced{CacheLease, "4000"}, "held=true"},
		// etcd is restored to a snapshot at revision 300; the API server
		// restarts and the informer relists at 310.
		{65, synced{CacheLease, "310"}, "held=false"},
		// The restored Leases carry other renew times: a fresh signal.
		{65, observeC{a, ra}, "fresh grace=50s deadline=115s trans=0s ready=True->True"},
		{65, observeC{d, rd}, "fresh grace=50s deadline=115s trans=0s ready=True->True"},
		// a's kubelet renews after the restore; d stays dead.
		{116, synced{CacheLease, "330"}, "held=false"},
		{116, observeC{a, rvLease("a", 110, "325")}, "fresh grace=50s deadline=166s trans=0s ready=True->True"},
		{116, observeC{d, rd}, "stale grace=50s deadline=115s trans=116s ready=True->Unknown write pods confirm=lease"},
		{116, confirm{"d", Live{Lease: rvLease("d", -20, "280")}}, "stale"},
	})
}

// Why SyncCache ends a hold, and when it keeps it.
func TestSyncCacheEnds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{{
		name: "synced past the live version: upstream's rule",
		steps: []step{
			{56, syncCache{CacheLease, "99"}, "held=true"},
			{57, syncCache{CacheLease, "100"}, "held=false ended=synced(100 since 55s)"},
		},
	}, {
		name: "the synced version goes back",
		steps: []step{
			{56, syncCache{CacheLease, "80"}, "held=true"},
			{57, syncCache{CacheLease, "80"}, "held=true"},
			{58, syncCache{CacheLease, "20"}, "held=false ended=rewound(100 since 55s) rewound from 80"},
			// The new baseline is 20: a rewind is reported once.
			{59, syncCache{CacheLease, "21"}, "held=false"},
		},
	}, {
		name: "a rewind still at or past the target is an ordinary sync",
		steps: []step{
			{56, syncCache{CacheLease, "80"}, "held=true"},
			{57, syncCache{CacheLease, "200"}, "held=false ended=synced(100 since 55s)"},
			{58, syncCache{CacheLease, "150"}, "held=false rewound from 200"},
		},
	}, {
		name: "MaxHold: ends at Since + 5m, not before",
		steps: []step{
			{56, syncCache{CacheLease, "80"}, "held=true"},
			{354.999, syncCache{CacheLease, "81"}, "held=true"},
			{355, syncCache{CacheLease, "81"}, "held=false ended=expired(100 since 55s)"},
		},
	}, {
		name: "time going backwards does not move Until closer",
		steps: []step{
			{300, syncCache{CacheLease, "80"}, "held=true"},
			{10, syncCache{CacheLease, "80"}, "held=true"},
			{355, syncCache{CacheLease, "80"}, "held=false ended=expired(100 since 55s)"},
		},
	}, {
		name: "empty or unparsable versions: upstream ends it",
		steps: []step{
			{56, syncCache{CacheLease, ""}, "held=false ended=uncomparable(100 since 55s)"},
		},
	}, {
		name: "an unparsable version is no baseline",
		steps: []step{
			{56, syncCache{CacheLease, "80"}, "held=true"},
			{57, syncCache{CacheLease, "x9"}, "held=false ended=uncomparable(100 since 55s)"},
			{58, syncCache{CacheLease, "79"}, "held=false rewound from 80"},
		},
	}, {
		name: "the other cache's versions are its own",
		steps: []step{
			{56, syncCache{CacheNode, "80"}, "held=true"},
			{57, syncCache{CacheNode, "20"}, "held=true rewound from 80"},
			{58, syncCache{CacheLease, "90"}, "held=true"},
			{59, syncCache{Cache(7), "1"}, "held=true"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTracker(t)
			n := rvNode("a", T, 0, "1")
			runSteps(t, tr, append([]step{
				{0, syncCache{CacheLease, "40"}, "held=false"},
				{0, observeC{n, rvLease("a", 0, "10")}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
				{55, observeC{n, rvLease("a", 0, "10")}, "stale grace=50s deadline=50s trans=55s ready=True->Unknown write pods confirm=lease"},
				{55, confirm{"a", Live{Lease: rvLease("a", 54, "100")}}, "cache-behind hold{read version: 10 is not as new as written version: 100 for group resource leases.coordination.k8s.io}"},
			}, tc.steps...))
		})
	}
}

// A hold that expires asks for the confirmation again, and a cache still
// behind holds again at once (a new Since); CacheSynced applies MaxHold at
// the latest now the Tracker has seen. MaxHold 0 is upstream's: no limit.
func TestMaxHold(t *testing.T) {
	n, cached := rvNode("a", T, 0, "1"), rvLease("a", 0, "10")
	behind := Live{Lease: rvLease("a", 54, "100")}
	start := []step{
		{0, observeC{n, cached}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{55, observeC{n, cached}, "stale grace=50s deadline=50s trans=55s ready=True->Unknown write pods confirm=lease"},
		{55, confirm{"a", behind}, "cache-behind hold{read version: 10 is not as new as written version: 100 for group resource leases.coordination.k8s.io}"},
	}
	t.Run("expired, then held again", func(t *testing.T) {
		tr := newTracker(t)
		runSteps(t, tr, append(start,
			step{355, syncCache{CacheLease, "40"}, "held=false ended=expired(100 since 55s)"},
			step{355, observeC{n, cached}, "stale grace=50s deadline=50s trans=355s ready=True->Unknown write pods confirm=lease"},
			step{355, confirm{"a", Live{Lease: rvLease("a", 354, "130")}}, "cache-behind hold{read version: 10 is not as new as written version: 130 for group resource leases.coordination.k8s.io}"},
		))
		h, ok := tr.Held()
		require.True(t, ok)
		assert.Equal(t, sec(355), h.Since)
		assert.Equal(t, sec(655), h.Until)
	})
	t.Run("CacheSynced at the latest now seen", func(t *testing.T) {
		runSteps(t, newTracker(t), append(start,
			step{354, observeC{n, cached}, "stale grace=50s deadline=50s trans=0s ready=True->True held"},
			step{400, synced{CacheLease, "40"}, "held=true"}, // last now seen: 354
			step{400, observeC{n, cached}, "stale grace=50s deadline=50s trans=0s ready=True->True held"},
			step{401, synced{CacheLease, "40"}, "held=false"}, // last now seen: 400
		))
	})
	t.Run("MaxHold 0: no limit", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.MaxHold = 0
		tr, err := NewTracker(cfg)
		require.NoError(t, err)
		runSteps(t, tr, append(start,
			step{1e6, syncCache{CacheLease, "40"}, "held=true"},
		))
		h, _ := tr.Held()
		assert.True(t, h.Until.IsZero(), "Until = %v", h.Until)
	})
}

// NextDeadline wakes a sleeping caller when a hold expires.
func TestNextDeadlineHoldUntil(t *testing.T) {
	tr := newTracker(t)
	n, cached := rvNode("a", T, 0, "1"), rvLease("a", 0, "10")
	_, err := tr.Observe(sec(0), rvNode("b", T, 0, "2"), rvLease("b", 0, "11"))
	require.NoError(t, err)
	runSteps(t, tr, []step{
		{0, observeC{n, cached}, "fresh grace=50s deadline=50s trans=0s ready=True->True"},
		{55, observeC{n, cached}, "stale grace=50s deadline=50s trans=55s ready=True->Unknown write pods confirm=lease"},
		{55, confirm{"a", Live{Lease: rvLease("a", 54, "100")}}, "cache-behind hold{read version: 10 is not as new as written version: 100 for group resource leases.coordination.k8s.io}"},
	})
	at, ok := tr.NextDeadline()
	require.True(t, ok)
	assert.Equal(t, sec(50).Add(time.Nanosecond), at, "b's deadline first (not evaluated since)")
	_, err = tr.Observe(sec(56), rvNode("b", T, 0, "2"), rvLease("b", 0, "11"))
	require.NoError(t, err) // held: b stays out of the set
	at, ok = tr.NextDeadline()
	require.True(t, ok, "the hold's end")
	assert.Equal(t, sec(355), at)
	assert.False(t, tr.SyncCache(at, CacheLease, "40").Held)
	_, ok = tr.NextDeadline()
	assert.False(t, ok, "no hold, every node stale")
	assert.Zero(t, testing.AllocsPerRun(10, func() { tr.NextDeadline() }))
}

// SyncCache allocates nothing, whatever it decides.
func TestSyncCacheAllocatesNothing(t *testing.T) {
	tr := newTracker(t)
	rvs := []string{"98", "99", "100", "50", "", "x1", "70"}
	allocs := testing.AllocsPerRun(100, func() {
		for i, rv := range rvs {
			tr.holds[CacheLease-1] = Hold{Cache: CacheLease, Node: "n", CachedVersion: "10", LiveVersion: "99", Since: sec(0), Until: sec(300)}
			_ = tr.SyncCache(sec(float64(i*100)), CacheLease, rv)
		}
	})
	assert.Zero(t, allocs)
}

func TestHoldEndAndCacheSyncStrings(t *testing.T) {
	for e, want := range map[HoldEnd]string{
		HoldEndSynced: "synced", HoldEndUncomparable: "uncomparable", HoldEndRewound: "rewound", HoldEndExpired: "expired",
		HoldEnd(0): "invalid", HoldEnd(9): "HoldEnd(9)",
	} {
		assert.Equal(t, want, e.String())
	}
	h := Hold{Cache: CacheLease, Node: "a", CachedVersion: "10", LiveVersion: "5000", Since: sec(55), Until: sec(355)}
	for _, tc := range []struct {
		s    CacheSync
		want string
	}{
		{CacheSync{}, ""},
		{CacheSync{Ended: h, End: HoldEndSynced, Synced: "5000"}, ""},
		{CacheSync{Ended: h, End: HoldEndRewound, Rewound: true, Previous: "4000", Synced: "310"},
			"hold on leases.coordination.k8s.io (waiting for version 5000) ended: the cache's synced resourceVersion went back from 4000 to 310, as after an etcd restore from a snapshot; stale nodes are confirmed again"},
		{CacheSync{Ended: h, End: HoldEndExpired, Previous: "4000", Synced: "4000"},
			"hold on leases.coordination.k8s.io (waiting for version 5000, cache at 4000) ended after 5m0s: longer than MaxHold; stale nodes are confirmed again"},
		{CacheSync{Ended: h, End: HoldEndUncomparable, Synced: ""},
			`hold on leases.coordination.k8s.io ended: synced version "" cannot be compared with "5000"; stale nodes are confirmed again`},
		{CacheSync{Rewound: true, Previous: "4000", Synced: "310"},
			"the synced resourceVersion went back from 4000 to 310, as after an etcd restore from a snapshot"},
	} {
		assert.Equal(t, tc.want, tc.s.String())
	}
}
