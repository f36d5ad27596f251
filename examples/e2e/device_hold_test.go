package e2e

// The device taint eviction's blast-radius breaker (ours: upstream has
// none) on a real API server: examples/nodecontroller (the binary,
// --controllers=device-taint-eviction-controller) with
// -device-taint-eviction-max-share=0.5 and -device-taint-warnings, and the
// fault of kubernetes/kubernetes#141422, a NoExecute DeviceTaintRule whose
// empty selector selects every device in the cluster. The worlds of
// device_parity_test.go (setupDeviceWorld): three namespaces and pools,
// each a claim allocated one device and a pod using it.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
	"github.com/kubelifecycle/lifecycle/taints"
)

// TestDeviceHoldBreaker: the empty-selector rule is held by the breaker
// (no pod deleted; the Warning Events DeviceTaintEvictionHeld and
// DeviceTaintRuleSelectsAll on the rule; its EvictionInProgress condition
// EvictionHeld, counting the pods of all three namespaces: the rule does
// select every device; the hold in /metrics), then the operator's release
// annotation on the rule lets the three evictions proceed (a Normal
// DeviceTaintEvictionHoldReleased Event on the rule). About 10 s.
func TestDeviceHoldBreaker(t *testing.T) {
	ours := nodeControllerBinary(t)
	t0 := time.Now()
	c, err := cluster.Start(context.Background(), cluster.Options{Logf: t.Logf})
	if err != nil {
		if errors.Is(err, cluster.ErrBinariesNotFound) && !cluster.Required() {
			t.Skipf("e2e: %v", err)
		}
		t.Fatalf("cluster.Start() = %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	cs := c.Clientset(t)
	ctx := context.Background()
	var scenarios []devScenario
	for _, n := range []string{"hold-a", "hold-b", "hold-c"} {
		scenarios = append(scenarios, devScenario{name: n, pods: []string{"p"}})
	}
	setupDeviceWorld(t, cs, scenarios)

	port := freePort(t)
	p, err := c.StartProcess("nodecontroller", ours, "-kubeconfig="+c.Kubeconfig(), "-leader-elect=false",
		"-bind-address=127.0.0.1", "-port="+strconv.Itoa(port), "--controllers=device-taint-eviction-controller",
		"-device-taint-eviction-max-share=0.5", "-device-taint-warnings=16", "-v=2")
	if err != nil {
		t.Fatal(err)
	}
	stopProcessAtEnd(t, p)
	metricsOf := &replica{name: "nodecontroller", proc: p, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port)}

	rule := &resourcev1.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: "drain-everything"},
		Spec: resourcev1.DeviceTaintRuleSpec{
			DeviceSelector: &resourcev1.DeviceTaintSelector{}, // meant to name a pool
			Taint:          resourcev1.DeviceTaint{Key: devTaint, Effect: resourcev1.DeviceTaintEffectNoExecute},
		},
	}
	if rule, err = cs.ResourceV1().DeviceTaintRules().Create(ctx, rule, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := time.Now()

	// The hold, through the API: the rule's condition.
	held := "Evictions held: 3 of 3 allocated devices of driver " + devDriver + " (100%) have an untolerated NoExecute taint, more than 50%; the hold ends when none is tainted."
	var cond metav1.Condition
	cluster.Eventually(t, 60*time.Second, "the rule's EvictionHeld condition", func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("controller exited: %v", p.Err())
		}
		r, err := cs.ResourceV1().DeviceTaintRules().Get(ctx, rule.Name, metav1.GetOptions{})
		if err != nil || len(r.Status.Conditions) == 0 {
			return false, err
		}
		cond = r.Status.Conditions[0]
		return cond.Reason == taints.DeviceRuleEvictionHeld, nil
	})
	t.Logf("held %v after the rule was created: %s %s %s: %s", time.Since(created).Round(10*time.Millisecond), cond.Type, cond.Status, cond.Reason, cond.Message)
	// The fault took effect: the rule selects the device of every pool
	// (the three pods of the three namespaces would be evicted).
	if want := "3 pods need to be evicted in 3 different namespaces. 3 of them held: " + held; cond.Type != taints.DeviceTaintConditionEvictionInProgress ||
		cond.Status != metav1.ConditionTrue || cond.Message != want || cond.ObservedGeneration != rule.Generation {
		t.Errorf("condition %+v, want %s True EvictionHeld %q", cond, taints.DeviceTaintConditionEvictionInProgress, want)
	}
	heldEvent := waitRuleEvent(t, cs, rule.Name, taints.DeviceHoldEventHeld)
	if heldEvent.Type != v1.EventTypeWarning || heldEvent.Message != held || heldEvent.InvolvedObject.UID != rule.UID ||
		heldEvent.InvolvedObject.APIVersion != "resource.k8s.io/v1" || heldEvent.Source.Component != controller.DeviceName {
		t.Errorf("hold Event %s %s %q on %+v from %+v", heldEvent.Type, heldEvent.Reason, heldEvent.Message, heldEvent.InvolvedObject, heldEvent.Source)
	}
	if e := waitRuleEvent(t, cs, rule.Name, "DeviceTaintRuleSelectsAll"); e.Type != v1.EventTypeWarning ||
		!strings.Contains(e.Message, "empty device selector selects every device in the cluster") {
		t.Errorf("selector Event %s %q", e.Type, e.Message)
	}
	cluster.Eventually(t, 20*time.Second, "the hold in /metrics", func(ctx context.Context) (bool, error) {
		ms, err := metricsOf.scrape(ctx)
		if err != nil {
			return false, err
		}
		for _, s := range []struct {
			name  string
			label []string
			want  float64
		}{
			{"lifecycle_device_taint_eviction_hold_state", []string{devDriver, `state="Holding"`}, 1},
			{"lifecycle_device_taint_eviction_held_pods", []string{devDriver}, 3},
			{"lifecycle_device_taint_eviction_tainted_devices", []string{devDriver}, 3},
			{"lifecycle_device_taint_eviction_allocated_devices", []string{devDriver}, 3},
			{"lifecycle_device_taint_warnings_total", []string{`kind="SelectsAll"`}, 1},
		} {
			if v, ok := series(ms, s.name, s.label...); !ok || v != s.want {
				return false, fmt.Errorf("%s%v = %v (found %v), want %v", s.name, s.label, v, ok, s.want)
			}
		}
		return true, nil
	})
	// No pod deleted: the pass that wrote the condition would have
	// deleted them; a second later still none is.
	time.Sleep(time.Second)
	checkPods(t, cs, scenarios, false)

	// The operator confirms the rule: the evictions proceed.
	released := time.Now()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, controller.AnnotationReleaseEvictionHold, devDriver)
	if _, err := cs.ResourceV1().DeviceTaintRules().Patch(ctx, rule.Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range scenarios {
		cluster.Eventually(t, 30*time.Second, "pod "+s.ns()+"/p deleted", func(ctx context.Context) (bool, error) {
			pod, err := cs.CoreV1().Pods(s.ns()).Get(ctx, "p", metav1.GetOptions{})
			return err == nil && pod.DeletionTimestamp != nil, err
		})
	}
	t.Logf("all three pods deleted %v after the release annotation", time.Since(released).Round(10*time.Millisecond))
	if e := waitRuleEvent(t, cs, rule.Name, taints.DeviceHoldEventReleased); e.Type != v1.EventTypeNormal ||
		!strings.HasPrefix(e.Message, "Hold released: 3 of 3 allocated devices of driver "+devDriver) {
		t.Errorf("release Event %s %q", e.Type, e.Message)
	}
	if b, err := os.ReadFile(p.LogPath()); err != nil || !strings.Contains(string(b), "Released the device taint eviction hold of a driver") {
		t.Errorf("controller log lacks the release (%v)", err)
	}
	t.Logf("TestDeviceHoldBreaker: %v in all", time.Since(t0).Round(100*time.Millisecond))
}

// waitRuleEvent waits for the Event with reason on the DeviceTaintRule
// name (cluster-scoped: in namespace default) and returns it.
func waitRuleEvent(t *testing.T, cs kubernetes.Interface, name, reason string) v1.Event {
	t.Helper()
	var out v1.Event
	sel := fields.Set{"involvedObject.kind": "DeviceTaintRule", "involvedObject.name": name, "reason": reason}.String()
	cluster.Eventually(t, 20*time.Second, "Event "+reason+" on DeviceTaintRule "+name, func(ctx context.Context) (bool, error) {
		evs, err := cs.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil || len(evs.Items) == 0 {
			return false, err
		}
		out = evs.Items[0]
		return true, nil
	})
	return out
}

// checkPods checks whether each scenario's pods are being deleted.
func checkPods(t *testing.T, cs kubernetes.Interface, scenarios []devScenario, deleted bool) {
	t.Helper()
	for _, s := range scenarios {
		for _, name := range s.pods {
			pod, err := cs.CoreV1().Pods(s.ns()).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := pod.DeletionTimestamp != nil; got != deleted {
				t.Errorf("pod %s/%s being deleted = %v, want %v", s.ns(), name, got, deleted)
			}
		}
	}
}
