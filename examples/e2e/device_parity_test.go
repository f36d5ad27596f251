package e2e

// Device taint eviction side by side with kube-controller-manager v1.37.2
// (only its device-taint-eviction-controller) and examples/nodecontroller
// (the binary, --controllers=device-taint-eviction-controller), each on a
// fresh kube-apiserver with an audit log. No DRA driver, scheduler or
// kubelet: the test writes the ResourceSlices, the DeviceTaintRules, the
// ResourceClaims with their allocation (status.allocation and reservedFor,
// through the status subresource) and the pods bound to a node by name.
// Six scenarios run at once, each in a namespace and a pool of its own
// (devScenarios), all triggered at one origin (a whole second, so that the
// taints' timeAdded, which the API keeps in whole seconds, is the same
// offset on both sides): a slice taint, a DeviceTaintRule, a toleration
// that runs out, a taint removed before its toleration ran out, a None
// rule (its status previews the eviction, nothing is deleted), and a claim
// two pods share.
//
// Compared (package parity, from the audit logs, times from the origin):
// every write of each controller (the pods' DisruptionTarget status, the
// deletes with their preconditions, the rules' status applies with their
// request shape) and every Event (reason, message, type, source, count),
// each within devTolerance of the other side; then, from the API, the
// same pods deleted, with identical DisruptionTarget conditions, the same
// final rule conditions, and each Event's involvedObject (apiVersion,
// kind, namespace, name, the pod's UID, nothing else).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/examples/e2e/parity"
)

const (
	devDriver = "gpu.lifecycle-e2e.example.com"
	devTaint  = "gpu.lifecycle-e2e.example.com/unhealthy"
	// devTolerance: how far apart the two controllers' writes and Events
	// may be. Both react to a watch event at once (no monitor period), so
	// this is the machine's noise.
	devTolerance = time.Second
	// devWindow is how long after the origin both sides are recorded: the
	// rule's Completed status comes one rule status period (10 s) after
	// its eviction.
	devWindow = 13 * time.Second
	// devCancelAfter is when the cancel scenario's taint is removed.
	devCancelAfter = 2 * time.Second
)

// devTrigger is how a scenario taints its device at the origin.
type devTrigger uint8

const (
	trigSlice    devTrigger = 1 + iota // a NoExecute taint in the ResourceSlice
	trigRule                           // a NoExecute DeviceTaintRule on the pool
	trigNoneRule                       // a None DeviceTaintRule, created before the controller starts
)

// devScenario is one scenario: namespace and pool "dev-<name>", one device
// "gpu-0", one claim "gpu" allocated it (with a toleration of tolSeconds,
// when set) and reserved for pods.
type devScenario struct {
	name       string
	pods       []string
	tolSeconds *int64
	trigger    devTrigger
	untaint    bool // remove the slice taint at devCancelAfter
	evicted    []string
}

func (s devScenario) ns() string { return "dev-" + s.name }

var devScenarios = []devScenario{
	{name: "slice", pods: []string{"p"}, trigger: trigSlice, evicted: []string{"p"}},
	{name: "rule", pods: []string{"p"}, trigger: trigRule, evicted: []string{"p"}},
	{name: "toleration", pods: []string{"p"}, tolSeconds: ptr.To[int64](4), trigger: trigSlice, evicted: []string{"p"}},
	{name: "cancel", pods: []string{"p"}, tolSeconds: ptr.To[int64](6), trigger: trigSlice, untaint: true},
	{name: "preview", pods: []string{"p"}, trigger: trigNoneRule},
	{name: "shared", pods: []string{"p0", "p1"}, trigger: trigSlice, evicted: []string{"p0", "p1"}},
}

// devicePolicyRules add the writes to DeviceTaintRules (the controllers'
// status applies and the test's creates) and ResourceSlices (the test's
// taints) to the audit log.
const devicePolicyRules = `- level: RequestResponse
  verbs: ["create", "update", "patch", "delete"]
  resources:
  - group: resource.k8s.io
    resources: ["devicetaintrules", "devicetaintrules/status", "resourceslices"]
`

// devSide is what one side's run left: its trace, the pods at the end,
// the rules at the end, and its Events' involved objects.
type devSide struct {
	trace  parity.Trace
	pods   map[string]*v1.Pod // ns/name
	rules  map[string]*resourcev1.DeviceTaintRule
	events []v1.Event
}

// TestParityDeviceTaints: the six scenarios side by side (21–28 s on an
// idle machine, 39–52 s at load 7–9).
func TestParityDeviceTaints(t *testing.T) {
	bins := binariesWithKCM(t)
	ours := nodeControllerBinary(t)
	t0 := time.Now()
	sides := map[string]devSide{}
	var mu sync.Mutex
	t.Run("sides", func(t *testing.T) {
		for _, side := range []string{sideUpstream, sideOurs} {
			t.Run(side, func(t *testing.T) {
				t.Parallel()
				start := func(c *cluster.Cluster) (*cluster.Process, error) {
					if side == sideUpstream {
						extra := append([]string{"--v=2"}, strings.Fields(os.Getenv(envKCMFlags))...)
						return c.StartControllerManager(bins, []string{"device-taint-eviction-controller"}, extra...)
					}
					return c.StartProcess("nodecontroller", ours, "-kubeconfig="+c.Kubeconfig(), "-leader-elect=false", "-port=0",
						"--controllers=device-taint-eviction-controller", "-v=2")
				}
				r := runDeviceSide(t, bins, start)
				mu.Lock()
				sides[side] = r
				mu.Unlock()
			})
		}
	})
	if t.Failed() {
		return
	}
	up, nc := sides[sideUpstream], sides[sideOurs]
	t.Logf("both sides in %v", time.Since(t0).Round(100*time.Millisecond))
	upTr, ncTr := podStatusWritesByResult(up.trace), podStatusWritesByResult(nc.trace)
	skew, at := parity.MaxSkew(upTr, ncTr, false)
	diffs := parity.Compare(upTr, ncTr, parity.Options{Tolerance: devTolerance, FieldTolerance: time.Second})
	explained, unexplained := parity.Split(diffs, deviceKnown)
	var report strings.Builder
	fmt.Fprintf(&report, "# device parity: %d differences, %d known, %d unexplained; largest time difference %v (%s)\n",
		len(diffs), len(diffs)-len(unexplained), len(unexplained), skew.Round(time.Millisecond), at)
	for i, k := range deviceKnown {
		for _, d := range explained[i] {
			fmt.Fprintf(&report, "known   %s\n        reason: %s\n", d, k.Reason)
		}
	}
	for _, d := range unexplained {
		fmt.Fprintf(&report, "UNKNOWN %s\n", d)
	}
	t.Logf("kube-controller-manager wrote:\n%s", upTr.Summary())
	t.Logf("examples/nodecontroller wrote:\n%s", ncTr.Summary())
	t.Log(report.String())
	for _, d := range unexplained {
		t.Errorf("parity: %s", d)
	}
	if len(upTr.Writes) == 0 || len(ncTr.Writes) == 0 {
		t.Errorf("parity: kube-controller-manager made %d writes, examples/nodecontroller %d; want some on both sides", len(upTr.Writes), len(ncTr.Writes))
	}
	compareDeviceOutcome(t, up, nc)
}

// deviceKnown are the documented differences in these scenarios (README
// "How it maps to upstream"); every other difference fails the test.
var deviceKnown = []parity.Known{}

// podStatusWritesByResult is statusWritesByResult for the pods' status
// writes only: the rules' status applies keep their verb and request
// shape, which both controllers send alike (server-side apply).
func podStatusWritesByResult(tr parity.Trace) parity.Trace {
	split := func(ws []parity.Write) (pods, rest []parity.Write) {
		for _, w := range ws {
			if strings.HasPrefix(w.Object, "pods/") {
				pods = append(pods, w)
			} else {
				rest = append(rest, w)
			}
		}
		return pods, rest
	}
	pw, rw := split(tr.Writes)
	pf, rf := split(tr.Failed)
	pods := statusWritesByResult(parity.Trace{Writes: pw, Failed: pf})
	tr.Writes = append(pods.Writes, rw...)
	tr.Failed = append(pods.Failed, rf...)
	sort.SliceStable(tr.Writes, func(i, j int) bool { return tr.Writes[i].At < tr.Writes[j].At })
	return tr
}

// runDeviceSide runs the scenarios on a fresh audited cluster with the
// controller start starts.
func runDeviceSide(t *testing.T, bins cluster.Binaries, start controllerStarter) devSide {
	ctx := context.Background()
	c, auditLog := startAuditedClusterWith(t, bins, parity.PolicyWith(devicePolicyRules))
	cs := c.Clientset(t)
	uids := setupDeviceWorld(t, cs, devScenarios)
	// Start in the next second, so that no status the controller writes
	// carries a rule's creationTimestamp (whether it does would depend on
	// how fast each controller starts).
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	p, err := start(c)
	if err != nil {
		t.Fatal(err)
	}
	stopProcessAtEnd(t, p)

	// The controller runs once it has written the None rule's status (at
	// once after its informers synced, as upstream).
	started := time.Now()
	cluster.Eventually(t, 90*time.Second, "the preview rule's status", func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("controller exited: %v", p.Err())
		}
		r, err := cs.ResourceV1().DeviceTaintRules().Get(ctx, "dev-preview", metav1.GetOptions{})
		return err == nil && len(r.Status.Conditions) > 0, err
	})
	t.Logf("controller synced in %v", time.Since(started).Round(100*time.Millisecond))

	// The triggers, at once (each write on its own goroutine, so that a
	// slow write on a loaded machine delays only its own scenario).
	origin := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(origin))
	errs := make([]error, len(devScenarios))
	var wg sync.WaitGroup
	for i, s := range devScenarios {
		wg.Go(func() {
			switch s.trigger {
			case trigSlice:
				errs[i] = setSliceTaint(cs, s, &resourcev1.DeviceTaint{Key: devTaint, Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &metav1.Time{Time: origin}})
			case trigRule:
				_, errs[i] = cs.ResourceV1().DeviceTaintRules().Create(ctx, devTaintRule(s, resourcev1.DeviceTaintEffectNoExecute, origin), metav1.CreateOptions{})
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("origin %s: triggers written in %v", stamp(origin), time.Since(origin).Round(time.Millisecond))
	time.Sleep(time.Until(origin.Add(devCancelAfter)))
	for _, s := range devScenarios {
		if s.untaint {
			if err := setSliceTaint(cs, s, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range devScenarios {
		for _, name := range s.evicted {
			cluster.Eventually(t, devWindow+30*time.Second, "pod "+s.ns()+"/"+name+" deleted", func(ctx context.Context) (bool, error) {
				if p.Exited() {
					return false, fmt.Errorf("controller exited: %v", p.Err())
				}
				pod, err := cs.CoreV1().Pods(s.ns()).Get(ctx, name, metav1.GetOptions{})
				return err == nil && pod.DeletionTimestamp != nil, err
			})
		}
	}
	cluster.Eventually(t, devWindow+30*time.Second, "the evicting rule's Completed status", func(ctx context.Context) (bool, error) {
		r, err := cs.ResourceV1().DeviceTaintRules().Get(ctx, "dev-rule", metav1.GetOptions{})
		return err == nil && len(r.Status.Conditions) > 0 && r.Status.Conditions[0].Reason == "Completed", err
	})
	time.Sleep(time.Until(origin.Add(devWindow)))
	if p.Exited() {
		t.Fatalf("controller exited: %v", p.Err())
	}
	p.Stop(10 * time.Second)

	out := devSide{trace: controllerTrace(t, auditLog, origin, origin), pods: map[string]*v1.Pod{}, rules: map[string]*resourcev1.DeviceTaintRule{}}
	for _, s := range devScenarios {
		for _, name := range s.pods {
			pod, err := cs.CoreV1().Pods(s.ns()).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if pod.UID != uids[s.ns()+"/"+name] {
				t.Errorf("pod %s/%s: UID %s, want %s", s.ns(), name, pod.UID, uids[s.ns()+"/"+name])
			}
			out.pods[s.ns()+"/"+name] = pod
		}
		evs, err := cs.CoreV1().Events(s.ns()).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out.events = append(out.events, evs.Items...)
	}
	rules, err := cs.ResourceV1().DeviceTaintRules().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range rules.Items {
		out.rules[rules.Items[i].Name] = &rules.Items[i]
	}
	return out
}

// setupDeviceWorld creates every scenario's namespace, slice, claim (then
// its allocation through the status subresource) and pods, and the
// preview's None rule. It returns the pods' UIDs by ns/name.
func setupDeviceWorld(t *testing.T, cs kubernetes.Interface, scenarios []devScenario) map[string]types.UID {
	t.Helper()
	ctx := context.Background()
	uids := map[string]types.UID{}
	for _, s := range scenarios {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns()}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: s.ns()}}
		slice.Spec.Driver, slice.Spec.AllNodes = devDriver, ptr.To(true)
		slice.Spec.Pool = resourcev1.ResourcePool{Name: s.ns(), Generation: 1, ResourceSliceCount: 1}
		slice.Spec.Devices = []resourcev1.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}
		if _, err := cs.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create ResourceSlice: %v", err)
		}
		claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns(), Name: "gpu"}}
		claim.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}
		claim, err := cs.ResourceV1().ResourceClaims(s.ns()).Create(ctx, claim, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create ResourceClaim: %v", err)
		}
		for _, name := range s.pods {
			pod := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: s.ns(), Name: name},
				Spec: v1.PodSpec{NodeName: "dev-node", Containers: []v1.Container{{Name: "c", Image: "registry.invalid/none:1"}},
					ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu")}}},
			}
			pod, err := cs.CoreV1().Pods(s.ns()).Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create pod: %v", err)
			}
			uids[s.ns()+"/"+name] = pod.UID
			claim.Status.ReservedFor = append(claim.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: name, UID: pod.UID})
		}
		result := resourcev1.DeviceRequestAllocationResult{Request: "gpu", Driver: devDriver, Pool: s.ns(), Device: "gpu-0"}
		if s.tolSeconds != nil {
			result.Tolerations = []resourcev1.DeviceToleration{{Key: devTaint, Operator: resourcev1.DeviceTolerationOpExists,
				Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: s.tolSeconds}}
		}
		claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{result}}}
		if _, err := cs.ResourceV1().ResourceClaims(s.ns()).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("allocate ResourceClaim: %v", err)
		}
		if s.trigger == trigNoneRule {
			if _, err := cs.ResourceV1().DeviceTaintRules().Create(ctx, devTaintRule(s, resourcev1.DeviceTaintEffectNone, time.Now()), metav1.CreateOptions{}); err != nil {
				t.Fatalf("create DeviceTaintRule: %v", err)
			}
		}
	}
	return uids
}

// devTaintRule is a rule on the scenario's pool.
func devTaintRule(s devScenario, effect resourcev1.DeviceTaintEffect, at time.Time) *resourcev1.DeviceTaintRule {
	return &resourcev1.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{Name: s.ns()},
		Spec: resourcev1.DeviceTaintRuleSpec{
			DeviceSelector: &resourcev1.DeviceTaintSelector{Driver: ptr.To(devDriver), Pool: ptr.To(s.ns())},
			Taint:          resourcev1.DeviceTaint{Key: devTaint, Effect: effect, TimeAdded: &metav1.Time{Time: at.Truncate(time.Second)}},
		},
	}
}

// setSliceTaint sets (nil: removes) the taint of the scenario's device.
func setSliceTaint(cs kubernetes.Interface, s devScenario, taint *resourcev1.DeviceTaint) error {
	ctx := context.Background()
	slice, err := cs.ResourceV1().ResourceSlices().Get(ctx, s.ns(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	slice.Spec.Devices[0].Taints = nil
	if taint != nil {
		slice.Spec.Devices[0].Taints = []resourcev1.DeviceTaint{*taint}
	}
	if _, err := cs.ResourceV1().ResourceSlices().Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("taint ResourceSlice %s: %w", s.ns(), err)
	}
	return nil
}

// compareDeviceOutcome checks what the API holds at the end on both
// sides: the expected pods deleted (and only those), with identical
// DisruptionTarget conditions; the rules' conditions alike; every Event
// with upstream's involvedObject shape.
func compareDeviceOutcome(t *testing.T, up, nc devSide) {
	t.Helper()
	for _, s := range devScenarios {
		for _, name := range s.pods {
			key := s.ns() + "/" + name
			want := slices.Contains(s.evicted, name)
			for side, r := range map[string]devSide{sideUpstream: up, sideOurs: nc} {
				if got := r.pods[key].DeletionTimestamp != nil; got != want {
					t.Errorf("%s: pod %s deleted = %v, want %v", side, key, got, want)
				}
			}
			uc, oc := podCondition(up.pods[key], v1.DisruptionTarget), podCondition(nc.pods[key], v1.DisruptionTarget)
			switch {
			case (uc == nil) != (oc == nil):
				t.Errorf("pod %s: DisruptionTarget upstream %+v, ours %+v", key, uc, oc)
			case uc != nil:
				if uc.Status != oc.Status || uc.Reason != oc.Reason || uc.Message != oc.Message ||
					uc.ObservedGeneration != oc.ObservedGeneration || !uc.LastProbeTime.Equal(&oc.LastProbeTime) {
					t.Errorf("pod %s: DisruptionTarget upstream %+v, ours %+v", key, *uc, *oc)
				}
				if d := uc.LastTransitionTime.Sub(up.trace.Origin) - oc.LastTransitionTime.Sub(nc.trace.Origin); d > devTolerance+time.Second || d < -devTolerance-time.Second {
					t.Errorf("pod %s: DisruptionTarget at %v upstream, %v ours (from the origin)", key,
						uc.LastTransitionTime.Sub(up.trace.Origin), oc.LastTransitionTime.Sub(nc.trace.Origin))
				}
			}
		}
	}
	for name, ur := range up.rules {
		or := nc.rules[name]
		if or == nil {
			t.Errorf("rule %s missing on our side", name)
			continue
		}
		if len(ur.Status.Conditions) != len(or.Status.Conditions) {
			t.Errorf("rule %s: conditions upstream %+v, ours %+v", name, ur.Status.Conditions, or.Status.Conditions)
			continue
		}
		for i, uc := range ur.Status.Conditions {
			oc := or.Status.Conditions[i]
			if uc.Type != oc.Type || uc.Status != oc.Status || uc.Reason != oc.Reason || uc.Message != oc.Message || uc.ObservedGeneration != oc.ObservedGeneration {
				t.Errorf("rule %s: condition upstream %+v, ours %+v", name, uc, oc)
			}
		}
	}
	for side, r := range map[string]devSide{sideUpstream: up, sideOurs: nc} {
		n := 0
		for _, e := range r.events {
			if e.Reason != "DeviceTaintManagerEviction" {
				continue
			}
			n++
			io := e.InvolvedObject
			want := v1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: io.Namespace, Name: io.Name}
			if p := r.pods[io.Namespace+"/"+io.Name]; p != nil {
				want.UID = p.UID
			}
			if io != want {
				t.Errorf("%s: Event %s involvedObject %+v, want %+v", side, e.Name, io, want)
			}
			if e.Source.Component != "device-taint-eviction-controller" || e.Source.Host != "" || e.ReportingController != "device-taint-eviction-controller" || e.Type != v1.EventTypeNormal {
				t.Errorf("%s: Event %s source %+v, reporting %q/%q, type %s", side, e.Name, e.Source, e.ReportingController, e.ReportingInstance, e.Type)
			}
		}
		if n == 0 {
			t.Errorf("%s: no DeviceTaintManagerEviction Event", side)
		}
	}
	b, _ := json.Marshal(map[string]int{"upstream": len(up.events), "ours": len(nc.events)})
	t.Logf("Events: %s", b)
}

// TestDeviceTaintRulesNotServed: an API server that serves
// resource.k8s.io/v1 but not its devicetaintrules
// (--runtime-config=resource.k8s.io/v1/devicetaintrules=false), and a
// slice taint. Ours runs without rules and deletes the pod;
// kube-controller-manager v1.37.2's device-taint-eviction-controller waits
// for its DeviceTaintRule informer, which never syncs, so it deletes
// nothing (its outcome is reported, not required). About 20 s.
func TestDeviceTaintRulesNotServed(t *testing.T) {
	bins := binariesWithKCM(t)
	ours := nodeControllerBinary(t)
	const wait = 8 * time.Second // after the taint, for upstream
	outcome := map[string]string{}
	var mu sync.Mutex
	t.Run("sides", func(t *testing.T) {
		for _, side := range []string{sideUpstream, sideOurs} {
			t.Run(side, func(t *testing.T) {
				t.Parallel()
				c, err := cluster.Start(context.Background(), cluster.Options{Binaries: bins, Logf: t.Logf,
					ExtraAPIServerFlags: []string{"--runtime-config=resource.k8s.io/v1/devicetaintrules=false"}})
				if err != nil {
					t.Fatalf("cluster.Start() = %v", err)
				}
				t.Cleanup(func() { _ = c.Stop() })
				cs := c.Clientset(t)
				if _, err := cs.ResourceV1().DeviceTaintRules().List(context.Background(), metav1.ListOptions{}); err == nil {
					t.Fatalf("devicetaintrules served despite the runtime config")
				}
				s := devScenario{name: "slice", pods: []string{"p"}, trigger: trigSlice, evicted: []string{"p"}}
				setupDeviceWorld(t, cs, []devScenario{s})
				var p *cluster.Process
				if side == sideUpstream {
					p, err = c.StartControllerManager(bins, []string{"device-taint-eviction-controller"}, "--v=2")
				} else {
					p, err = c.StartProcess("nodecontroller", ours, "-kubeconfig="+c.Kubeconfig(), "-leader-elect=false", "-port=0",
						"--controllers=device-taint-eviction-controller", "-v=2")
				}
				if err != nil {
					t.Fatal(err)
				}
				stopProcessAtEnd(t, p)
				time.Sleep(2 * time.Second) // both start and list within this on an idle machine
				tainted := time.Now()
				if err := setSliceTaint(cs, s, &resourcev1.DeviceTaint{Key: devTaint, Effect: resourcev1.DeviceTaintEffectNoExecute}); err != nil {
					t.Fatal(err)
				}
				deleted := func(ctx context.Context) (bool, error) {
					if p.Exited() {
						return false, fmt.Errorf("controller exited: %v", p.Err())
					}
					pod, err := cs.CoreV1().Pods(s.ns()).Get(ctx, "p", metav1.GetOptions{})
					return err == nil && pod.DeletionTimestamp != nil, err
				}
				if side == sideOurs {
					cluster.Eventually(t, 60*time.Second, "pod deleted by ours, without rules", deleted)
					mu.Lock()
					outcome[side] = fmt.Sprintf("deleted %v after the taint", time.Since(tainted).Round(100*time.Millisecond))
					mu.Unlock()
					return
				}
				time.Sleep(time.Until(tainted.Add(wait)))
				ok, err := deleted(context.Background())
				res := fmt.Sprintf("not deleted within %v (%v)", wait, err)
				if ok {
					res = fmt.Sprintf("deleted within %v", wait)
				}
				if b, err := os.ReadFile(p.LogPath()); err == nil {
					if strings.Contains(string(b), "the server could not find the requested resource") {
						res += "; its log: the DeviceTaintRule list fails (the server could not find the requested resource)"
					}
					if !strings.Contains(string(b), "Underlying informers have synced") {
						res += ", and its controller never logs \"Underlying informers have synced\""
					}
				}
				mu.Lock()
				outcome[side] = res
				mu.Unlock()
			})
		}
	})
	t.Logf("devicetaintrules not served, a slice taint: kube-controller-manager %s; ours %s", outcome[sideUpstream], outcome[sideOurs])
}
