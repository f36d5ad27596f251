package cidrfinalizer_test

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/kubelifecycle/lifecycle/cidrfinalizer"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func serviceCIDR(name string, cidrs ...string) *networkingv1.ServiceCIDR {
	return &networkingv1.ServiceCIDR{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       networkingv1.ServiceCIDRSpec{CIDRs: cidrs},
	}
}

func ipAddress(addr string) *networkingv1.IPAddress {
	return &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: addr, Labels: map[string]string{
		networkingv1.LabelManagedBy: cidrfinalizer.AllocatorName,
	}}}
}

// apply performs a decision on a copy of c, as a controller would through the
// API: add or remove the finalizer, write the condition.
func apply(c *networkingv1.ServiceCIDR, d cidrfinalizer.Decision) *networkingv1.ServiceCIDR {
	c = c.DeepCopy()
	switch d.Action {
	case cidrfinalizer.ActionAddFinalizer:
		c.Finalizers = append(c.Finalizers, cidrfinalizer.Finalizer)
	case cidrfinalizer.ActionRemoveFinalizer:
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == cidrfinalizer.Finalizer })
	}
	if d.Condition != nil {
		c.Status.Conditions = []metav1.Condition{*d.Condition}
	}
	return c
}

// Example shows the whole caller loop: an Index fed by informer events, a
// decision per ServiceCIDR, the caller performing it and requeueing after
// RequeueAfter. Time is virtual: the caller passes now.
func Example() {
	x, err := cidrfinalizer.NewIndex(cidrfinalizer.DefaultConfig())
	if err != nil {
		panic(err)
	}
	now := epoch
	obj := serviceCIDR("extra", "10.1.0.0/24")
	sync := func() {
		d, err := x.Decide(now, obj.Name)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("+%v %s", now.Sub(epoch), d.Action)
		if d.Condition != nil {
			fmt.Printf(" Ready=%s %q", d.Condition.Status, d.Condition.Reason)
		}
		if len(d.Blocking) > 0 {
			fmt.Printf(" blocking=%v", d.Blocking)
		}
		if d.RequeueAfter > 0 {
			fmt.Printf(" requeue=%v", d.RequeueAfter)
		}
		fmt.Println()
		obj = apply(obj, d)
		_ = x.SetServiceCIDR(obj) // the informer echoes the write back
	}

	_ = x.SetServiceCIDR(obj) // informer: ServiceCIDR added
	sync()
	sync()                                    // steady: nothing to write
	_ = x.SetIPAddress(ipAddress("10.1.0.7")) // a Service got a ClusterIP

	now = now.Add(time.Minute) // the user deletes the ServiceCIDR
	obj = obj.DeepCopy()
	obj.DeletionTimestamp = &metav1.Time{Time: now}
	_ = x.SetServiceCIDR(obj)
	sync()

	now = now.Add(3 * time.Second) // the Service goes away
	x.DeleteIPAddress("10.1.0.7")
	sync()

	now = now.Add(7 * time.Second) // the requeue fires
	sync()
	// Output:
	// +0s add-finalizer Ready=True ""
	// +0s none
	// +1m0s block Ready=False "Terminating" blocking=[10.1.0.7]
	// +1m3s wait Ready=False "Terminating" requeue=7s
	// +1m10s remove-finalizer
}

// ExampleDecide shows the pure decision: a deleting ServiceCIDR is blocked
// by an address only it covers, and released by a larger one.
func ExampleDecide() {
	deleted := serviceCIDR("old", "10.0.0.0/24")
	deleted.Finalizers = []string{cidrfinalizer.Finalizer}
	deleted.DeletionTimestamp = &metav1.Time{Time: epoch.Add(-time.Minute)}
	ips := []*networkingv1.IPAddress{ipAddress("10.0.0.20"), ipAddress("10.0.0.10")}

	d, _ := cidrfinalizer.Decide(epoch, deleted, []*networkingv1.ServiceCIDR{deleted}, ips, cidrfinalizer.DefaultConfig())
	fmt.Println(d.Action, d.Blocking)

	larger := serviceCIDR("new", "10.0.0.0/16")
	d, _ = cidrfinalizer.Decide(epoch, deleted, []*networkingv1.ServiceCIDR{deleted, larger}, ips, cidrfinalizer.DefaultConfig())
	fmt.Println(d.Action, d.Blocking)
	// Output:
	// block [10.0.0.10 10.0.0.20]
	// remove-finalizer []
}

// ExampleDecideObserved shows the clock-skew bound: the apiserver's clock is
// an hour ahead, yet the wait ends GracePeriod after the caller first saw the
// deletion.
func ExampleDecideObserved() {
	c := serviceCIDR("skewed", "10.0.0.0/24")
	c.Finalizers = []string{cidrfinalizer.Finalizer}
	c.DeletionTimestamp = &metav1.Time{Time: epoch.Add(time.Hour)}
	firstSeen := epoch
	for _, now := range []time.Time{epoch, epoch.Add(4 * time.Second), epoch.Add(10 * time.Second)} {
		d, _ := cidrfinalizer.DecideObserved(now, firstSeen, c, nil, nil, cidrfinalizer.DefaultConfig())
		fmt.Println(now.Sub(epoch), d.Action, d.RequeueAfter)
	}
	// Output:
	// 0s wait 10s
	// 4s wait 6s
	// 10s remove-finalizer 0s
}

// ExampleIndex_ContainingServiceCIDRs shows the event routing a controller
// needs: which ServiceCIDRs to requeue for an IPAddress event and for a new
// ServiceCIDR.
func ExampleIndex_ContainingServiceCIDRs() {
	x, _ := cidrfinalizer.NewIndex(cidrfinalizer.DefaultConfig())
	_ = x.SetServiceCIDR(serviceCIDR("kubernetes", "10.0.0.0/24", "2001:db8::/64"))
	_ = x.SetServiceCIDR(serviceCIDR("small", "10.0.0.0/26"))
	_ = x.SetServiceCIDR(serviceCIDR("other", "10.9.0.0/24"))

	fmt.Println(x.ContainingServiceCIDRs(ipAddress("10.0.0.5")))
	fmt.Println(x.ContainingServiceCIDRs(ipAddress("10.0.0.63"))) // broadcast of the /26
	fmt.Println(x.OverlappingServiceCIDRs(serviceCIDR("new", "10.0.0.0/16")))
	// Output:
	// [kubernetes small]
	// [kubernetes]
	// [kubernetes small]
}

// ExamplePrefixContainsAddr shows the containment rules.
func ExamplePrefixContainsAddr() {
	v4 := netip.MustParsePrefix("10.0.0.0/24")
	v6 := netip.MustParsePrefix("2001:db8::/64")
	for _, c := range []struct {
		p netip.Prefix
		a string
	}{
		{v4, "10.0.0.1"}, {v4, "10.0.0.0"}, {v4, "10.0.0.255"}, {v4, "::ffff:10.0.0.1"},
		{v6, "2001:db8::"}, {v6, "2001:db8::ffff:ffff:ffff:ffff"},
	} {
		fmt.Println(c.p, c.a, cidrfinalizer.PrefixContainsAddr(c.p, netip.MustParseAddr(c.a)))
	}
	// Output:
	// 10.0.0.0/24 10.0.0.1 true
	// 10.0.0.0/24 10.0.0.0 false
	// 10.0.0.0/24 10.0.0.255 false
	// 10.0.0.0/24 ::ffff:10.0.0.1 false
	// 2001:db8::/64 2001:db8:: false
	// 2001:db8::/64 2001:db8::ffff:ffff:ffff:ffff true
}

// ExampleAllocatorReadiness shows the allocator helper: a prefix whose every
// ServiceCIDR is being deleted stops allocating.
func ExampleAllocatorReadiness() {
	a := serviceCIDR("a", "10.0.0.0/24")
	b := serviceCIDR("b", "10.0.0.0/24")
	a.DeletionTimestamp = &metav1.Time{Time: epoch}
	states, _ := cidrfinalizer.AllocatorReadiness([]*networkingv1.ServiceCIDR{a, b})
	fmt.Println(states[0].Prefix, states[0].Ready, states[0].ServiceCIDRs)
	b.DeletionTimestamp = &metav1.Time{Time: epoch}
	states, _ = cidrfinalizer.AllocatorReadiness([]*networkingv1.ServiceCIDR{a, b})
	fmt.Println(states[0].Prefix, states[0].Ready, states[0].ServiceCIDRs)
	// Output:
	// 10.0.0.0/24 true [a b]
	// 10.0.0.0/24 false [a b]
}
