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

// recordedPhases is how many monitor pass phases, spread over one period,
// a self-replay tries: the recorded controller's phase is unknown.
const recordedPhases = 5

// TestRecordedKCM replays recordings of kube-controller-manager v1.37.2
// (../testdata/kcm, see its README) under KCM's own flags and requires the
// replay to reproduce every decision KCM made: none missing, none extra,
// each within one --node-monitor-period, at the best of recordedPhases
// monitor pass phases.
func TestRecordedKCM(t *testing.T) {
	for _, tt := range []struct {
		name  string
		flags []string
	}{
		{"parity-one-silent-node", parityFlags},
		{"parity-zone-dark", parityFlags},
		{"parity-all-dark", parityFlags},
		{"parity-large-zone-40-of-60", parityFlags},
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
			_, runs, err := Phases(context.Background(), h, open, ReplayOptions{Policy: pol}, PhaseOffsets(pol.NodeMonitorPeriod, recordedPhases))
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
			t.Logf("%d recorded, %d matched, %d missing, %d extra, max delta %v (phase %v)", len(h.Recorded), len(c.Matched), len(c.Missing), len(c.Extra), maxDelta, run.Phase)
			if len(c.Missing)+len(c.Extra) > 0 || maxDelta.Abs() > pol.NodeMonitorPeriod {
				var b strings.Builder
				_ = NewReport(h, ReplayOptions{Policy: pol, Phase: run.Phase}, run).WriteText(&b)
				t.Errorf("self-replay of %s: %d missing, %d extra, max delta %v (want 0, 0, at most %v):\n%s", path, len(c.Missing), len(c.Extra), maxDelta, pol.NodeMonitorPeriod, b.String())
			}
		})
	}
}

// trimRecording writes the lines of the audit log from that play a part in
// a replay (classify: Leases, nodes, pods, the controller's writes) to to,
// gzipped, unchanged and in their order. The replay of the trimmed log is
// the replay of the whole: History.First and Last are those of the events
// that play a part.
func trimRecording(from, to string) error {
	r, err := audit.Open([]string{from}, audit.Limits{})
	if err != nil {
		return err
	}
	c := newClassifier(nil, DefaultLimits())
	keep := map[int64]bool{}
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if _, ok, err := c.classify(e); err != nil {
			return err
		} else if ok {
			keep[e.Source.Line] = true
		}
	}
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
