package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// The kubelet's condition reasons and messages
// (pkg/kubelet/nodestatus/setters.go at v1.37.2).
var conditionText = map[v1.NodeConditionType][2][2]string{ // [healthy?][reason, message]
	v1.NodeReady: {
		{"KubeletNotReady", "container runtime is down"},
		{"KubeletReady", "kubelet is posting ready status"}},
	v1.NodeMemoryPressure: {
		{"KubeletHasInsufficientMemory", "kubelet has insufficient memory available"},
		{"KubeletHasSufficientMemory", "kubelet has sufficient memory available"}},
	v1.NodeDiskPressure: {
		{"KubeletHasDiskPressure", "kubelet has disk pressure"},
		{"KubeletHasNoDiskPressure", "kubelet has no disk pressure"}},
	v1.NodePIDPressure: {
		{"KubeletHasInsufficientPID", "kubelet has insufficient PID available"},
		{"KubeletHasSufficientPID", "kubelet has sufficient PID available"}},
}

// conditionOrder is the order the kubelet reports its conditions in.
var conditionOrder = []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady}

// The deprecated OS and architecture labels the kubelet still sets
// (kubeletapis.LabelOS and LabelArch).
const (
	betaLabelOS   = "beta.kubernetes.io/os"
	betaLabelArch = "beta.kubernetes.io/arch"
)

// node is the agent's state for one Node.
type node struct {
	cfg     NodeConfig
	changed chan struct{} // a condition changed: post at once

	mu         sync.Mutex
	uid        types.UID
	lease      *coordinationv1.Lease
	status     map[v1.NodeConditionType]v1.ConditionStatus
	transition map[v1.NodeConditionType]metav1.Time
	silent     bool      // heartbeats paused (SetHeartbeat)
	posted     time.Time // the last successful status post
}

func newNode(cfg NodeConfig) *node {
	return &node{cfg: cfg, changed: make(chan struct{}, 1),
		status: map[v1.NodeConditionType]v1.ConditionStatus{v1.NodeReady: v1.ConditionTrue,
			v1.NodeMemoryPressure: v1.ConditionFalse, v1.NodeDiskPressure: v1.ConditionFalse, v1.NodePIDPressure: v1.ConditionFalse},
		transition: map[v1.NodeConditionType]metav1.Time{}}
}

// SetNodeCondition sets one of the kubelet's conditions (Ready,
// MemoryPressure, DiskPressure, PIDPressure) of node; a change is posted at
// once. It returns an error for an unknown node or condition type.
func (a *Agent) SetNodeCondition(nodeName string, typ v1.NodeConditionType, s v1.ConditionStatus) error {
	n, ok := a.nodes[nodeName]
	if !ok {
		return fmt.Errorf("agent: unknown node %q", nodeName)
	}
	if _, ok := conditionText[typ]; !ok {
		return fmt.Errorf("agent: condition %q is not one the kubelet reports", typ)
	}
	n.mu.Lock()
	if n.status[typ] != s {
		n.status[typ] = s
		n.transition[typ] = metav1.NewTime(a.clock.Now())
	}
	n.mu.Unlock()
	select {
	case n.changed <- struct{}{}:
	default:
	}
	return nil
}

// SetHeartbeat pauses (on false) or resumes the Lease renewals and status
// posts of node while its pods keep being handled, as when the network
// path of the heartbeats fails but the node still works (a partial
// partition). It returns an error for an unknown node.
func (a *Agent) SetHeartbeat(nodeName string, on bool) error {
	n, ok := a.nodes[nodeName]
	if !ok {
		return fmt.Errorf("agent: unknown node %q", nodeName)
	}
	n.mu.Lock()
	n.silent = !on
	n.mu.Unlock()
	return nil
}

func (n *node) isSilent() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.silent
}

// runNode registers the node, then renews its Lease and posts its status
// until ctx is done. Failures are logged and retried on the next tick.
func (a *Agent) runNode(ctx context.Context, n *node) {
	logger := klog.FromContext(ctx).WithValues("node", n.cfg.Name)
	for ctx.Err() == nil {
		if err := a.RegisterNode(ctx, n.cfg.Name); err == nil {
			break
		} else {
			logger.Error(err, "Unable to register node")
		}
		select {
		case <-ctx.Done():
			return
		case <-a.clock.After(time.Second):
		}
	}
	renewDue := a.clock.Now()
	lease := a.clock.NewTicker(a.cfg.LeaseRenewInterval)
	defer lease.Stop()
	status := a.clock.NewTicker(a.cfg.StatusUpdateFrequency)
	defer status.Stop()
	renew := func() {
		if n.isSilent() {
			return
		}
		if err := a.RenewLease(ctx, n.cfg.Name); err != nil {
			logger.V(2).Info("Lease renewal failed", "err", err)
			return
		}
		lag := a.clock.Since(renewDue)
		a.mu.Lock()
		a.counters.LeaseRenewals++
		a.counters.MaxRenewLag = max(a.counters.MaxRenewLag, lag)
		a.mu.Unlock()
	}
	post := func(tick bool) {
		if n.isSilent() {
			return
		}
		var err error
		if tick {
			_, err = a.UpdateNodeStatus(ctx, n.cfg.Name)
		} else {
			err = a.PostNodeStatus(ctx, n.cfg.Name)
		}
		if err != nil {
			logger.V(2).Info("Node status update failed", "err", err)
		}
	}
	renew()
	post(false)
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-lease.C():
			renewDue = now
			renew()
		case <-status.C():
			post(true)
		case <-n.changed:
			post(false)
		}
	}
}

// RegisterNode creates the Node object, or adopts the existing one, as the
// kubelet's tryRegisterWithAPIServer does. The labels are the kubelet's
// (initialNode in pkg/kubelet/kubelet_node_status.go at v1.37.2):
// kubernetes.io/hostname, the OS and architecture under their stable and
// their deprecated beta keys, then those of its NodeConfig.
func (a *Agent) RegisterNode(ctx context.Context, name string) error {
	n, ok := a.nodes[name]
	if !ok {
		return fmt.Errorf("agent: unknown node %q", name)
	}
	labels := map[string]string{v1.LabelHostname: name,
		v1.LabelOSStable: "linux", v1.LabelArchStable: "amd64", betaLabelOS: "linux", betaLabelArch: "amd64"}
	maps.Copy(labels, n.cfg.Labels)
	obj := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	got, err := a.client.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		got, err = a.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("agent: register node %s: %w", name, err)
	}
	n.mu.Lock()
	n.uid = got.UID
	n.mu.Unlock()
	return nil
}

// RenewLease renews the node's Lease in kube-node-lease (creating it when
// missing), as the kubelet's lease controller does: an update carrying the
// last seen resourceVersion, and a fresh Get after a failure.
func (a *Agent) RenewLease(ctx context.Context, name string) error {
	n, ok := a.nodes[name]
	if !ok {
		return fmt.Errorf("agent: unknown node %q", name)
	}
	leases := a.client.CoordinationV1().Leases(LeaseNamespace)
	n.mu.Lock()
	cur, uid := n.lease, n.uid
	n.mu.Unlock()
	now := metav1.NewMicroTime(a.clock.Now())
	var err error
	if cur == nil {
		cur, err = leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			secs := int32(a.cfg.LeaseDuration / time.Second)
			l := &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: LeaseNamespace},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: &secs, RenewTime: &now},
			}
			if uid != "" {
				l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: uid}}
			}
			cur, err = leases.Create(ctx, l, metav1.CreateOptions{})
			if err == nil {
				n.mu.Lock()
				n.lease = cur
				n.mu.Unlock()
			}
			return err
		}
		if err != nil {
			return err
		}
	}
	l := cur.DeepCopy()
	l.Spec.RenewTime = &now
	got, err := leases.Update(ctx, l, metav1.UpdateOptions{})
	n.mu.Lock()
	if err != nil {
		n.lease = nil // Get it again next time
	} else {
		n.lease = got
	}
	n.mu.Unlock()
	return err
}

// UpdateNodeStatus is one node status update tick (the kubelet's
// syncNodeStatus): with Config.StatusReportFrequency 0 it posts the status;
// otherwise it reads the Node and posts only when a condition in the API
// differs from the agent's (status, reason or message) or the report
// frequency has passed since the last post. It reports whether it posted.
func (a *Agent) UpdateNodeStatus(ctx context.Context, name string) (bool, error) {
	n, ok := a.nodes[name]
	if !ok {
		return false, fmt.Errorf("agent: unknown node %q", name)
	}
	if every := a.cfg.StatusReportFrequency; every > 0 {
		n.mu.Lock()
		due := a.clock.Since(n.posted) >= every
		n.mu.Unlock()
		if !due {
			cur, err := a.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err == nil && !n.differs(cur) {
				return false, nil
			}
		}
	}
	return true, a.PostNodeStatus(ctx, name)
}

// differs reports whether the Node's conditions in the API differ from
// the agent's in status, reason or message (nodeStatusHasChanged, which
// ignores the heartbeat).
func (n *node) differs(cur *v1.Node) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, typ := range conditionOrder {
		i := slices.IndexFunc(cur.Status.Conditions, func(c v1.NodeCondition) bool { return c.Type == typ })
		if i < 0 {
			return true
		}
		c := cur.Status.Conditions[i]
		txt := n.text(typ)
		if c.Status != n.status[typ] || c.Reason != txt[0] || c.Message != txt[1] {
			return true
		}
	}
	return false
}

// text returns the reason and message of the condition typ as the agent
// reports it. n.mu must be held.
func (n *node) text(typ v1.NodeConditionType) [2]string {
	s := n.status[typ]
	healthy := s == v1.ConditionFalse
	if typ == v1.NodeReady {
		healthy = s == v1.ConditionTrue
	}
	if healthy {
		return conditionText[typ][1]
	}
	return conditionText[typ][0]
}

// PostNodeStatus patches the node's conditions (strategic merge on type,
// as the kubelet's node status manager) with a new heartbeat.
func (a *Agent) PostNodeStatus(ctx context.Context, name string) error {
	n, ok := a.nodes[name]
	if !ok {
		return fmt.Errorf("agent: unknown node %q", name)
	}
	now := metav1.NewTime(a.clock.Now())
	n.mu.Lock()
	conds := make([]v1.NodeCondition, 0, len(conditionOrder))
	for _, typ := range conditionOrder {
		s := n.status[typ]
		txt := n.text(typ)
		tr, ok := n.transition[typ]
		if !ok {
			tr = now
			n.transition[typ] = now
		}
		conds = append(conds, v1.NodeCondition{Type: typ, Status: s, Reason: txt[0], Message: txt[1],
			LastHeartbeatTime: now, LastTransitionTime: tr})
	}
	n.mu.Unlock()
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	if err != nil {
		return err
	}
	if _, err := a.client.CoreV1().Nodes().PatchStatus(ctx, name, patch); err != nil {
		return err
	}
	n.mu.Lock()
	n.posted = now.Time
	n.mu.Unlock()
	a.mu.Lock()
	a.counters.NodeStatusPosts++
	a.mu.Unlock()
	return nil
}

// nodeUID returns the registered node's UID ("" before registration).
func (a *Agent) nodeUID(name string) types.UID {
	n, ok := a.nodes[name]
	if !ok {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.uid
}
