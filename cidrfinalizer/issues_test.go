package cidrfinalizer

import (
	"slices"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Regression tests: upstream PRs we reproduce (named after the PR) and the
// upstream weaknesses we fix (named after the behaviour).

// TestIssue131330ConditionNotRewritten: PR #131330 stopped re-applying the
// Ready condition on every sync. Once the stored condition matches, the
// decision carries no Condition, in every state.
func TestIssue131330ConditionNotRewritten(t *testing.T) {
	x, _ := NewIndex(DefaultConfig())
	c := bare(sc("a", "10.0.0.0/24"))
	_ = x.SetServiceCIDR(c)
	for i := range 3 {
		now := testutil.At(time.Duration(i) * time.Minute)
		d, _ := x.Decide(now, "a")
		if d.Condition == nil {
			break
		}
		// The controller writes what it was told; the informer echoes it back.
		c = c.DeepCopy()
		c.Finalizers = []string{Finalizer}
		c.Status.Conditions = []metav1.Condition{*d.Condition}
		_ = x.SetServiceCIDR(c)
		if d, _ := x.Decide(now.Add(time.Second), "a"); d.Condition != nil || d.Action != ActionNone {
			t.Fatalf("Decide after the write = %v, want none and no condition", shape(d))
		}
	}
	// Same for the blocked and the waiting state, after the loop's instants.
	t0 := testutil.At(time.Hour)
	c = deleting(c.DeepCopy(), t0)
	_ = x.SetIPAddress(ip("10.0.0.1"))
	_ = x.SetServiceCIDR(c)
	d, _ := x.Decide(t0, "a")
	if d.Action != ActionBlock || d.Condition == nil {
		t.Fatalf("Decide(deleting, blocked) = %v, want block with a condition", shape(d))
	}
	c.Status.Conditions = []metav1.Condition{*d.Condition}
	_ = x.SetServiceCIDR(c)
	if d, _ := x.Decide(t0.Add(time.Second), "a"); d.Action != ActionBlock || d.Condition != nil {
		t.Errorf("Decide(blocked, written) = %v, want block without condition", shape(d))
	}
	x.DeleteIPAddress("10.0.0.1")
	d, _ = x.Decide(t0.Add(2*time.Second), "a")
	if d.Action != ActionWait || d.Condition == nil {
		t.Fatalf("Decide(unblocked) = %v, want wait with a condition", shape(d))
	}
	c.Status.Conditions = []metav1.Condition{*d.Condition}
	_ = x.SetServiceCIDR(c)
	if d, _ := x.Decide(t0.Add(3*time.Second), "a"); d.Action != ActionWait || d.Condition != nil {
		t.Errorf("Decide(waiting, written) = %v, want wait without condition", shape(d))
	}
}

// TestIssue131263DefaultGrowsToDualStack: PR #131263 lets the default
// "kubernetes" ServiceCIDR grow from single- to dual-stack. The Index must
// re-index the new prefix on update, so that a deleting IPv6 ServiceCIDR it
// now covers is released, and route the update to it.
func TestIssue131263DefaultGrowsToDualStack(t *testing.T) {
	x, _ := NewIndex(DefaultConfig())
	def := ready(sc("kubernetes", "10.0.0.0/24"))
	_ = x.SetServiceCIDR(def)
	_ = x.SetServiceCIDR(deleting(ready(sc("v6", "2001:db8::/64")), e0.Add(-time.Minute)))
	_ = x.SetIPAddress(ip("2001:db8::5"))
	if d, _ := x.Decide(e0, "v6"); d.Action != ActionBlock {
		t.Fatalf("Decide(v6) before the growth = %v, want block", shape(d))
	}
	grown := def.DeepCopy()
	grown.Spec.CIDRs = append(grown.Spec.CIDRs, "2001:db8::/48")
	if got := x.OverlappingServiceCIDRs(grown); !slices.Equal(got, []string{"kubernetes", "v6"}) {
		t.Errorf("OverlappingServiceCIDRs(grown default) = %v, want [kubernetes v6]", got)
	}
	_ = x.SetServiceCIDR(grown)
	if d, _ := x.Decide(e0, "v6"); d.Action != ActionRemoveFinalizer {
		t.Errorf("Decide(v6) after the growth = %v, want remove-finalizer", shape(d))
	}
	if d, _ := x.Decide(e0, "kubernetes"); d.Action != ActionNone || d.Condition != nil {
		t.Errorf("Decide(kubernetes) after the growth = %v, want none", shape(d))
	}
}

// TestTwoDeletingServiceCIDRsCannotOrphan: upstream counts a
// deleting ServiceCIDR as a parent, so two same-range ServiceCIDRs deleted
// together each see the other as a parent, both drop the finalizer, and the
// addresses are orphaned. Here neither covers the other: both stay blocked
// while the address exists, whatever the order of evaluation or of the
// inputs, and both are released once it is gone.
func TestTwoDeletingServiceCIDRsCannotOrphan(t *testing.T) {
	old := e0.Add(-time.Minute)
	a := deleting(ready(sc("a", "10.0.0.0/24")), old)
	b := deleting(ready(sc("b", "10.0.0.0/24")), old)
	p := deleting(ready(sc("parent", "10.0.0.0/16")), old)
	ips := []*networkingv1.IPAddress{ip("10.0.0.7")}
	orders := [][]*networkingv1.ServiceCIDR{{a, b, p}, {b, a, p}, {p, b, a}, {a, p, b}}
	for _, all := range orders {
		for _, c := range all {
			d, err := Decide(e0, c, all, ips, DefaultConfig())
			if err != nil || d.Action != ActionBlock {
				t.Errorf("Decide(%s, all=%s) = %v, %v; want block (no deleting object covers another)", c.Name, names(all), shape(d), err)
			}
		}
	}
	x := newIndexWith(t, DefaultConfig(), []*networkingv1.ServiceCIDR{a, b, p}, ips)
	for _, name := range []string{"b", "parent", "a"} {
		if d, _ := x.Decide(e0, name); d.Action != ActionBlock || !slices.Equal(d.Blocking, addrs("10.0.0.7")) {
			t.Errorf("Index.Decide(%s) = %v, want block [10.0.0.7]", name, shape(d))
		}
	}
	x.DeleteIPAddress("10.0.0.7")
	for _, name := range []string{"a", "b", "parent"} {
		if d, _ := x.Decide(e0, name); d.Action != ActionRemoveFinalizer {
			t.Errorf("Index.Decide(%s) without the address = %v, want remove-finalizer", name, shape(d))
		}
	}
	// One of the two not deleting: it covers the other, as upstream.
	x = newIndexWith(t, DefaultConfig(), []*networkingv1.ServiceCIDR{a, ready(sc("b", "10.0.0.0/24"))}, ips)
	if d, _ := x.Decide(e0, "a"); d.Action != ActionRemoveFinalizer {
		t.Errorf("Index.Decide(a) under a live twin = %v, want remove-finalizer", shape(d))
	}
}

// TestRecheckInterval: upstream never requeues a blocked
// ServiceCIDR on a timer, so a missed IPAddress event leaves it blocked. With
// RecheckInterval the blocked decision asks to be re-evaluated; the zero
// Config keeps upstream behaviour.
func TestRecheckInterval(t *testing.T) {
	c := deleting(ready(sc("a", "10.0.0.0/24")), e0)
	ips := []*networkingv1.IPAddress{ip("10.0.0.1")}
	for _, tc := range []struct {
		cfg  Config
		want time.Duration
	}{
		{DefaultConfig(), 0},
		{Config{GracePeriod: 10 * time.Second, RecheckInterval: time.Minute}, time.Minute},
	} {
		d, _ := Decide(e0, c, nil, ips, tc.cfg)
		if d.Action != ActionBlock || d.RequeueAfter != tc.want {
			t.Errorf("Decide(blocked, %+v) = %v, want block requeue %v", tc.cfg, shape(d), tc.want)
		}
		x := newIndexWith(t, tc.cfg, []*networkingv1.ServiceCIDR{c}, ips)
		d, _ = x.Decide(e0, "a")
		if d.Action != ActionBlock || d.RequeueAfter != tc.want {
			t.Errorf("Index.Decide(blocked, %+v) = %v, want block requeue %v", tc.cfg, shape(d), tc.want)
		}
	}
}

// TestClockSkewBoundsGrace: upstream measures the grace period with
// time.Since against the apiserver's deletionTimestamp, so a timestamp from
// the future (apiserver clock ahead) makes it wait that much longer. Here a
// single decision never waits more than GracePeriod, and the Index ends the
// wait GracePeriod after its first observation.
func TestClockSkewBoundsGrace(t *testing.T) {
	c := deleting(ready(sc("a", "10.0.0.0/24")), e0.Add(2*time.Hour))
	d, _ := Decide(e0, c, nil, nil, DefaultConfig())
	if d.Action != ActionWait || d.RequeueAfter != 10*time.Second {
		t.Errorf("Decide(2h-future timestamp) = %v, want wait 10s (upstream: 2h10s)", shape(d))
	}
	x := newIndexWith(t, DefaultConfig(), []*networkingv1.ServiceCIDR{c}, nil)
	runSteps(t, x, []step{
		{at: 0, name: "a", want: want{action: ActionWait, requeue: 10 * time.Second, cond: condTerminating}},
		{at: 9 * time.Second, name: "a", want: want{action: ActionWait, requeue: time.Second, cond: condTerminating}},
		{at: 10 * time.Second, name: "a", want: want{action: ActionRemoveFinalizer, cond: condTerminating}},
	})
}

// TestReadyFalseWhileDeleting: upstream leaves Ready=True
// during the grace period, so allocators may keep using the range. Here the
// first decision on a deleting object says Ready=False/Terminating.
func TestReadyFalseWhileDeleting(t *testing.T) {
	c := deleting(ready(sc("a", "10.0.0.0/24")), e0)
	d, _ := Decide(e0, c, nil, nil, DefaultConfig())
	if d.Action != ActionWait || d.Condition == nil || d.Condition.Status != metav1.ConditionFalse ||
		d.Condition.Reason != ReasonTerminating {
		t.Errorf("Decide(just deleted) = %v, want wait with Ready=False/Terminating", shape(d))
	}
	if d.Condition != nil && !d.Condition.LastTransitionTime.Time.Equal(e0) {
		t.Errorf("Decide(just deleted).Condition.LastTransitionTime = %v, want %v", d.Condition.LastTransitionTime, e0)
	}
	if AllocatorReady(c) {
		t.Errorf("AllocatorReady(deleting) = true, want false")
	}
}

// TestSharedPrefixAllDeleting: upstream's allocator stays
// ready when every ServiceCIDR sharing its prefix is being deleted, because a
// not-ready one only turns it off when it is the sole reference.
func TestSharedPrefixAllDeleting(t *testing.T) {
	a := deleting(ready(sc("a", "10.0.0.0/24")), e0)
	b := deleting(ready(sc("b", "10.0.0.0/24")), e0)
	got, err := AllocatorReadiness([]*networkingv1.ServiceCIDR{a, b})
	if err != nil || len(got) != 1 || got[0].Ready {
		t.Errorf("AllocatorReadiness(two deleting on one prefix) = %+v, %v; want one prefix, not ready", got, err)
	}
	live := ready(sc("c", "10.0.0.0/24"))
	got, _ = AllocatorReadiness([]*networkingv1.ServiceCIDR{a, live, b})
	if len(got) != 1 || !got[0].Ready || !slices.Equal(got[0].ServiceCIDRs, []string{"a", "b", "c"}) {
		t.Errorf("AllocatorReadiness(two deleting + one live) = %+v, want ready, referenced by a b c", got)
	}
}
