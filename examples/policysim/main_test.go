package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kubelifecycle/lifecycle/examples/policysim/sim"
)

const minimal = `duration: 5m
zones:
  - name: a
    nodes: 3
`

// runMain runs the command with args and returns its output.
func runMain(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(args, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// TestDefaultRun is the README's demo command: the default scenario's
// timeline, summary and real time.
func TestDefaultRun(t *testing.T) {
	out, _, err := runMain(t)
	if err != nil {
		t.Fatalf("run() = %v", err)
	}
	for _, want := range []string{
		"scenario  offline-node",
		"policy    monitor every 5s, grace 50s (startup 1m0s)",
		"kubelets  Lease renewed every 10s, status posted every 5m0s",
		"+55.0s    node-unknown     zone-a  zone-a-0  no heartbeat for more than 50s: Ready=Unknown written",
		"+55.0s    taint-added      zone-a  zone-a-0  node.kubernetes.io/unreachable:NoExecute",
		"+5m55.0s  pod-evicted      zone-a  zone-a-0  10 pods evicted: TolerationExpired",
		"not evicted            1 pod: it tolerates node.kubernetes.io/unreachable:NoExecute forever",
		"SUMMARY",
		"ms of real time",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("run() output lacks %q:\n%s", want, out)
		}
	}
}

func TestFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(bad, []byte("duration: 5m\nzones:\n  - name: a\n    nodes: -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, []byte(minimal+"events: [{at: 0s, action: stop, node: a-0}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	svgFile := filepath.Join(dir, "out.svg")
	tests := []struct {
		name    string
		args    []string
		wantOut []string
		wantErr string
	}{
		{"list", []string{"-list"}, []string{"offline-node         one node loses its kubelet; v1.37.2 defaults", "offline-node-1.2x    one node loses its kubelet; 1.2x-era defaults", "large-cluster", "flapping-node"}, ""},
		{"run", []string{"-run", "zone-dark", "-summary"}, []string{"scenario  zone-dark", "zone zone-a: 20 nodes"}, ""},
		{"file", []string{"-scenario", good}, []string{"scenario  good", "+55.0s"}, ""},
		{"show", []string{"-show", "-run", "all-dark"}, []string{"name: all-dark", "zone-restore"}, ""},
		{"legacy", []string{"-legacy-node-eviction", "-pod-eviction-timeout", "2m"}, []string{"legacy node eviction", "+2m5.0s  node-evicting"}, ""},
		{"compare", []string{"-compare", "-run", "offline-node"}, []string{"COMPARISON", "zone-a  legacy  +55.0s"}, ""},
		{"svg", []string{"-svg", svgFile, "-summary"}, []string{"SUMMARY"}, ""},
		{"tick", []string{"-tick", "-summary"}, []string{"+5m55.0s"}, ""},
		{"1.2x defaults", []string{"-run", "offline-node-1.2x", "-summary"}, []string{"grace 40s", "+5m45.0s"}, ""},
		{"sweep", []string{"-run", "zone-partial", "-sweep", "nodeEvictionRate=0.05,0.1"}, []string{"SWEEP  nodeEvictionRate = 0.05, 0.1", "0.05              zone-a  +18m35.0s", "simulated 20m0.0s 2 times"}, ""},
		{"sweep json", []string{"-sweep", "defaultUnreachableTolerationSeconds=60,300", "-format", "json"}, []string{`"field": "defaultUnreachableTolerationSeconds"`, `"value": "60"`}, ""},
		{"sweep grid", []string{"-run", "lease-watch-stall", "-sweep", "nodeControllerLeaseCircuitBreaker=false,true", "-sweep", "reconcile=false,true"},
			[]string{"SWEEP  nodeControllerLeaseCircuitBreaker = false, true  ×  reconcile = false, true  (4 runs)",
				"nodes Unknown  pods NotReady  node time down  longest node down  pod time NotReady  longest pod NotReady",
				// Reconciling kubelets put the 15 falsely marked pods back at 1m10s, for
				// good (no status update makes the controller mark a pod again): 18 marked,
				// 3 × 5m25s + 15 × 5s NotReady.
				"false                              true       zone-a  +1m20.0s    +6m20.0s       3             6              18             6m30.0s         6m5.0s             17m30.0s           5m25.0s",
				"simulated 7m0.0s 4 times"}, ""},
		{"sweep grid json", []string{"-sweep", "nodeEvictionRate=0.1", "-sweep", "reconcile=false,true", "-format", "json"},
			[]string{`"fields": [`, `"reconcile"`, `"values": [`, `"nodeSecondsDown": 365`}, ""},
		{"sweep field twice", []string{"-sweep", "nodeEvictionRate=0.1", "-sweep", "policy.nodeEvictionRate=0.2"}, nil, "-sweep policy.nodeEvictionRate given twice"},
		{"sweep grid too large", []string{"-sweep", "nodeEvictionRate=" + seq(40), "-sweep", "defaultUnreachableTolerationSeconds=" + seq(30)}, nil, "grid of 40 × 30 runs, more than 1000 (MaxSweepRuns)"},
		{"bad sweep", []string{"-sweep", "nodeEvictionRate"}, nil, "-sweep wants FIELD=v1,v2,..."},
		{"sweep unknown field", []string{"-sweep", "nope=1"}, nil, `unknown field "nope"`},
		{"sweep with compare", []string{"-sweep", "nodeEvictionRate=1", "-compare"}, nil, "use it without -compare"},
		{"bad file", []string{"-scenario", bad}, nil, "bad.yaml:4:5: zones[0].nodes: must be in [1, 100000], got -1"},
		{"endless file", []string{"-scenario", "/dev/zero"}, nil, "larger than 1048576 bytes (MaxFileSize)"},
		{"over budget", []string{"-run", "large-cluster", "-max-node-passes", "1000"}, nil, "over the budget of 1000; raise it with -max-node-passes"},
		{"missing file", []string{"-scenario", filepath.Join(dir, "nope.yaml")}, nil, "no such file"},
		{"unknown scenario", []string{"-run", "nope"}, nil, `no embedded scenario "nope"`},
		{"both sources", []string{"-run", "offline-node", "-scenario", good}, nil, "use -scenario or -run, not both"},
		{"bad format", []string{"-format", "xml"}, nil, `-format must be text or json, got "xml"`},
		{"bad timeout", []string{"-pod-eviction-timeout", "0s", "-legacy-node-eviction"}, nil, "-pod-eviction-timeout must be positive"},
		{"svg with compare", []string{"-compare", "-svg", svgFile}, nil, "-svg draws one run; use it without -compare"},
		{"stray argument", []string{"extra"}, nil, "unexpected arguments"},
		{"unknown flag", []string{"-nope"}, nil, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runMain(t, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("run(%q) = %v, want an error containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("run(%q) = %v", tt.args, err)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("run(%q) output lacks %q:\n%s", tt.args, w, out)
				}
			}
		})
	}
	doc, err := os.ReadFile(svgFile)
	if err != nil {
		t.Fatalf("-svg wrote nothing: %v", err)
	}
	if !bytes.Contains(doc, []byte("<svg")) || !bytes.HasSuffix(bytes.TrimSpace(doc), []byte("</svg>")) {
		t.Errorf("-svg wrote no SVG document")
	}
}

// seq returns "1,2,...,n".
func seq(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strconv.Itoa(i + 1)
	}
	return strings.Join(parts, ",")
}

func TestHelp(t *testing.T) {
	_, stderr, err := runMain(t, "-h")
	if !errors.Is(err, flag.ErrHelp) {
		t.Errorf("run(-h) = %v, want flag.ErrHelp", err)
	}
	if code := exitCode(err); code != 0 {
		t.Errorf("exit status for -h = %d, want 0 (a requested help is not an error)", code)
	}
	if _, _, err := runMain(t, "-nope"); exitCode(err) != 2 {
		t.Errorf("exit status for an unknown flag = %d, want 2", exitCode(err))
	}
	for _, want := range []string{"-legacy-node-eviction", "-svg file", "Scenario file", "nodeMonitorGracePeriod", "zone-dark", "device-taint", "deviceMaxShare"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("-h output lacks %q", want)
		}
	}
}

func TestJSONFlag(t *testing.T) {
	out, _, err := runMain(t, "-format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var r sim.JSONReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("-format json output does not decode: %v", err)
	}
	if r.RealTimeMs == nil || r.Summary.Scenario != "offline-node" || len(r.Events) == 0 {
		t.Errorf("-format json = %d events, summary %q, realTimeMs %v", len(r.Events), r.Summary.Scenario, r.RealTimeMs)
	}
	out, _, err = runMain(t, "-format", "json", "-compare")
	if err != nil {
		t.Fatal(err)
	}
	var both map[string]sim.JSONReport
	if err := json.Unmarshal([]byte(out), &both); err != nil || both["legacy"].Summary.Mode != "legacy" || both["taint"].Summary.Mode != "taint" {
		t.Errorf("-format json -compare = %v (error %v), want taint and legacy reports", both, err)
	}
}
