package taints

import (
	"fmt"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// When the breaker is judged: at a pass (RuleStatuses, Due), on the counts
// every input so far gives, never on the partial view of an input that
// arrived before the objects it relates to.

// TestDeviceBreakerJudgedOnFullView: informers deliver in any order; in
// the worst one the rule and the slice taints come before the claims, so
// the first claim makes 1 of 1 allocated device tainted. A caller that
// feeds every object and only then runs Due (its caches synced) gets the
// decision the full view gives: no hold at 1 of 3 tainted (the pod goes),
// a hold at 2 of 3. Before the fix, the first claim tripped the 50%
// breaker and, with ResumeShare 0, the hold never ended.
func TestDeviceBreakerJudgedOnFullView(t *testing.T) {
	pool := "a"
	dev0 := "dev-0"
	rule := DeviceTaintRule{Name: "drain-dev-0", UID: "rule-1", Selector: &DeviceTaintSelector{Pool: &pool, Device: &dev0},
		Taint: resourcev1.DeviceTaint{Key: "maintenance", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &metav1.Time{Time: limT0}}}
	for _, tt := range []struct {
		name       string
		b          DeviceBlastRadius
		sliceTaint int // the slice taints its first sliceTaint devices
		claims     []int
		want       []limStep
	}{
		{"under the limit: 1 of 3", DeviceBlastRadius{MaxShare: 0.5}, 0, []int{0, 1, 2}, []limStep{
			{0, "limits before the pass", (*lim).limits, "gpu Armed 1/3 held 0 throttled 0"},
			{0, "NextDeadline", (*lim).next, "+0s"}, // p-a-0 is due
			{0, "Due", (*lim).due, "status drain-dev-0 True PodsPendingEviction: 1 pod needs to be evicted in 1 namespace.; p-a-0 (DeviceTaintRule drain-dev-0)"},
			{0, "changes", (*lim).changes, "-"},
			{0, "limits", (*lim).limits, "gpu Armed 1/3 held 0 throttled 0"},
		}},
		{"under the limit, ResumeAfter", DeviceBlastRadius{MaxShare: 0.5, ResumeAfter: time.Minute}, 0, []int{0, 1, 2}, []limStep{
			{0, "Due", (*lim).due, "status drain-dev-0 True PodsPendingEviction: 1 pod needs to be evicted in 1 namespace.; p-a-0 (DeviceTaintRule drain-dev-0)"},
			{0, "changes", (*lim).changes, "-"},
		}},
		{"under the limit, slice taint first: 1 of 2", DeviceBlastRadius{MaxShare: 0.5}, 2, []int{1, 2}, []limStep{
			// Slice taints dev-0 and dev-1, the rule dev-0; the claims
			// c-a-1 (tainted) then c-a-2: 1 of 1, then 1 of 2, not more
			// than 50%.
			{0, "Due", (*lim).due, "status drain-dev-0 False NotStarted: ; p-a-1 (ResourceSlice gpu-a gpu/a/dev-1 taint #0)"},
			{0, "changes", (*lim).changes, "-"},
		}},
		{"over the limit: 2 of 3", DeviceBlastRadius{MaxShare: 0.5}, 2, []int{0, 1, 2}, []limStep{
			{0, "limits before the pass", (*lim).limits, "gpu Armed 2/3 held 0 throttled 0"},
			{0, "NextDeadline", (*lim).next, "+0s"},
			{0, "Due", (*lim).due, "status drain-dev-0 True EvictionHeld: 1 pod needs to be evicted in 1 namespace. 1 of them held: " +
				"Evictions held: 2 of 3 allocated devices of driver gpu (66.7%) have an untolerated NoExecute taint, more than 50%; the hold ends when none is tainted."},
			{0, "changes", (*lim).changes, "DeviceTaintEvictionHeld: Evictions held: 2 of 3 allocated devices of driver gpu (66.7%) have an untolerated NoExecute taint, more than 50%; the hold ends when none is tainted."},
			{0, "Explain p-a-1", func(l *lim) string { return l.explain("p-a-1") }, "Held held by gpu"},
			{time.Minute, "Due", (*lim).due, "-"},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newLim(t, limConfig(tt.b))
			l.pools["a"], l.sizes["a"] = [2]string{"gpu"}, 3
			l.d.SetRule(l.now, rule)
			l.taint("a", tt.sliceTaint, noExecute(limT0))
			for _, i := range tt.claims {
				l.claim("gpu", "a", i)
			}
			runLim(t, l, tt.want)
			if len(l.cancel) != 0 {
				t.Errorf("cancellations %v", l.cancel)
			}
		})
	}
}

// TestDeviceBreakerJudgedAtPass: between two passes the inputs only
// count; the holds, their Events and every report stay as the last pass
// judged them, and NextDeadline reports now while the next pass would
// change a breaker. A share that is over only between two inputs (a
// claim's taint delivered before the claims that dilute it) trips
// nothing; one that is calm only between two inputs ends no hold.
func TestDeviceBreakerJudgedAtPass(t *testing.T) {
	tol := resourcev1.DeviceToleration{Key: "gpu.example.com/unhealthy", Operator: resourcev1.DeviceTolerationOpExists, Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: uPtr(int64(30))}
	l := newLim(t, limConfig(DeviceBlastRadius{MaxShare: 0.5}))
	l.pool("gpu", "a", 4, 2, tol)
	runLim(t, l, []limStep{
		// 2 of 2 tainted (due at +30s), then two more claims: 2 of 4.
		{0, "taint dev-0, dev-1", do(func(l *lim) { l.taint("a", 2, noExecute(limT0)) }), ""},
		{0, "NextDeadline", (*lim).next, "+0s"}, // a trip is pending
		{0, "claims c-a-2, c-a-3", do(func(l *lim) { l.claim("gpu", "a", 2, tol); l.claim("gpu", "a", 3, tol) }), ""},
		{0, "NextDeadline", (*lim).next, "+30s"},
		{0, "Due", (*lim).due, "-"},
		{0, "changes", (*lim).changes, "-"},
		// 4 of 4: tripped at the next pass, not before.
		{10 * time.Second, "taint all", do(func(l *lim) { l.taint("a", 4, noExecute(limT0)) }), ""},
		{10 * time.Second, "Explain p-a-0 before the pass", func(l *lim) string { return l.explain("p-a-0") }, "Scheduled +30s"},
		{10 * time.Second, "limits before the pass", (*lim).limits, "gpu Armed 4/4 held 0 throttled 0"},
		{10 * time.Second, "ReleaseHold before the pass", func(l *lim) string { return fmt.Sprint(l.d.ReleaseHold(l.now, "gpu")) }, "false"},
		{10 * time.Second, "NextDeadline", (*lim).next, "+10s"},
		{10 * time.Second, "Due", (*lim).due, "-"},
		{10 * time.Second, "Explain p-a-0", func(l *lim) string { return l.explain("p-a-0") }, "Held held by gpu"},
		{10 * time.Second, "limits", (*lim).limits, "gpu Holding 4/4 held 4 throttled 0"},
		{10 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionHeld: Evictions held: 4 of 4 allocated devices of driver gpu (100%) have an untolerated NoExecute taint, more than 50%; the hold ends when none is tainted."},
		{10 * time.Second, "NextDeadline", (*lim).next, "none"},
		// Untainted, then tainted again before the pass: still held.
		{20 * time.Second, "untaint all", do(func(l *lim) { l.taint("a", 4, nil) }), ""},
		{20 * time.Second, "NextDeadline", (*lim).next, "+20s"}, // the hold would end
		{20 * time.Second, "taint all again", do(func(l *lim) { l.taint("a", 4, noExecute(limT0)) }), ""},
		{20 * time.Second, "NextDeadline", (*lim).next, "none"},
		{40 * time.Second, "Due", (*lim).due, "-"},
		{40 * time.Second, "changes", (*lim).changes, "-"},
		// Untainted: the hold ends at the next pass, whose Due hands out
		// nothing (no taint left).
		{50 * time.Second, "untaint all", do(func(l *lim) { l.taint("a", 4, nil) }), ""},
		{50 * time.Second, "limits before the pass", (*lim).limits, "gpu Holding 0/4 held 0 throttled 0"},
		{50 * time.Second, "Due", (*lim).due, "-"},
		{50 * time.Second, "changes", (*lim).changes, "DeviceTaintEvictionResumed: Evictions not held: 0 of 4 allocated devices of driver gpu (0%) have an untolerated NoExecute taint."},
	})
	if len(l.cancel) != 0 {
		t.Errorf("cancellations %v", l.cancel)
	}
}
