package sim

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestOffset(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "+0.0s"},
		{45 * time.Second, "+45.0s"},
		{345 * time.Second, "+5m45.0s"},
		{100 * time.Millisecond, "+0.1s"},
		{12340 * time.Millisecond, "+12.340s"},
		{time.Hour + 5*time.Second, "+1h0m5.0s"},
		{-3 * time.Second, "-3.0s"},
		{time.Nanosecond, "+0.000000001s"},
	}
	for _, tt := range tests {
		if got := Offset(tt.d); got != tt.want {
			t.Errorf("Offset(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestTextGolden pins the whole text report of the default scenario and of
// the legacy mode.
func TestTextGolden(t *testing.T) {
	for _, tt := range []struct {
		file string
		opt  Options
	}{
		{"offline-node.txt", Options{}},
		{"offline-node-legacy.txt", Options{PodEvictionTimeout: 5 * time.Minute}},
		{"zone-partial.txt", Options{}},
		{"xid-storm.txt", Options{}},
	} {
		name := strings.TrimSuffix(strings.TrimSuffix(tt.file, ".txt"), "-legacy")
		res := runEmbedded(t, name, tt.opt)
		var buf bytes.Buffer
		if err := WriteText(&buf, res, false); err != nil {
			t.Fatal(err)
		}
		golden(t, tt.file, buf.Bytes())
	}
}

func golden(t *testing.T, file string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", file)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n%s", path, got)
	}
}

// TestTimelineCollapses: the pods evicted from a node at one instant are one
// line, and many nodes doing the same thing at one instant are one line.
func TestTimelineCollapses(t *testing.T) {
	res := runEmbedded(t, "zone-partial", Options{})
	var buf bytes.Buffer
	if err := WriteText(&buf, res, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"+1m0.0s    kubelet-stopped  zone-a  60 nodes   scenario: stop [zone-a-00 … zone-a-59]",
		"+1m55.0s   node-unknown     zone-a  60 nodes   no heartbeat for more than 50s: Ready=Unknown written [zone-a-00 … zone-a-59]",
		"+6m55.0s   pod-evicted      zone-a  zone-a-00  10 pods evicted: TolerationExpired",
		// A grouped row's pod count is each node's: say so, with the total.
		"+1m55.0s   pods-not-ready   zone-a  60 nodes   10 pods marked Ready=False on each node (600 in all) [zone-a-00 … zone-a-59]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n > 60 {
		t.Errorf("text report has %d lines, want it compact (< 60)", n)
	}
	lines := timeline([]Entry{
		{At: 1, Kind: "pod-evicted", Node: "n", Pod: "default/a", Detail: "NotTolerated (attempt 1)"},
		{At: 1, Kind: "pod-evicted", Node: "n", Pod: "default/b", Detail: "TolerationExpired (attempt 1)"},
		{At: 1, Kind: "pod-evicted", Node: "n", Pod: "default/c", Detail: "TolerationExpired (attempt 1)"},
		{At: 1, Kind: "pod-evicted", Node: "m", Pod: "default/d", Detail: "TolerationExpired (attempt 1)"},
		{At: 2, Kind: "pod-evicted", Node: "n", Pod: "default/e", Detail: "TolerationExpired (attempt 1)"},
		{At: 3, Kind: "node-unknown", Node: "x", Detail: "d"},
		{At: 3, Kind: "node-unknown", Node: "y", Detail: "d"},
		{At: 3, Kind: "node-unknown", Node: "z", Detail: "d"},
	})
	want := []line{
		{1, "pod-evicted", "", "n", "3 pods evicted: 1 NotTolerated, 2 TolerationExpired"},
		{1, "pod-evicted", "", "m", "pod default/d: TolerationExpired (attempt 1)"},
		{2, "pod-evicted", "", "n", "pod default/e: TolerationExpired (attempt 1)"},
		// Three alike lines stay three (collapseMin is 4).
		{3, "node-unknown", "", "x", "d"},
		{3, "node-unknown", "", "y", "d"},
		{3, "node-unknown", "", "z", "d"},
	}
	if !slices.Equal(lines, want) {
		t.Errorf("timeline = %+v, want %+v", lines, want)
	}
	for _, tt := range []struct {
		detail string
		nodes  int
		want   string
	}{
		{"30 pods evicted: TolerationExpired", 60, "30 pods evicted on each node (1800 in all): TolerationExpired"},
		{"1 pod evicted: NotTolerated", 4, "1 pod evicted on each node (4 in all): NotTolerated"},
		{"11 pods marked Ready=False", 5, "11 pods marked Ready=False on each node (55 in all)"},
		{"no heartbeat for more than 50s: Ready=Unknown written", 5, "no heartbeat for more than 50s: Ready=Unknown written"},
		{"scenario: stop", 5, "scenario: stop"},
	} {
		if got := perNode(tt.detail, tt.nodes); got != tt.want {
			t.Errorf("perNode(%q, %d) = %q, want %q", tt.detail, tt.nodes, got, tt.want)
		}
	}
}

// documentedKinds are the JSON event kinds README.md documents.
var documentedKinds = []Kind{
	"node-unknown", "node-ready", "taint-added", "taint-removed", "pods-not-ready", "pod-evicted", "zone-state",
	"disruption-mode", "node-not-ready", "write-failed", "node-evicting",
	KindKubeletStopped, KindKubeletStarted, KindKubeletNotReady,
	KindHealthHeld, KindLeaseWatchStalled, KindLeaseWatchResumed,
}

func TestJSONReport(t *testing.T) {
	for _, name := range []string{"offline-node-1.2x", "all-dark", "flapping-node"} {
		res := runEmbedded(t, name, Options{})
		var buf bytes.Buffer
		if err := WriteJSON(&buf, res, 1500*time.Microsecond); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Events     []JSONEntry    `json:"events"`
			Summary    map[string]any `json:"summary"`
			RealTimeMs float64        `json:"realTimeMs"`
		}
		dec := json.NewDecoder(&buf)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("%s: JSON report does not decode: %v", name, err)
		}
		if len(got.Events) != len(res.Entries) || got.RealTimeMs != 1.5 {
			t.Errorf("%s: %d events, realTimeMs %v; want %d, 1.5", name, len(got.Events), got.RealTimeMs, len(res.Entries))
		}
		if !slices.IsSortedFunc(got.Events, func(a, b JSONEntry) int { return int(a.T*1000) - int(b.T*1000) }) {
			t.Errorf("%s: events not in time order", name)
		}
		for _, e := range got.Events {
			if !slices.Contains(documentedKinds, Kind(e.Kind)) {
				t.Errorf("%s: undocumented kind %q", name, e.Kind)
			}
		}
		for _, key := range []string{"scenario", "mode", "zones", "podsEvicted", "fullDisruption"} {
			if _, ok := got.Summary[key]; !ok {
				t.Errorf("%s: summary lacks %q", name, key)
			}
		}
	}
	// The default scenario's key numbers, as a JSON consumer reads them.
	res := runEmbedded(t, "offline-node-1.2x", Options{})
	r := NewJSONReport(res)
	z := r.Summary.Zones[0]
	if *z.FirstUnknown != 45*time.Second || *z.FirstTaint != 45*time.Second || *z.FirstEviction != 345*time.Second || z.PodsEvicted != 10 {
		t.Errorf("summary zone = Unknown %v, taint %v, eviction %v, %d pods; want 45, 45, 345, 10",
			*z.FirstUnknown, *z.FirstTaint, *z.FirstEviction, z.PodsEvicted)
	}
	if e := r.Events[len(r.Events)-1]; e.T != 345 || e.Kind != "pod-evicted" || e.Zone != "zone-a" || e.Node != "zone-a-0" || e.Pod == "" {
		t.Errorf("last event = %+v, want a pod-evicted at 345 in zone-a on zone-a-0", e)
	}
}

func TestComparison(t *testing.T) {
	sc := loadEmbedded(t, "offline-node-1.2x")
	taint := mustRun(t, sc, Options{})
	legacy := mustRun(t, sc, Options{PodEvictionTimeout: 5 * time.Minute})
	var buf bytes.Buffer
	if err := WriteComparison(&buf, taint, legacy); err != nil {
		t.Fatal(err)
	}
	golden(t, "offline-node-compare.txt", buf.Bytes())
}

// TestJSONReportsPending: a run cut off by its duration says so in JSON.
func TestJSONReportsPending(t *testing.T) {
	var buf strings.Builder
	if err := WriteJSON(&buf, runEmbedded(t, "zone-partial", Options{}), -1); err != nil {
		t.Fatal(err)
	}
	var r JSONReport
	if err := json.Unmarshal([]byte(buf.String()), &r); err != nil {
		t.Fatal(err)
	}
	p := r.Summary.Pending
	if p == nil || p.Done || p.NodesQueued != 49 || p.Evictions != 30 || p.LastEviction == nil || *p.LastEviction != 6315*time.Second {
		t.Errorf("JSON summary.pending = %+v, want 49 nodes queued, 30 evictions, last eviction at 6315s", p)
	}
}

// TestSummaryJSONRoundTrip: the result types hold durations, and their JSON
// keeps the seconds it has always had; decoding it gives the same values.
func TestSummaryJSONRoundTrip(t *testing.T) {
	res := runEmbedded(t, "zone-partial", Options{PodEvictionTimeout: 0})
	first, err := json.Marshal(res.Summary)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Duration float64 `json:"duration"`
		Zones    []struct {
			FirstTaint *float64 `json:"firstTaint"`
			States     []struct {
				T float64 `json:"t"`
			} `json:"states"`
		} `json:"zones"`
		Pending struct {
			LastTaint float64 `json:"lastTaint"`
		} `json:"pending"`
	}
	if err := json.Unmarshal(first, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Duration != 1200 || *raw.Zones[0].FirstTaint != 115 || raw.Zones[0].States[1].T != 115 || raw.Pending.LastTaint != 6015 {
		t.Errorf("JSON times = duration %v, firstTaint %v, states[1].t %v, pending.lastTaint %v; want seconds 1200, 115, 115, 6015",
			raw.Duration, *raw.Zones[0].FirstTaint, raw.Zones[0].States[1].T, raw.Pending.LastTaint)
	}
	var back Summary
	if err := json.Unmarshal(first, &back); err != nil {
		t.Fatal(err)
	}
	if *back.Zones[0].FirstTaint != 115*time.Second || back.Duration != 20*time.Minute || *back.Pending.LastTaint != 6015*time.Second {
		t.Errorf("decoded summary = firstTaint %v, duration %v, pending.lastTaint %v; want 1m55s, 20m0s, 1h40m15s",
			*back.Zones[0].FirstTaint, back.Duration, *back.Pending.LastTaint)
	}
	second, err := json.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != string(second) {
		t.Errorf("JSON after a round trip differs:\n%s\nwant\n%s", second, first)
	}
}
