package e2e

// examples/nodecontroller as deployed (examples/nodecontroller/deploy):
// the manifests' RBAC applied to a fresh kube-apiserver, the binary run
// with the Deployment's arguments and a token of its ServiceAccount
// (TokenRequest, bound to a Pod per replica so the audit log tells the
// replicas apart), leader election on.
//
//   - TestDeployRBACAndMetrics: one replica; a node goes silent; every
//     request the controller makes succeeds (none refused: a verb missing
//     from the ClusterRole/Role fails the test), a write outside the role
//     is refused, the other manifests pass a server-side dry run, and
//     /metrics during the outage has upstream's series and values.
//   - TestDeployFailover: two replicas; a node goes silent; while a pod's
//     countdown runs the leader is SIGKILLed; the other replica takes over
//     within the lease duration and evicts the pod at the taint's timeAdded
//     + its toleration, not later; no write comes from a replica that is
//     not the leader.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/examples/e2e/parity"
)

// Timings of the deployed controller (its flags; leader election shortened
// from kube-controller-manager's 15 s / 10 s / 2 s).
const (
	depGrace         = 4 * time.Second
	depMonitorPeriod = time.Second
	depLease         = 4 * time.Second
	depRenewDeadline = 3 * time.Second
	depRetry         = 500 * time.Millisecond
)

// deployDir is examples/nodecontroller/deploy, from this package's directory.
var deployDir = filepath.Join("..", "nodecontroller", "deploy")

// manifests are the objects of deployDir's kustomization, with its
// namespace applied.
type manifests struct {
	namespace string // the ServiceAccount's
	objs      []*unstructured.Unstructured
}

// loadManifests reads deployDir/kustomization.yaml and its resources (plain
// files), applying the kustomization's namespace as kustomize does: to
// every namespaced object and to the ServiceAccount subjects of bindings.
// It skips the test when deployDir does not exist yet.
func loadManifests(t *testing.T) *manifests {
	t.Helper()
	kb, err := os.ReadFile(filepath.Join(deployDir, "kustomization.yaml"))
	if errors.Is(err, os.ErrNotExist) {
		if cluster.Required() {
			t.Fatalf("e2e: no %s/kustomization.yaml", deployDir)
		}
		t.Skipf("e2e: no %s/kustomization.yaml yet", deployDir)
	}
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Namespace string   `json:"namespace"`
		Resources []string `json:"resources"`
	}
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(kb), 4096).Decode(&k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	m := &manifests{namespace: k.Namespace}
	for _, r := range k.Resources {
		b, err := os.ReadFile(filepath.Join(deployDir, r))
		if err != nil {
			t.Fatalf("kustomization resource %s (only files are supported here): %v", r, err)
		}
		d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			var raw map[string]any
			if err := d.Decode(&raw); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", r, err)
			}
			if len(raw) == 0 {
				continue
			}
			m.objs = append(m.objs, &unstructured.Unstructured{Object: raw})
		}
	}
	if m.namespace != "" {
		for _, o := range m.objs {
			switch o.GetKind() {
			case "Namespace", "ClusterRole", "ClusterRoleBinding":
			default:
				o.SetNamespace(m.namespace)
			}
			if o.GetKind() == "ClusterRoleBinding" || o.GetKind() == "RoleBinding" {
				subs, _, _ := unstructured.NestedSlice(o.Object, "subjects")
				for _, s := range subs {
					if sm, ok := s.(map[string]any); ok && sm["kind"] == "ServiceAccount" {
						sm["namespace"] = m.namespace
					}
				}
				_ = unstructured.SetNestedSlice(o.Object, subs, "subjects")
			}
		}
	}
	if len(m.objs) == 0 {
		t.Fatalf("%s: no objects", deployDir)
	}
	if sas := m.byKind("ServiceAccount"); len(sas) == 1 {
		m.namespace = sas[0].GetNamespace()
	}
	return m
}

func (m *manifests) byKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range m.objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// serviceAccount is the Deployment's ServiceAccount.
func (m *manifests) serviceAccount(t *testing.T) string {
	t.Helper()
	sas := m.byKind("ServiceAccount")
	if len(sas) != 1 {
		t.Fatalf("manifests: %d ServiceAccounts, want 1", len(sas))
	}
	return sas[0].GetName()
}

// containerArgs are the controller container's command-line arguments in
// the Deployment (command after the binary, then args).
func (m *manifests) containerArgs(t *testing.T) []string {
	t.Helper()
	ds := m.byKind("Deployment")
	if len(ds) != 1 {
		t.Fatalf("manifests: %d Deployments, want 1", len(ds))
	}
	cs, _, _ := unstructured.NestedSlice(ds[0].Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		t.Fatal("manifests: the Deployment has no container")
	}
	c, _ := cs[0].(map[string]any)
	var out []string
	if cmd, _, _ := unstructured.NestedStringSlice(c, "command"); len(cmd) > 1 {
		out = append(out, cmd[1:]...)
	}
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	return append(out, args...)
}

// apply creates the Namespace, ServiceAccount and RBAC objects for real and
// every other object with a server-side dry run (validation and admission,
// nothing stored: no scheduler or kubelet would run them here).
func (m *manifests) apply(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	ctx := context.Background()
	dc, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	disc := c.Clientset(t).Discovery()
	groups, err := restmapper.GetAPIGroupResources(disc)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	order := []string{"Namespace", "ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"}
	rank := func(o *unstructured.Unstructured) int {
		if i := slices.Index(order, o.GetKind()); i >= 0 {
			return i
		}
		return len(order)
	}
	objs := slices.Clone(m.objs)
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		mp, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("manifests: %s %s: %v", gvk, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dc.Resource(mp.Resource)
		if mp.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dc.Resource(mp.Resource).Namespace(o.GetNamespace())
		}
		opts := metav1.CreateOptions{}
		real := rank(o) < len(order)
		if !real {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		if _, err := ri.Create(ctx, o, opts); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("manifests: create %s %s/%s (dry run %v): %v", o.GetKind(), o.GetNamespace(), o.GetName(), !real, err)
		}
		t.Logf("manifests: %s %s/%s %s", o.GetKind(), o.GetNamespace(), o.GetName(), map[bool]string{true: "created", false: "valid (server-side dry run)"}[real])
	}
}

// replicaToken returns a token of the manifests' ServiceAccount bound to a
// Pod named replica (created for it, never scheduled): the apiserver puts
// the pod's name into the user's extra, so the audit log tells replicas
// apart, as it would in a cluster.
func (m *manifests) replicaToken(t *testing.T, cs kubernetes.Interface, replica string) string {
	t.Helper()
	ctx := context.Background()
	sa := m.serviceAccount(t)
	// The Deployment's pod template (it passes the namespace's Pod Security
	// level); never scheduled: no scheduler or kubelet runs here.
	ds := m.byKind("Deployment")
	tmpl, _, _ := unstructured.NestedMap(ds[0].Object, "spec", "template")
	pod := &v1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, pod); err != nil {
		t.Fatalf("the Deployment's pod template: %v", err)
	}
	pod.Namespace, pod.Name = m.namespace, replica
	if pod.Spec.ServiceAccountName != sa {
		t.Errorf("the Deployment's pods run as ServiceAccount %q, want %q", pod.Spec.ServiceAccountName, sa)
	}
	p, err := cs.CoreV1().Pods(m.namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", replica, err)
	}
	exp := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(m.namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &exp,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", m.namespace, sa, err)
	}
	return tr.Status.Token
}

// writeTokenKubeconfig writes a kubeconfig for c's server with token.
func writeTokenKubeconfig(t *testing.T, c *cluster.Cluster, path, token string) {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.Server(), CertificateAuthorityData: c.CAData()}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "sa"}
	cfg.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}

// depEnv is one deploy test: a fresh cluster with an audit log, the
// manifests applied, the world's node agents.
type depEnv struct {
	t        *testing.T
	c        *cluster.Cluster
	cs       kubernetes.Interface
	m        *manifests
	auditLog string
	dir      string
	world    *world
	bin      string
}

func newDepEnv(t *testing.T, nodes []worldNode, pods []worldPod, silent ...string) *depEnv {
	t.Helper()
	m := loadManifests(t)
	bin := nodeControllerBinary(t)
	dir := t.TempDir()
	e := &depEnv{t: t, m: m, dir: dir, auditLog: filepath.Join(dir, "audit.log"), bin: bin}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(parity.Policy), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(context.Background(), cluster.Options{ExtraAPIServerFlags: parity.APIServerFlags(policy, e.auditLog), Logf: t.Logf})
	if err != nil {
		if errors.Is(err, cluster.ErrBinariesNotFound) && !cluster.Required() {
			t.Skipf("e2e: %v", err)
		}
		t.Fatalf("cluster.Start() = %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	e.c, e.cs = c, c.Clientset(t)
	m.apply(t, c)
	e.world = startWorld(t, c, parityNS, nodes, pods, silent, 500*time.Millisecond)
	return e
}

// replica is one running controller process.
type replica struct {
	name    string
	proc    *cluster.Process
	metrics string // http://127.0.0.1:port/metrics
}

// startReplica runs the binary with the Deployment's arguments, then the
// test's (a flag given twice: the last wins): the replica's kubeconfig, a
// loopback port for the endpoints, short timings.
func (e *depEnv) startReplica(name string) *replica {
	t := e.t
	t.Helper()
	kc := filepath.Join(e.dir, name+".kubeconfig")
	writeTokenKubeconfig(t, e.c, kc, e.m.replicaToken(t, e.cs, name))
	port := freePort(t)
	args := append(e.m.containerArgs(t),
		"-kubeconfig="+kc,
		"-bind-address=127.0.0.1", "-port="+strconv.Itoa(port),
		"-node-monitor-period="+depMonitorPeriod.String(),
		"-node-monitor-grace-period="+depGrace.String(),
		"-node-startup-grace-period="+(depGrace+2*time.Second).String(),
		"-node-eviction-rate=10",
		"-leader-elect=true",
		"-leader-elect-lease-duration="+depLease.String(),
		"-leader-elect-renew-deadline="+depRenewDeadline.String(),
		"-leader-elect-retry-period="+depRetry.String(),
		"-snapshot-period=1s",
		"-v=2",
	)
	p, err := e.c.StartProcess(name, e.bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	stopProcessAtEnd(t, p)
	t.Logf("replica %s: pid %d, args %q", name, p.PID(), args)
	return &replica{name: name, proc: p, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port)}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// scrape returns the replica's metrics as series ("name{labels}") → value.
func (r *replica) scrape(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.metrics, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", r.metrics, resp.Status)
	}
	return parseMetrics(io.LimitReader(resp.Body, 16<<20))
}

// parseMetrics reads Prometheus text format: series → value; "# TYPE name
// type" lines become "TYPE name" → 0 entries with the type in typeOf.
func parseMetrics(rd io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "# TYPE ") {
			f := strings.Fields(l)
			if len(f) == 4 {
				out["# TYPE "+f[2]+" "+f[3]] = 0
			}
			continue
		}
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			return nil, fmt.Errorf("metrics line %q", l)
		}
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %v", l, err)
		}
		out[l[:i]] = v
	}
	return out, sc.Err()
}

// series returns the value of the series of name whose labels contain
// every one of labels (substrings such as `zone-a`), and whether there is
// exactly one such series.
func series(ms map[string]float64, name string, labels ...string) (float64, bool) {
	var v float64
	n := 0
	for s, x := range ms {
		base, lbl, _ := strings.Cut(s, "{")
		if base != name {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(lbl, l)
		}
		if ok {
			v, n = x, n+1
		}
	}
	return v, n == 1
}

// leaderLease returns the leader election Lease (name and namespace from the
// Deployment's -leader-elect-resource-* arguments, else the binary's
// defaults).
func (e *depEnv) leaderLease(ctx context.Context) (*coordinationv1.Lease, error) {
	ns, name := "kube-system", "node-lifecycle-controller"
	for _, a := range e.m.containerArgs(e.t) {
		a = strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(a, "leader-elect-resource-namespace="); ok {
			ns = v
		}
		if v, ok := strings.CutPrefix(a, "leader-elect-resource-name="); ok {
			name = v
		}
	}
	return e.cs.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
}

// waitLeader waits for one of the replicas to report itself leader in its
// metrics (lifecycle_leader 1) and the others standby (0).
func (e *depEnv) waitLeader(t *testing.T, rs ...*replica) *replica {
	t.Helper()
	var leader *replica
	cluster.Eventually(t, 60*time.Second, "a leader among the replicas", func(ctx context.Context) (bool, error) {
		leader = nil
		for _, r := range rs {
			if r.proc.Exited() {
				continue
			}
			ms, err := r.scrape(ctx)
			if err != nil {
				return false, err
			}
			if v, _ := series(ms, "lifecycle_leader"); v == 1 {
				if leader != nil {
					return false, fmt.Errorf("replicas %s and %s both report leader", leader.name, r.name)
				}
				leader = r
			}
		}
		return leader != nil, nil
	})
	return leader
}

// writesBy are the audit events of the ServiceAccount's requests, by the
// replica (the bound pod's name).
func (e *depEnv) saRequests(t *testing.T) (byReplica map[string][]parity.AuditEvent, all []parity.AuditEvent) {
	t.Helper()
	evs, err := parity.ReadAuditLog(e.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	user := "system:serviceaccount:" + e.m.namespace + ":" + e.m.serviceAccount(t)
	byReplica = map[string][]parity.AuditEvent{}
	for _, ev := range evs {
		if ev.User.Username != user {
			continue
		}
		pods := ev.User.Extra["authentication.kubernetes.io/pod-name"]
		name := "?"
		if len(pods) == 1 {
			name = pods[0]
		}
		byReplica[name] = append(byReplica[name], ev)
		all = append(all, ev)
	}
	return byReplica, all
}

func isWrite(ev *parity.AuditEvent) bool {
	switch ev.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// checkNoRefusal fails for every request of the ServiceAccount the
// apiserver refused (401, 403): the manifests' RBAC lacks a verb.
func checkNoRefusal(t *testing.T, all []parity.AuditEvent) {
	t.Helper()
	n := 0
	refused := map[string]int{}
	var order []string
	for _, ev := range all {
		if c := ev.Code(); c == http.StatusForbidden || c == http.StatusUnauthorized {
			k := fmt.Sprintf("%s %s (HTTP %d)", ev.Verb, ev.RequestURI, c)
			if refused[k] == 0 {
				order = append(order, k)
			}
			refused[k]++
		}
		if isWrite(&ev) {
			n++
		}
	}
	for _, k := range order {
		t.Errorf("RBAC: %s refused %d times: the manifests' roles lack this verb", k, refused[k])
	}
	t.Logf("the ServiceAccount made %d requests, %d of them writes, %d refused", len(all), n, len(order))
}

func TestDeployRBACAndMetrics(t *testing.T) {
	nodes := []worldNode{{"n1", "zone-a"}, {"n2", "zone-a"}, {"n3", "zone-a"}}
	pods := []worldPod{{"n1-zero", "n1", 0}, {"n1-none", "n1", tolNone}}
	e := newDepEnv(t, nodes, pods, "n1")
	r := e.startReplica("nc-0")
	// Even when the test fails half-way (a refused write stops the
	// controller's progress), say which requests were refused.
	t.Cleanup(func() {
		r.proc.Stop(10 * time.Second)
		_, all := e.saRequests(t)
		checkNoRefusal(t, slices.DeleteFunc(all, func(ev parity.AuditEvent) bool {
			// The test's own probes, from the nc-probe token.
			return slices.Contains(ev.User.Extra["authentication.kubernetes.io/pod-name"], "nc-probe")
		}))
	})
	e.waitLeader(t, r)
	waitNoAdmissionTaints(t, e.cs, nodes, r.proc)

	// A write the roles do not grant is refused.
	kc := filepath.Join(e.dir, "forbidden.kubeconfig")
	writeTokenKubeconfig(t, e.c, kc, e.m.replicaToken(t, e.cs, "nc-probe"))
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	sa := kubernetes.NewForConfigOrDie(rest.CopyConfig(rc))
	ctx := context.Background()
	if err := sa.CoreV1().Nodes().Delete(ctx, "n3", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the ServiceAccount deleting a node: %v, want Forbidden", err)
	}
	if _, err := sa.CoreV1().Secrets(parityNS).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the ServiceAccount listing secrets: %v, want Forbidden", err)
	}
	if _, err := sa.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "escalate"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the ServiceAccount creating a ClusterRole: %v, want Forbidden", err)
	}

	// n1 goes silent: Unknown, tainted, its 0 s pod evicted.
	origin, err := e.world.silence(t)
	if err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, depGrace+40*time.Second, "pod n1-zero evicted", func(ctx context.Context) (bool, error) {
		p, err := e.cs.CoreV1().Pods(parityNS).Get(ctx, "n1-zero", metav1.GetOptions{})
		return err == nil && p.DeletionTimestamp != nil, err
	})
	t.Logf("n1-zero evicted %v after n1's last renewal", time.Since(origin).Round(100*time.Millisecond))

	// /metrics during the outage: upstream's names, types and values.
	want := []struct {
		name, typ string
		labels    []string
		value     float64
	}{
		{"node_collector_zone_size", "gauge", []string{"zone-a"}, 3},
		{"node_collector_unhealthy_nodes_in_zone", "gauge", []string{"zone-a"}, 1},
		{"node_collector_zone_health", "gauge", []string{"zone-a"}, 100 * 2.0 / 3},
		{"node_collector_evictions_total", "counter", []string{"zone-a"}, 1},
		{"taint_eviction_controller_pod_deletions_total", "counter", nil, 1},
		{"lifecycle_leader", "gauge", nil, 1},
	}
	var last map[string]float64
	cluster.Eventually(t, 30*time.Second, "the outage in /metrics", func(ctx context.Context) (bool, error) {
		ms, err := r.scrape(ctx)
		if err != nil {
			return false, err
		}
		last = ms
		for _, w := range want {
			if _, ok := ms["# TYPE "+w.name+" "+w.typ]; !ok {
				return false, fmt.Errorf("no %s of type %s", w.name, w.typ)
			}
			v, ok := series(ms, w.name, w.labels...)
			if !ok || math.Abs(v-w.value) > 0.01 {
				return false, fmt.Errorf("%s%v = %g (found %v), want %g", w.name, w.labels, v, ok, w.value)
			}
		}
		return true, nil
	})
	for _, h := range []string{
		"node_collector_update_node_health_duration_seconds",
		"node_collector_update_all_nodes_health_duration_seconds",
		"taint_eviction_controller_pod_deletion_duration_seconds",
	} {
		if _, ok := last["# TYPE "+h+" histogram"]; !ok {
			t.Errorf("/metrics: no histogram %s", h)
		}
		if n, _ := series(last, h+"_count"); n < 1 {
			t.Errorf("/metrics: %s_count = %g, want at least 1", h, n)
		}
	}

	// The device-taint-eviction-controller under the same RBAC: a
	// NoExecute DeviceTaintRule on the device of a claim a pod uses (the
	// pod bound to a node no agent runs): its status applied, the pod
	// evicted, upstream's metrics.
	ds := devScenario{name: "rule", pods: []string{"p"}, trigger: trigRule, evicted: []string{"p"}}
	setupDeviceWorld(t, e.cs, []devScenario{ds})
	if _, err := e.cs.ResourceV1().DeviceTaintRules().Create(ctx, devTaintRule(ds, resourcev1.DeviceTaintEffectNoExecute, time.Now()), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 30*time.Second, "the device-tainted pod evicted and the rule's status written", func(ctx context.Context) (bool, error) {
		p, err := e.cs.CoreV1().Pods(ds.ns()).Get(ctx, "p", metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp == nil {
			return false, err
		}
		rule, err := e.cs.ResourceV1().DeviceTaintRules().Get(ctx, ds.ns(), metav1.GetOptions{})
		return err == nil && len(rule.Status.Conditions) > 0, err
	})
	cluster.Eventually(t, 30*time.Second, "the device eviction in /metrics", func(ctx context.Context) (bool, error) {
		ms, err := r.scrape(ctx)
		if err != nil {
			return false, err
		}
		if v, ok := series(ms, "device_taint_eviction_controller_pod_deletions_total"); !ok || v != 1 {
			return false, fmt.Errorf("device_taint_eviction_controller_pod_deletions_total = %g (found %v), want 1", v, ok)
		}
		if _, ok := ms["# TYPE device_taint_eviction_controller_pod_deletion_duration_seconds histogram"]; !ok {
			return false, errors.New("no histogram device_taint_eviction_controller_pod_deletion_duration_seconds")
		}
		if n, _ := series(ms, "device_taint_eviction_controller_pod_deletion_duration_seconds_count"); n != 1 {
			return false, fmt.Errorf("device_taint_eviction_controller_pod_deletion_duration_seconds_count = %g, want 1", n)
		}
		return true, nil
	})

	// The leader's health and readiness endpoints.
	for _, path := range []string{"/healthz", "/readyz"} {
		url := strings.TrimSuffix(r.metrics, "/metrics") + path
		resp, err := http.Get(url)
		if err != nil {
			t.Errorf("GET %s: %v", url, err)
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
			t.Errorf("GET %s = %s %q, want 200 ok", url, resp.Status, body)
		}
	}

}

func TestDeployFailover(t *testing.T) {
	const tol = 12 // seconds: the pod whose countdown crosses the failover
	nodes := []worldNode{{"n1", "zone-a"}, {"n2", "zone-a"}, {"n3", "zone-a"}}
	pods := []worldPod{{"n1-tol", "n1", tol}, {"n1-zero", "n1", 0}, {"n1-none", "n1", tolNone}}
	e := newDepEnv(t, nodes, pods, "n1")
	ra, rb := e.startReplica("nc-a"), e.startReplica("nc-b")
	leader := e.waitLeader(t, ra, rb)
	standby := map[*replica]*replica{ra: rb, rb: ra}[leader]
	ctx := context.Background()
	l1, err := e.leaderLease(ctx)
	if err != nil {
		t.Fatalf("leader election Lease: %v", err)
	}
	t.Logf("leader %s (%s), standby %s", leader.name, ptr.Deref(l1.Spec.HolderIdentity, ""), standby.name)
	waitNoAdmissionTaints(t, e.cs, nodes, leader.proc)

	// The device duty's restart safety: the leader evicts a pod for a
	// DeviceTaintRule (the pod, bound to a node no agent runs, stays
	// terminating) and saves that in the snapshot ConfigMap.
	ds := devScenario{name: "rule", pods: []string{"p"}, trigger: trigRule, evicted: []string{"p"}}
	setupDeviceWorld(t, e.cs, []devScenario{ds})
	if _, err := e.cs.ResourceV1().DeviceTaintRules().Create(ctx, devTaintRule(ds, resourcev1.DeviceTaintEffectNoExecute, time.Now()), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 30*time.Second, "the device pod evicted by the leader, and saved", func(ctx context.Context) (bool, error) {
		p, err := e.cs.CoreV1().Pods(ds.ns()).Get(ctx, "p", metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp == nil {
			return false, err
		}
		cm, err := e.cs.CoreV1().ConfigMaps(l1.Namespace).Get(ctx, l1.Name+"-snapshot", metav1.GetOptions{})
		return err == nil && len(cm.BinaryData["devicetaints.json.gz"]) > 0, err
	})

	// n1 goes silent and is tainted at T (timeAdded); the leader evicts the
	// 0 s pod; the 12 s pod counts down from T.
	if _, err := e.world.silence(t); err != nil {
		t.Fatal(err)
	}
	T := waitUnreachableTaint(t, e.cs, "n1", depGrace+60*time.Second, nil)
	due := T.Add(tol * time.Second)
	cluster.Eventually(t, 30*time.Second, "pod n1-zero evicted by the leader", func(ctx context.Context) (bool, error) {
		p, err := e.cs.CoreV1().Pods(parityNS).Get(ctx, "n1-zero", metav1.GetOptions{})
		return err == nil && p.DeletionTimestamp != nil, err
	})

	// SIGKILL the leader in the middle of the countdown.
	time.Sleep(time.Until(T.Add(3 * time.Second)))
	leader.proc.Kill()
	killed := time.Now()
	t.Logf("leader %s killed at %s (timeAdded T %s + %v); n1-tol due at %s", leader.name, stamp(killed), stamp(T), killed.Sub(T).Round(time.Millisecond), stamp(due))

	// The standby takes over within the lease duration (plus a retry period
	// and the machine's noise).
	var l2 *coordinationv1.Lease
	cluster.Eventually(t, 30*time.Second, "the standby acquires the lease", func(ctx context.Context) (bool, error) {
		l, err := e.leaderLease(ctx)
		if err != nil {
			return false, err
		}
		l2 = l
		return ptr.Deref(l.Spec.HolderIdentity, "") != ptr.Deref(l1.Spec.HolderIdentity, ""), nil
	})
	acquired := l2.Spec.AcquireTime.Time
	takeover := acquired.Sub(killed)
	t.Logf("%s (%s) acquired the lease at %s, %v after the kill", standby.name, ptr.Deref(l2.Spec.HolderIdentity, ""), stamp(acquired), takeover.Round(time.Millisecond))
	if limit := depLease + depRetry + 2*time.Second; takeover > limit {
		t.Errorf("takeover %v after the kill, want within the lease duration %v (+ retry %v + 2 s)", takeover, depLease, depRetry)
	}
	if v := e.waitLeader(t, standby); v != standby {
		t.Fatalf("leader after the kill: %s", v.name)
	}

	// n1-tol is evicted at T + tol, not later (nor earlier).
	var pod *v1.Pod
	cluster.Eventually(t, time.Until(due)+30*time.Second, "pod n1-tol evicted", func(ctx context.Context) (bool, error) {
		p, err := e.cs.CoreV1().Pods(parityNS).Get(ctx, "n1-tol", metav1.GetOptions{})
		pod = p
		return err == nil && p.DeletionTimestamp != nil, err
	})
	deleted := pod.DeletionTimestamp.Add(-30 * time.Second) // the Delete's whole second
	t.Logf("n1-tol: deletionTimestamp %s (deleted in second %s), due %s", stamp(pod.DeletionTimestamp.Time), stamp(deleted), stamp(due))
	if deleted.Before(due.Truncate(time.Second)) {
		t.Errorf("n1-tol deleted in second %s, before timeAdded %s + %ds", stamp(deleted), stamp(T), tol)
	}
	if n, err := e.cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if tk := findTaint(n, unreachableNoExecute); tk == nil || tk.TimeAdded == nil || !tk.TimeAdded.Time.Equal(T) {
		t.Errorf("n1's NoExecute taint after the failover = %s, want timeAdded %s kept", jsonString(tk), stamp(T))
	}

	// The new leader restored the device snapshot: the terminating pod is
	// neither counted again nor written, and its rule keeps its count
	// (upstream's would count it again and say NotStarted).
	cluster.Eventually(t, 30*time.Second, "the rule's status after the failover", func(ctx context.Context) (bool, error) {
		r, err := e.cs.ResourceV1().DeviceTaintRules().Get(ctx, ds.ns(), metav1.GetOptions{})
		if err != nil || len(r.Status.Conditions) == 0 {
			return false, err
		}
		c := r.Status.Conditions[0]
		if c.Reason != "Completed" || c.Message != "1 pod evicted since starting the controller." {
			return false, fmt.Errorf("condition %s %q, want Completed with the count", c.Reason, c.Message)
		}
		return true, nil
	})
	if ms, err := standby.scrape(ctx); err != nil {
		t.Error(err)
	} else if v, ok := series(ms, "device_taint_eviction_controller_pod_deletions_total"); !ok || v != 0 {
		t.Errorf("the new leader's device_taint_eviction_controller_pod_deletions_total = %g (found %v), want 0", v, ok)
	}

	standby.proc.Stop(10 * time.Second)
	byReplica, all := e.saRequests(t)
	checkNoRefusal(t, all)
	for _, ev := range byReplica[standby.name] {
		if isWrite(&ev) && ev.ObjectRef != nil && ev.ObjectRef.Resource == "pods" && ev.ObjectRef.Namespace == ds.ns() {
			t.Errorf("the new leader wrote the device pod the old one evicted: %s %s", ev.Verb, ev.RequestURI)
		}
	}
	// Who wrote what, and when: the killed leader only before the kill, the
	// new one only from its acquireTime on; the delete of n1-tol by the new
	// leader, at T + tol + at most 3 s.
	for name, evs := range byReplica {
		var writes int
		for _, ev := range evs {
			if !isWrite(&ev) || ev.ObjectRef == nil || ev.ObjectRef.Resource == "leases" {
				continue // leader election itself
			}
			writes++
			at := ev.RequestReceivedTimestamp
			switch name {
			case leader.name:
				if at.After(killed) {
					t.Errorf("%s (killed at %s) wrote at %s: %s %s", name, stamp(killed), stamp(at), ev.Verb, ev.RequestURI)
				}
			case standby.name:
				if at.Before(acquired.Truncate(time.Microsecond)) {
					t.Errorf("%s wrote at %s, before it acquired the lease at %s: %s %s", name, stamp(at), stamp(acquired), ev.Verb, ev.RequestURI)
				}
			default:
				t.Errorf("a write by replica %q: %s %s", name, ev.Verb, ev.RequestURI)
			}
			if ev.Verb == "delete" && ev.ObjectRef.Resource == "pods" && ev.ObjectRef.Name == "n1-tol" && ev.Code() < 300 {
				if name != standby.name {
					t.Errorf("n1-tol deleted by %s, want the new leader %s", name, standby.name)
				}
				if at.Before(due) || at.After(due.Add(3*time.Second)) {
					t.Errorf("n1-tol deleted at %s, want in [%s, %s] (timeAdded + %ds, + 3 s)", stamp(at), stamp(due), stamp(due.Add(3*time.Second)), tol)
				}
				t.Logf("n1-tol deleted by %s at %s: timeAdded + %ds + %v", name, stamp(at), tol, at.Sub(due).Round(time.Millisecond))
			}
		}
		t.Logf("replica %s: %d requests, %d writes to nodes, pods and events", name, len(evs), writes)
	}
	if len(byReplica[standby.name]) == 0 {
		t.Errorf("no request by the new leader %s in the audit log", standby.name)
	}
}
