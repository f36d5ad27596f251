package controller

import (
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The informers keep only what the controller reads (an informer
// TransformFunc), so that a cached pod costs a few hundred bytes instead of
// the whole object (containers, volumes, env, container statuses, managed
// fields): kube-controller-manager's node lifecycle controller keeps whole
// pods without managed fields. What is kept:
//
//	Pod:  name, namespace, UID, resourceVersion, generation, deletionTimestamp,
//	      the controller owner reference; spec.nodeName, spec.tolerations,
//	      spec.resourceClaims; status.phase, status.reason, the Ready and
//	      DisruptionTarget conditions, status.resourceClaimStatuses and the
//	      claim name of status.extendedResourceClaimStatus
//	ResourceSlice, ResourceClaim, DeviceTaintRule: devicetrim.go
//	Node: metadata without annotations and managed fields; the whole spec;
//	      status.conditions (no images, volumes, addresses, capacity, nodeInfo)
//
// No write is built from what a trimmed object lacks: every write to a pod
// or a node is a patch of the fields the controller owns, conditional on
// the resourceVersion (and, for pods, the UID) it read (patch.go; a pod's
// conditions that repeat a type are read from the API server first), or a
// read-modify-write of spec.taints or of labels the controller sets
// (patchNode); Events name objects by reference. A status PUT of a trimmed
// object would wipe what the trim dropped, so there is none.

// trimmer builds the trimmed copies the informers cache. It interns the
// strings and toleration lists many pods share (namespaces, node names,
// condition types and reasons, the tolerations of a template), so that 30
// pods of one node hold one copy of its name. Each table is bounded by
// bytes as well as by count, and forgets what is no longer seen (see
// internTable): a condition message that changes at every update (a
// timestamp in it, a 32 KiB dump) would otherwise stay in the table for
// good, however little of it the cache still holds. It is safe for
// concurrent use (the informers transform on their own goroutines).
type trimmer struct {
	mu          sync.Mutex
	strs        internTable[string]
	tolerations internTable[*[]v1.Toleration]
	key         strings.Builder
}

// The intern tables' bounds. A generation of a table holds at most
// maxInterned values and maxInternedBytes bytes (a string's length, a
// toleration list's key twice: the key and the copy it names, plus
// internEntryBytes for the map entry each); a table keeps two generations.
// A string longer than maxInternLen, or a toleration list whose key is
// longer than maxInternTolerationsLen, is never interned: it is kept as
// decoded (an object's own copy, freed with it). Such a string is most
// likely a message (shared ones are short: names, reasons), and one entry
// cannot take more than a small part of a generation.
const (
	maxInterned             = 1 << 16
	maxInternedBytes        = 4 << 20
	maxInternLen            = 1 << 10
	maxInternTolerationsLen = 32 << 10
	internEntryBytes        = 64
)

// internTable is a table of shared values by key in two generations: new
// values go into the current one; when it is full (maxInterned values or
// maxInternedBytes bytes) it becomes the previous one and the previous one
// is dropped; a value found in the previous generation moves into the
// current one. So a value in use stays shared, and one seen once (a
// message that changes at every update) is forgotten after at most two
// generations: the table never holds more than twice the bounds. A value
// it forgets is still held by the objects that use it; the next one equal
// to it is interned anew. Not safe for concurrent use (the trimmer's
// mutex guards it).
type internTable[V any] struct {
	cur, prev           map[string]V
	curBytes, prevBytes int
	weight              int // bytes per byte of key: 1 when the key is the value, 2 when the value is a copy as large
}

// get returns the value interned under k, moving it into the current
// generation when it is found in the previous one.
func (t *internTable[V]) get(k string) (V, bool) {
	if v, ok := t.cur[k]; ok {
		return v, true
	}
	v, ok := t.prev[k]
	if ok {
		t.put(k, v)
	}
	return v, ok
}

// put interns v under k, starting a new generation first when the
// current one is full.
func (t *internTable[V]) put(k string, v V) {
	cost := t.weight*len(k) + internEntryBytes
	if t.cur == nil || len(t.cur) >= maxInterned || t.curBytes+cost > maxInternedBytes {
		t.prev, t.prevBytes = t.cur, t.curBytes
		t.cur, t.curBytes = make(map[string]V), 0
	}
	t.cur[k] = v
	t.curBytes += cost
}

// bytes is what the table holds by its own count (both generations; a
// value in both counts twice, as its map entries do).
func (t *internTable[V]) bytes() int { return t.curBytes + t.prevBytes }

func newTrimmer() *trimmer {
	return &trimmer{strs: internTable[string]{weight: 1}, tolerations: internTable[*[]v1.Toleration]{weight: 2}}
}

// str returns the interned copy of s, or s itself when it is longer than
// maxInternLen.
func (t *trimmer) str(s string) string {
	if s == "" || len(s) > maxInternLen {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.strs.get(s); ok {
		return i
	}
	s = strings.Clone(s) // not a substring of a decode buffer
	t.strs.put(s, s)
	return s
}

// tols returns an interned, shared copy of ts (callers never modify it);
// nil when ts is empty. A list whose key is longer than
// maxInternTolerationsLen is copied, not interned.
func (t *trimmer) tols(ts []v1.Toleration) *[]v1.Toleration {
	if len(ts) == 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.key.Reset()
	for i := range ts {
		tl := &ts[i]
		for _, s := range []string{tl.Key, string(tl.Operator), tl.Value, string(tl.Effect)} {
			t.key.WriteString(strconv.Itoa(len(s)))
			t.key.WriteByte(':')
			t.key.WriteString(s)
		}
		if tl.TolerationSeconds != nil {
			t.key.WriteString(strconv.FormatInt(*tl.TolerationSeconds, 10))
		}
		t.key.WriteByte(';')
	}
	k := t.key.String()
	if shared, ok := t.tolerations.get(k); ok {
		return shared
	}
	cp := make([]v1.Toleration, len(ts))
	for i := range ts {
		ts[i].DeepCopyInto(&cp[i])
	}
	if len(k) <= maxInternTolerationsLen {
		t.tolerations.put(k, &cp)
	}
	return &cp
}

// transform is the informers' TransformFunc: pods and nodes trimmed,
// anything else without managed fields. It never changes its argument (the
// object may be shared with the client that decoded it).
func (t *trimmer) transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.Pod:
		return t.pod(o), nil
	case *cachedPod:
		return o, nil
	case *v1.Node:
		return t.node(o), nil
	}
	if out, ok := t.device(obj); ok {
		return out, nil
	}
	return stripManagedFields(obj)
}

// pod returns the trimmed copy of p.
func (t *trimmer) pod(p *v1.Pod) *cachedPod {
	out := &cachedPod{
		name:        p.Name,
		namespace:   t.str(p.Namespace),
		generation:  p.Generation,
		deleting:    p.DeletionTimestamp,
		nodeName:    t.str(p.Spec.NodeName),
		tolerations: t.tols(p.Spec.Tolerations),
	}
	out.setUID(p.UID)
	out.setRV(p.ResourceVersion)
	out.setCreated(p.CreationTimestamp)
	out.setPhase(p.Status.Phase)
	if p.Status.Reason != "" {
		out.extras().reason = t.str(p.Status.Reason)
	}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		out.owner = &metav1.OwnerReference{
			APIVersion: t.str(ref.APIVersion), Kind: t.str(ref.Kind), Name: ref.Name, UID: ref.UID,
			Controller: ref.Controller, BlockOwnerDeletion: ref.BlockOwnerDeletion,
		}
	}
	out.setConditions(p.Status.Conditions, t.str)
	if c := trimPodClaims(p); c != nil {
		out.extras().claims = c
	}
	return out
}

// ownedPodCondition reports whether the controller reads or writes the pod
// condition type: Ready (marked False when the node is not ready) and
// DisruptionTarget (written before an eviction).
func ownedPodCondition(t v1.PodConditionType) bool {
	return t == v1.PodReady || t == v1.DisruptionTarget
}

// node returns the trimmed copy of n.
func (t *trimmer) node(n *v1.Node) *v1.Node {
	out := &v1.Node{ObjectMeta: n.ObjectMeta, Spec: n.Spec}
	out.Annotations, out.ManagedFields = nil, nil
	if len(n.Status.Conditions) > 0 {
		out.Status.Conditions = make([]v1.NodeCondition, len(n.Status.Conditions))
		for i, c := range n.Status.Conditions {
			c.Type = v1.NodeConditionType(t.str(string(c.Type)))
			c.Status = v1.ConditionStatus(t.str(string(c.Status)))
			c.Reason, c.Message = t.str(c.Reason), t.str(c.Message)
			out.Status.Conditions[i] = c
		}
	}
	return out
}
