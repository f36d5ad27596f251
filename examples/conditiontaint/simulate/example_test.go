package simulate_test

import (
	"fmt"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubelifecycle/lifecycle/examples/conditiontaint/controller"
	"github.com/kubelifecycle/lifecycle/examples/conditiontaint/simulate"
)

// node is a node of zone z, reporting KernelDeadlock or not.
func node(name, z string, deadlock bool) v1.Node {
	st := v1.ConditionFalse
	if deadlock {
		st = v1.ConditionTrue
	}
	return v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelTopologyZone: z}},
		Status:     v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: "KernelDeadlock", Status: st}}},
	}
}

// pod is a pod on node, tolerating the taint for tolerate seconds (nil:
// not at all).
func pod(name, node string, tolerate *int64) v1.Pod {
	p := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Spec: v1.PodSpec{NodeName: node}}
	if tolerate != nil {
		p.Spec.Tolerations = []v1.Toleration{{Key: "example.com/kernel-deadlock", Operator: v1.TolerationOpExists,
			Effect: v1.TaintEffectNoExecute, TolerationSeconds: tolerate}}
	}
	return p
}

// Two of a zone's five nodes report KernelDeadlock: they are tainted 10
// seconds apart (zones.rate 0.1), and the pods go when their tolerations
// run out. In zone b, three of five at once trip the breaker
// (maxUnhealthy 2): nothing there is tainted.
func ExampleRun() {
	cfg := controller.DefaultConfig()
	cfg.Conditions = []controller.ConditionRule{{Type: "KernelDeadlock", Status: "True",
		Taint: controller.TaintSpec{Key: "example.com/kernel-deadlock", Effect: "NoExecute"}}}
	cfg.Zones.MaxUnhealthy = ptr.To(intstr.FromInt32(2))

	var nodes []v1.Node
	for i := range 5 {
		nodes = append(nodes, node(fmt.Sprintf("a-%d", i), "a", i < 2), node(fmt.Sprintf("b-%d", i), "b", i < 3))
	}
	pods := []v1.Pod{
		pod("web", "a-0", nil),
		pod("batch", "a-1", ptr.To[int64](30)),
		pod("cache", "b-0", nil),
	}
	res, err := simulate.Run(cfg, nodes, pods, simulate.Options{Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		fmt.Println(err)
		return
	}
	res.Print(os.Stdout)
	// Output:
	// +0s   node/a-0        ConditionTaintQueued              KernelDeadlock=True: queued for example.com/kernel-deadlock:NoExecute in zone "a"
	// +0s   node/a-1        ConditionTaintQueued              KernelDeadlock=True: queued for example.com/kernel-deadlock:NoExecute in zone "a"
	// +0s   node/b-0        ConditionTaintQueued              KernelDeadlock=True: queued for example.com/kernel-deadlock:NoExecute in zone "b"
	// +0s   node/b-1        ConditionTaintQueued              KernelDeadlock=True: queued for example.com/kernel-deadlock:NoExecute in zone "b"
	// +0s   node/b-2        ConditionTaintQueued              KernelDeadlock=True: queued for example.com/kernel-deadlock:NoExecute in zone "b"
	// +0s   node/a-0        ConditionTaintWouldAdd            dry run: would add example.com/kernel-deadlock:NoExecute (KernelDeadlock=True; zone "a")
	// +0s   node/a-1        ConditionTaintWaitingForZoneRate  waiting for zone "a"'s rate of 0.1 nodes/s: 0 queued ahead, next taint at 2026-01-01T00:00:10Z
	// +0s   node/b-0        ConditionTaintHeldByBreaker       not tainting: zone "b" is PartialDisruption: 3 of 5 nodes unhealthy, more than maxUnhealthy 2
	// +0s   node/b-1        ConditionTaintHeldByBreaker       not tainting: zone "b" is PartialDisruption: 3 of 5 nodes unhealthy, more than maxUnhealthy 2
	// +0s   node/b-2        ConditionTaintHeldByBreaker       not tainting: zone "b" is PartialDisruption: 3 of 5 nodes unhealthy, more than maxUnhealthy 2
	// +0s   pod/shop/web    ConditionTaintWouldEvict          dry run: would delete pod shop/web (pod shop/web on node a-0: being deleted (due 2026-01-01T00:00:00Z, NotTolerated); taint example.com/kernel-deadlock:NoExecute is not tolerated)
	// +10s  node/a-1        ConditionTaintWouldAdd            dry run: would add example.com/kernel-deadlock:NoExecute (KernelDeadlock=True; zone "a")
	// +40s  pod/shop/batch  ConditionTaintWouldEvict          dry run: would delete pod shop/batch (pod shop/batch on node a-1: being deleted (due 2026-01-01T00:00:40Z, TolerationExpired); taint example.com/kernel-deadlock:NoExecute tolerated for 30s by Exists example.com/kernel-deadlock:NoExecute from 2026-01-01T00:00:10Z)
	// after 40s: tainted a-0, a-1; held by the breaker b-0, b-1, b-2; evicted shop/batch, shop/web; evictions paused none
}
