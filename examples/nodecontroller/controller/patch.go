package controller

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The status writes are strategic-merge patches of the status subresource
// that carry only what the controller changed: the conditions it changed
// (merged by type, every field of each given, so that a field it cleared is
// cleared) and, for pods in legacy mode, status.reason and status.message.
// Each carries the resourceVersion the change was computed from (and, for
// pods, the UID), so it fails with a conflict when the object changed since,
// as upstream's UpdateStatus does; unlike upstream's PUT of the whole
// status, it cannot send back what the informer cache trimmed (trim.go).
//
// Conditions that repeat a type (a buggy or hostile agent's; the API server
// accepts them) cannot be written by a strategic merge: the API server's
// merge (k8s.io/apimachinery/pkg/util/strategicpatch, mergeSlice) merges
// every patch entry into the first list entry of its type, so a patch that
// carries both a changed Ready and its unchanged duplicate leaves the
// duplicate's values in the first Ready (a dead node read Ready=True again,
// its heartbeat moved: never Unknown, tainted or evicted); and any merge of
// the list moves the later entries of a type next to the first
// (normalizeElementOrder sorts by the first index of each key), even with
// $patch: replace or $setElementOrder. Such an object's conditions are
// written whole instead, by a JSON merge patch (RFC 7386: a list in it
// replaces the stored list as it is) with the same resourceVersion (and
// UID) precondition, so the stored conditions end exactly as upstream's
// PUT leaves them: the first condition of each type changed (as upstream's
// GetNodeCondition and GetPodCondition, nodehealth and the monitor read the
// first), the duplicates kept, untouched, where they were. A node's cached
// conditions are whole (trim.go); a pod's cache keeps only the Ready and
// DisruptionTarget conditions, so its list is read from the API server
// first (podConditionsMergePatch).

// nullable is s, or nil (JSON null: delete the field) when it is empty.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// timeOrNull is t, or nil (null) when it is zero.
func timeOrNull(t metav1.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// statusPatchBody is the body of a status patch.
type statusPatchBody struct {
	Metadata struct {
		UID             types.UID `json:"uid,omitempty"`
		ResourceVersion string    `json:"resourceVersion"`
	} `json:"metadata"`
	Status map[string]any `json:"status"`
}

// nodeStatusPatch is the patch that turns old into status: a strategic
// merge of the conditions that differ or, when old's or status's
// conditions repeat a type, a JSON merge patch of the whole list. It fails
// when anything else in status differs (the Monitor writes conditions only:
// a change elsewhere would be dropped silently), and returns nil when
// nothing differs.
func nodeStatusPatch(old *v1.Node, status *v1.NodeStatus) ([]byte, types.PatchType, error) {
	rest, want := old.Status, *status
	rest.Conditions, want.Conditions = nil, nil
	if !equality.Semantic.DeepEqual(rest, want) {
		return nil, "", fmt.Errorf("nodecontroller: node %s: a status change outside status.conditions cannot be patched", old.Name)
	}
	if repeatsType(old.Status.Conditions, nodeConditionType) || repeatsType(status.Conditions, nodeConditionType) {
		if equality.Semantic.DeepEqual(old.Status.Conditions, status.Conditions) {
			return nil, "", nil
		}
		var p statusPatchBody
		p.Metadata.ResourceVersion = old.ResourceVersion
		p.Status = map[string]any{"conditions": status.Conditions}
		b, err := json.Marshal(&p)
		return b, types.MergePatchType, err
	}
	var conds []map[string]any
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if o := nodeCondition(old.Status.Conditions, c.Type); o != nil && equality.Semantic.DeepEqual(*o, *c) {
			continue
		}
		conds = append(conds, map[string]any{
			"type": c.Type, "status": c.Status,
			"lastHeartbeatTime":  timeOrNull(c.LastHeartbeatTime),
			"lastTransitionTime": timeOrNull(c.LastTransitionTime),
			"reason":             nullable(c.Reason), "message": nullable(c.Message),
		})
	}
	if len(conds) == 0 {
		return nil, "", nil
	}
	var p statusPatchBody
	p.Metadata.ResourceVersion = old.ResourceVersion
	p.Status = map[string]any{"conditions": conds}
	b, err := json.Marshal(&p)
	return b, types.StrategicMergePatchType, err
}

func nodeCondition(cs []v1.NodeCondition, t v1.NodeConditionType) *v1.NodeCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// podStatusPatch is the strategic-merge patch that turns old's status into
// status: the conditions that differ, and status.reason and status.message
// when they differ. It fails when anything else differs, and returns nil
// when nothing does. When old's or status's conditions repeat a type
// (podConditionsRepeat), the write is podConditionsMergePatch instead.
func podStatusPatch(old *v1.Pod, status *v1.PodStatus) ([]byte, error) {
	st, err := podStatusRest(old, status)
	if err != nil {
		return nil, err
	}
	var conds []map[string]any
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if o := podCondition(old.Status.Conditions, c.Type); o != nil && equality.Semantic.DeepEqual(*o, *c) {
			continue
		}
		pc := map[string]any{
			"type": c.Type, "status": c.Status,
			"lastProbeTime":      timeOrNull(c.LastProbeTime),
			"lastTransitionTime": timeOrNull(c.LastTransitionTime),
			"reason":             nullable(c.Reason), "message": nullable(c.Message),
		}
		if c.ObservedGeneration != 0 {
			pc["observedGeneration"] = c.ObservedGeneration
		} else {
			pc["observedGeneration"] = nil
		}
		conds = append(conds, pc)
	}
	if len(conds) > 0 {
		st["conditions"] = conds
	}
	if len(st) == 0 {
		return nil, nil
	}
	var p statusPatchBody
	p.Metadata.UID, p.Metadata.ResourceVersion = old.UID, old.ResourceVersion
	p.Status = st
	return json.Marshal(&p)
}

func podCondition(cs []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// podStatusRest checks that status differs from old's status in the
// conditions, status.reason and status.message only, and returns the
// status fields of a patch for the last two (each when it differs; null
// deletes).
func podStatusRest(old *v1.Pod, status *v1.PodStatus) (map[string]any, error) {
	rest, want := old.Status, *status
	rest.Conditions, want.Conditions = nil, nil
	rest.Reason, want.Reason, rest.Message, want.Message = "", "", "", ""
	if !equality.Semantic.DeepEqual(rest, want) {
		return nil, fmt.Errorf("nodecontroller: pod %s/%s: a status change outside conditions, reason and message cannot be patched", old.Namespace, old.Name)
	}
	st := map[string]any{}
	if old.Status.Reason != status.Reason {
		st["reason"] = nullable(status.Reason)
	}
	if old.Status.Message != status.Message {
		st["message"] = nullable(status.Message)
	}
	return st, nil
}

// podConditionsRepeat reports whether old's or status's conditions repeat
// a type: a strategic merge cannot write them (see the top of this file).
func podConditionsRepeat(old *v1.Pod, status *v1.PodStatus) bool {
	return repeatsType(old.Status.Conditions, podConditionType) || repeatsType(status.Conditions, podConditionType)
}

// podConditionsMergePatch is the JSON merge patch that turns live's status
// into what status asks of old's: old is the pod as the controller read it
// (from the cache: its conditions may be a subset of live's, in live's
// order), live the whole pod as the API server holds it at the same
// resourceVersion. status's conditions must be old's, changed in place,
// then any new ones; the patch carries live's whole condition list with
// those changes (a change at old's k-th condition lands on live's
// condition it is a copy of; new ones are appended, as upstream's
// UpdatePodCondition does), status.reason and status.message when they
// differ, the UID and the resourceVersion. It returns a conflict when live
// is not the pod old was read from (another UID or resourceVersion, or
// conditions old does not match), as the API server would for a patch with
// old's preconditions, and nil when nothing differs.
func podConditionsMergePatch(old, live *v1.Pod, status *v1.PodStatus) ([]byte, error) {
	st, err := podStatusRest(old, status)
	if err != nil {
		return nil, err
	}
	if live.UID != old.UID || live.ResourceVersion != old.ResourceVersion {
		return nil, podConflict(old, fmt.Errorf("the pod is UID %s at resourceVersion %s, the write was computed from UID %s at %s",
			live.UID, live.ResourceVersion, old.UID, old.ResourceVersion))
	}
	from, to := old.Status.Conditions, status.Conditions
	if len(to) < len(from) {
		return nil, fmt.Errorf("nodecontroller: pod %s/%s: a status change that removes conditions cannot be patched", old.Namespace, old.Name)
	}
	for i := range from {
		if to[i].Type != from[i].Type {
			return nil, fmt.Errorf("nodecontroller: pod %s/%s: a status change that reorders conditions cannot be patched", old.Namespace, old.Name)
		}
	}
	conds := make([]v1.PodCondition, len(live.Status.Conditions), len(live.Status.Conditions)+len(to)-len(from))
	copy(conds, live.Status.Conditions)
	j := 0
	for k := range conds {
		if j < len(from) && equality.Semantic.DeepEqual(conds[k], from[j]) {
			conds[k] = to[j]
			j++
		}
	}
	if j < len(from) {
		return nil, podConflict(old, fmt.Errorf("its condition %s is not as read at resourceVersion %s", from[j].Type, old.ResourceVersion))
	}
	conds = append(conds, to[len(from):]...)
	if !equality.Semantic.DeepEqual(conds, live.Status.Conditions) {
		st["conditions"] = conds
	}
	if len(st) == 0 {
		return nil, nil
	}
	var p statusPatchBody
	p.Metadata.UID, p.Metadata.ResourceVersion = old.UID, old.ResourceVersion
	p.Status = st
	return json.Marshal(&p)
}

func podConflict(p *v1.Pod, err error) error {
	return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, p.Namespace+"/"+p.Name, err)
}

func nodeConditionType(c *v1.NodeCondition) v1.NodeConditionType { return c.Type }
func podConditionType(c *v1.PodCondition) v1.PodConditionType    { return c.Type }

// repeatsType reports whether two of cs have the same type. A short list
// (every real one) is compared pairwise, without allocating; a long one, as
// a hostile object may carry, through a set, so the work stays linear.
func repeatsType[C any, T comparable](cs []C, typeOf func(*C) T) bool {
	if len(cs) <= 16 {
		for i := 1; i < len(cs); i++ {
			for j := range i {
				if typeOf(&cs[i]) == typeOf(&cs[j]) {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[T]struct{}, len(cs))
	for i := range cs {
		t := typeOf(&cs[i])
		if _, ok := seen[t]; ok {
			return true
		}
		seen[t] = struct{}{}
	}
	return false
}
