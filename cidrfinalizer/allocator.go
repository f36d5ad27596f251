package cidrfinalizer

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AllocatorReady reports whether the apiserver's ClusterIP allocator may
// allocate from cidr, with the upstream rule (MetaAllocator): the object is
// not being deleted, and its Ready condition is True or absent (absent so
// that allocation works without the finalizer controller). A nil cidr is not
// ready.
func AllocatorReady(cidr *networkingv1.ServiceCIDR) bool {
	if cidr == nil || cidr.DeletionTimestamp != nil {
		return false
	}
	r := storedReady(cidr)
	return !r.present || r.status == metav1.ConditionTrue
}

// PrefixReadiness is the readiness of the allocator of one prefix, which
// several ServiceCIDRs may share.
type PrefixReadiness struct {
	// Prefix is the masked prefix.
	Prefix netip.Prefix
	// Ready reports whether the allocator may allocate from Prefix: at least
	// one ServiceCIDR referencing it is ready (AllocatorReady).
	Ready bool
	// ServiceCIDRs are the names, sorted, of the ServiceCIDRs referencing it.
	ServiceCIDRs []string
}

// AllocatorReadiness is a helper for apiserver allocator authors: it returns,
// for every distinct prefix of cidrs (nil entries skipped), whether its
// allocator may allocate, sorted by family, address and length.
//
// Unlike upstream, a prefix whose every referencing ServiceCIDR is being
// deleted (or not ready) is not ready. Upstream marks an allocator not ready
// only when the not-ready ServiceCIDR is its sole reference, so two deleting
// ServiceCIDRs sharing a prefix leave it allocating while both are removed.
//
// Malformed CIDRs are skipped and reported in a non-nil error wrapping
// ErrInvalidCIDR; the result for the valid prefixes is still complete.
func AllocatorReadiness(cidrs []*networkingv1.ServiceCIDR) ([]PrefixReadiness, error) {
	byPrefix := map[netip.Prefix]int{}
	var out []PrefixReadiness
	var errs []error
	for _, c := range cidrs {
		if c == nil {
			continue
		}
		ready := AllocatorReady(c)
		for _, s := range c.Spec.CIDRs {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: ServiceCIDR %s: %q: %v", ErrInvalidCIDR, c.Name, s, err))
				continue
			}
			p = p.Masked()
			i, ok := byPrefix[p]
			if !ok {
				i = len(out)
				byPrefix[p] = i
				out = append(out, PrefixReadiness{Prefix: p})
			}
			out[i].Ready = out[i].Ready || ready
			out[i].ServiceCIDRs = append(out[i].ServiceCIDRs, c.Name)
		}
	}
	for i := range out {
		slices.Sort(out[i].ServiceCIDRs)
		out[i].ServiceCIDRs = slices.Compact(out[i].ServiceCIDRs)
	}
	slices.SortFunc(out, func(a, b PrefixReadiness) int {
		if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
			return c
		}
		return cmp.Compare(a.Prefix.Bits(), b.Prefix.Bits())
	})
	return out, errors.Join(errs...)
}
