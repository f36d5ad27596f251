package main

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
)

// manifests are the typed objects of deploy/, by kind.
type manifests struct {
	namespaces      []v1.Namespace
	serviceAccounts []v1.ServiceAccount
	clusterRoles    []rbacv1.ClusterRole
	clusterBindings []rbacv1.ClusterRoleBinding
	roles           []rbacv1.Role
	roleBindings    []rbacv1.RoleBinding
	deployments     []appsv1.Deployment
	pdbs            []policyv1.PodDisruptionBudget
}

// strict decodes doc into v, rejecting unknown fields.
// decodeAs decodes doc strictly (strict) as a T.
func decodeAs[T any](t *testing.T, file string, doc []byte) T {
	t.Helper()
	var o T
	strict(t, file, doc, &o)
	return o
}

func strict(t *testing.T, file string, doc []byte, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// loadManifests parses every resource kustomization.yaml lists into its
// typed object, and checks that it lists every manifest of the directory.
func loadManifests(t *testing.T) manifests {
	t.Helper()
	raw, err := os.ReadFile("deploy/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
		Images     []struct {
			Name, NewName, NewTag string
		} `json:"images"`
	}
	strict(t, "kustomization.yaml", raw, &k)
	if k.Kind != "Kustomization" || len(k.Images) != 1 || k.Images[0].Name != "nodecontroller" {
		t.Errorf("kustomization.yaml = %+v", k)
	}
	files, _ := filepath.Glob("deploy/*.yaml")
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			want = append(want, b)
		}
	}
	got := slices.Clone(k.Resources)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources %q, want every manifest %q", got, want)
	}
	var m manifests
	for _, f := range k.Resources {
		raw, err := os.ReadFile(filepath.Join("deploy", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			switch tm.APIVersion + "/" + tm.Kind {
			case "v1/Namespace":
				m.namespaces = append(m.namespaces, decodeAs[v1.Namespace](t, f, doc))
			case "v1/ServiceAccount":
				m.serviceAccounts = append(m.serviceAccounts, decodeAs[v1.ServiceAccount](t, f, doc))
			case "rbac.authorization.k8s.io/v1/ClusterRole":
				m.clusterRoles = append(m.clusterRoles, decodeAs[rbacv1.ClusterRole](t, f, doc))
			case "rbac.authorization.k8s.io/v1/ClusterRoleBinding":
				m.clusterBindings = append(m.clusterBindings, decodeAs[rbacv1.ClusterRoleBinding](t, f, doc))
			case "rbac.authorization.k8s.io/v1/Role":
				m.roles = append(m.roles, decodeAs[rbacv1.Role](t, f, doc))
			case "rbac.authorization.k8s.io/v1/RoleBinding":
				m.roleBindings = append(m.roleBindings, decodeAs[rbacv1.RoleBinding](t, f, doc))
			case "apps/v1/Deployment":
				m.deployments = append(m.deployments, decodeAs[appsv1.Deployment](t, f, doc))
			case "policy/v1/PodDisruptionBudget":
				m.pdbs = append(m.pdbs, decodeAs[policyv1.PodDisruptionBudget](t, f, doc))
			default:
				t.Errorf("%s: unexpected %s %s", f, tm.APIVersion, tm.Kind)
			}
		}
	}
	return m
}

// TestManifests: the Deployment runs 2 non-root replicas with probes on the
// endpoints, resource requests and arguments this binary accepts (and that
// name the objects the Role grants), under a PodDisruptionBudget.
func TestManifests(t *testing.T) {
	m := loadManifests(t)
	if len(m.namespaces) != 1 || len(m.serviceAccounts) != 1 || len(m.deployments) != 1 || len(m.pdbs) != 1 {
		t.Fatalf("manifests = %d namespaces, %d service accounts, %d deployments, %d PDBs; want one each",
			len(m.namespaces), len(m.serviceAccounts), len(m.deployments), len(m.pdbs))
	}
	ns, sa, d, pdb := m.namespaces[0], m.serviceAccounts[0], m.deployments[0], m.pdbs[0]
	for _, o := range []metav1.Object{&sa, &d, &pdb} {
		if o.GetNamespace() != ns.Name {
			t.Errorf("%s is in namespace %q, want %q", o.GetName(), o.GetNamespace(), ns.Name)
		}
	}
	spec := d.Spec.Template.Spec
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
	}
	if spec.ServiceAccountName != sa.Name {
		t.Errorf("serviceAccountName = %q, want %q", spec.ServiceAccountName, sa.Name)
	}
	if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("pod securityContext = %+v, want non-root", sc)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
		c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes = %+v, %+v; want /healthz and /readyz", c.LivenessProbe, c.ReadinessProbe)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resource requests = %v, want cpu and memory", c.Resources.Requests)
	}
	if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container securityContext = %+v", sc)
	}
	if !maps.Equal(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("PDB selector %v, want the Deployment's %v", pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels)
	}
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("PDB minAvailable = %v, want 1", pdb.Spec.MinAvailable)
	}

	o := deploymentOptions(t, d)
	if !o.leaderElect || o.leNamespace != ns.Name {
		t.Errorf("args: leader election %v in %q, want on in %q", o.leaderElect, o.leNamespace, ns.Name)
	}
	if port := c.Ports[0].ContainerPort; int(port) != o.port {
		t.Errorf("containerPort %d, -port %d", port, o.port)
	}
}

// deploymentOptions parses the Deployment's container arguments.
func deploymentOptions(t *testing.T, d appsv1.Deployment) *options {
	t.Helper()
	var out bytes.Buffer
	fs, o := newFlagSet(&out)
	fs.Int("v", 0, "klog verbosity") // main adds klog's flags
	if err := fs.Parse(d.Spec.Template.Spec.Containers[0].Args); err != nil {
		t.Fatalf("Deployment args %q: %v %s", d.Spec.Template.Spec.Containers[0].Args, err, out.String())
	}
	o.complete(fs)
	if _, err := o.settings(); err != nil {
		t.Fatalf("Deployment args: %v", err)
	}
	return o
}

// access is one permission: a verb on a resource (with subresource) of an
// API group, in a namespace ("" for cluster-scoped objects), on a named
// object ("" for list, watch and create).
type access struct {
	namespace, group, resource, verb, name string
}

func (a access) String() string {
	return fmt.Sprintf("%s %s/%s ns=%q name=%q", a.verb, a.group, a.resource, a.namespace, a.name)
}

// grant is one RBAC rule bound to the ServiceAccount, in a namespace ("*":
// a ClusterRole bound cluster-wide).
type grant struct {
	namespace string
	rule      rbacv1.PolicyRule
}

func (g grant) allows(a access) bool {
	if g.namespace != "*" && g.namespace != a.namespace {
		return false
	}
	r := g.rule
	return slices.Contains(r.APIGroups, a.group) && slices.Contains(r.Resources, a.resource) &&
		slices.Contains(r.Verbs, a.verb) && (len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, a.name))
}

// grants returns the rules bound to the ServiceAccount.
func (m manifests) grants(t *testing.T) []grant {
	t.Helper()
	sa := m.serviceAccounts[0]
	bound := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == sa.Name && s.Namespace == sa.Namespace
		})
	}
	var gs []grant
	for _, b := range m.clusterBindings {
		if !bound(b.Subjects) {
			continue
		}
		i := slices.IndexFunc(m.clusterRoles, func(r rbacv1.ClusterRole) bool { return r.Name == b.RoleRef.Name })
		if b.RoleRef.Kind != "ClusterRole" || i < 0 {
			t.Fatalf("ClusterRoleBinding %s: no ClusterRole %s", b.Name, b.RoleRef.Name)
		}
		for _, r := range m.clusterRoles[i].Rules {
			gs = append(gs, grant{"*", r})
		}
	}
	for _, b := range m.roleBindings {
		if !bound(b.Subjects) {
			continue
		}
		i := slices.IndexFunc(m.roles, func(r rbacv1.Role) bool { return r.Name == b.RoleRef.Name && r.Namespace == b.Namespace })
		if b.RoleRef.Kind != "Role" || i < 0 {
			t.Fatalf("RoleBinding %s/%s: no Role %s there", b.Namespace, b.Name, b.RoleRef.Name)
		}
		for _, r := range m.roles[i].Rules {
			gs = append(gs, grant{b.Namespace, r})
		}
	}
	return gs
}

// exercise runs the program as the Deployment configures it (leader
// election included, on the real clock with short periods) against a fake
// clientset, through a node outage on a fake clock until the node's
// untolerating pod is evicted, and returns every API call it made.
func exercise(t *testing.T, o *options) []access {
	t.Helper()
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(epoch)
	objs := []k8sruntime.Object{}
	for _, n := range []string{"a", "b"} { // b stays alive: a's zone is not fully disrupted
		objs = append(objs,
			&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{
				Type: v1.NodeReady, Status: v1.ConditionTrue,
				LastHeartbeatTime: metav1.NewTime(epoch), LastTransitionTime: metav1.NewTime(epoch)}}}},
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: v1.NamespaceNodeLease, Name: n},
				Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: epoch}}})
	}
	// The device duty's world: pod g on the live node uses claim c,
	// allocated a device of pool pool-b that DeviceTaintRule r taints.
	slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	slice.Spec.Driver, slice.Spec.Pool = "gpu.example.com", resourcev1.ResourcePool{Name: "pool-b", Generation: 1, ResourceSliceCount: 1}
	slice.Spec.Devices = []resourcev1.Device{{Name: "gpu-0"}}
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c", UID: "uid-c"}}
	claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
		Request: "gpu", Driver: "gpu.example.com", Pool: "pool-b", Device: "gpu-0"}}}}
	claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "g", UID: "uid-g"}}
	client := fake.NewClientset(append(objs,
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "uid-p"},
			Spec:   v1.PodSpec{NodeName: "a"},
			Status: v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}},
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "g", UID: "uid-g"},
			Spec:   v1.PodSpec{NodeName: "b", ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("c")}}},
			Status: v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}},
		slice, claim,
	)...)
	client.Resources = []*metav1.APIResourceList{{GroupVersion: "resource.k8s.io/v1", APIResources: []metav1.APIResource{
		{Name: "resourceslices"}, {Name: "resourceclaims"}, {Name: "devicetaintrules"}, {Name: "devicetaintrules/status"}}}}
	// With the blast-radius breaker on (TestRBACMatchesCode), r holds the
	// driver's evictions (one device of one, 100%) until its release
	// annotation lets them go: the hold's and the release's Events and the
	// annotation's read are among the calls checked.
	rule := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
		"metadata": map[string]any{"name": "r", "uid": "uid-r", "generation": int64(1),
			"annotations": map[string]any{controller.AnnotationReleaseEvictionHold: "gpu.example.com"}},
		"spec": map[string]any{"deviceSelector": map[string]any{"pool": "pool-b"},
			"taint": map[string]any{"key": "maintenance", "effect": "NoExecute", "timeAdded": epoch.Add(time.Minute).Format(time.RFC3339)}},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(k8sruntime.NewScheme(),
		map[schema.GroupVersionResource]string{controller.DeviceTaintRulesResource: "DeviceTaintRuleList"}, rule)
	leasesGVR := coordinationv1.SchemeGroupVersion.WithResource("leases")
	renewB := func() { // the kubelet of b, straight into the tracker: not one of the program's calls
		o, err := client.Tracker().Get(leasesGVR, v1.NamespaceNodeLease, "b")
		if err != nil {
			t.Fatal(err)
		}
		l := o.(*coordinationv1.Lease)
		l.Spec.RenewTime = &metav1.MicroTime{Time: clk.Now()}
		if err := client.Tracker().Update(leasesGVR, l, v1.NamespaceNodeLease); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var got []access
	record := func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if a.GetResource().Resource == "resource" {
			// Discovery (/apis/resource.k8s.io/v1): a non-resource URL
			// every authenticated user may read (system:discovery).
			return false, nil, nil
		}
		acc := access{namespace: a.GetNamespace(), group: a.GetResource().Group, resource: a.GetResource().Resource, verb: a.GetVerb()}
		if sub := a.GetSubresource(); sub != "" {
			acc.resource += "/" + sub
		}
		switch a := a.(type) {
		case k8stesting.GetAction: // every action with a name: gets, patches and deletes
			acc.name = a.GetName()
		case k8stesting.UpdateAction:
			acc.name = nameOf(a.GetObject())
		}
		mu.Lock()
		got = append(got, acc)
		mu.Unlock()
		return false, nil, nil
	}
	recordWatch := func(a k8stesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		got = append(got, access{namespace: a.GetNamespace(), group: a.GetResource().Group, resource: a.GetResource().Resource, verb: "watch"})
		mu.Unlock()
		return false, nil, nil
	}
	client.PrependReactor("*", "*", record)
	client.PrependWatchReactor("*", recordWatch)
	dyn.PrependReactor("patch", "devicetaintrules", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, rule.DeepCopy(), nil // server-side apply of the status: the fake has none
	})
	dyn.PrependReactor("*", "*", record)
	dyn.PrependWatchReactor("*", recordWatch)
	o.dynamic = dyn
	o.leaseDuration, o.renewDeadline, o.retryPeriod = 2*time.Second, 1500*time.Millisecond, 100*time.Millisecond // the Lease keeps whole seconds
	o.port = 0
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Logger{}))
	done := make(chan error, 1)
	go func() { done <- runWith(ctx, o, client, clk) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := client.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), "default", "p")
		_, gerr := client.Tracker().Get(v1.SchemeGroupVersion.WithResource("pods"), "default", "g")
		if err != nil && gerr != nil && clk.Since(epoch) > 2*time.Minute {
			break // both evicted, and a few snapshot periods went by
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("pod p (%v) or g (%v) not evicted by %v", err, gerr, clk.Since(epoch))
		}
		mu.Lock()
		leading := slices.ContainsFunc(got, func(a access) bool { return a.resource == "leases" && a.verb == "create" })
		mu.Unlock()
		if leading && clk.Since(epoch) < 10*time.Minute {
			clk.Step(time.Second)
			renewB()
		}
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a few lease renewals and the Event sink
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("runWith() = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return got
}

// notExercised are the calls the code makes that exercise cannot provoke on
// a fake clientset, each with its call site.
var notExercised = []access{
	{group: "", resource: "nodes", verb: "get"},                    // controller: cluster.readNode, re-read after a taint patch conflict
	{namespace: "default", resource: "pods", verb: "get"},          // controller: cluster.EvictPod and the device duty when the cache lacks the pod, UpdatePodStatus for a pod that repeats a condition type
	{namespace: "default", resource: "events", verb: "patch"},      // client-go's recorder: a repeated Event
	{namespace: "default", resource: "pods/status", verb: "patch"}, // monitor: Ready=False (exercised too when the watch is quick)
}

// TestRBACMatchesCode: the ServiceAccount's RBAC rules allow every call the
// program makes, as the Deployment runs it, and nothing else: every verb
// on every resource they grant is one the code uses.
func TestRBACMatchesCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the program for a few seconds")
	}
	m := loadManifests(t)
	grants := m.grants(t)
	o := deploymentOptions(t, m.deployments[0])
	// The device flags off by default, on here (-device-taint-eviction-max-share=0.5
	// -device-taint-warnings=16), so that their calls are checked too.
	o.cfg.Devices.Evictor.BlastRadius.MaxShare = 0.5
	o.cfg.Devices.Evictor.KeepWarnings = 16
	calls := exercise(t, o)
	used := map[[3]string]bool{}
	for _, a := range append(calls, notExercised...) {
		used[[3]string{a.group, a.resource, a.verb}] = true
		if a.resource == "events" {
			continue // Events go to the objects' namespaces: checked below with a ClusterRole grant
		}
		if !slices.ContainsFunc(grants, func(g grant) bool { return g.allows(a) }) {
			t.Errorf("not allowed by the RBAC manifests: %v", a)
		}
	}
	if !slices.ContainsFunc(grants, func(g grant) bool {
		return g.namespace == "*" && g.allows(access{namespace: "any", resource: "events", verb: "create"}) &&
			g.allows(access{namespace: "any", resource: "events", verb: "patch"})
	}) {
		t.Errorf("events create and patch are not granted in every namespace")
	}
	for _, g := range grants {
		for _, grp := range g.rule.APIGroups {
			for _, res := range g.rule.Resources {
				for _, verb := range g.rule.Verbs {
					if !used[[3]string{grp, res, verb}] {
						t.Errorf("granted but never used: %s %s/%s in %s", verb, grp, res, g.namespace)
					}
				}
			}
		}
	}
	if t.Failed() || testing.Verbose() {
		var s []string
		for _, a := range calls {
			s = append(s, a.String())
		}
		slices.Sort(s)
		t.Logf("calls:\n%s", strings.Join(slices.Compact(s), "\n"))
	}
}

// TestStaticBinary builds the program as the Dockerfile does
// (CGO_ENABLED=0) and checks the binary is statically linked: no program
// interpreter and no shared library, so it runs on distroless/static or
// scratch, without libc or a shell.
func TestStaticBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ELF check on linux only")
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "nodecontroller")
	// The Dockerfile's build adds -trimpath, which changes nothing in the
	// linking checked here but every package's build ID: without it, the
	// packages CI compiled for its CGO_ENABLED=0 go vet are reused and this
	// build is a link (a cold build of the whole graph otherwise).
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			r := io.NewSectionReader(p, 0, int64(p.Filesz))
			interp, _ := io.ReadAll(r)
			t.Errorf("binary has a program interpreter %q: dynamically linked", bytes.TrimRight(interp, "\x00"))
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) != 0 {
		t.Errorf("binary needs shared libraries %q", libs)
	}
	raw, err := os.ReadFile("deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0", "FROM gcr.io/distroless/static", "USER 65532"} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

func nameOf(o k8sruntime.Object) string {
	if a, err := meta.Accessor(o); err == nil {
		return a.GetName()
	}
	return ""
}
