package controller

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubelifecycle/lifecycle/taints"
)

// What the device duty's informers keep (the trimmer's transform, as for
// pods and nodes in trim.go): what taints.DeviceEvictor reads, nothing
// else. A ResourceSlice's devices lose their attributes, capacities,
// counters and node selectors, a ResourceClaim its spec (requests, CEL
// selectors, config) and status.devices, which are most of each object.
//
//	ResourceSlice:   name, UID, resourceVersion; spec.driver, spec.pool;
//	                 each device's name and taints
//	ResourceClaim:   name, namespace, UID, resourceVersion, the controller
//	                 owner reference; status.allocation.devices.results
//	                 (request, driver, pool, device, tolerations),
//	                 status.reservedFor
//	DeviceTaintRule: name, UID, resourceVersion, generation;
//	                 spec.deviceSelector, spec.taint, the
//	                 EvictionInProgress condition and the value of
//	                 AnnotationReleaseEvictionHold (cachedRule)
//
// No write is built from a trimmed object: the duty writes pods (a status
// patch of DisruptionTarget, a delete) and a rule's EvictionInProgress
// condition by server-side apply.

// DeviceTaintRulesResource is the resource the duty watches DeviceTaintRules
// as: resource.k8s.io/v1 (GA in v1.37), through the dynamic client.
var DeviceTaintRulesResource = schema.GroupVersionResource{Group: resourcev1.GroupName, Version: "v1", Resource: "devicetaintrules"}

// device returns the trimmed copy of a ResourceSlice, a ResourceClaim or a
// DeviceTaintRule (an *unstructured.Unstructured of that kind), and false
// for anything else.
func (t *trimmer) device(obj any) (any, bool) {
	switch o := obj.(type) {
	case *resourcev1.ResourceSlice:
		return t.slice(o), true
	case *resourcev1.ResourceClaim:
		return t.claim(o), true
	case *cachedRule:
		return o, true
	case *unstructured.Unstructured:
		if o.GetKind() != "DeviceTaintRule" {
			return nil, false
		}
		r, err := ruleFromUnstructured(o)
		if err != nil {
			// Keep the object's identity, so that a delete still finds
			// it; the rule counts as one without a selector (it selects
			// nothing) until a decodable version arrives.
			r = &cachedRule{ObjectMeta: metav1.ObjectMeta{Name: o.GetName(), UID: o.GetUID(), ResourceVersion: o.GetResourceVersion(), Generation: o.GetGeneration()}, decodeErr: err}
		}
		return r, true
	}
	return nil, false
}

// slice returns the trimmed copy of s.
func (t *trimmer) slice(s *resourcev1.ResourceSlice) *resourcev1.ResourceSlice {
	out := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: s.Name, UID: s.UID, ResourceVersion: s.ResourceVersion}}
	out.Spec.Driver = t.str(s.Spec.Driver)
	out.Spec.Pool = resourcev1.ResourcePool{Name: t.str(s.Spec.Pool.Name), Generation: s.Spec.Pool.Generation, ResourceSliceCount: s.Spec.Pool.ResourceSliceCount}
	if len(s.Spec.Devices) > 0 {
		out.Spec.Devices = make([]resourcev1.Device, len(s.Spec.Devices))
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			out.Spec.Devices[i] = resourcev1.Device{Name: d.Name}
			if len(d.Taints) > 0 {
				out.Spec.Devices[i].Taints = make([]resourcev1.DeviceTaint, len(d.Taints))
				for j := range d.Taints {
					d.Taints[j].DeepCopyInto(&out.Spec.Devices[i].Taints[j])
					out.Spec.Devices[i].Taints[j].Key = t.str(d.Taints[j].Key)
				}
			}
		}
	}
	return out
}

// claim returns the trimmed copy of c.
func (t *trimmer) claim(c *resourcev1.ResourceClaim) *resourcev1.ResourceClaim {
	out := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{
		Name: c.Name, Namespace: t.str(c.Namespace), UID: c.UID, ResourceVersion: c.ResourceVersion,
	}}
	if ref := metav1.GetControllerOfNoCopy(c); ref != nil {
		out.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: t.str(ref.APIVersion), Kind: t.str(ref.Kind), Name: ref.Name, UID: ref.UID,
			Controller: ref.Controller,
		}}
	}
	if a := c.Status.Allocation; a != nil {
		res := make([]resourcev1.DeviceRequestAllocationResult, len(a.Devices.Results))
		for i := range a.Devices.Results {
			r := &a.Devices.Results[i]
			res[i] = resourcev1.DeviceRequestAllocationResult{
				Request: r.Request, Driver: t.str(r.Driver), Pool: t.str(r.Pool), Device: r.Device,
			}
			if len(r.Tolerations) > 0 {
				res[i].Tolerations = make([]resourcev1.DeviceToleration, len(r.Tolerations))
				for j := range r.Tolerations {
					r.Tolerations[j].DeepCopyInto(&res[i].Tolerations[j])
				}
			}
		}
		out.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: res}}
	}
	if len(c.Status.ReservedFor) > 0 {
		out.Status.ReservedFor = make([]resourcev1.ResourceClaimConsumerReference, len(c.Status.ReservedFor))
		for i, r := range c.Status.ReservedFor {
			r.APIGroup, r.Resource = t.str(r.APIGroup), t.str(r.Resource)
			out.Status.ReservedFor[i] = r
		}
	}
	return out
}

// trimPodClaims returns the claims p uses, or nil.
func trimPodClaims(p *v1.Pod) *podClaims {
	e := p.Status.ExtendedResourceClaimStatus
	if len(p.Spec.ResourceClaims) == 0 && len(p.Status.ResourceClaimStatuses) == 0 && (e == nil || e.ResourceClaimName == "") {
		return nil
	}
	c := &podClaims{}
	if len(p.Spec.ResourceClaims) > 0 {
		c.spec = make([]v1.PodResourceClaim, len(p.Spec.ResourceClaims))
		for i := range p.Spec.ResourceClaims {
			p.Spec.ResourceClaims[i].DeepCopyInto(&c.spec[i])
		}
	}
	if len(p.Status.ResourceClaimStatuses) > 0 {
		c.statuses = make([]v1.PodResourceClaimStatus, len(p.Status.ResourceClaimStatuses))
		for i := range p.Status.ResourceClaimStatuses {
			p.Status.ResourceClaimStatuses[i].DeepCopyInto(&c.statuses[i])
		}
	}
	if e != nil {
		c.extended = e.ResourceClaimName
	}
	return c
}

// cachedRule is what the DeviceTaintRule informer caches for a rule: its
// identity and the DeviceEvictor's input (taints.DeviceTaintRule, whose
// Conditions hold only the EvictionInProgress condition). It implements
// metav1.Object through its ObjectMeta (Name, UID, ResourceVersion and
// Generation set), so that the informer's store can key it.
type cachedRule struct {
	metav1.ObjectMeta
	rule taints.DeviceTaintRule
	// decodeErr is why the rule could not be read (it then selects
	// nothing).
	decodeErr error
	// release is the value of AnnotationReleaseEvictionHold, hasRelease
	// whether the rule has it.
	release    string
	hasRelease bool
}

// deviceTaintRuleJSON is the part of a resource.k8s.io/v1 DeviceTaintRule
// the duty reads, in the API's JSON shape (k8s.io/api v0.35 has the type in
// v1alpha3 only).
type deviceTaintRuleJSON struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		DeviceSelector *struct {
			Driver *string `json:"driver,omitempty"`
			Pool   *string `json:"pool,omitempty"`
			Device *string `json:"device,omitempty"`
		} `json:"deviceSelector,omitempty"`
		Taint resourcev1.DeviceTaint `json:"taint"`
	} `json:"spec"`
	Status struct {
		Conditions []metav1.Condition `json:"conditions,omitempty"`
	} `json:"status,omitempty"`
}

// ruleFromUnstructured reads a DeviceTaintRule.
func ruleFromUnstructured(u *unstructured.Unstructured) (*cachedRule, error) {
	var r deviceTaintRuleJSON
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
		return nil, fmt.Errorf("nodecontroller: DeviceTaintRule %s: %w", u.GetName(), err)
	}
	out := &cachedRule{ObjectMeta: metav1.ObjectMeta{Name: r.Name, UID: r.UID, ResourceVersion: r.ResourceVersion, Generation: r.Generation}}
	out.rule = taints.DeviceTaintRule{Name: r.Name, UID: r.UID, Generation: r.Generation, Taint: r.Spec.Taint}
	if s := r.Spec.DeviceSelector; s != nil {
		out.rule.Selector = &taints.DeviceTaintSelector{Driver: s.Driver, Pool: s.Pool, Device: s.Device}
	}
	out.release, out.hasRelease = releaseValue(r.Annotations)
	for _, c := range r.Status.Conditions {
		if c.Type == taints.DeviceTaintConditionEvictionInProgress {
			out.rule.Conditions = []metav1.Condition{c}
			break
		}
	}
	return out, nil
}
