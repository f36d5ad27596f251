package sim

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestPendingLastTaintExact: a run cut off while its zone queues still hold
// nodes projects when the last would be tainted; a longer run of the same
// scenario taints it at exactly that instant, wherever the zone's token
// bucket was in its cycle at the cut (the projection used to be the end
// plus queued/rate, up to a whole token period late: 45s at 0.01 nodes/s in
// a measured case), in both modes.
func TestPendingLastTaintExact(t *testing.T) {
	src := `duration: 2h
zones:
  - {name: part, nodes: 100, podsPerNode: 1}
  - {name: norm, nodes: 100, podsPerNode: 1}
events:
  - {at: 1m, action: stop, zone: part, count: 60}
  - {at: 1m13s, action: stop, zone: norm, count: 40}
`
	full := load(t, src)
	for _, opt := range []Options{{}, {PodEvictionTimeout: 2 * time.Minute}} {
		long, err := RunOptions(context.Background(), full, opt)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]time.Duration{}
		for _, z := range long.Summary.Zones {
			if opt.PodEvictionTimeout > 0 {
				want[z.Zone] = *z.LastEviction // a node leaves the queue as its pods go
			} else {
				want[z.Zone] = *z.LastTaint
			}
		}
		for _, cut := range []time.Duration{5*time.Minute + 30*time.Second, 4*time.Minute + 17*time.Second + 300*time.Millisecond, 7*time.Minute + 50*time.Second} {
			sc := *full
			sc.Duration = Duration(cut)
			res, err := RunOptions(context.Background(), &sc, opt)
			if err != nil {
				t.Fatal(err)
			}
			for _, z := range res.Pending.Zones {
				if z.NodesQueued == 0 || z.LastTaint == nil {
					t.Fatalf("%s cut at %v: zone %s has nothing queued (%+v)", opt.Mode(), cut, z.Zone, z)
				}
				if got := *z.LastTaint; got != want[z.Zone] {
					t.Errorf("%s cut at %v: zone %s Pending.LastTaint = %v, want %v (the longer run's)", opt.Mode(), cut, z.Zone, got, want[z.Zone])
				}
			}
		}
	}
}

// TestPendingRatesOfTheEnd: the projection uses the rate each zone queue
// runs at when the run ends, which a zone state change does not always
// announce. In full disruption mode every queue is stopped: zone a went
// Full at 0.1 nodes/s while b was still Normal, then b went dark too, so a
// kept no state change of its own at rate 0; the nodes queued during the
// mode are never tainted while it lasts, and the projection promised a last
// taint at a's old rate. On exit a zone still Full runs at 0.1 again with
// no state change either; the projection said "never" for its nodes.
func TestPendingRatesOfTheEnd(t *testing.T) {
	tests := []struct {
		name, src string
		// cut, when set, ends the run early: its projection must match
		// the full run's last taint.
		cut       time.Duration
		wantRates map[string]float64
		wantNever bool
		wantText  string
	}{{
		name: "full disruption at the end",
		src: `duration: 6m
zones:
  - {name: a, nodes: 3, podsPerNode: 1}
  - {name: b, nodes: 3, podsPerNode: 1}
events:
  - {at: 1m, action: stop, zone: a, count: 3}
  - {at: 2m, action: stop, zone: b, count: 3}
`,
		wantRates: map[string]float64{"a": 0, "b": 0},
		wantNever: true,
		wantText:  "never tainted while it stays so",
	}, {
		name: "exited full disruption, a zone still Full",
		src: `duration: 10m
zones:
  - {name: a, nodes: 3, podsPerNode: 1}
  - {name: b, nodes: 3, podsPerNode: 1}
events:
  - {at: 1m, action: stop, zone: a, count: 3}
  - {at: 1m, action: stop, zone: b, count: 3}
  - {at: 3m, action: zone-restore, zone: b}
`,
		cut:       3*time.Minute + 15*time.Second,
		wantRates: map[string]float64{"a": 0.1, "b": 0.1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			full := load(t, tt.src)
			sc := full
			if tt.cut > 0 {
				c := *full
				c.Duration = Duration(tt.cut)
				sc = &c
			}
			res, err := Run(context.Background(), sc)
			if err != nil {
				t.Fatal(err)
			}
			p := res.Pending
			if p.NodesQueued == 0 {
				t.Fatalf("nothing queued at the end (%+v): the scenario no longer tests the projection", p)
			}
			for _, z := range p.Zones {
				if want, ok := tt.wantRates[z.Zone]; ok && z.Rate != want {
					t.Errorf("zone %s: Pending Rate %v, want %v", z.Zone, z.Rate, want)
				}
			}
			if p.Never != tt.wantNever {
				t.Errorf("Pending.Never = %v, want %v", p.Never, tt.wantNever)
			}
			if tt.wantNever && p.LastTaint != nil {
				t.Errorf("Pending.LastTaint = %v with every queue stopped, want none", *p.LastTaint)
			}
			if tt.cut > 0 {
				long, err := Run(context.Background(), full)
				if err != nil {
					t.Fatal(err)
				}
				za := long.Summary.Zones[0]
				if p.LastTaint == nil || za.LastTaint == nil || *p.LastTaint != *za.LastTaint {
					t.Errorf("Pending.LastTaint = %v, want the longer run's last taint of a, %v", fmtDur(p.LastTaint), fmtDur(za.LastTaint))
				}
			}
			var out strings.Builder
			writePending(&out, &res.Summary)
			if strings.Contains(out.String(), "last taint") == tt.wantNever || !strings.Contains(out.String(), tt.wantText) {
				t.Errorf("summary: %q, want a last taint only when some queue runs, and %q", out.String(), tt.wantText)
			}
		})
	}
}

func fmtDur(d *time.Duration) string {
	if d == nil {
		return "none"
	}
	return d.String()
}
