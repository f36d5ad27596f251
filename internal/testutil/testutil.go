// Package testutil holds builders for the Kubernetes objects that the
// library's tests feed in, and the fixed epoch every test counts from. It is
// imported only by tests and examples; nothing here appears in a public API.
package testutil

import (
	"net/netip"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Epoch is the fixed instant tests count from.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// At returns Epoch + d.
func At(d time.Duration) time.Time { return Epoch.Add(d) }

// MetaTime returns a *metav1.Time for t.
func MetaTime(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

// Node returns a node created at created, with no conditions and no labels.
func Node(name string, created time.Time) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created),
	}}
}

// NodeCondition returns a condition of type ct.
func NodeCondition(ct v1.NodeConditionType, s v1.ConditionStatus, heartbeat, transition time.Time) v1.NodeCondition {
	return v1.NodeCondition{Type: ct, Status: s,
		LastHeartbeatTime: metav1.NewTime(heartbeat), LastTransitionTime: metav1.NewTime(transition)}
}

// WithCondition sets (or replaces) a condition on n and returns n.
func WithCondition(n *v1.Node, c v1.NodeCondition) *v1.Node {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == c.Type {
			n.Status.Conditions[i] = c
			return n
		}
	}
	n.Status.Conditions = append(n.Status.Conditions, c)
	return n
}

// WithReady sets the Ready condition on n and returns n.
func WithReady(n *v1.Node, s v1.ConditionStatus, heartbeat, transition time.Time) *v1.Node {
	return WithCondition(n, NodeCondition(v1.NodeReady, s, heartbeat, transition))
}

// WithZone sets the GA topology labels on n and returns n.
func WithZone(n *v1.Node, region, zone string) *v1.Node {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[v1.LabelTopologyRegion] = region
	n.Labels[v1.LabelTopologyZone] = zone
	return n
}

// WithTaints appends taints to n and returns n.
func WithTaints(n *v1.Node, taints ...v1.Taint) *v1.Node {
	n.Spec.Taints = append(n.Spec.Taints, taints...)
	return n
}

// Lease returns the kube-node-lease Lease of node name, renewed at renew.
func Lease(name string, renew time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-node-lease"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &name, RenewTime: &metav1.MicroTime{Time: renew}},
	}
}

// Pod returns a Running pod bound to node with a Ready=True condition.
func Pod(namespace, name, node string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + namespace + "-" + name)},
		Spec:       v1.PodSpec{NodeName: node},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue},
		}},
	}
}

// WithTolerations appends tolerations to p and returns p.
func WithTolerations(p *v1.Pod, tol ...v1.Toleration) *v1.Pod {
	p.Spec.Tolerations = append(p.Spec.Tolerations, tol...)
	return p
}

// Seconds returns a pointer to s, for TolerationSeconds and grace periods.
func Seconds(s int64) *int64 { return &s }

// ServiceCIDR returns a ServiceCIDR named name with the given CIDRs.
func ServiceCIDR(name string, cidrs ...string) *networkingv1.ServiceCIDR {
	return &networkingv1.ServiceCIDR{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       networkingv1.ServiceCIDRSpec{CIDRs: cidrs},
	}
}

// IPAddress returns an IPAddress object for ip managed by the apiserver's
// allocator (the only ones that block a ServiceCIDR deletion).
func IPAddress(ip string) *networkingv1.IPAddress {
	family := "IPv4"
	if a, err := netip.ParseAddr(ip); err == nil && a.Is6() {
		family = "IPv6"
	}
	return &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: ip, Labels: map[string]string{
			networkingv1.LabelIPAddressFamily: family,
			networkingv1.LabelManagedBy:       "ipallocator.k8s.io",
		}},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{
			Resource: "services", Namespace: "default", Name: "svc-" + ip,
		}},
	}
}
