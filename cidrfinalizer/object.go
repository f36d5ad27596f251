package cidrfinalizer

import (
	"fmt"
	"net/netip"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// readyState is the stored Ready condition of a ServiceCIDR, as far as
// Decide compares it.
type readyState struct {
	present bool
	status  metav1.ConditionStatus
	reason  string
	message string
	since   metav1.Time // LastTransitionTime
}

// object is what this package needs of one ServiceCIDR: a copy, never a
// reference to the caller's object.
type object struct {
	name         string
	uid          types.UID
	generation   int64
	deleting     bool
	deletedAt    time.Time
	hasFinalizer bool
	ready        readyState
	prefixes     []netip.Prefix // the valid CIDRs of the spec, masked
	err          error          // the first malformed CIDR, wrapped in ErrInvalidCIDR
}

// parseObject copies the fields of c that decisions depend on. A malformed
// CIDR is reported in o.err; the valid ones are kept in o.prefixes.
func parseObject(c *networkingv1.ServiceCIDR) object {
	o := object{
		name:       c.Name,
		uid:        c.UID,
		generation: c.Generation,
		ready:      storedReady(c),
	}
	if c.DeletionTimestamp != nil {
		o.deleting = true
		o.deletedAt = c.DeletionTimestamp.Time
	}
	o.hasFinalizer = hasFinalizer(c)
	if len(c.Spec.CIDRs) > 0 {
		o.prefixes = make([]netip.Prefix, 0, len(c.Spec.CIDRs))
	}
	for _, s := range c.Spec.CIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			if o.err == nil {
				o.err = fmt.Errorf("%w: ServiceCIDR %s: %q: %v", ErrInvalidCIDR, c.Name, s, err)
			}
			continue
		}
		o.prefixes = append(o.prefixes, p.Masked())
	}
	return o
}

func hasFinalizer(c *networkingv1.ServiceCIDR) bool {
	for _, f := range c.Finalizers {
		if f == Finalizer {
			return true
		}
	}
	return false
}

func storedReady(c *networkingv1.ServiceCIDR) readyState {
	for i := range c.Status.Conditions {
		cond := &c.Status.Conditions[i]
		if cond.Type == ConditionReady {
			return readyState{present: true, status: cond.Status, reason: cond.Reason,
				message: cond.Message, since: cond.LastTransitionTime}
		}
	}
	return readyState{}
}

// eachPrefix calls fn for every CIDR of c that parses, masked, without
// allocating. Malformed CIDRs of other objects are skipped, as upstream does.
func eachPrefix(c *networkingv1.ServiceCIDR, fn func(netip.Prefix) bool) {
	for _, s := range c.Spec.CIDRs {
		if p, err := netip.ParsePrefix(s); err == nil {
			if !fn(p.Masked()) {
				return
			}
		}
	}
}

// managedAddr returns the address of an IPAddress that can protect a
// ServiceCIDR: managed by the apiserver's allocator and named by a parsable
// address without a zone.
func managedAddr(ip *networkingv1.IPAddress) (netip.Addr, bool) {
	if ip == nil || ip.Labels[networkingv1.LabelManagedBy] != AllocatorName {
		return netip.Addr{}, false
	}
	return parseAddrName(ip.Name)
}
