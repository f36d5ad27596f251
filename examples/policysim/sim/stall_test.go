package sim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The shipped lease-watch-stall scenario: a 60s stall of the controller's
// Lease watch while kubelets renew every 2s. With the circuit breaker off
// (v1.36) every live node is written Unknown, tainted and has its pods
// marked NotReady at 1m5s, and full disruption stops the evictions; the
// kubelets find the Unknown at their next node status update (1m10s) and
// post Ready=True, their pods are Ready again at the status manager's sync
// at 1m10s too (before the pass that sees the nodes Ready, but the
// controller does not mark them again: upstream's podUpdated ignores a
// status update), and the next pass sees the nodes Ready (the zone is
// Normal again). zone-a-0, which really stopped, is tainted again at 1m20s
// and its pods go 300s later. With the breaker on (v1.37, the default) the
// pass that sees the frozen Leases past grace is held and only the node
// that really stopped goes Unknown.
func TestLeaseWatchStall(t *testing.T) {
	sc, err := LoadEmbedded("lease-watch-stall")
	require.NoError(t, err)
	require.True(t, sc.Policy.NodeControllerLeaseCircuitBreaker, "the gate defaults to on")
	off, err := sc.With("nodeControllerLeaseCircuitBreaker", "false")
	require.NoError(t, err)
	for _, tc := range []struct {
		name         string
		sc           *Scenario
		unknown      int // nodes written Unknown
		taintedNodes int
		held         bool
		// When the falsely Unknown nodes are Ready again and their pods
		// put back (nil: none is).
		ready, podsReady []time.Duration
		evicted          time.Duration
		fullDisruption   []Span
	}{
		{"v1.36 (gate off)", off, 6, 6, false, []time.Duration{70 * sec}, []time.Duration{70 * sec}, 380 * sec,
			[]Span{{From: 65 * sec, To: at(70 * sec)}}},
		{"v1.37 (gate on)", sc, 1, 1, true, nil, nil, 355 * sec, []Span{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(context.Background(), tc.sc)
			require.NoError(t, err)
			unknown, tainted, held := map[string]bool{}, map[string]bool{}, 0
			notReadyPods := 0
			for _, e := range res.Entries {
				switch e.Kind {
				case "node-unknown":
					unknown[e.Node] = true
				case "taint-added":
					tainted[e.Node] = true
				case "health-held":
					held++
					assert.Equal(t, "read version: 1 is not as new as written version: 2 for group resource leases.coordination.k8s.io", e.Detail)
				case "pods-not-ready":
					notReadyPods++
				}
			}
			assert.Len(t, unknown, tc.unknown, "nodes written Unknown: %v", unknown)
			assert.Len(t, tainted, tc.taintedNodes, "nodes tainted: %v", tainted)
			assert.True(t, unknown["zone-a-0"], "the stopped node is written Unknown")
			assert.Equal(t, tc.held, held > 0, "held passes: %d", held)
			assert.Equal(t, tc.unknown, notReadyPods, "nodes whose pods were marked NotReady")
			assert.Equal(t, tc.ready, instants(find(res, KindNodeReady, "", "")), "nodes Ready again")
			assert.Equal(t, tc.podsReady, instants(find(res, KindKubeletPodsReady, "", "")), "pods put back")
			assert.Equal(t, []time.Duration{tc.evicted}, instants(find(res, KindPodEvicted, "", "")), "zone-a-0's pods evicted")
			assert.Equal(t, tc.fullDisruption, res.Summary.FullDisruption)
			// Only zone-a-0 and its pods are down at the end.
			assert.Equal(t, []int{1, 0}, []int{res.Summary.NodesDownAtEnd, res.Summary.PodsNotReadyAtEnd}, "nodes and pods down at the end")
		})
	}
}
