package monitortest

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NewNode returns a node as a kubelet that just posted its status leaves
// it: Ready=True with a heartbeat at now, created (and Ready since) an hour
// before, UID "uid-<name>", and labelled with zone
// (topology.kubernetes.io/zone) unless zone is empty.
func NewNode(name, zone string, now time.Time) *v1.Node {
	created := metav1.NewTime(now.Add(-time.Hour))
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: created,
			Labels: map[string]string{v1.LabelHostname: name}},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{
			Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: ReasonKubeletReady, Message: messageReady,
			LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: created,
		}}},
	}
	if zone != "" {
		n.Labels[v1.LabelTopologyZone] = zone
	}
	return n
}

// NewPod returns a running, Ready pod bound to node, created at now, UID
// "uid-<namespace>-<name>", with the given tolerations (shared, not
// copied). Add the admission plugin's defaults with
// taints.WithDefaultTolerations.
func NewPod(namespace, name, node string, now time.Time, tolerations ...v1.Toleration) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + namespace + "-" + name),
			CreationTimestamp: metav1.NewTime(now)},
		Spec: v1.PodSpec{NodeName: node, Tolerations: tolerations},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{
			Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}}},
	}
}
