package incident

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

func TestParseCommandLine(t *testing.T) {
	many := []string{"kube-controller-manager"}
	for i := range 100_000 {
		many = append(many, "--v="+strconv.Itoa(i))
	}
	many = append(many, "--node-monitor-grace-period=40s") // beyond the bound: not seen
	tests := []struct {
		name        string
		argv        []string
		want        map[string]string
		ignored     []string // substrings, in order
		truncatedGE int
	}{
		{"equals form", []string{"kube-controller-manager", "--node-monitor-grace-period=40s", "--node-eviction-rate=0.2", "--v=2"},
			map[string]string{FlagNodeMonitorGracePeriod: "40s", FlagNodeEvictionRate: "0.2"}, nil, 0},
		{"space form", []string{"kube-controller-manager", "--node-monitor-period", "2s", "--large-cluster-size-threshold", "20"},
			map[string]string{FlagNodeMonitorPeriod: "2s", FlagLargeClusterSizeThreshold: "20"}, nil, 0},
		{"last wins", []string{"--node-monitor-grace-period=40s", "--node-monitor-grace-period=1m"},
			map[string]string{FlagNodeMonitorGracePeriod: "1m"}, nil, 0},
		{"feature gates list", []string{"--feature-gates=Foo=true,NodeControllerLeaseCircuitBreaker=false,Bar=false"},
			map[string]string{FlagFeatureGates: "NodeControllerLeaseCircuitBreaker=false"}, nil, 0},
		{"feature gates merged", []string{"--feature-gates", "NodeControllerLeaseCircuitBreaker=false", "--feature-gates=Other=true"},
			map[string]string{FlagFeatureGates: "NodeControllerLeaseCircuitBreaker=false"}, nil, 0},
		{"other gates only", []string{"--feature-gates=Foo=true"}, map[string]string{}, nil, 0},
		{"shell form", []string{"/bin/sh", "-c", "exec kube-controller-manager --node-monitor-grace-period=\"30s\" --unhealthy-zone-threshold 0.7"},
			map[string]string{FlagNodeMonitorGracePeriod: "30s", FlagUnhealthyZoneThreshold: "0.7"}, nil, 0},
		{"garbage ignored", []string{"--node-monitor-grace-period=soon", "--unhealthy-zone-threshold=7", "--node-eviction-rate=NaN", "--feature-gates=NodeControllerLeaseCircuitBreaker=maybe"},
			map[string]string{}, []string{"--node-monitor-grace-period=soon", "--node-eviction-rate=NaN", "--unhealthy-zone-threshold=7", "not a bool"}, 0},
		{"garbage after a value", []string{"--node-monitor-period=1s", "--node-monitor-period=-1s"},
			map[string]string{FlagNodeMonitorPeriod: "1s"}, []string{"must be positive (an earlier value is used)"}, 0},
		{"missing value", []string{"kube-controller-manager", "--node-monitor-period"}, map[string]string{}, []string{"without a value"}, 0},
		{"single dash and other flags", []string{"-node-monitor-period=1s", "--controllers=*", "--node-cidr-mask-size", "24"}, map[string]string{}, nil, 0},
		{"huge args list bounded", many, map[string]string{}, nil, len(many) - maxCommandLineArgs},
		{"huge arg skipped", []string{"--node-monitor-period=1s" + strings.Repeat("x", maxArgBytes)}, map[string]string{}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flags, ignored, truncated := parseCommandLine(tt.argv)
			if !maps.Equal(flags, tt.want) {
				t.Errorf("flags = %v, want %v", flags, tt.want)
			}
			if len(ignored) != len(tt.ignored) {
				t.Fatalf("ignored = %q, want %d like %q", ignored, len(tt.ignored), tt.ignored)
			}
			for i, w := range tt.ignored {
				if !strings.Contains(ignored[i], w) {
					t.Errorf("ignored[%d] = %q, want it to contain %q", i, ignored[i], w)
				}
			}
			if truncated < tt.truncatedGE || (tt.truncatedGE == 0 && truncated != 0) {
				t.Errorf("truncated = %d, want %d", truncated, tt.truncatedGE)
			}
		})
	}
}

// kcmPodEvent is a kubelet's mirror-pod create of kubeadm's static
// kube-controller-manager pod on node, at level Request.
func kcmPodEvent(node string, at time.Duration, line int64, args ...string) audit.Event {
	pod := map[string]any{"kind": "Pod", "apiVersion": "v1",
		"metadata": map[string]any{"name": "kube-controller-manager-" + node, "namespace": "kube-system"},
		"spec": map[string]any{"nodeName": node, "containers": []map[string]any{{"name": "kube-controller-manager",
			"command": append([]string{"kube-controller-manager", "--controllers=*,bootstrapsigner,tokencleaner"}, args...)}}}}
	return audit.Event{Level: "Request", AuditID: fmt.Sprintf("kcm-%d", line), Stage: "ResponseComplete", Verb: "create",
		User: audit.User{Username: "system:node:" + node}, ResponseStatus: &audit.Status{Code: 201},
		ObjectRef:                &audit.ObjectRef{Resource: "pods", Namespace: "kube-system", Name: "kube-controller-manager-" + node, APIVersion: "v1"},
		RequestObject:            mustJSON(pod),
		RequestReceivedTimestamp: epoch.Add(at), StageTimestamp: epoch.Add(at + time.Millisecond),
		Source: audit.Position{File: "kcm.log", Line: line}}
}

// withEvents returns evs with more merged in, in time order.
func withEvents(evs []audit.Event, more ...audit.Event) []audit.Event {
	out := append(slices.Clone(evs), more...)
	slices.SortStableFunc(out, func(a, b audit.Event) int { return a.StageTimestamp.Compare(b.StageTimestamp) })
	return out
}

func inventoryOf(t *testing.T, evs []audit.Event) *History {
	t.Helper()
	h, err := Inventory(SliceSource(evs), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func valueOf(p Policy, flag string) PolicyValue {
	for _, v := range p.Values() {
		if v.Flag == flag {
			return v
		}
	}
	return PolicyValue{}
}

func TestInventoryKCMPod(t *testing.T) {
	g := &gen{nodes: 3, podsPerNode: 1, duration: 3 * time.Minute, stop: "n1", stopAt: 50 * time.Second, unknownAt: 100 * time.Second}
	base := g.build()
	h := inventoryOf(t, withEvents(base, kcmPodEvent("cp1", time.Second, 1, "--node-monitor-grace-period=40s", "--node-monitor-period", "2s",
		"--feature-gates=RotateKubeletServerCertificate=true,NodeControllerLeaseCircuitBreaker=false")))
	c := h.Guess.CommandLine
	if c == nil || c.Pod != "kube-system/kube-controller-manager-cp1" {
		t.Fatalf("CommandLine = %+v, want kube-system/kube-controller-manager-cp1's", c)
	}
	p := h.Guess.Apply(DefaultPolicy())
	if p.NodeMonitorGracePeriod != 40*time.Second || p.NodeMonitorPeriod != 2*time.Second || p.LeaseCircuitBreaker {
		t.Errorf("guessed policy %+v, want grace 40s, period 2s, breaker off", p)
	}
	for _, f := range PolicyFlags {
		v := valueOf(p, f)
		if v.Source != SourceGuessed {
			t.Errorf("%s: source %q, want guessed", f, v.Source)
		}
		want := "on kube-controller-manager's command line (pod kube-system/kube-controller-manager-cp1, created 2026-01-01T00:00:01.001Z)"
		if f == FlagNodeEvictionRate {
			want = "not on kube-controller-manager's command line (pod kube-system/kube-controller-manager-cp1, created 2026-01-01T00:00:01.001Z): its default"
			if v.Value != "0.1" {
				t.Errorf("%s = %s, want the default 0.1", f, v.Value)
			}
		}
		if f != FlagNodeMonitorGracePeriod && f != FlagNodeMonitorPeriod && f != FlagFeatureGates && f != FlagNodeEvictionRate {
			continue
		}
		if v.Reason != want {
			t.Errorf("%s: reason %q, want %q", f, v.Reason, want)
		}
	}
	// Given flags win.
	given := policy(t, "node-monitor-grace-period=60s")
	p = h.Guess.Apply(given)
	if v := valueOf(p, FlagNodeMonitorGracePeriod); v.Value != "1m0s" || v.Source != SourceGiven || v.Reason != "" {
		t.Errorf("given grace: %+v, want 1m0s given", v)
	}
	if !strings.Contains(p.String(), "--node-monitor-grace-period=1m0s") || strings.Contains(p.String(), "node-monitor-period") {
		t.Errorf("String() = %q, want the given flags only", p.String())
	}

	t.Run("HA disagreement", func(t *testing.T) {
		h := inventoryOf(t, withEvents(base,
			kcmPodEvent("cp1", time.Second, 1, "--node-monitor-grace-period=40s"),
			kcmPodEvent("cp2", 2*time.Second, 2, "--node-monitor-grace-period=50s"),
			kcmPodEvent("cp3", 3*time.Second, 3, "--node-monitor-grace-period=40s")))
		if got := h.Guess.CommandLine.Pod; got != "kube-system/kube-controller-manager-cp3" {
			t.Errorf("used %s, want the latest created, cp3's", got)
		}
		v := valueOf(h.Guess.Apply(DefaultPolicy()), FlagNodeMonitorGracePeriod)
		if v.Value != "40s" || !strings.Contains(v.Reason, "disagree: pod kube-system/kube-controller-manager-cp2, created 2026-01-01T00:00:02.001Z has 50s") ||
			!strings.Contains(v.Reason, "the latest created is used") || strings.Contains(v.Reason, "cp1") {
			t.Errorf("grace %+v, want 40s naming cp2's disagreement", v)
		}
		if v := valueOf(h.Guess.Apply(DefaultPolicy()), FlagNodeMonitorPeriod); strings.Contains(v.Reason, "disagree") {
			t.Errorf("period %+v: the pods agree on it", v)
		}
	})
	t.Run("metadata level", func(t *testing.T) {
		e := kcmPodEvent("cp1", time.Second, 1, "--node-monitor-grace-period=40s")
		e.Level, e.RequestObject = "Metadata", nil
		h := inventoryOf(t, withEvents(base, e))
		if h.Guess.CommandLine != nil {
			t.Fatalf("CommandLine %+v from a body-less event", h.Guess.CommandLine)
		}
		if !slices.ContainsFunc(h.Guess.Evidence, func(s string) bool { return strings.Contains(s, "1 kube-controller-manager pod writes without a body") }) {
			t.Errorf("evidence %q lacks the body-less pod", h.Guess.Evidence)
		}
		// Timing takes over for the grace period.
		if v := valueOf(h.Guess.Apply(DefaultPolicy()), FlagNodeMonitorGracePeriod); v.Source != SourceGuessed || !strings.Contains(v.Reason, "from timing") {
			t.Errorf("grace %+v, want a timing guess", v)
		}
	})
	t.Run("garbage value", func(t *testing.T) {
		h := inventoryOf(t, withEvents(base, kcmPodEvent("cp1", time.Second, 1, "--node-monitor-grace-period=soon", "--node-monitor-period=2s")))
		p := h.Guess.Apply(DefaultPolicy())
		if v := valueOf(p, FlagNodeMonitorGracePeriod); !strings.Contains(v.Reason, "from timing") {
			t.Errorf("grace %+v: the command line's garbage is ignored, timing guesses", v)
		}
		if !slices.ContainsFunc(h.Guess.Lines(DefaultPolicy()), func(s string) bool { return strings.Contains(s, "soon") && strings.Contains(s, "ignored") }) {
			t.Errorf("doctor lines lack the ignored value: %q", h.Guess.Lines(DefaultPolicy()))
		}
	})
	t.Run("hostile", func(t *testing.T) {
		// A pod update over MaxObjectBytes is skipped, not an error; a
		// body that is not a pod, counted.
		big := kcmPodEvent("cp1", time.Second, 1, "--node-monitor-grace-period="+strings.Repeat("9", 5<<20))
		big.Verb = "update"
		bad := kcmPodEvent("cp2", 2*time.Second, 2)
		bad.RequestObject = []byte(`{"spec":{"containers":"kube-controller-manager"}}`)
		h := inventoryOf(t, withEvents(base, big, bad))
		if h.Guess.CommandLine != nil {
			t.Errorf("CommandLine %+v from hostile pods", h.Guess.CommandLine)
		}
		ev := strings.Join(h.Guess.Evidence, "\n")
		if !strings.Contains(ev, "over MaxObjectBytes") || !strings.Contains(ev, "could not be read") {
			t.Errorf("evidence lacks the hostile pods:\n%s", ev)
		}
	})
	t.Run("pod name bound", func(t *testing.T) {
		var more []audit.Event
		for i := range 3 * maxKCMPods {
			more = append(more, kcmPodEvent("cp"+strconv.Itoa(i), time.Duration(i+1)*time.Millisecond, int64(i+1)))
		}
		h := inventoryOf(t, withEvents(base, more...))
		if n := len(h.Guess.Others) + 1; n != maxKCMPods {
			t.Errorf("kept %d command lines, want %d", n, maxKCMPods)
		}
	})
}

func TestGuessGrace(t *testing.T) {
	// n1's last renewal at +50.01s, written Unknown at +1m40s: 49.99s.
	g := &gen{nodes: 3, podsPerNode: 1, duration: 3 * time.Minute, stop: "n1", stopAt: 51 * time.Second, unknownAt: 100 * time.Second}
	h := inventoryOf(t, g.build())
	v := valueOf(h.Guess.Apply(DefaultPolicy()), FlagNodeMonitorGracePeriod)
	// The range holds v1.31's default, 40s: the likelier value.
	if v.Value != "40s" || v.Source != SourceGuessed || !strings.Contains(v.Reason, "from 1 node,") ||
		!strings.Contains(v.Reason, "[38.989s, 49.989s] for --node-monitor-period up to 5s") || !strings.Contains(v.Reason, "guessed 40s as v1.31 and earlier's default is in it") {
		t.Errorf("grace %+v, want 40s from 1 node in [38.989s, 49.989s]", v)
	}
	// A given period narrows the range, to no default: the shortest
	// delay rounded down.
	v = valueOf(h.Guess.Apply(policy(t, "node-monitor-period=1s")), FlagNodeMonitorGracePeriod)
	if v.Value != "49s" || !strings.Contains(v.Reason, "[46.989s, 49.989s] for the given --node-monitor-period=1s") {
		t.Errorf("grace with the period given %+v", v)
	}
	// Other flags stay assumed.
	if v := valueOf(h.Guess.Apply(DefaultPolicy()), FlagNodeStartupGracePeriod); v.Source != SourceAssumed {
		t.Errorf("startup grace %+v, want assumed", v)
	}

	t.Run("stale cache", func(t *testing.T) {
		// Written Unknown 1.5s after a renewal (every 10s): no grace
		// period does that; no guess.
		g := &gen{nodes: 3, podsPerNode: 1, duration: 3 * time.Minute, stop: "n1", stopAt: 51 * time.Second, unknownAt: 51*time.Second + 500*time.Millisecond}
		h := inventoryOf(t, g.build())
		if v := valueOf(h.Guess.Apply(DefaultPolicy()), FlagNodeMonitorGracePeriod); v.Source != SourceAssumed {
			t.Errorf("grace %+v, want assumed", v)
		}
		if l := strings.Join(h.Guess.Lines(DefaultPolicy()), "\n"); !strings.Contains(l, "a stale cache, not a grace period") {
			t.Errorf("doctor lines lack why:\n%s", l)
		}
	})
	t.Run("inconsistent", func(t *testing.T) {
		// Two nodes: one Unknown 20s after its last renewal, one 90s: no
		// one grace period fits both.
		g := &gen{nodes: 3, podsPerNode: 1, duration: 3 * time.Minute, stop: "n1", stopAt: 50 * time.Second, unknownAt: 70 * time.Second}
		evs := g.build()
		var kept []audit.Event
		for _, e := range evs {
			if e.ObjectRef.Name == "n2" && e.ObjectRef.Resource == "leases" && e.StageTimestamp.After(epoch.Add(60*time.Second)) {
				continue
			}
			kept = append(kept, e)
		}
		un := g.node("n2", v1.ConditionUnknown, 0, nil)
		g.events = nil
		g.add(150*time.Second, nodeController, "update", audit.ObjectRef{Resource: "nodes", Name: "n2", Subresource: "status", APIVersion: "v1"}, un, nil)
		h := inventoryOf(t, withEvents(kept, g.events...))
		if len(h.Guess.GraceDelays) != 2 {
			t.Fatalf("delays %v, want 2", h.Guess.GraceDelays)
		}
		if v := valueOf(h.Guess.Apply(DefaultPolicy()), FlagNodeMonitorGracePeriod); v.Source != SourceAssumed {
			t.Errorf("grace %+v, want assumed", v)
		}
		if l := strings.Join(h.Guess.Lines(DefaultPolicy()), "\n"); !strings.Contains(l, "do not fit one grace period") {
			t.Errorf("doctor lines lack why:\n%s", l)
		}
	})
	t.Run("startup", func(t *testing.T) {
		// A node created in the log that never posts a status: its
		// Unknown write is the startup grace period's; not used.
		g := &gen{nodes: 2, duration: time.Minute}
		evs := g.build()
		g.events = nil
		n := g.node("new", v1.ConditionUnknown, 0, nil)
		g.add(5*time.Second, "system:node:new", "create", audit.ObjectRef{Resource: "nodes", Name: "new", APIVersion: "v1"}, n, nil)
		g.add(6*time.Second, "system:node:new", "update", audit.ObjectRef{Resource: "leases", Namespace: v1.NamespaceNodeLease, Name: "new", APIGroup: "coordination.k8s.io", APIVersion: "v1"}, nil, nil)
		g.add(65*time.Second, nodeController, "update", audit.ObjectRef{Resource: "nodes", Name: "new", Subresource: "status", APIVersion: "v1"}, n, nil)
		h := inventoryOf(t, withEvents(evs, g.events...))
		if len(h.Guess.GraceDelays) != 0 || !slices.ContainsFunc(h.Guess.Evidence, func(s string) bool { return strings.Contains(s, "--node-startup-grace-period") }) {
			t.Errorf("delays %v, evidence %q: want none, the startup write named", h.Guess.GraceDelays, h.Guess.Evidence)
		}
	})
}

func leaseRead(verb string, at time.Duration, line int64) audit.Event {
	return audit.Event{Level: "Metadata", Stage: "ResponseComplete", Verb: verb, User: audit.User{Username: "system:kube-controller-manager"},
		ObjectRef:      &audit.ObjectRef{Resource: "leases", Namespace: v1.NamespaceNodeLease, Name: "n1", APIGroup: "coordination.k8s.io", APIVersion: "v1"},
		ResponseStatus: &audit.Status{Code: 200}, RequestReceivedTimestamp: epoch.Add(at), StageTimestamp: epoch.Add(at + time.Millisecond),
		Source: audit.Position{File: "reads.log", Line: line}}
}

func TestGuessBreaker(t *testing.T) {
	g := &gen{nodes: 3, podsPerNode: 1, duration: 3 * time.Minute, stop: "n1", stopAt: 51 * time.Second, unknownAt: 100 * time.Second}
	base := g.build()
	// Its live reads: on.
	h := inventoryOf(t, withEvents(base, leaseRead("list", time.Second, 1), leaseRead("get", 99*time.Second, 2)))
	v := valueOf(h.Guess.Apply(DefaultPolicy()), FlagFeatureGates)
	if v.Value != GateLeaseCircuitBreaker+"=true" || v.Source != SourceGuessed || !strings.Contains(v.Reason, "its live Lease reads are in the log (GETs of Leases in kube-node-lease by the recorded controller: 1,") {
		t.Errorf("gate %+v, want guessed on", v)
	}
	// None, its Lease reads logged, a node written Unknown 49.99s after
	// its Lease renewal: off under a given grace of 60s, nothing under
	// 40s (or none given).
	h = inventoryOf(t, withEvents(base, leaseRead("list", time.Second, 1), leaseRead("watch", 2*time.Second, 2)))
	v = valueOf(h.Guess.Apply(policy(t, "node-monitor-grace-period=60s")), FlagFeatureGates)
	if v.Value != GateLeaseCircuitBreaker+"=false" || v.Source != SourceGuessed || !strings.Contains(v.Reason, "wrote n1 Unknown 49.989s after its Lease renewal") {
		t.Errorf("gate %+v, want guessed off", v)
	}
	for _, p := range []Policy{policy(t, "node-monitor-grace-period=40s"), DefaultPolicy()} {
		if v := valueOf(h.Guess.Apply(p), FlagFeatureGates); v.Source != SourceAssumed {
			t.Errorf("gate %+v under %s, want assumed", v, p)
		}
	}
	// Its Lease reads not logged at all: nothing to tell.
	h = inventoryOf(t, base)
	if v := valueOf(h.Guess.Apply(policy(t, "node-monitor-grace-period=60s")), FlagFeatureGates); v.Source != SourceAssumed {
		t.Errorf("gate %+v without logged Lease reads, want assumed", v)
	}
}

// evictionLog: 8 nodes of zone-a renewing every 10s; n0..n{k-1} stop
// after +30s, the recorded controller writes them Unknown at +1m20s and
// taints them NoExecute at the offsets given.
func evictionLog(k int, taintsAt []time.Duration) []audit.Event {
	g := &gen{nodes: 8, duration: 4 * time.Minute}
	evs := g.build()
	var kept []audit.Event
	for _, e := range evs {
		if e.ObjectRef.Resource == "leases" && e.StageTimestamp.After(epoch.Add(31*time.Second)) {
			if i, _ := strconv.Atoi(strings.TrimPrefix(e.ObjectRef.Name, "n")); i < k {
				continue
			}
		}
		kept = append(kept, e)
	}
	g.events = nil
	for i := range k {
		n := g.nodeName(i)
		g.add(80*time.Second+time.Duration(i)*time.Millisecond, nodeController, "update", audit.ObjectRef{Resource: "nodes", Name: n, Subresource: "status", APIVersion: "v1"}, g.node(n, v1.ConditionUnknown, 0, nil), nil)
	}
	for i, at := range taintsAt {
		n := g.nodeName(i)
		ne := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: epoch.Add(at).Truncate(time.Second)}}
		g.add(at, nodeController, "patch", audit.ObjectRef{Resource: "nodes", Name: n, APIVersion: "v1"}, map[string]any{"spec": map[string]any{"taints": []v1.Taint{ne}}}, nil)
	}
	return withEvents(kept, g.events...)
}

func TestGuessEvictionRate(t *testing.T) {
	s := time.Second
	tests := []struct {
		name     string
		k        int
		taints   []time.Duration
		thr      string // --unhealthy-zone-threshold given ("": assumed)
		flag     string // "": no guess
		value    string
		whyNone  string
		reasonOK string
	}{
		{"queued, regular", 3, []time.Duration{81 * s, 91 * s, 101 * s}, "", FlagNodeEvictionRate, "0.1", "", "3 of 8 nodes Unknown"},
		{"queued, 5s", 4, []time.Duration{81 * s, 86 * s, 91*s + 100*time.Millisecond, 96 * s}, "", FlagNodeEvictionRate, "0.2", "", "median 5s"},
		{"partial disruption", 5, []time.Duration{81 * s, 181 * s, 281 * s}, "0.55", FlagSecondaryNodeEvictionRate, "0.01", "", "partial disruption state (5 of 8"},
		{"two taints", 3, []time.Duration{81 * s, 91 * s}, "", "", "", "fewer than three", ""},
		{"irregular", 3, []time.Duration{81 * s, 91 * s, 121 * s}, "", "", "", "not regular", ""},
		{"too close", 3, []time.Duration{81 * s, 81*s + 100*time.Millisecond, 81*s + 200*time.Millisecond}, "", "", "", "too close", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := inventoryOf(t, evictionLog(tt.k, tt.taints))
			p := DefaultPolicy()
			if tt.thr != "" {
				p = policy(t, "unhealthy-zone-threshold="+tt.thr)
			}
			g := h.Guess.Apply(p)
			for _, f := range []string{FlagNodeEvictionRate, FlagSecondaryNodeEvictionRate} {
				v := valueOf(g, f)
				if f != tt.flag {
					if v.Source != SourceAssumed {
						t.Errorf("%s %+v, want assumed", f, v)
					}
					continue
				}
				if v.Value != tt.value || v.Source != SourceGuessed || !strings.Contains(v.Reason, tt.reasonOK) {
					t.Errorf("%s %+v, want %s guessed, the reason with %q", f, v, tt.value, tt.reasonOK)
				}
			}
			if tt.flag == "" {
				if l := strings.Join(h.Guess.Lines(p), "\n"); !strings.Contains(l, tt.whyNone) {
					t.Errorf("doctor lines lack %q:\n%s", tt.whyNone, l)
				}
			}
		})
	}
	// Nodes going dark one by one (not queued): their spacing is the
	// outage's, not the rate's.
	g := &gen{nodes: 8, duration: 4 * time.Minute}
	evs := g.build()
	g.events = nil
	for i := range 3 {
		n := g.nodeName(i)
		at := 80*time.Second + time.Duration(i)*10*time.Second
		g.add(at, nodeController, "update", audit.ObjectRef{Resource: "nodes", Name: n, Subresource: "status", APIVersion: "v1"}, g.node(n, v1.ConditionUnknown, 0, nil), nil)
		ne := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: epoch.Add(at + time.Second).Truncate(time.Second)}}
		g.add(at+time.Second, nodeController, "patch", audit.ObjectRef{Resource: "nodes", Name: n, APIVersion: "v1"}, map[string]any{"spec": map[string]any{"taints": []v1.Taint{ne}}}, nil)
	}
	h := inventoryOf(t, withEvents(evs, g.events...))
	if v := valueOf(h.Guess.Apply(DefaultPolicy()), FlagNodeEvictionRate); v.Source != SourceAssumed {
		t.Errorf("one by one: %+v, want assumed", v)
	}
}

// TestGuessRecordedKCM checks the timing guesses against the recordings
// of kube-controller-manager v1.37.2 whose flags are known
// (TestRecordedKCM): each guess must be the real value or bracket it with
// its range, or be absent. The recordings carry no kube-controller-manager
// pod (it ran as a process) and no Lease GETs (trimmed away).
func TestGuessRecordedKCM(t *testing.T) {
	for _, tt := range []struct {
		name  string
		grace time.Duration // the real --node-monitor-grace-period
		guess string        // the guess ("": none)
	}{
		{"parity-one-silent-node", 4 * time.Second, "4s"},
		{"parity-zone-dark", 4 * time.Second, "4s"},
		{"parity-all-dark", 4 * time.Second, "4s"},
		{"parity-all-dark-feature-gates-nodecontrollerleasecircuitbreaker-false", 4 * time.Second, "4s"},
		{"fault-lease-watch-stall", 10 * time.Second, ""},
		{"fault-controller-cut-off", 10 * time.Second, ""},
		{"node-clock-skew", 4 * time.Second, "5s"}, // one pass late on both nodes: bracketed
		{"node-controller-etcd-restart-mid-countdown", 8 * time.Second, "8s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src, err := audit.Open([]string{filepath.Join("..", "testdata", "kcm", tt.name+".audit.jsonl.gz")}, audit.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			h, err := Inventory(src, Options{})
			if err != nil {
				t.Fatal(err)
			}
			// Under the defaults, and with the real period given (a
			// narrower range).
			for _, base := range []Policy{DefaultPolicy(), policy(t, "node-monitor-period=1s")} {
				checkRecordedGuess(t, h.Guess.Apply(base), tt.grace, tt.guess)
			}
		})
	}
}

func checkRecordedGuess(t *testing.T, p Policy, grace time.Duration, guess string) {
	t.Helper()
	{
		{
			for _, v := range p.Values() {
				if v.Source == SourceGuessed && v.Flag != FlagNodeMonitorGracePeriod {
					t.Errorf("%s guessed %s (%s): the recording cannot tell it", v.Flag, v.Value, v.Reason)
				}
			}
			v := valueOf(p, FlagNodeMonitorGracePeriod)
			t.Logf("grace: %s %s %s", v.Value, v.Source, v.Reason)
			if guess == "" {
				if v.Source != SourceAssumed {
					t.Errorf("grace guessed %s, want no guess", v.Value)
				}
				return
			}
			if v.Source != SourceGuessed || v.Value != guess {
				t.Fatalf("grace %+v, want %s guessed", v, guess)
			}
			if guess != grace.String() {
				// Not the real value: its range must bracket it.
				_, rest, _ := strings.Cut(v.Reason, "the grace period is in [")
				los, rest, _ := strings.Cut(rest, ", ")
				his, _, _ := strings.Cut(rest, "]")
				lo, err1 := time.ParseDuration(los)
				hi, err2 := time.ParseDuration(his)
				if err1 != nil || err2 != nil || grace < lo || grace > hi {
					t.Errorf("grace guessed %s in [%s, %s], which does not bracket the real %v", v.Value, los, his, grace)
				}
			}
		}
	}
}

func TestPolicyGuess(t *testing.T) {
	p := DefaultPolicy()
	if err := p.Guess(FlagNodeMonitorGracePeriod, "40s", "because"); err != nil {
		t.Fatal(err)
	}
	if err := p.Guess(FlagNodeMonitorPeriod, "soon", "because"); err == nil {
		t.Error("Guess of a bad value: no error")
	}
	if err := p.Guess(FlagFeatureGates, GateLeaseCircuitBreaker+"=false", "reads"); err != nil {
		t.Fatal(err)
	}
	c := p // a copy shares nothing it writes
	if err := c.Set(FlagNodeMonitorGracePeriod, "1m"); err != nil {
		t.Fatal(err)
	}
	if err := c.Guess(FlagNodeMonitorGracePeriod, "30s", "ignored: given"); err != nil {
		t.Fatal(err)
	}
	if err := c.Guess(FlagNodeEvictionRate, "0.5", "rate"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		p                     Policy
		flag                  string
		value, source, reason string
	}{
		{p, FlagNodeMonitorGracePeriod, "40s", SourceGuessed, "because"},
		{p, FlagNodeMonitorPeriod, "5s", SourceAssumed, ""},
		{p, FlagFeatureGates, GateLeaseCircuitBreaker + "=false", SourceGuessed, "reads"},
		{p, FlagNodeEvictionRate, "0.1", SourceAssumed, ""},
		{c, FlagNodeMonitorGracePeriod, "1m0s", SourceGiven, ""},
		{c, FlagNodeEvictionRate, "0.5", SourceGuessed, "rate"},
	} {
		if v := valueOf(tt.p, tt.flag); v.Value != tt.value || v.Source != tt.source || v.Reason != tt.reason {
			t.Errorf("%s = %+v, want %s %s %q", tt.flag, v, tt.value, tt.source, tt.reason)
		}
	}
	if p.String() != "defaults" || c.String() != "--node-monitor-grace-period=1m0s" {
		t.Errorf("String() = %q, %q: want the given flags only", p.String(), c.String())
	}
	if r, ok := c.Guessed(FlagNodeMonitorGracePeriod); ok || r != "" {
		t.Errorf("Guessed(given flag) = %q, %v", r, ok)
	}
}

// FuzzParseCommandLine: any command line is read without a panic, within
// the bounds, and every flag it keeps is one a Policy takes.
func FuzzParseCommandLine(f *testing.F) {
	f.Add("kube-controller-manager --node-monitor-grace-period=40s --feature-gates=NodeControllerLeaseCircuitBreaker=false")
	f.Add("--node-monitor-period\x00--node-eviction-rate=1e400\x00--feature-gates\x00=,=,NodeControllerLeaseCircuitBreaker")
	f.Add("sh -c \"kube-controller-manager --unhealthy-zone-threshold '0.5'\"")
	f.Fuzz(func(t *testing.T, s string) {
		flags, _, _ := parseCommandLine(strings.Split(s, "\x00"))
		for k, v := range flags {
			p := DefaultPolicy()
			if err := p.Set(k, v); err != nil {
				t.Errorf("kept --%s=%s, which Set refuses: %v", k, v, err)
			}
		}
	})
}
