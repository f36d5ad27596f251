package taints

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestDeviceSameClaimNamedThrice: a pod may name one ResourceClaim in
// several spec.resourceClaims entries (the API requires only the entries'
// names to differ). Dropping such a pod's links moved its own, already
// dropped, link into a freed slot, and the next update of the pod indexed
// past the claim's pods: SetPod panicked. The sequence below is the
// shortest the model-based test found.
func TestDeviceSameClaimNamedThrice(t *testing.T) {
	naming := func(base uPod, n int) uPod {
		p := base
		p.Pod = base.DeepCopy()
		p.Spec.ResourceClaims = nil
		for i := range n {
			p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: fmt.Sprint("rc", i), ResourceClaimName: &uClaimName})
		}
		return p
	}
	pod, other := uPodWithClaimName, uPodWithClaimOtherUID
	other.Pod = other.DeepCopy()
	other.Name += "-other"
	h := newHarness(t, false, uTaintTime)
	h.setPod(naming(pod, 2))
	h.setPod(naming(other, 4))
	h.setPod(naming(pod, 4))
	h.deletePod(other)
	h.setPod(naming(pod, 2)) // panicked: index out of range
	h.d.mu.Lock()
	c := h.d.claims[types.NamespacedName{Namespace: uNamespace, Name: uClaimName}]
	if c == nil || len(c.pods) != 2 {
		t.Errorf("claim's pods = %v, want the pod twice", c)
	}
	h.d.mu.Unlock()
	// It is still evicted, once.
	h.setSlice(uSliceTainted)
	h.setClaim(uInUseClaim)
	if xs := h.d.Due(h.now); len(xs) != 1 || xs[0].Pod != podKey(pod) {
		t.Errorf("Due = %v, want the pod once", xs)
	}
}
