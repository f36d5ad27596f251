package incident

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// trimFrom names a directory of kube-controller-manager recordings
// (examples/e2e with LIFECYCLE_E2E_RECORD_DIR) to trim into
// ../testdata/kcm: go test -run TestRecordedKCM -trim-from DIR.
var trimFrom = flag.String("trim-from", "", "trim DIR/<name>.audit.jsonl of the recordings TestRecordedKCM knows into ../testdata/kcm")

// parityFlags are the flags kube-controller-manager ran with in
// examples/e2e's parity scenarios (timingFlags of parity_test.go).
var parityFlags = []string{"node-monitor-period=1s", "node-monitor-grace-period=4s", "node-startup-grace-period=6s",
	"node-eviction-rate=10", "secondary-node-eviction-rate=2", "large-cluster-size-threshold=50", "unhealthy-zone-threshold=0.55"}

// faultFlags are the flags kube-controller-manager ran with in
// examples/e2e's fault tests (faultFlags of fault_test.go).
var faultFlags = []string{"node-monitor-period=1s", "node-monitor-grace-period=10s", "node-startup-grace-period=20s",
	"node-eviction-rate=10", "secondary-node-eviction-rate=2", "large-cluster-size-threshold=50", "unhealthy-zone-threshold=0.55"}

// etcdRestartFlags are kube-controller-manager's flags in examples/e2e's
// TestNodeControllerEtcdRestartMidCountdown (the others at their
// defaults).
var etcdRestartFlags = []string{"node-monitor-period=1s", "node-monitor-grace-period=8s", "node-startup-grace-period=10s", "node-eviction-rate=10"}

// recordedPhases is how many monitor pass phases, spread over one period,
// a self-replay tries: the recorded controller's phase is unknown.
const recordedPhases = 10

// TestRecordedKCM replays recordings of kube-controller-manager v1.37.2
// (../testdata/kcm, see its README) under KCM's own flags and requires the
// replay to reproduce every decision KCM made: none missing, none extra,
// each within one --node-monitor-period, at the best of recordedPhases
// monitor pass phases.
func TestRecordedKCM(t *testing.T) {
	for _, tt := range []struct {
		name  string
		flags []string
		// known are the recorded decisions the library deliberately does
		// not make, each with its reason.
		known []recordedKnown
	}{
		{"parity-one-silent-node", parityFlags, nil},
		{"parity-zone-dark", parityFlags, nil},
		{"parity-all-dark", parityFlags, fullDisruptionRace},
		{"parity-all-dark-feature-gates-nodecontrollerleasecircuitbreaker-false", append(slices.Clone(parityFlags), "feature-gates=NodeControllerLeaseCircuitBreaker=false"), fullDisruptionRace},
		{"fault-lease-watch-stall", faultFlags, nil},
		{"fault-controller-cut-off", faultFlags, nil},
		{"node-clock-skew", parityFlags, nil},
		{"node-controller-etcd-restart-mid-countdown", etcdRestartFlags, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join("..", "testdata", "kcm", tt.name+".audit.jsonl.gz")
			if *trimFrom != "" {
				if err := trimRecording(filepath.Join(*trimFrom, tt.name+".audit.jsonl"), path); err != nil {
					t.Fatal(err)
				}
			}
			if fi, err := os.Stat(path); err != nil {
				t.Fatal(err)
			} else if fi.Size() > 300<<10 {
				t.Errorf("%s: %d bytes, want under 300 KB", path, fi.Size())
			}
			pol := policy(t, tt.flags...)
			open := func() (Source, error) { return audit.Open([]string{path}, audit.Limits{}) }
			src, err := open()
			if err != nil {
				t.Fatal(err)
			}
			h, err := Inventory(src, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Recorded) == 0 {
				t.Fatalf("%s: no recorded decision", path)
			}
			start, end, err := recordingSpan(path)
			if err != nil {
				t.Fatal(err)
			}
			opt := ReplayOptions{Policy: pol, ControllerStart: start, End: end, PassDrift: DefaultPassDrift}
			_, runs, err := Phases(context.Background(), h, open, opt, PhaseOffsets(pol.NodeMonitorPeriod, recordedPhases))
			if err != nil {
				t.Fatal(err)
			}
			// The best phase: fewest differences, then the smallest
			// largest delta.
			var run *Run
			var c *Comparison
			var maxDelta time.Duration
			bestBad := -1
			for _, r := range runs {
				rc := Compare(h, r)
				rc.Missing = explain(t, rc, tt.known, false)
				bad, md := len(rc.Missing)+len(rc.Extra), time.Duration(0)
				for _, m := range rc.Matched {
					if m.Delta().Abs() > pol.NodeMonitorPeriod {
						bad++
					}
					if m.Delta().Abs() > md.Abs() {
						md = m.Delta()
					}
				}
				if bestBad < 0 || bad < bestBad || bad == bestBad && md.Abs() < maxDelta.Abs() {
					run, c, maxDelta, bestBad = r, rc, md, bad
				}
			}
			explain(t, Compare(h, run), tt.known, true)
			t.Logf("%d recorded, %d matched, %d missing (%d of them known), %d extra, max delta %v (phase %v)", len(h.Recorded), len(c.Matched),
				len(Compare(h, run).Missing), len(Compare(h, run).Missing)-len(c.Missing), len(c.Extra), maxDelta, run.Phase)
			if len(c.Missing)+len(c.Extra) > 0 || maxDelta.Abs() > pol.NodeMonitorPeriod {
				var b strings.Builder
				opt.Phase = run.Phase
				_ = NewReport(h, opt, run).WriteText(&b)
				t.Errorf("self-replay of %s: %d missing, %d extra, max delta %v (want 0, 0, at most %v):\n%s", path, len(c.Missing), len(c.Extra), maxDelta, pol.NodeMonitorPeriod, b.String())
			}
		})
	}
}

// recordedKnown is a recorded decision of upstream's that the library
// deliberately does not make.
type recordedKnown struct {
	Kind   Kind
	Detail string // "": any
	Reason string
}

// fullDisruptionRace: kube-controller-manager v1.37.2 may taint a node
// NoExecute and evict its pods when every node goes dark at once
// (examples/e2e's allDarkKnown); intermittent upstream.
var fullDisruptionRace = []recordedKnown{
	{KindTaintAdded, "node.kubernetes.io/unreachable:NoExecute", "kubernetes/kubernetes#111385: upstream's tainting goroutine races handleDisruption's stale copy of the node in full disruption; the library excludes tainting passes during a monitor pass and removes the taints from the current node"},
	{KindPodEvicted, "", "kubernetes/kubernetes#111385: upstream evicts the pod after that taint, in full disruption; the library does not"},
}

// explain returns the missing decisions known does not explain, and logs
// the explained ones with their reasons when log is set.
func explain(t *testing.T, c *Comparison, known []recordedKnown, log bool) []Decision {
	var out []Decision
	for _, d := range c.Missing {
		i := slices.IndexFunc(known, func(k recordedKnown) bool { return k.Kind == d.Kind && (k.Detail == "" || k.Detail == d.Detail) })
		if i < 0 {
			out = append(out, d)
			continue
		}
		if log {
			t.Logf("known: missing %s %s%s %s: %s", d.Kind, d.Node, d.Pod, d.Detail, known[i].Reason)
		}
	}
	return out
}

// recordingSpan is ControllerSpan of the log at path.
func recordingSpan(path string) (start, end time.Time, err error) {
	r, err := audit.Open([]string{path}, audit.Limits{})
	if err != nil {
		return start, end, err
	}
	defer r.Close()
	return ControllerSpan(r, nil)
}

// trimRecording writes the lines of the audit log from that play a part in
// a replay (classify: Leases, nodes, pods, the controller's writes), the
// controller's first list of Nodes (its start) and the last line (the
// recording's end), to to, gzipped, unchanged and in their order. The replay of the trimmed log is
// the replay of the whole: History.First and Last are those of the events
// that play a part.
func trimRecording(from, to string) error {
	r, err := audit.Open([]string{from}, audit.Limits{})
	if err != nil {
		return err
	}
	c := newClassifier(nil, DefaultLimits())
	keep := map[int64]bool{}
	var first time.Time
	var firstLine, lastLine int64
	var last time.Time
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if !e.StageTimestamp.Before(last) {
			last, lastLine = e.StageTimestamp, e.Source.Line
		}
		if listsNodes(e, DefaultControllerUsers) && (first.IsZero() || e.RequestReceivedTimestamp.Before(first)) {
			first, firstLine = e.RequestReceivedTimestamp, e.Source.Line
		}
		if _, ok, err := c.classify(e); err != nil {
			return err
		} else if ok {
			keep[e.Source.Line] = true
		}
	}
	if firstLine > 0 {
		keep[firstLine] = true
	}
	keep[lastLine] = true
	f, err := os.Open(from)
	if err != nil {
		return err
	}
	defer f.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(out, gzip.BestCompression)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	var line int64
	for sc.Scan() {
		line++
		if keep[line] {
			zw.Write(sc.Bytes())
			zw.Write([]byte{'\n'})
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return out.Close()
}
