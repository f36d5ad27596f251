package cidrfinalizer

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAllocatorReady(t *testing.T) {
	tests := []struct {
		name string
		c    *networkingv1.ServiceCIDR
		want bool
	}{
		{"nil", nil, false},
		{"no condition (no controller running)", sc("a", "10.0.0.0/24"), true},
		{"Ready=True", ready(sc("a", "10.0.0.0/24")), true},
		{"Ready=False", withReady(sc("a", "10.0.0.0/24"), metav1.ConditionFalse, "Other", "", e0), false},
		{"Ready=Unknown", withReady(sc("a", "10.0.0.0/24"), metav1.ConditionUnknown, "", "", e0), false},
		{"deleting, still Ready=True", deleting(ready(sc("a", "10.0.0.0/24")), e0), false},
		{"deleting, no condition", deleting(sc("a", "10.0.0.0/24"), e0), false},
	}
	for _, tc := range tests {
		if got := AllocatorReady(tc.c); got != tc.want {
			t.Errorf("AllocatorReady(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAllocatorReadiness(t *testing.T) {
	notReady := withReady(sc("nr", "10.0.0.0/24"), metav1.ConditionFalse, "Other", "", e0)
	got, err := AllocatorReadiness([]*networkingv1.ServiceCIDR{
		ready(sc("kubernetes", "10.0.0.0/24", "2001:db8::/64")),
		nil,
		notReady,
		deleting(sc("gone", "10.1.0.0/24"), e0),
		sc("new", "2001:db8::/48", "10.1.0.7/24"), // not canonical: masked
		sc("bad", "garbage", "10.2.0.0/16"),
		sc("dup", "10.2.0.0/16", "10.2.0.0/16"),
	})
	if !errors.Is(err, ErrInvalidCIDR) {
		t.Errorf("AllocatorReadiness error = %v, want ErrInvalidCIDR", err)
	}
	want := []string{
		"10.0.0.0/24 true [kubernetes nr]",
		"10.1.0.0/24 true [gone new]",
		"10.2.0.0/16 true [bad dup]",
		"2001:db8::/48 true [new]",
		"2001:db8::/64 true [kubernetes]",
	}
	if len(got) != len(want) {
		t.Fatalf("AllocatorReadiness = %+v, want %d prefixes", got, len(want))
	}
	for i, g := range got {
		if s := fmt.Sprintf("%s %v %v", g.Prefix, g.Ready, g.ServiceCIDRs); s != want[i] {
			t.Errorf("AllocatorReadiness[%d] = %s, want %s", i, s, want[i])
		}
	}
	got, err = AllocatorReadiness([]*networkingv1.ServiceCIDR{notReady, deleting(sc("gone", "10.1.0.0/24"), e0)})
	if err != nil || len(got) != 2 || got[0].Ready || got[1].Ready {
		t.Errorf("AllocatorReadiness(not ready, deleting) = %+v, %v; want both not ready", got, err)
	}
	if got[0].Prefix != netip.MustParsePrefix("10.0.0.0/24") {
		t.Errorf("AllocatorReadiness[0].Prefix = %s, want 10.0.0.0/24", got[0].Prefix)
	}
	if got, err := AllocatorReadiness(nil); got != nil || err != nil {
		t.Errorf("AllocatorReadiness(nil) = %v, %v; want nil, nil", got, err)
	}
}
