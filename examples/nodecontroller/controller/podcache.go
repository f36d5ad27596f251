package controller

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// cachedPod is what the pod informer caches for a pod: the fields the
// controller reads (trim.go), in about 200 bytes instead of the 1,168 of a
// v1.Pod struct (let alone the containers, volumes and statuses it points
// to). Reads turn it back into a *v1.Pod (pod) for the Monitor, which
// needs one only when it acts on the pod. It implements metav1.Object so
// that the informer's store can key and index it; the setters of the
// fields it does not keep do nothing (nobody writes cached objects).
type cachedPod struct {
	name, namespace string
	uid             types.UID
	resourceVersion string
	generation      int64
	created         metav1.Time
	deleting        *metav1.Time
	owner           *metav1.OwnerReference // the controller reference; nil: none
	nodeName        string
	tolerations     []v1.Toleration // shared between pods (trimmer.tols): never modified
	phase           v1.PodPhase
	reason          string
	conditions      []v1.PodCondition // Ready and DisruptionTarget only
}

var _ metav1.Object = (*cachedPod)(nil)

// pod returns a new *v1.Pod with the cached fields. Its slices are shared
// with the cache: read only, as every object a Cluster read returns.
func (p *cachedPod) pod() *v1.Pod {
	out := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.name, Namespace: p.namespace, UID: p.uid, ResourceVersion: p.resourceVersion,
			Generation: p.generation, CreationTimestamp: p.created, DeletionTimestamp: p.deleting,
		},
		Spec:   v1.PodSpec{NodeName: p.nodeName, Tolerations: p.tolerations},
		Status: v1.PodStatus{Phase: p.phase, Reason: p.reason, Conditions: p.conditions},
	}
	if p.owner != nil {
		out.OwnerReferences = []metav1.OwnerReference{*p.owner}
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
func (p *cachedPod) GetUID() types.UID                             { return p.uid }
func (p *cachedPod) SetUID(uid types.UID)                          { p.uid = uid }
func (p *cachedPod) GetResourceVersion() string                    { return p.resourceVersion }
func (p *cachedPod) SetResourceVersion(rv string)                  { p.resourceVersion = rv }
func (p *cachedPod) GetGeneration() int64                          { return p.generation }
func (p *cachedPod) SetGeneration(g int64)                         { p.generation = g }
func (p *cachedPod) GetSelfLink() string                           { return "" }
func (p *cachedPod) SetSelfLink(string)                            {}
func (p *cachedPod) GetCreationTimestamp() metav1.Time             { return p.created }
func (p *cachedPod) SetCreationTimestamp(t metav1.Time)            { p.created = t }
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
