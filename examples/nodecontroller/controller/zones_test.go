package controller_test

import (
	"sync"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/zonestate"
)

// TestOnZones: after every monitor pass OnZones gets the Monitor's own
// zone decision (the figures of the zone gauges): three counted nodes in
// z1, and one not ready once a's grace period ran out.
func TestOnZones(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var last []zonestate.ZoneDecision
	cfg := testConfig()
	cfg.OnZones = func(_ time.Duration, zones []zonestate.ZoneDecision) {
		mu.Lock()
		last = zones
		mu.Unlock()
	}
	f := newFixture(t, cfg, cluster3()...)
	check := func(notReady int) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(last) != 1 || last[0].Size != 3 || last[0].NotReady != notReady {
			t.Errorf("OnZones got %+v, want one zone of 3 nodes, %d not ready", last, notReady)
		}
	}
	f.pass(true)
	check(0)
	f.advance(55*time.Second, liveExcept(f, "a"))
	check(1)
}
