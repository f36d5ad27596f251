package e2e

// Smoke tests: the facts about the real apiserver that the controller e2e
// tests rely on. Each one fails if the server or the harness stops
// providing that fact.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

func TestSmokeServerVersion(t *testing.T) {
	c := env.Cluster(t)
	v, err := c.Clientset(t).Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("ServerVersion() = %v", err)
	}
	// The minor comes from the version hack/build.sh stamps: v1.37.2 → "37".
	wantMinor := strings.Split(cluster.KubernetesVersion, ".")[1]
	if v.GitVersion != cluster.KubernetesVersion || v.Major != "1" || v.Minor != wantMinor {
		t.Errorf("ServerVersion() = %s (major %q minor %q), want %s (major \"1\" minor %q)", v.GitVersion, v.Major, v.Minor, cluster.KubernetesVersion, wantMinor)
	}
}

// The test plays the kubelet: it creates a Node, writes its Ready status,
// creates and renews its Lease, and binds a Pod to it.
func TestSmokeNodeLeasePod(t *testing.T) {
	c := env.Cluster(t)
	cs := c.Clientset(t)
	ctx := context.Background()
	ns := c.Namespace(t)

	node := createNode(t, cs, "node", "region-1", "zone-a")
	node = setNodeReady(t, cs, node, v1.ConditionTrue)
	if got := readyStatus(node); got != v1.ConditionTrue {
		t.Errorf("after UpdateStatus: Ready = %q, want True", got)
	}

	lease := createLease(t, cs, node.Name)
	renew := metav1.NewMicroTime(time.Now().Add(time.Second))
	lease.Spec.RenewTime = &renew
	renewed, err := cs.CoordinationV1().Leases(lease.Namespace).Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("Update(lease) = %v", err)
	}
	// MicroTime keeps microseconds.
	if renewed.ResourceVersion == lease.ResourceVersion || !renewed.Spec.RenewTime.Time.Equal(renew.Truncate(time.Microsecond)) {
		t.Errorf("renewed lease: rv %s→%s, renewTime %v, want new rv and %v",
			lease.ResourceVersion, renewed.ResourceVersion, renewed.Spec.RenewTime, renew)
	}

	pod := createPod(t, cs, ns, "pod", node.Name)
	got, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Get(pod) = %v", err)
	}
	if got.Spec.NodeName != node.Name {
		t.Errorf("pod.spec.nodeName = %q, want %q", got.Spec.NodeName, node.Name)
	}
	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node.Name})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Name != pod.Name {
		t.Errorf("List(pods on %s) = %d items, %v; want just %s", node.Name, len(pods.Items), err, pod.Name)
	}
}

// DefaultTolerationSeconds admission adds the not-ready and unreachable
// NoExecute tolerations (300 s) to every pod that lacks them.
func TestSmokeDefaultTolerationSeconds(t *testing.T) {
	c := env.Cluster(t)
	cs := c.Clientset(t)
	ns := c.Namespace(t)
	node := createNode(t, cs, "node", "region-1", "zone-a")

	def := func(key string) v1.Toleration {
		return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: testutil.Seconds(300)}
	}
	own := v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: testutil.Seconds(10)}
	for _, tc := range []struct {
		name string
		tol  []v1.Toleration
		want []v1.Toleration
	}{
		{"none", nil, []v1.Toleration{def(v1.TaintNodeNotReady), def(v1.TaintNodeUnreachable)}},
		{"own-unreachable", []v1.Toleration{own}, []v1.Toleration{own, def(v1.TaintNodeNotReady)}},
	} {
		pod := createPod(t, cs, ns, tc.name, node.Name, tc.tol...)
		if !sameTolerations(pod.Spec.Tolerations, tc.want) {
			t.Errorf("pod %s: tolerations = %s, want %s", tc.name, jsonString(pod.Spec.Tolerations), jsonString(tc.want))
		}
	}
}

// Node status updates and taint patches are optimistic: a write based on a
// stale resourceVersion returns a Conflict instead of overwriting.
func TestSmokeNodeTaintConflicts(t *testing.T) {
	c := env.Cluster(t)
	cs := c.Clientset(t)
	ctx := context.Background()

	stale := createNode(t, cs, "node", "region-1", "zone-a")
	fresh := setNodeReady(t, cs, stale, v1.ConditionUnknown)
	if fresh.ResourceVersion == stale.ResourceVersion {
		t.Fatalf("UpdateStatus did not change resourceVersion %s", stale.ResourceVersion)
	}

	// A full update from the stale copy conflicts.
	upd := stale.DeepCopy()
	upd.Spec.Taints = []v1.Taint{{Key: "example.com/blind", Effect: v1.TaintEffectNoSchedule}}
	if _, err := cs.CoreV1().Nodes().Update(ctx, upd, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("Update(node, stale rv %s) = %v, want Conflict", stale.ResourceVersion, err)
	}

	// A merge patch carrying the current resourceVersion applies; NoExecute
	// TimeAdded round-trips at one-second precision (RFC 3339).
	added := time.Now().Add(-1500 * time.Millisecond)
	taint := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: testutil.MetaTime(added)}
	patched, err := patchTaints(ctx, cs, fresh.Name, fresh.ResourceVersion, []v1.Taint{taint})
	if err != nil {
		t.Fatalf("Patch(taints, rv %s) = %v", fresh.ResourceVersion, err)
	}
	if len(patched.Spec.Taints) != 1 || !patched.Spec.Taints[0].MatchTaint(&taint) ||
		!patched.Spec.Taints[0].TimeAdded.Time.Equal(added.Truncate(time.Second)) {
		t.Errorf("patched taints = %s, want %s with timeAdded %s", jsonString(patched.Spec.Taints), jsonString(taint), added.Truncate(time.Second).UTC())
	}
	if got := readyStatus(patched); got != v1.ConditionUnknown {
		t.Errorf("taint patch changed Ready to %q", got)
	}

	// The same patch based on the now stale resourceVersion conflicts and changes nothing.
	if _, err := patchTaints(ctx, cs, fresh.Name, fresh.ResourceVersion, nil); !apierrors.IsConflict(err) {
		t.Errorf("Patch(taints, stale rv %s) = %v, want Conflict", fresh.ResourceVersion, err)
	}
	got, err := cs.CoreV1().Nodes().Get(ctx, fresh.Name, metav1.GetOptions{})
	if err != nil || len(got.Spec.Taints) != 1 {
		t.Errorf("after the conflicting patch: taints = %s, %v; want the one taint kept", jsonString(got.Spec.Taints), err)
	}

	// A status update does not touch spec: taints survive it.
	got = setNodeReady(t, cs, got, v1.ConditionTrue)
	if len(got.Spec.Taints) != 1 {
		t.Errorf("UpdateStatus dropped taints: %s", jsonString(got.Spec.Taints))
	}
}

// patchTaints replaces spec.taints with a JSON merge patch that carries
// resourceVersion, so the server rejects it if the node changed since.
func patchTaints(ctx context.Context, cs kubernetes.Interface, node, rv string, taints []v1.Taint) (*v1.Node, error) {
	if taints == nil {
		taints = []v1.Taint{}
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": rv},
		"spec":     map[string]any{"taints": taints},
	})
	if err != nil {
		return nil, err
	}
	return cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
}

// Shared informers list and watch Nodes, Leases and Pods, and see updates.
func TestSmokeInformers(t *testing.T) {
	c := env.Cluster(t)
	cs := c.Clientset(t)
	ns := c.Namespace(t)
	inf := startInformers(t, cs)

	node := createNode(t, cs, "node", "region-1", "zone-b")
	createLease(t, cs, node.Name)
	pod := createPod(t, cs, ns, "pod", node.Name)
	inf.waitNode(t, node.Name, func(n *v1.Node) bool { return true })
	inf.waitLease(t, node.Name)
	inf.waitPod(t, ns, pod.Name)

	setNodeReady(t, cs, node, v1.ConditionFalse)
	inf.waitNode(t, node.Name, func(n *v1.Node) bool { return readyStatus(n) == v1.ConditionFalse })
	// The store is updated before the handlers are notified (asynchronously),
	// so the UpdateFunc call may come a moment after the store shows the change.
	cluster.Eventually(t, waitTimeout, "UpdateFunc call for node "+node.Name, func(context.Context) (bool, error) {
		return inf.nodeUpdates(node.Name) > 0, nil
	})
}

type informerSet struct {
	nodes   cache.SharedIndexInformer
	leases  cache.SharedIndexInformer
	pods    cache.SharedIndexInformer
	mu      sync.Mutex
	updates map[string]int
}

func startInformers(t *testing.T, cs kubernetes.Interface) *informerSet {
	t.Helper()
	f := informers.NewSharedInformerFactory(cs, 0)
	s := &informerSet{
		nodes:   f.Core().V1().Nodes().Informer(),
		leases:  f.Coordination().V1().Leases().Informer(),
		pods:    f.Core().V1().Pods().Informer(),
		updates: map[string]int{},
	}
	if _, err := s.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		s.mu.Lock()
		s.updates[obj.(*v1.Node).Name]++
		s.mu.Unlock()
	}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	syncCtx, syncCancel := context.WithTimeout(ctx, waitTimeout)
	defer syncCancel()
	for typ, ok := range f.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	return s
}

func (s *informerSet) nodeUpdates(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updates[name]
}

func (s *informerSet) waitNode(t *testing.T, name string, ok func(*v1.Node) bool) {
	t.Helper()
	waitStore(t, s.nodes.GetStore(), name, func(o any) bool { return ok(o.(*v1.Node)) })
}

func (s *informerSet) waitLease(t *testing.T, node string) {
	t.Helper()
	waitStore(t, s.leases.GetStore(), "kube-node-lease/"+node, func(any) bool { return true })
}

func (s *informerSet) waitPod(t *testing.T, ns, name string) {
	t.Helper()
	waitStore(t, s.pods.GetStore(), ns+"/"+name, func(any) bool { return true })
}

// waitStore waits up to a minute (the reflector backs off up to ~30 s after
// a lost connection) for key to be in the informer's store and satisfy ok.
func waitStore(t *testing.T, st cache.Store, key string, ok func(any) bool) {
	t.Helper()
	cluster.Eventually(t, 2*waitTimeout, "informer sees "+key, func(context.Context) (bool, error) {
		o, exists, err := st.GetByKey(key)
		if err != nil || !exists {
			return false, err
		}
		return ok(o), nil
	})
}

// The apiserver creates the default ServiceCIDR "kubernetes" and marks it
// Ready (with no finalizer: that is the controller-manager's job); more
// ServiceCIDRs can be created (nobody adds a finalizer or a condition to
// them); a ClusterIP Service gets an IP and an IPAddress object whose
// parentRef names it.
func TestSmokeServiceCIDRAndIPAddress(t *testing.T) {
	c := env.Cluster(t)
	cs := c.Clientset(t)
	ctx := context.Background()
	ns := c.Namespace(t)
	net := cs.NetworkingV1()

	cluster.Eventually(t, waitTimeout, "ServiceCIDR kubernetes Ready", func(ctx context.Context) (bool, error) {
		sc, err := net.ServiceCIDRs().Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !slices.Equal(sc.Spec.CIDRs, []string{"10.0.0.0/24"}) {
			return false, fmt.Errorf("spec.cidrs = %v, want [10.0.0.0/24]", sc.Spec.CIDRs)
		}
		return conditionTrue(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady), nil
	})
	ip, err := net.IPAddresses().Get(ctx, "10.0.0.1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Get(IPAddress 10.0.0.1) = %v", err)
	}
	if want := (networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "kubernetes"}); ip.Spec.ParentRef == nil || *ip.Spec.ParentRef != want {
		t.Errorf("IPAddress 10.0.0.1 parentRef = %+v, want %+v", ip.Spec.ParentRef, want)
	}

	second := testutil.ServiceCIDR(cluster.UniqueName(t, "cidr"), "10.1.0.0/24")
	second.UID = ""
	created, err := net.ServiceCIDRs().Create(ctx, second, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Create(ServiceCIDR %s 10.1.0.0/24) = %v", second.Name, err)
	}
	t.Cleanup(func() { _ = net.ServiceCIDRs().Delete(context.Background(), second.Name, metav1.DeleteOptions{}) })
	if len(created.Finalizers) != 0 || len(created.Status.Conditions) != 0 {
		t.Errorf("new ServiceCIDR: finalizers %v, conditions %v; want none (no controller-manager runs)", created.Finalizers, created.Status.Conditions)
	}

	// The allocator hands out IPs from any ServiceCIDR, the extra ones too
	// (they need no Ready condition): a test that needs an IP from its own
	// range sets spec.clusterIP.
	svc := createService(t, cs, ns, "svc", "")
	if !inServiceCIDR(t, cs, svc.Spec.ClusterIP) {
		t.Errorf("service clusterIP = %q, not in any ServiceCIDR", svc.Spec.ClusterIP)
	}
	checkIPAddress(t, cs, svc)

	pinned := createService(t, cs, ns, "pinned", "10.1.0.10")
	if pinned.Spec.ClusterIP != "10.1.0.10" {
		t.Errorf("service clusterIP = %q, want 10.1.0.10", pinned.Spec.ClusterIP)
	}
	checkIPAddress(t, cs, pinned)

	// An address outside every ServiceCIDR is refused.
	bad := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster.UniqueName(t, "outside")},
		Spec:       v1.ServiceSpec{ClusterIP: "10.200.0.10", Ports: []v1.ServicePort{{Port: 80}}},
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("Create(service, clusterIP 10.200.0.10 outside every ServiceCIDR) = %v, want Invalid", err)
	}
}

func inServiceCIDR(t *testing.T, cs kubernetes.Interface, ip string) bool {
	t.Helper()
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	list, err := cs.NetworkingV1().ServiceCIDRs().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("List(ServiceCIDRs) = %v", err)
	}
	for _, sc := range list.Items {
		for _, c := range sc.Spec.CIDRs {
			if p, err := netip.ParsePrefix(c); err == nil && p.Contains(addr) {
				return true
			}
		}
	}
	return false
}

func createService(t *testing.T, cs kubernetes.Interface, ns, prefix, clusterIP string) *v1.Service {
	t.Helper()
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster.UniqueName(t, prefix)},
		Spec: v1.ServiceSpec{
			Type:      v1.ServiceTypeClusterIP,
			ClusterIP: clusterIP,
			Ports:     []v1.ServicePort{{Port: 80}},
		},
	}
	got, err := cs.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Create(service %s/%s, clusterIP %q) = %v", ns, svc.Name, clusterIP, err)
	}
	// Namespaces never finish deleting here (no namespace controller), so
	// release the IP explicitly: a rerun (-count > 1) pins the same one.
	t.Cleanup(func() {
		_ = cs.CoreV1().Services(ns).Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
	})
	return got
}

func checkIPAddress(t *testing.T, cs kubernetes.Interface, svc *v1.Service) {
	t.Helper()
	ip, err := cs.NetworkingV1().IPAddresses().Get(context.Background(), svc.Spec.ClusterIP, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Get(IPAddress %s) = %v", svc.Spec.ClusterIP, err)
	}
	want := networkingv1.ParentReference{Resource: "services", Namespace: svc.Namespace, Name: svc.Name}
	if ip.Spec.ParentRef == nil || *ip.Spec.ParentRef != want {
		t.Errorf("IPAddress %s parentRef = %+v, want %+v", ip.Name, ip.Spec.ParentRef, want)
	}
	if got := ip.Labels[networkingv1.LabelManagedBy]; got != "ipallocator.k8s.io" {
		t.Errorf("IPAddress %s label %s = %q, want ipallocator.k8s.io", ip.Name, networkingv1.LabelManagedBy, got)
	}
}

func conditionTrue(cs []metav1.Condition, typ string) bool {
	for _, c := range cs {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

func sameTolerations(a, b []v1.Toleration) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range b {
		if !slices.ContainsFunc(a, func(y v1.Toleration) bool {
			return x.Key == y.Key && x.Operator == y.Operator && x.Value == y.Value && x.Effect == y.Effect &&
				((x.TolerationSeconds == nil) == (y.TolerationSeconds == nil)) &&
				(x.TolerationSeconds == nil || *x.TolerationSeconds == *y.TolerationSeconds)
		}) {
			return false
		}
	}
	return true
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
