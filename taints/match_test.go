package taints

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	v1 "k8s.io/api/core/v1"
)

func renderTols(ts []v1.Toleration) string {
	var s []string
	for i := range ts {
		x := tolerationString(&ts[i])
		if ts[i].TolerationSeconds != nil {
			x += "/" + strconv.FormatInt(*ts[i].TolerationSeconds, 10)
		}
		s = append(s, x)
	}
	return strings.Join(s, " ")
}

func TestMatchingTolerations(t *testing.T) {
	exists := v1.Toleration{Operator: v1.TolerationOpExists}
	equal := func(k, v string, e v1.TaintEffect) v1.Toleration {
		return v1.Toleration{Key: k, Operator: v1.TolerationOpEqual, Value: v, Effect: e}
	}
	lt := v1.Toleration{Key: "gpu", Operator: v1.TolerationOpLt, Value: "10", Effect: v1.TaintEffectNoExecute}
	gt := v1.Toleration{Key: "gpu", Operator: v1.TolerationOpGt, Value: "10", Effect: v1.TaintEffectNoExecute}
	tests := []struct {
		name   string
		opts   MatchOptions
		taints []v1.Taint
		tols   []v1.Toleration
		all    bool
		used   string
	}{
		{"no taints", MatchOptions{}, nil, []v1.Toleration{tolFor(notReady, 1)}, true, ""},
		{"no taints no tolerations", MatchOptions{}, nil, nil, true, ""},
		{"taints without tolerations", MatchOptions{}, []v1.Taint{ne(notReady)}, nil, false, ""},
		{"one each", MatchOptions{}, []v1.Taint{ne(notReady)}, []v1.Toleration{tolFor(notReady, 300)}, true, "Exists node.kubernetes.io/not-ready:NoExecute/300"},
		{"first toleration wins (forever before 300s)", MatchOptions{}, []v1.Taint{ne(notReady)},
			[]v1.Toleration{tolForever(notReady), tolFor(notReady, 300)}, true, "Exists node.kubernetes.io/not-ready:NoExecute"},
		{"first toleration wins (300s before forever)", MatchOptions{}, []v1.Taint{ne(notReady)},
			[]v1.Toleration{tolFor(notReady, 300), tolForever(notReady)}, true, "Exists node.kubernetes.io/not-ready:NoExecute/300"},
		{"one per taint, same toleration twice", MatchOptions{}, []v1.Taint{ne("a"), ne("b")}, []v1.Toleration{exists}, true, "Exists *:* Exists *:*"},
		{"one taint untolerated: none used", MatchOptions{}, []v1.Taint{ne(notReady), ne("b")}, []v1.Toleration{tolFor(notReady, 300)}, false, ""},
		{"effect must match", MatchOptions{}, []v1.Taint{ns(notReady)}, []v1.Toleration{tolFor(notReady, 300)}, false, ""},
		{"empty effect matches all", MatchOptions{}, []v1.Taint{ns("k"), ne("k")}, []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}}, true, "Exists k:* Exists k:*"},
		{"equal value", MatchOptions{}, []v1.Taint{withValue(ne("k"), "v")}, []v1.Toleration{equal("k", "w", ""), equal("k", "v", "")}, true, "Equal k=v:*"},
		{"empty operator is Equal", MatchOptions{}, []v1.Taint{withValue(ne("k"), "v")}, []v1.Toleration{{Key: "k", Value: "v"}}, true, "Equal k=v:*"},
		{"Lt off by default", MatchOptions{}, []v1.Taint{withValue(ne("gpu"), "5")}, []v1.Toleration{lt}, false, ""},
		{"Lt on", MatchOptions{ComparisonOperators: true}, []v1.Taint{withValue(ne("gpu"), "5")}, []v1.Toleration{lt}, true, "Lt gpu=10:NoExecute"},
		{"Gt on, not greater", MatchOptions{ComparisonOperators: true}, []v1.Taint{withValue(ne("gpu"), "5")}, []v1.Toleration{gt}, false, ""},
		{"Gt on, bad value", MatchOptions{ComparisonOperators: true}, []v1.Taint{withValue(ne("gpu"), "05")}, []v1.Toleration{gt, lt}, false, ""},
		{"unknown operator", MatchOptions{}, []v1.Taint{ne("k")}, []v1.Toleration{{Key: "k", Operator: "Bogus"}}, false, ""},
	}
	for _, tt := range tests {
		all, used := tt.opts.MatchingTolerations(tt.taints, tt.tols)
		if all != tt.all || renderTols(used) != tt.used || (!all && used != nil) {
			t.Errorf("%s: MatchingTolerations(%s, %s) = %v, %q, want %v, %q", tt.name, renderTaints(tt.taints), renderTols(tt.tols), all, renderTols(used), tt.all, tt.used)
		}
		dst := []v1.Toleration{exists}
		all2, used2 := tt.opts.AppendMatchingTolerations(dst, tt.taints, tt.tols)
		wantApp := "Exists *:*"
		if tt.used != "" {
			wantApp += " " + tt.used
		}
		if all2 != tt.all || renderTols(used2) != wantApp {
			t.Errorf("%s: AppendMatchingTolerations([Exists]) = %v, %q, want %v, %q", tt.name, all2, renderTols(used2), tt.all, wantApp)
		}
		if tt.opts == (MatchOptions{}) {
			all3, used3 := MatchingTolerations(tt.taints, tt.tols)
			all4, used4 := AppendMatchingTolerations(nil, tt.taints, tt.tols)
			if all3 != all || renderTols(used3) != renderTols(used) || all4 != all || renderTols(used4) != renderTols(used) {
				t.Errorf("%s: package functions disagree with MatchOptions{}", tt.name)
			}
		}
	}
}

func TestMinTolerationTime(t *testing.T) {
	secs := func(s int64) v1.Toleration { return tolFor("k", s) }
	forever := tolForever("k")
	tests := []struct {
		used    []v1.Toleration
		d       time.Duration
		forever bool
	}{
		{nil, 0, false},
		{[]v1.Toleration{}, 0, false},
		{[]v1.Toleration{forever}, 0, true},
		{[]v1.Toleration{forever, forever}, 0, true},
		{[]v1.Toleration{secs(300)}, 300 * time.Second, false},
		{[]v1.Toleration{secs(600), forever, secs(300)}, 300 * time.Second, false},
		{[]v1.Toleration{forever, secs(0)}, 0, false},
		{[]v1.Toleration{secs(600), secs(-5), forever}, 0, false},
		{[]v1.Toleration{secs(math.MaxInt64)}, math.MaxInt64, false},
	}
	for _, tt := range tests {
		d, forever := MinTolerationTime(tt.used)
		if d != tt.d || forever != tt.forever {
			t.Errorf("MinTolerationTime(%s) = %v, %v, want %v, %v", renderTols(tt.used), d, forever, tt.d, tt.forever)
		}
	}
}

// fiveTolerations and threeTaints are the matching benchmark's case: a pod
// with a few ordinary tolerations plus the two admission defaults, on a node
// with both health-ish NoExecute taints and a foreign one.
func fiveTolerations() []v1.Toleration {
	return []v1.Toleration{
		{Key: "example.com/gpu", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
		{Key: "example.com/dedicated", Operator: v1.TolerationOpEqual, Value: "batch", Effect: v1.TaintEffectNoExecute},
		{Key: "example.com/maintenance", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: testutil.Seconds(3600)},
		tolFor(notReady, 300),
		tolFor(unreachable, 300),
	}
}

func threeTaints() []v1.Taint {
	return []v1.Taint{withValue(ne("example.com/dedicated"), "batch"), added(ne(unreachable), 0), ne("example.com/maintenance")}
}

func TestMatchingAllocations(t *testing.T) {
	tols, taints := fiveTolerations(), threeTaints()
	dst := make([]v1.Toleration, 0, 8)
	var all bool
	if n := testing.AllocsPerRun(100, func() { all, _ = AppendMatchingTolerations(dst[:0], taints, tols) }); n != 0 || !all {
		t.Errorf("AppendMatchingTolerations = %v, allocates %v times, want true, 0", all, n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = MinTolerationTime(tols) }); n != 0 {
		t.Errorf("MinTolerationTime allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = MatchingTolerations(taints, tols) }); n != 1 {
		t.Errorf("MatchingTolerations allocates %v times, want 1", n)
	}
	entries := make([]taintEntry, len(taints))
	for i := range taints {
		entries[i] = taintEntry{taint: taints[i]}
	}
	if n := testing.AllocsPerRun(100, func() { _ = judge(entries, tols, testutil.Epoch, false) }); n != 0 {
		t.Errorf("judge allocates %v times, want 0", n)
	}
}

func TestJudge(t *testing.T) {
	at := testutil.At
	entry := func(tt v1.Taint, start time.Duration) taintEntry { return taintEntry{taint: tt, start: at(start)} }
	tests := []struct {
		name     string
		taints   []taintEntry
		tols     []v1.Toleration
		podStart time.Duration
		want     verdict
	}{
		{"no taints", nil, nil, 0, verdict{kind: vNone, taint: -1, tol: -1}},
		{"untolerated second taint", []taintEntry{entry(ne("a"), 0), entry(ne("b"), 0)}, []v1.Toleration{tolFor("a", 1)}, 0,
			verdict{kind: vNow, taint: 1, tol: -1}},
		{"forever", []taintEntry{entry(ne("a"), 0), entry(ne("b"), 0)}, []v1.Toleration{tolForever("a"), tolForever("b")}, 0,
			verdict{kind: vForever, taint: 0, tol: 0}},
		{"min over taints", []taintEntry{entry(ne("a"), 0), entry(ne("b"), 0)}, []v1.Toleration{tolFor("a", 600), tolFor("b", 300)}, 0,
			verdict{kind: vAt, at: at(300 * time.Second), start: at(0), taint: 1, tol: 1}},
		{"per-taint starts: later taint with shorter toleration", []taintEntry{entry(ne("a"), 0), entry(ne("b"), 400*time.Second)},
			[]v1.Toleration{tolFor("a", 600), tolFor("b", 300)}, 0,
			verdict{kind: vAt, at: at(600 * time.Second), start: at(0), taint: 0, tol: 0}},
		{"pod start later than taint", []taintEntry{entry(ne("a"), 0)}, []v1.Toleration{tolFor("a", 300)}, 100 * time.Second,
			verdict{kind: vAt, at: at(400 * time.Second), start: at(100 * time.Second), taint: 0, tol: 0}},
		{"zero seconds beats forever", []taintEntry{entry(ne("a"), 0), entry(ne("b"), 0)}, []v1.Toleration{tolForever("a"), tolFor("b", 0)}, 0,
			verdict{kind: vAt, at: at(0), start: at(0), taint: 1, tol: 1}},
		{"negative seconds is zero", []taintEntry{entry(ne("a"), 10*time.Second)}, []v1.Toleration{tolFor("a", -7)}, 0,
			verdict{kind: vAt, at: at(10 * time.Second), start: at(10 * time.Second), taint: 0, tol: 0}},
		{"tie: first taint binds", []taintEntry{entry(ne("a"), 0), entry(ne("b"), 0)}, []v1.Toleration{tolFor("", 300)}, 0,
			verdict{kind: vAt, at: at(300 * time.Second), start: at(0), taint: 0, tol: 0}},
	}
	for _, tt := range tests {
		got := judge(tt.taints, tt.tols, at(tt.podStart), false)
		if got.kind != tt.want.kind || !got.at.Equal(tt.want.at) || !got.start.Equal(tt.want.start) || got.taint != tt.want.taint || got.tol != tt.want.tol {
			t.Errorf("%s: judge() = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
