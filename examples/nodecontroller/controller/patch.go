package controller

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// nodeStatusPatch is the patch that turns old into status: the conditions
// that differ. It fails when anything else in status differs (the Monitor
// writes conditions only: a change elsewhere would be dropped silently),
// and returns nil when nothing differs.
func nodeStatusPatch(old *v1.Node, status *v1.NodeStatus) ([]byte, error) {
	rest, want := old.Status, *status
	rest.Conditions, want.Conditions = nil, nil
	if !equality.Semantic.DeepEqual(rest, want) {
		return nil, fmt.Errorf("nodecontroller: node %s: a status change outside status.conditions cannot be patched", old.Name)
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
		return nil, nil
	}
	var p statusPatchBody
	p.Metadata.ResourceVersion = old.ResourceVersion
	p.Status = map[string]any{"conditions": conds}
	return json.Marshal(&p)
}

func nodeCondition(cs []v1.NodeCondition, t v1.NodeConditionType) *v1.NodeCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// podStatusPatch is the patch that turns old's status into status: the
// conditions that differ, and status.reason and status.message when they
// differ. It fails when anything else differs, and returns nil when nothing
// does.
func podStatusPatch(old *v1.Pod, status *v1.PodStatus) ([]byte, error) {
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
