package incident

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// reactionWatch finds the kubelets' recorded status posts that react to a
// recorded controller write: a node's status post that puts Ready back
// (anything but Unknown) within the reaction time after the recorded
// controller wrote the node's Ready=Unknown, and a pod's status post that
// puts Ready=True back within it after the recorded controller wrote the
// pod's Ready=False. A replay that has not made the controller's write
// must not read such a post as a heartbeat: without the write the kubelet
// would not have posted then (the mirror of the kubelet reaction the
// replay models for its own writes, kubeletWrote).
//
// The window is the one the replay gives a kubelet to react to its own
// writes (ReplayOptions.KubeletReaction: the node status update period,
// the status manager's sync period), counted from the recorded write: a
// pod's Ready put back later (#121793's fixture: 18-20s after) is fed as
// any post.
//
// Each recorded write is answered by the kubelet's first post after it
// (of the node, of the pod with a Ready condition), in the window or not.
// Inventory counts the candidates (Facts.ReactionNodePosts,
// ReactionPodPosts) with DefaultKubeletReaction; the replay drops those
// whose write it has not made (NoteReactionDropped).
type reactionWatch struct {
	within time.Duration
	node   map[string]time.Time // the recorded controller's pending Ready=Unknown write of a node
	pod    map[podKey]time.Time // the recorded controller's pending Ready=False write of a pod
}

func newReactionWatch(within time.Duration) *reactionWatch {
	return &reactionWatch{within: within, node: map[string]time.Time{}, pod: map[podKey]time.Time{}}
}

// ctlNode is the recorded controller writing node's Ready condition at at
// ("" when the write does not say).
func (w *reactionWatch) ctlNode(node string, at time.Time, ready v1.ConditionStatus) {
	switch {
	case ready == v1.ConditionUnknown:
		w.node[node] = at // the kubelet reacts to the latest
	case ready != "":
		delete(w.node, node)
	}
}

// ctlPod is the recorded controller writing pod's Ready condition at at.
func (w *reactionWatch) ctlPod(k podKey, at time.Time, ready v1.ConditionStatus) {
	switch {
	case ready == v1.ConditionFalse:
		w.pod[k] = at
	case ready != "":
		delete(w.pod, k)
	}
}

// nodePost is node's kubelet posting Ready=ready at at. It returns the
// recorded controller's write the post reacts to, if it does.
func (w *reactionWatch) nodePost(node string, at time.Time, ready v1.ConditionStatus) (time.Time, bool) {
	ctl, ok := w.node[node]
	if !ok {
		return time.Time{}, false
	}
	delete(w.node, node)
	return ctl, ready != v1.ConditionUnknown && at.Sub(ctl) <= w.within
}

// podPost is a kubelet posting pod k's Ready=ready at at ("": the post
// does not say, and answers nothing).
func (w *reactionWatch) podPost(k podKey, at time.Time, ready v1.ConditionStatus) (time.Time, bool) {
	if ready == "" {
		return time.Time{}, false
	}
	ctl, ok := w.pod[k]
	if !ok {
		return time.Time{}, false
	}
	delete(w.pod, k)
	return ctl, ready == v1.ConditionTrue && at.Sub(ctl) <= w.within
}
