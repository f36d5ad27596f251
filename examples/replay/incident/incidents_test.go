package incident

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// incidentsDir holds the reconstructed incidents (see its README.md).
var incidentsDir = filepath.Join("..", "testdata", "incidents")

// TestIncidentFixtures checks the files in ../testdata/incidents are the
// generator's (incidents_gen_test.go); -update rewrites them.
func TestIncidentFixtures(t *testing.T) {
	for _, r := range reconstructions() {
		want := jsonLines(t, r.build())
		path := filepath.Join(incidentsDir, r.file)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (regenerate with go test -run TestIncidentFixtures -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the generator's output (regenerate with go test -run TestIncidentFixtures -update)", path)
		}
		if len(got) > 100_000 {
			t.Errorf("%s: %d bytes, want under 100 KB", path, len(got))
		}
	}
}

// measuredPeriod is the recorded controller's pass interval
// (recordedPassInterval) as a --node-monitor-period: the replay's passes
// then drift as upstream's do. At exactly 5s a grace that is a multiple
// of 5s takes one pass more than upstream (see the README).
const measuredPeriod = "--node-monitor-period=5001362us"

// lostPhases replays evs under flags and stalls at each phase and returns,
// for each node written Unknown in any run, in how many. keep keeps the
// kubelets' recorded reactions (ReplayOptions.KeepRecordedReactions).
func lostPhases(t *testing.T, evs []audit.Event, stalls []Window, keep bool, phases []time.Duration, flags ...string) map[string]int {
	t.Helper()
	h, err := Inventory(SliceSource(evs), Options{})
	if err != nil {
		t.Fatal(err)
	}
	opt := ReplayOptions{Policy: policy(t, flags...), LeaseWatchStalls: stalls, KeepRecordedReactions: keep}
	if phases == nil {
		phases = PhaseOffsets(opt.Policy.NodeMonitorPeriod, 5)
	}
	pr, runs, err := Phases(context.Background(), h, SliceOpener(evs), opt, phases)
	if err != nil {
		t.Fatal(err)
	}
	lost := map[string]int{}
	for _, run := range runs {
		seen := map[string]bool{}
		for _, d := range run.Replayed {
			if d.Kind == KindNodeUnknown && !seen[d.Node] {
				seen[d.Node] = true
				lost[d.Node]++
			}
		}
	}
	// The phase report counts the same: a node recorded Unknown and not
	// replayed is unknown-missing in the other phases.
	for _, it := range pr.Items {
		if it.Outcome == "unknown-missing" && it.In+lost[it.Object] != len(phases) {
			t.Errorf("phase report: %s unknown-missing in %d of %d phases, Unknown in %d", it.Object, it.In, len(phases), lost[it.Object])
		}
	}
	return lost
}

// recordedPhase is the replay phase that puts its passes on the
// recorded controller's (the replay's t=0 is the first event's
// stageTimestamp, 1ms after the log's first instant).
func recordedPhase(r *reconstruction) time.Duration {
	return (r.phase - time.Millisecond) % r.interval
}

// TestIncidentsReproduceRecording: each fixture replayed under its
// recorded controller's policy (breaker off, its grace, passes at the
// measured interval and the recorded phase, #121793's stall) writes the
// nodes Unknown and their pods NotReady when the recording does. The
// fixtures hold no taint writes (the threads do not tell them), so the
// replay's taints are extra.
func TestIncidentsReproduceRecording(t *testing.T) {
	for _, r := range reconstructions() {
		var stalls []Window
		if r.stall[1] > 0 {
			stalls = []Window{{From: r.base.Add(r.stall[0]), To: r.base.Add(r.stall[1])}}
		}
		opt := ReplayOptions{Phase: recordedPhase(r), LeaseWatchStalls: stalls,
			Policy: policy(t, measuredPeriod, "--node-monitor-grace-period="+r.grace.String(), "--feature-gates=NodeControllerLeaseCircuitBreaker=false")}
		h, _, c := replayLog(t, r.build(), opt)
		unknown := 0
		for _, d := range h.Recorded {
			if d.Kind == KindNodeUnknown {
				unknown++
			}
		}
		if unknown == 0 || len(c.Missing) != 0 {
			t.Errorf("%s: %d recorded Unknown writes, missing %v; want some, none missing", r.file, unknown, c.Missing)
		}
		for _, m := range c.Matched {
			if m.Kind == KindNodeUnknown && m.Delta() != 0 {
				t.Errorf("%s: %s %s replayed %v from the recording, want at the same pass", r.file, m.Kind, m.Node, m.Delta())
			}
		}
		for _, d := range c.Extra {
			if d.Kind != KindTaintAdded && d.Kind != KindTaintRemoved {
				t.Errorf("%s: extra %s %s %s, want only taints", r.file, d.Kind, d.Node, d.Pod)
			}
		}
	}
}

// incidentRow is one policy (and modelled input) applied to a fixture,
// with the nodes it writes Unknown and in how many of the phases.
type incidentRow struct {
	name    string
	breaker bool          // --feature-gates=NodeControllerLeaseCircuitBreaker (false: v1.36)
	grace   string        // --node-monitor-grace-period
	exact   bool          // --node-monitor-period=5s rather than measuredPeriod
	relist  time.Duration // #121793: the relist ends this long after the watch ended
	// atRecorded: one replay at the recorded phase (else 5 phases).
	atRecorded bool
	// keepReactions: the kubelets' reposts reacting to the recorded
	// Unknown writes are fed to the replay (KeepRecordedReactions; else
	// the replay leaves out those whose write it has not made).
	keepReactions bool
	want          map[string]int
}

func runIncidentRows(t *testing.T, r *reconstruction, stall func(row incidentRow) []Window, rows []incidentRow) {
	t.Helper()
	for _, row := range rows {
		evs := r.build()
		period := measuredPeriod
		if row.exact {
			period = "--node-monitor-period=5s"
		}
		var phases []time.Duration
		if row.atRecorded {
			phases = []time.Duration{recordedPhase(r)}
		}
		var stalls []Window
		if stall != nil {
			stalls = stall(row)
		}
		gate := "--feature-gates=NodeControllerLeaseCircuitBreaker=" + strconv.FormatBool(row.breaker)
		got := lostPhases(t, evs, stalls, row.keepReactions, phases, period, gate, "--node-monitor-grace-period="+row.grace)
		if !maps.Equal(got, row.want) {
			t.Errorf("%s: %s: nodes written Unknown (in how many phases) = %v, want %v", r.file, row.name, got, row.want)
		}
	}
}

func allNodes(r *reconstruction, n int) map[string]int {
	m := map[string]int{}
	for _, nd := range r.nodes {
		m[nd.name] = n
	}
	return m
}

// TestIncident121793: the Lease watch delivers nothing from its last
// frame (22:59:56.408) until the relist ends (the watch ended at
// 23:00:41.408; the relist's length is the input varied).
func TestIncident121793(t *testing.T) {
	r := incident121793()
	stall := func(row incidentRow) []Window {
		return []Window{{From: r.base.Add(ms(56_408)), To: r.base.Add(ms(101_408) + row.relist)}}
	}
	runIncidentRows(t, r, stall, []incidentRow{
		// v1.36, the grace of the incident: every node Unknown, at every phase.
		{name: "v1.36 grace 40s relist 1s", grace: "40s", relist: time.Second, want: allNodes(r, 5)},
		{name: "v1.36 grace 40s relist 12s", grace: "40s", relist: 12 * time.Second, want: allNodes(r, 5)},
		// Today's default: still lost in most phases.
		{name: "v1.36 grace 50s relist 1s", grace: "50s", relist: time.Second,
			want: map[string]int{"10.0.10.236": 5, "10.0.10.237": 5, "10.0.10.238": 5, "10.0.10.240": 5, "10.0.10.241": 4}},
		{name: "v1.36 grace 50s relist 0s", grace: "50s",
			want: map[string]int{"10.0.10.236": 5, "10.0.10.237": 5, "10.0.10.238": 4, "10.0.10.240": 4, "10.0.10.241": 3}},
		// 60s: saved if the relist ends within about 7s.
		{name: "v1.36 grace 60s relist 5s", grace: "60s", relist: 5 * time.Second, want: map[string]int{}},
		{name: "v1.36 grace 60s relist 7s", grace: "60s", relist: 7 * time.Second,
			want: map[string]int{"10.0.10.236": 2, "10.0.10.237": 2, "10.0.10.238": 1, "10.0.10.240": 1}},
		{name: "v1.36 grace 60s relist 12s", grace: "60s", relist: 12 * time.Second, want: allNodes(r, 5)},
		{name: "v1.36 grace 60s relist 7s, recorded phase", grace: "60s", relist: 7 * time.Second, atRecorded: true, want: map[string]int{}},
		{name: "v1.36 grace 60s relist 7.1s, recorded phase", grace: "60s", relist: 7100 * time.Millisecond, atRecorded: true, want: allNodes(r, 1)},
		// v1.37's breaker: the live Lease reads hold every node.
		{name: "v1.37 grace 40s relist 1s", breaker: true, grace: "40s", relist: time.Second, want: map[string]int{}},
		{name: "v1.37 grace 40s relist 12s", breaker: true, grace: "40s", relist: 12 * time.Second, want: map[string]int{}},
		{name: "v1.37 grace 50s relist 12s, reactions kept", breaker: true, grace: "50s", relist: 12 * time.Second, keepReactions: true, want: map[string]int{}},
		// Passes exactly 5s apart: a grace that is a multiple of 5s
		// waits a pass more than upstream's drifting passes.
		{name: "v1.36 grace 50s relist 1s, exact 5s passes", grace: "50s", relist: time.Second, exact: true,
			want: map[string]int{"10.0.10.236": 1, "10.0.10.237": 1}},
		{name: "v1.36 grace 60s relist 7s, exact 5s passes", grace: "60s", relist: 7 * time.Second, exact: true, want: map[string]int{}},
		// Kept (KeepRecordedReactions), the kubelets' reposts that
		// reacted to the recorded Unknown writes (23:00:36.6 to :38.3)
		// are heartbeats to a replay that has not written the nodes
		// Unknown yet: they "save" every node at 50s. By default the
		// replay leaves them out (the 50s rows above).
		{name: "v1.36 grace 50s relist 1s, reactions kept", grace: "50s", relist: time.Second, keepReactions: true, want: map[string]int{}},
	})
}

// TestIncident127352: an etcd defrag of 41s stores no renewal; each
// kubelet's next renewal lands 0.8s to 4s after etcd is back.
func TestIncident127352(t *testing.T) {
	r := incident127352()
	runIncidentRows(t, r, nil, []incidentRow{
		{name: "grace 40s", grace: "40s", want: allNodes(r, 5)},
		// The thread's setting: one node flaps, in 3 of 5 phases.
		{name: "grace 50s", grace: "50s", want: map[string]int{"worker-1": 3}},
		{name: "grace 50s, recorded phase", grace: "50s", atRecorded: true, want: map[string]int{"worker-1": 1}},
		// 55s (the value OpenShift's hypershift took from the thread) holds.
		{name: "grace 55s", grace: "55s", want: map[string]int{}},
		// The renewals were not stored: the breaker's live read finds the
		// same stale Lease and cannot help.
		{name: "v1.37 grace 50s", breaker: true, grace: "50s", want: map[string]int{"worker-1": 3}},
		{name: "v1.37 grace 40s", breaker: true, grace: "40s", want: allNodes(r, 5)},
		{name: "grace 50s, exact 5s passes", grace: "50s", exact: true, want: map[string]int{}},
	})
}

// TestIncidentGardener3947: the shoot's uplink is down 150s; no kubelet
// renews until it is back.
func TestIncidentGardener3947(t *testing.T) {
	r := incidentGardener3947()
	runIncidentRows(t, r, nil, []incidentRow{
		{name: "grace 40s (upstream's default then)", grace: "40s", want: allNodes(r, 5)},
		{name: "grace 120s (Gardener's)", grace: "120s", want: allNodes(r, 5)},
		{name: "grace 150s (the outage)", grace: "150s", want: allNodes(r, 5)},
		{name: "grace 160s", grace: "160s", want: map[string]int{"shoot-worker-a": 1}},
		{name: "grace 165s", grace: "165s", want: map[string]int{}},
		{name: "v1.37 grace 120s", breaker: true, grace: "120s", want: allNodes(r, 5)},
		{name: "grace 150s, exact 5s passes", grace: "150s", exact: true,
			want: map[string]int{"shoot-worker-a": 5, "shoot-worker-b": 2, "shoot-worker-c": 1}},
	})
}

// TestIncident127352WatchGap: the same defrag, read as a watch gap: the
// renewals are stored, the controller's Lease watch delivers nothing from
// the defrag's start until 41s later plus the resync (the input varied).
func TestIncident127352WatchGap(t *testing.T) {
	r := incident127352WatchGap()
	stall := func(row incidentRow) []Window {
		return []Window{{From: r.base.Add(60 * time.Second), To: r.base.Add(101*time.Second + row.relist)}}
	}
	runIncidentRows(t, r, stall, []incidentRow{
		{name: "v1.36 grace 40s resync 2s", grace: "40s", relist: 2 * time.Second,
			want: map[string]int{"worker-1": 5, "worker-2": 5, "worker-3": 5, "worker-4": 5, "worker-5": 4}},
		{name: "v1.36 grace 50s resync 2s", grace: "50s", relist: 2 * time.Second, want: map[string]int{"worker-1": 2}},
		{name: "v1.36 grace 50s resync 2s, recorded phase", grace: "50s", relist: 2 * time.Second, atRecorded: true, want: map[string]int{"worker-1": 1}},
		{name: "v1.36 grace 50s resync 10s", grace: "50s", relist: 10 * time.Second, want: map[string]int{"worker-1": 5, "worker-2": 5, "worker-3": 5, "worker-4": 4, "worker-5": 2}},
		{name: "v1.36 grace 55s resync 2s", grace: "55s", relist: 2 * time.Second, want: map[string]int{}},
		{name: "v1.36 grace 55s resync 10s", grace: "55s", relist: 10 * time.Second, want: map[string]int{"worker-1": 5, "worker-2": 3, "worker-3": 1}},
		// Here the breaker's live read finds the stored renewals.
		{name: "v1.37 grace 40s resync 10s", breaker: true, grace: "40s", relist: 10 * time.Second, want: map[string]int{}},
		{name: "v1.37 grace 50s resync 10s, reactions kept", breaker: true, grace: "50s", relist: 10 * time.Second, keepReactions: true, want: map[string]int{}},
	})
}
