package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// Builders for objects the real apiserver accepts (the testutil builders
// carry UIDs and lack containers; the apiserver assigns UIDs itself).

const waitTimeout = 30 * time.Second

func createNode(t *testing.T, cs kubernetes.Interface, prefix, region, zone string) *v1.Node {
	t.Helper()
	n := testutil.WithZone(testutil.Node(cluster.UniqueName(t, prefix), time.Now()), region, zone)
	n.UID, n.CreationTimestamp = "", metav1.Time{}
	got, err := cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Create(node %s) = %v", n.Name, err)
	}
	return got
}

// setNodeReady writes the Ready condition as a kubelet would, through the status subresource.
func setNodeReady(t *testing.T, cs kubernetes.Interface, n *v1.Node, s v1.ConditionStatus) *v1.Node {
	t.Helper()
	now := time.Now()
	n = testutil.WithReady(n.DeepCopy(), s, now, now)
	got, err := cs.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("UpdateStatus(node %s, Ready=%s) = %v", n.Name, s, err)
	}
	return got
}

func createLease(t *testing.T, cs kubernetes.Interface, node string) *coordinationv1.Lease {
	t.Helper()
	l := testutil.Lease(node, time.Now())
	d := int32(40)
	l.Spec.LeaseDurationSeconds = &d
	got, err := cs.CoordinationV1().Leases(l.Namespace).Create(context.Background(), l, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Create(lease %s/%s) = %v", l.Namespace, l.Name, err)
	}
	return got
}

func createPod(t *testing.T, cs kubernetes.Interface, ns, prefix, node string, tol ...v1.Toleration) *v1.Pod {
	t.Helper()
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster.UniqueName(t, prefix)},
		Spec: v1.PodSpec{
			NodeName:    node,
			Containers:  []v1.Container{{Name: "c", Image: "registry.invalid/none:1"}},
			Tolerations: tol,
		},
	}
	got, err := cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Create(pod %s/%s) = %v", ns, p.Name, err)
	}
	return got
}

func readyStatus(n *v1.Node) v1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// waitNodesReady waits up to timeout until want of the nodes opts lists
// are Ready.
func waitNodesReady(t *testing.T, cs kubernetes.Interface, timeout time.Duration, opts metav1.ListOptions, want int) {
	t.Helper()
	cluster.Eventually(t, timeout, fmt.Sprintf("%d nodes Ready", want), func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range l.Items {
			if readyStatus(&l.Items[i]) == v1.ConditionTrue {
				ready++
			}
		}
		return ready == want, nil
	})
}
