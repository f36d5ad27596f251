package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/policysim/sim"
)

const (
	logFile  = "testdata/synthetic-outage.audit.jsonl"
	metaFile = "testdata/synthetic-outage-metadata.audit.jsonl"
)

var update = flag.Bool("update", false, "rewrite testdata/synthetic-outage-grace-60s.svg")

func runArgs(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, opener, &out, &errb)
	if err != nil && exitCode(err) == 2 {
		return err.Error(), 2
	}
	return out.String(), exitCode(err)
}

func TestRun(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"doctor", []string{"-doctor", logFile}, 0, []string{"node-unknown: the controller's nodes/status writes", "0 warnings."}},
		{"doctor metadata", []string{"-doctor", metaFile}, 0, []string{"WARNING: 4 status posts without a body", "WARNING: 6 pods without tolerations", "6 warnings."}},
		// By default the flags not given take the guess from the log: here
		// the grace period from n1's timing; the others stay assumed.
		{"defaults", []string{logFile}, 0, []string{"--node-monitor-grace-period=40s   guessed: from timing, weaker than a command line: from 1 node,",
			"--node-monitor-period=5s (assumed)", "(1 value guessed from the log, not given", "node-unknown   n1", "Pods saved (the recording evicted them, the replay did not): 0"}},
		{"pass drift", []string{"-pass-drift=-1ms", logFile}, 2, []string{"-pass-drift must not be negative"}},
		{"pass drift too long", []string{"-pass-drift=5s", logFile}, 2, []string{"pass drift 5s outside [0, 5s)"}},
		{"no guess", []string{"-guess-policy=false", logFile}, 0, []string{"--node-monitor-grace-period=50s (assumed)", "node-unknown   n1", "Pods saved (the recording evicted them, the replay did not): 0"}},
		{"doctor guess", []string{"-doctor", "-node-monitor-period=5s", logFile}, 0, []string{"Policy the recorded controller ran with (given > guessed > assumed)",
			"  - --node-monitor-period: given (5s)", "  - --node-monitor-grace-period=40s guessed: from timing", "  - kube-controller-manager's command line: none in the log"}},
		{"doctor no guess", []string{"-doctor", "-guess-policy=false", logFile}, 0, []string{"not applied (-guess-policy=false)"}},
		{"grace 60s saves", []string{"-node-monitor-grace-period=60s", logFile}, 0, []string{"--node-monitor-grace-period=1m0s (given)", "Pods saved (the recording evicted them, the replay did not): 2",
			"its Lease renewed at +2m20.01s after a gap of 1m30s, untainted before the pod's toleration (30s, to +2m30s) ran out", "saved in 5 of 5 phases: default/n1-web-0, default/n1-web-1"}},
		{"json", []string{"-format", "json", "-phases", "1", logFile}, 0, []string{`"node-monitor-grace-period": {`, `"source": "assumed"`, `"source": "guessed"`,
			`"reason": "from timing, weaker than a command line: from 1 node`, `"kind": "taint-added"`, `"detail": "node.kubernetes.io/unreachable:NoExecute"`}},
		{"sweep", []string{"-sweep", "node-monitor-grace-period=40s,60s", "-sweep", "feature-gates=NodeControllerLeaseCircuitBreaker=true,false", logFile}, 0,
			[]string{"node-monitor-grace-period=40s feature-gates=NodeControllerLeaseCircuitBreaker=true", "node-monitor-grace-period=60s feature-gates=NodeControllerLeaseCircuitBreaker=false  7         7        2        0      2"}},
		{"sweep guess", []string{"-sweep", "node-eviction-rate=0.1,1", logFile}, 0, []string{"every run: --node-monitor-grace-period=40s   guessed: from timing"}},
		{"stall", []string{"-lease-watch-stall", "+10s/+70s", "-feature-gates=NodeControllerLeaseCircuitBreaker=false", "-phases", "1", logFile}, 0, []string{"lease-watch-stall: +10s to +1m10s (modelled)", "extra"}},
		{"no file", nil, 2, []string{"no audit log given"}},
		{"svg", []string{"-format", "svg", "-phases", "1", "-node-monitor-grace-period=60s", logFile}, 0, []string{`<svg xmlns="http://www.w3.org/2000/svg"`,
			`<title>n1</title>n1</text>`, "policy: --node-monitor-grace-period=1m0s; monitor pass phase 0s", "first divergence +1m39.999s", "</svg>"}},
		{"svg doctor", []string{"-format", "svg", "-doctor", logFile}, 2, []string{"-format svg draws one replay's timeline: use text or json with -doctor and -sweep"}},
		{"svg sweep", []string{"-format", "svg", "-sweep", "node-monitor-grace-period=40s,60s", logFile}, 2, []string{"-format svg draws one replay's timeline"}},
		{"bad format", []string{"-format", "xml", logFile}, 2, []string{"-format must be text, json or svg"}},
		{"bad policy", []string{"-node-monitor-grace-period=-1s", logFile}, 2, []string{"must be positive"}},
		{"bad gate", []string{"-feature-gates=Foo=true", logFile}, 2, []string{"unknown feature gate Foo"}},
		{"bad stall", []string{"-lease-watch-stall", "+70s/+10s", logFile}, 2, []string{"TO must be after FROM"}},
		{"bad sweep", []string{"-sweep", "node-eviction-rate", logFile}, 2, []string{"want flag=v1,v2 and so on"}},
		{"limit", []string{"-max-nodes", "2", logFile}, 2, []string{"MaxNodes=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := runArgs(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("run(%q) exit %d, want %d; output:\n%s", tt.args, code, tt.wantCode, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("run(%q) output lacks %q:\n%s", tt.args, w, out)
				}
			}
		})
	}
}

// TestGuessedCommandLine: the log with kubeadm's kube-controller-manager
// mirror pod (a kubelet's create at level Request): its flags are the
// guess, labelled with the pod; a flag given wins; -guess-policy=false
// goes back to v1.37.2's defaults, assumed.
func TestGuessedCommandLine(t *testing.T) {
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	pod := `{"level":"Request","auditID":"kcm-1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/kube-system/pods","verb":"create",` +
		`"user":{"username":"system:node:cp1","groups":["system:nodes"]},"objectRef":{"resource":"pods","namespace":"kube-system","name":"kube-controller-manager-cp1","apiVersion":"v1"},` +
		`"responseStatus":{"code":201},"requestObject":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"kube-controller-manager-cp1","namespace":"kube-system"},` +
		`"spec":{"nodeName":"cp1","containers":[{"name":"kube-controller-manager","command":["kube-controller-manager","--node-monitor-grace-period=40s","--node-monitor-period","5s","--controllers=*"]}]}},` +
		`"requestReceivedTimestamp":"2026-01-01T00:00:00.000500Z","stageTimestamp":"2026-01-01T00:00:00.001Z"}`
	path := filepath.Join(t.TempDir(), "with-kcm.jsonl")
	if err := os.WriteFile(path, []byte(pod+"\n"+string(b)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"--node-monitor-grace-period=40s   guessed: on kube-controller-manager's command line (pod kube-system/kube-controller-manager-cp1, created 2026-01-01T00:00:00.001Z)",
			"--node-eviction-rate=0.1   guessed: not on kube-controller-manager's command line (pod kube-system/kube-controller-manager-cp1, created 2026-01-01T00:00:00.001Z): its default",
			"(8 values guessed from the log", "No divergence"}},
		{[]string{"-node-monitor-grace-period=60s"}, []string{"--node-monitor-grace-period=1m0s (given)", "--node-monitor-period=5s   guessed: on kube-controller-manager's command line", "(7 values guessed"}},
		{[]string{"-guess-policy=false"}, []string{"--node-monitor-grace-period=50s (assumed)", "--node-monitor-period=5s (assumed)"}},
		{[]string{"-doctor"}, []string{"  - kube-controller-manager's command line: pod kube-system/kube-controller-manager-cp1, created 2026-01-01T00:00:00.001Z (" + path + ":1), 2 of the policy flags on it"}},
		{[]string{"-format", "json", "-phases", "1"}, []string{`"value": "40s",
      "source": "guessed",
      "reason": "on kube-controller-manager's command line (pod kube-system/kube-controller-manager-cp1, created 2026-01-01T00:00:00.001Z)"`}},
	} {
		out, code := runArgs(t, append(tt.args, path)...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", tt.args, code, out)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%q: output lacks %q:\n%s", tt.args, w, out)
			}
		}
		if len(tt.args) == 1 && tt.args[0] == "-guess-policy=false" && strings.Contains(out, "guessed") {
			t.Errorf("-guess-policy=false: output says guessed:\n%s", out)
		}
	}
}

func TestFailOnMoreEvictions(t *testing.T) {
	// The log without the recorded controller's pod deletions: the replay
	// evicts pods the recording did not.
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.Contains(l, `"verb":"delete"`) {
			kept = append(kept, l)
		}
	}
	path := filepath.Join(t.TempDir(), "no-deletes.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(kept, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runArgs(t, "-node-monitor-grace-period=40s", "-fail-on-more-evictions", path)
	if code != 3 {
		t.Fatalf("exit %d, want 3; output:\n%s", code, out)
	}
	if !strings.Contains(out, "Pods newly lost (the replay evicted them, the recording did not): 2") {
		t.Errorf("output lacks the 2 newly lost pods:\n%s", out)
	}
	if _, code := runArgs(t, "-node-monitor-grace-period=40s", path); code != 0 {
		t.Errorf("without -fail-on-more-evictions: exit %d, want 0", code)
	}
	if out, code := runArgs(t, "-sweep", "node-monitor-grace-period=40s,10m", "-fail-on-more-evictions", path); code != 3 {
		t.Errorf("-sweep: exit %d, want 3; output:\n%s", code, out)
	}
	if out, code := runArgs(t, "-sweep", "node-monitor-grace-period=5m,10m", "-fail-on-more-evictions", path); code != 0 {
		t.Errorf("-sweep without evictions: exit %d, want 0; output:\n%s", code, out)
	}
}

func TestOutputDeterministic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, format := range []string{"json", "text", "svg"} {
		var first string
		for i, procs := range []int{1, 4, 1} {
			runtime.GOMAXPROCS(procs)
			out, code := runArgs(t, "-format", format, "-parallel", fmt.Sprint(procs), "-lease-watch-stall", "+10s/+70s", logFile)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, out)
			}
			if i == 0 {
				first = out
			} else if out != first {
				t.Fatalf("-format %s, GOMAXPROCS=%d: output differs from the first run's", format, procs)
			}
		}
		if format == "svg" {
			continue // no sweep in SVG
		}
		// A sweep, at once and one run at a time.
		a, codeA := runArgs(t, "-format", format, "-parallel", "4", "-sweep", "node-monitor-grace-period=40s,50s,60s", logFile)
		b, codeB := runArgs(t, "-format", format, "-parallel", "1", "-sweep", "node-monitor-grace-period=40s,50s,60s", logFile)
		if codeA != 0 || codeB != 0 {
			t.Fatalf("-format %s -sweep: exit %d and %d:\n%s\n%s", format, codeA, codeB, a, b)
		}
		if a != b {
			t.Fatalf("-format %s -sweep: -parallel 4 and 1 differ:\n%s\n%s", format, a, b)
		}
	}
}

func TestExportScenario(t *testing.T) {
	out := filepath.Join(t.TempDir(), "outage.yaml")
	if s, code := runArgs(t, "-phases", "1", "-node-monitor-grace-period=60s", "-export-scenario", out, logFile); code != 0 {
		t.Fatalf("exit %d: %s", code, s)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sim.LoadScenario(out, b)
	if err != nil {
		t.Fatalf("LoadScenario() error = %v\n%s", err, b)
	}
	if sc.Name != "outage" || len(sc.Zones) != 1 || sc.Zones[0].Nodes != 3 || sc.Policy.NodeMonitorGracePeriod.D() != time.Minute {
		t.Errorf("scenario %+v, want outage: one zone of 3 nodes, grace 60s", sc)
	}
	if !strings.Contains(string(b), "#   n1 -> zone-a-1") {
		t.Errorf("scenario lacks the name mapping:\n%s", b)
	}
}

// TestSweepRecordedReactions: #121793's kubelets post Ready 8-10s after
// the recorded Unknown writes, in reaction to them. Replayed under 50s
// (breaker off, the measured pass interval, the watch stalled to the
// relist's end 1s after the watch ended) the replay has not written the
// nodes Unknown yet and leaves those posts out: every node is still
// written Unknown (none missing). -keep-reactions feeds them as
// heartbeats, which "save" every node (all 15 recorded decisions missing).
func TestSweepRecordedReactions(t *testing.T) {
	file := filepath.Join("testdata", "incidents", "reconstructed-121793-lease-watch-http2.audit.jsonl")
	args := []string{"-node-monitor-period=5001362us", "-feature-gates=NodeControllerLeaseCircuitBreaker=false",
		"-lease-watch-stall", "2023-11-03T14:59:56.408Z/2023-11-03T15:00:42.408Z", "-sweep", "node-monitor-grace-period=40s,50s"}
	missing := func(out string) map[string]string {
		m := map[string]string{}
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 3 && strings.HasPrefix(f[0], "node-monitor-grace-period=") {
				m[f[0]] = f[3]
			}
		}
		return m
	}
	for _, tt := range []struct {
		keep bool
		want map[string]string
	}{
		{false, map[string]string{"node-monitor-grace-period=40s": "0", "node-monitor-grace-period=50s": "0"}},
		{true, map[string]string{"node-monitor-grace-period=40s": "0", "node-monitor-grace-period=50s": "15"}},
	} {
		a := args
		if tt.keep {
			a = append([]string{"-keep-reactions"}, a...)
		}
		out, code := runArgs(t, append(a, file)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		}
		if got := missing(out); !maps.Equal(got, tt.want) {
			t.Errorf("-keep-reactions=%v: missing per grace = %v, want %v:\n%s", tt.keep, got, tt.want, out)
		}
	}
	out, _ := runArgs(t, "-doctor", file)
	if !strings.Contains(out, "kubelets reacting to the recorded controller's writes: 5 node status posts and 0 pod status posts") {
		t.Errorf("-doctor lacks the count of recorded reactions:\n%s", out)
	}
}

// TestShippedSVG checks testdata/synthetic-outage-grace-60s.svg, the
// README's picture, is what -format svg draws of the shipped log under a
// 60s grace; -update rewrites it.
func TestShippedSVG(t *testing.T) {
	want, code := runArgs(t, "-format", "svg", "-phases", "1", "-node-monitor-grace-period=60s", logFile)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, want)
	}
	path := filepath.Join("testdata", "synthetic-outage-grace-60s.svg")
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with go test -run TestShippedSVG -update)", err)
	}
	if string(got) != want {
		t.Errorf("%s differs from -format svg's output (regenerate with go test ./examples/replay -run TestShippedSVG -update)", path)
	}
}
