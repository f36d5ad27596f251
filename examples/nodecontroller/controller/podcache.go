package controller

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/internal/uid"
)

// cachedPod is what the pod informer caches for a pod: the fields the
// controller reads (trim.go), in 192 bytes instead of the 1,168 of a v1.Pod
// struct (let alone the containers, volumes and statuses it points to).
// The values the API server writes are kept compact (compact.go): the UID
// in its 16 bytes, the resourceVersion as a number, times as nanoseconds,
// the phase and the one Ready condition inline; anything else is kept as
// decoded in podExtra. Reads turn it back into a *v1.Pod (pod), equal to
// the trimmed pod, for the Monitor, which needs one only when it acts on
// the pod. It implements metav1.Object so that the informer's store can
// key it; the setters of the fields it does not keep do nothing (nobody
// writes cached objects).
type cachedPod struct {
	name, namespace, nodeName string
	tolerations               *[]v1.Toleration // shared between pods (trimmer.tols): never modified; nil: none
	owner                     *metav1.OwnerReference
	deleting                  *metav1.Time
	extra                     *podExtra // what has no compact form; nil: nothing
	generation                int64
	rv                        uint64 // parseRV; unused with flagExtraRV
	created                   compactTime
	uid                       uid.Raw // with flagUID
	cond                      cachedCondition
	phase                     uint8 // index in podPhases; unused with flagExtraPhase
	flags                     podFlags
}

// podExtra keeps, as decoded, a pod's fields that have no compact form:
// rare on pods an API server serves (a status.reason, a second owned
// condition while a pod is evicted).
type podExtra struct {
	uid        types.UID
	rv         string
	created    metav1.Time
	phase      v1.PodPhase
	reason     string
	conditions []v1.PodCondition // the owned ones, in order, when not cond
	claims     *podClaims        // nil: the pod uses no ResourceClaim
}

// podClaims are the ResourceClaims a pod uses, as the device taint
// eviction duty reads them (taints.DeviceEvictor.SetPod):
// spec.resourceClaims, status.resourceClaimStatuses and the name of
// status.extendedResourceClaimStatus's claim (its request mappings are not
// kept).
type podClaims struct {
	spec     []v1.PodResourceClaim
	statuses []v1.PodResourceClaimStatus
	extended string
}

type podFlags uint8

const (
	flagUID           podFlags = 1 << iota // uid holds the UID (else extra.uid, or none)
	flagExtraRV                            // extra.rv holds the resourceVersion
	flagCreatedUTC                         // created is in UTC (else the local zone)
	flagExtraCreated                       // extra.created holds the creation time
	flagExtraPhase                         // extra.phase holds the phase
	flagCond                               // cond is the pod's one owned condition
	flagProbeUTC                           // cond.probe is in UTC
	flagTransitionUTC                      // cond.transition is in UTC
)

// cachedCondition is a Ready or DisruptionTarget condition in 64 bytes.
type cachedCondition struct {
	reason, message    string
	observedGeneration int64
	probe, transition  compactTime
	typ, status        uint8 // indexes in ownedConditionTypes and conditionStatuses
}

var (
	podPhases           = []v1.PodPhase{"", v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed, v1.PodUnknown}
	ownedConditionTypes = []v1.PodConditionType{v1.PodReady, v1.DisruptionTarget}
	conditionStatuses   = []v1.ConditionStatus{v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown}
)

var _ metav1.Object = (*cachedPod)(nil)

func (p *cachedPod) extras() *podExtra {
	if p.extra == nil {
		p.extra = &podExtra{}
	}
	return p.extra
}

// setUID, setRV, setCreated, setPhase and setConditions store a field
// compactly when they can, in extra when not.
func (p *cachedPod) setUID(id types.UID) {
	p.flags &^= flagUID
	if p.extra != nil {
		p.extra.uid = ""
	}
	if u, ok := uid.Parse(id); ok {
		p.uid, p.flags = u, p.flags|flagUID
	} else if id != "" {
		p.extras().uid = id
	}
}

func (p *cachedPod) setRV(rv string) {
	if v, ok := parseRV(rv); ok {
		p.rv, p.flags = v, p.flags&^flagExtraRV
		return
	}
	p.extras().rv, p.flags = rv, p.flags|flagExtraRV
}

func (p *cachedPod) setCreated(t metav1.Time) {
	p.flags &^= flagCreatedUTC | flagExtraCreated
	if c, utc, ok := encodeTime(t); ok {
		p.created = c
		if utc {
			p.flags |= flagCreatedUTC
		}
		return
	}
	p.extras().created, p.flags = t, p.flags|flagExtraCreated
}

func (p *cachedPod) setPhase(phase v1.PodPhase) {
	if i := slices.Index(podPhases, phase); i >= 0 {
		p.phase, p.flags = uint8(i), p.flags&^flagExtraPhase
		return
	}
	p.extras().phase, p.flags = phase, p.flags|flagExtraPhase
}

// setConditions keeps the owned conditions of cs (intern interns their
// strings): inline when there is one and it has a compact form, else in
// extra.
func (p *cachedPod) setConditions(cs []v1.PodCondition, intern func(string) string) {
	p.flags &^= flagCond | flagProbeUTC | flagTransitionUTC
	p.cond = cachedCondition{}
	if p.extra != nil {
		p.extra.conditions = nil
	}
	n, last := 0, -1
	for i := range cs {
		if ownedPodCondition(cs[i].Type) {
			n, last = n+1, i
		}
	}
	if n == 0 {
		return
	}
	if n == 1 && p.compactCondition(&cs[last], intern) {
		return
	}
	out := make([]v1.PodCondition, 0, n)
	for i := range cs {
		if c := cs[i]; ownedPodCondition(c.Type) {
			c.Type = v1.PodConditionType(intern(string(c.Type)))
			c.Status = v1.ConditionStatus(intern(string(c.Status)))
			c.Reason, c.Message = intern(c.Reason), intern(c.Message)
			out = append(out, c)
		}
	}
	p.extras().conditions = out
}

func (p *cachedPod) compactCondition(c *v1.PodCondition, intern func(string) string) bool {
	typ, status := slices.Index(ownedConditionTypes, c.Type), slices.Index(conditionStatuses, c.Status)
	probe, probeUTC, ok1 := encodeTime(c.LastProbeTime)
	transition, transitionUTC, ok2 := encodeTime(c.LastTransitionTime)
	if typ < 0 || status < 0 || !ok1 || !ok2 {
		return false
	}
	p.cond = cachedCondition{
		reason: intern(c.Reason), message: intern(c.Message), observedGeneration: c.ObservedGeneration,
		probe: probe, transition: transition, typ: uint8(typ), status: uint8(status),
	}
	p.flags |= flagCond
	if probeUTC {
		p.flags |= flagProbeUTC
	}
	if transitionUTC {
		p.flags |= flagTransitionUTC
	}
	return true
}

// conditions returns the owned conditions, a new slice when inline.
func (p *cachedPod) conditions() []v1.PodCondition {
	if p.flags&flagCond == 0 {
		if p.extra != nil {
			return p.extra.conditions
		}
		return nil
	}
	c := &p.cond
	return []v1.PodCondition{{
		Type: ownedConditionTypes[c.typ], Status: conditionStatuses[c.status], ObservedGeneration: c.observedGeneration,
		LastProbeTime: c.probe.time(p.flags&flagProbeUTC != 0), LastTransitionTime: c.transition.time(p.flags&flagTransitionUTC != 0),
		Reason: c.reason, Message: c.message,
	}}
}

func (p *cachedPod) phaseValue() v1.PodPhase {
	if p.flags&flagExtraPhase != 0 {
		return p.extra.phase
	}
	return podPhases[p.phase]
}

// hasClaims reports whether the pod uses ResourceClaims.
func (p *cachedPod) hasClaims() bool { return p.extra != nil && p.extra.claims != nil }

func (p *cachedPod) reason() string {
	if p.extra != nil {
		return p.extra.reason
	}
	return ""
}

func (p *cachedPod) tolerationList() []v1.Toleration {
	if p.tolerations == nil {
		return nil
	}
	return *p.tolerations
}

// sameUID reports whether p and q have the same UID, without formatting.
func (p *cachedPod) sameUID(q *cachedPod) bool {
	if p.flags&flagUID != 0 || q.flags&flagUID != 0 {
		return p.flags&q.flags&flagUID != 0 && p.uid == q.uid
	}
	return p.GetUID() == q.GetUID()
}

// pod returns a new *v1.Pod with the cached fields. Its tolerations (and
// extra's conditions and claims) are shared with the cache: read only, as
// every object a Cluster read returns.
func (p *cachedPod) pod() *v1.Pod {
	out := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.name, Namespace: p.namespace, UID: p.GetUID(), ResourceVersion: p.GetResourceVersion(),
			Generation: p.generation, CreationTimestamp: p.GetCreationTimestamp(), DeletionTimestamp: p.deleting,
		},
		Spec:   v1.PodSpec{NodeName: p.nodeName, Tolerations: p.tolerationList()},
		Status: v1.PodStatus{Phase: p.phaseValue(), Reason: p.reason(), Conditions: p.conditions()},
	}
	if p.owner != nil {
		out.OwnerReferences = []metav1.OwnerReference{*p.owner}
	}
	if p.hasClaims() {
		c := p.extra.claims
		out.Spec.ResourceClaims, out.Status.ResourceClaimStatuses = c.spec, c.statuses
		if c.extended != "" {
			out.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: c.extended}
		}
	}
	return out
}

// podOf returns the *v1.Pod of a cached object (a *cachedPod, or a
// *v1.Pod), or nil.
func podOf(obj any) *v1.Pod {
	switch o := obj.(type) {
	case *cachedPod:
		return o.pod()
	case *v1.Pod:
		return o
	}
	return nil
}

func (p *cachedPod) GetNamespace() string                          { return p.namespace }
func (p *cachedPod) SetNamespace(ns string)                        { p.namespace = ns }
func (p *cachedPod) GetName() string                               { return p.name }
func (p *cachedPod) SetName(name string)                           { p.name = name }
func (p *cachedPod) GetGenerateName() string                       { return "" }
func (p *cachedPod) SetGenerateName(string)                        {}
func (p *cachedPod) SetUID(uid types.UID)                          { p.setUID(uid) }
func (p *cachedPod) SetResourceVersion(rv string)                  { p.setRV(rv) }
func (p *cachedPod) GetGeneration() int64                          { return p.generation }
func (p *cachedPod) SetGeneration(g int64)                         { p.generation = g }
func (p *cachedPod) GetSelfLink() string                           { return "" }
func (p *cachedPod) SetSelfLink(string)                            {}
func (p *cachedPod) SetCreationTimestamp(t metav1.Time)            { p.setCreated(t) }
func (p *cachedPod) GetDeletionTimestamp() *metav1.Time            { return p.deleting }
func (p *cachedPod) SetDeletionTimestamp(t *metav1.Time)           { p.deleting = t }
func (p *cachedPod) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (p *cachedPod) SetDeletionGracePeriodSeconds(*int64)          {}
func (p *cachedPod) GetLabels() map[string]string                  { return nil }
func (p *cachedPod) SetLabels(map[string]string)                   {}
func (p *cachedPod) GetAnnotations() map[string]string             { return nil }
func (p *cachedPod) SetAnnotations(map[string]string)              {}
func (p *cachedPod) GetFinalizers() []string                       { return nil }
func (p *cachedPod) SetFinalizers([]string)                        {}
func (p *cachedPod) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (p *cachedPod) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

func (p *cachedPod) GetUID() types.UID {
	switch {
	case p.flags&flagUID != 0:
		return p.uid.UID()
	case p.extra != nil:
		return p.extra.uid
	}
	return ""
}

func (p *cachedPod) GetResourceVersion() string {
	if p.flags&flagExtraRV != 0 {
		return p.extra.rv
	}
	return formatRV(p.rv)
}

func (p *cachedPod) GetCreationTimestamp() metav1.Time {
	if p.flags&flagExtraCreated != 0 {
		return p.extra.created
	}
	return p.created.time(p.flags&flagCreatedUTC != 0)
}

func (p *cachedPod) GetOwnerReferences() []metav1.OwnerReference {
	if p.owner == nil {
		return nil
	}
	return []metav1.OwnerReference{*p.owner}
}

func (p *cachedPod) SetOwnerReferences(refs []metav1.OwnerReference) {
	p.owner = nil
	for i := range refs {
		if refs[i].Controller != nil && *refs[i].Controller {
			r := refs[i]
			p.owner = &r
			return
		}
	}
}
