package agent

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubelifecycle/lifecycle/podworker"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type fixture struct {
	t      *testing.T
	clk    *clocktesting.FakeClock
	client *fake.Clientset
	rt     *FakeRuntime
	a      *Agent
	ctx    context.Context
}

func newFixture(t *testing.T, mutate func(*Config), objs ...*v1.Pod) *fixture {
	t.Helper()
	f := &fixture{t: t, clk: clocktesting.NewFakeClock(epoch), client: fake.NewClientset(), ctx: context.Background()}
	f.rt = NewFakeRuntime(f.clk)
	cfg := DefaultConfig()
	cfg.Nodes = []NodeConfig{{Name: "n1", Labels: map[string]string{v1.LabelTopologyZone: "z1"}}}
	cfg.Runtime = f.rt
	cfg.PodWorker = podworker.Config{ResyncInterval: time.Minute, BackoffPeriod: 10 * time.Second}
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := New(f.client, f.clk, cfg)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	f.a = a
	for _, p := range objs {
		f.addPod(p)
	}
	return f
}

// addPod stores p in the API and the informer cache, as a watch would.
func (f *fixture) addPod(p *v1.Pod) *v1.Pod {
	f.t.Helper()
	got, err := f.client.CoreV1().Pods(p.Namespace).Create(f.ctx, p, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("Create(%s) = %v", p.Name, err)
	}
	if err := f.a.informer.GetIndexer().Add(got); err != nil {
		f.t.Fatal(err)
	}
	f.a.podEvent(nil, got)
	return got
}

// refresh copies the API's pod into the cache and sends the update.
func (f *fixture) refresh(p *v1.Pod) *v1.Pod {
	f.t.Helper()
	got, err := f.client.CoreV1().Pods(p.Namespace).Get(f.ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("Get(%s) = %v", p.Name, err)
	}
	old, _, _ := f.a.informer.GetIndexer().Get(got)
	_ = f.a.informer.GetIndexer().Update(got)
	f.a.podEvent(old, got)
	return got
}

// drain runs every due step synchronously and returns them.
func (f *fixture) drain() []podworker.Work {
	var out []podworker.Work
	for range 100 {
		w, ok := f.a.workers.Next(f.clk.Now())
		if !ok {
			return out
		}
		res := f.a.RunStep(f.ctx, w)
		f.a.workers.Complete(f.clk.Now(), w, res)
		out = append(out, w)
	}
	f.t.Fatal("drain: more than 100 steps")
	return nil
}

func steps(ws []podworker.Work) string {
	var b []string
	for _, w := range ws {
		b = append(b, w.Type.String())
	}
	return strings.Join(b, ",")
}

func pod(name string, uid types.UID) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid},
		Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Image: "img:1"}}}}
}

func TestConfigValidation(t *testing.T) {
	rt := NewFakeRuntime(clocktesting.NewFakeClock(epoch))
	base := func() Config {
		c := DefaultConfig()
		c.Nodes, c.Runtime = []NodeConfig{{Name: "n1"}}, rt
		return c
	}
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no node", func(c *Config) { c.Nodes = nil }, "no node"},
		{"duplicate", func(c *Config) { c.Nodes = append(c.Nodes, NodeConfig{Name: "n1"}) }, "duplicated"},
		{"too many", func(c *Config) { c.Nodes = make([]NodeConfig, MaxNodes+1) }, "limit of 10000"},
		{"no runtime", func(c *Config) { c.Runtime = nil }, "no runtime"},
		{"zero period", func(c *Config) { c.HousekeepingPeriod = 0 }, "positive"},
		{"zero status sync", func(c *Config) { c.StatusSyncPeriod = 0 }, "StatusSyncPeriod and HousekeepingPeriod must be positive"},
		{"negative report frequency", func(c *Config) { c.StatusReportFrequency = -time.Second }, "StatusReportFrequency -1s is negative"},
		{"parallelism", func(c *Config) { c.Parallelism = 0 }, "Parallelism 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.mutate(&c)
			_, err := New(fake.NewClientset(), clocktesting.NewFakeClock(epoch), c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestNodeRegistrationLeaseAndStatus: the node is registered with its
// labels, its Lease is created then renewed with the resourceVersion, and
// its status carries the kubelet's four conditions; a condition change
// moves only that condition's transition time.
func TestNodeRegistrationLeaseAndStatus(t *testing.T) {
	f := newFixture(t, nil)
	if err := f.a.RegisterNode(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	n, err := f.client.CoreV1().Nodes().Get(f.ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels[v1.LabelTopologyZone] != "z1" || n.Labels[v1.LabelHostname] != "n1" {
		t.Errorf("node labels = %v, want zone z1 and hostname n1", n.Labels)
	}
	// The kubelet's OS and architecture labels, stable and beta: without the
	// beta ones the node lifecycle controller would patch them in.
	for _, k := range []string{v1.LabelOSStable, v1.LabelArchStable, "beta.kubernetes.io/os", "beta.kubernetes.io/arch"} {
		if n.Labels[k] == "" {
			t.Errorf("node label %s missing: %v", k, n.Labels)
		}
	}
	// The fake assigns no UID; give the node one and register again (the
	// agent adopts an existing Node).
	n.UID = "node-uid"
	if _, err := f.client.CoreV1().Nodes().Update(f.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.a.RegisterNode(f.ctx, "n1"); err != nil {
		t.Errorf("RegisterNode(existing) = %v, want nil", err)
	}

	if err := f.a.RenewLease(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	f.clk.Step(10 * time.Second)
	if err := f.a.RenewLease(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	l, err := f.client.CoordinationV1().Leases(LeaseNamespace).Get(f.ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *l.Spec.HolderIdentity != "n1" || *l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(epoch.Add(10*time.Second)) {
		t.Errorf("lease = holder %s, duration %d, renew %v; want n1, 40, epoch+10s", *l.Spec.HolderIdentity, *l.Spec.LeaseDurationSeconds, l.Spec.RenewTime)
	}
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" {
		t.Errorf("lease owners = %v, want the node", l.OwnerReferences)
	}
	var updates int
	for _, act := range f.client.Actions() {
		if act.GetVerb() == "update" && act.GetResource().Resource == "leases" {
			updates++
		}
	}
	if updates != 1 {
		t.Errorf("lease updates = %d, want 1 (the first call creates)", updates)
	}

	if err := f.a.PostNodeStatus(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	f.clk.Step(5 * time.Second)
	if err := f.a.SetNodeCondition("n1", v1.NodeMemoryPressure, v1.ConditionTrue); err != nil {
		t.Fatal(err)
	}
	if err := f.a.PostNodeStatus(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	n, _ = f.client.CoreV1().Nodes().Get(f.ctx, "n1", metav1.GetOptions{})
	want := map[v1.NodeConditionType]struct {
		s          v1.ConditionStatus
		reason     string
		transition time.Time
	}{
		v1.NodeReady:          {v1.ConditionTrue, "KubeletReady", epoch.Add(10 * time.Second)},
		v1.NodeMemoryPressure: {v1.ConditionTrue, "KubeletHasInsufficientMemory", epoch.Add(15 * time.Second)},
		v1.NodeDiskPressure:   {v1.ConditionFalse, "KubeletHasNoDiskPressure", epoch.Add(10 * time.Second)},
		v1.NodePIDPressure:    {v1.ConditionFalse, "KubeletHasSufficientPID", epoch.Add(10 * time.Second)},
	}
	if len(n.Status.Conditions) != len(want) {
		t.Fatalf("conditions = %v, want 4", n.Status.Conditions)
	}
	for _, c := range n.Status.Conditions {
		w := want[c.Type]
		if c.Status != w.s || c.Reason != w.reason || !c.LastTransitionTime.Time.Equal(w.transition) || !c.LastHeartbeatTime.Time.Equal(epoch.Add(15*time.Second)) {
			t.Errorf("condition %s = %s/%s transition %v heartbeat %v, want %s/%s transition %v heartbeat epoch+15s",
				c.Type, c.Status, c.Reason, c.LastTransitionTime, c.LastHeartbeatTime, w.s, w.reason, w.transition)
		}
	}
	if err := f.a.SetNodeCondition("n1", "NetworkUnavailable", v1.ConditionTrue); err == nil {
		t.Error("SetNodeCondition(NetworkUnavailable) = nil, want an error")
	}
}

// TestGracefulDeletion: the pod starts (status Running, Ready), the API
// sets a deletionTimestamp, the agent kills with the pod's grace period,
// writes the final status and deletes the pod with grace 0 and a UID
// precondition.
func TestGracefulDeletion(t *testing.T) {
	f := newFixture(t, nil)
	p := f.addPod(pod("p", "u1"))
	if got := steps(f.drain()); got != "sync" {
		t.Fatalf("steps = %s, want sync", got)
	}
	if !f.rt.Running("u1") {
		t.Fatal("runtime: u1 not running after sync")
	}
	p = f.refresh(p)
	if p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Running == nil {
		t.Fatalf("status = %+v, want Running with a running container", p.Status)
	}
	if c := podCond(p, v1.PodReady); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("Ready condition = %v, want True", c)
	}

	f.clk.Step(time.Second)
	del := p.DeepCopy()
	del.DeletionTimestamp = &metav1.Time{Time: f.clk.Now().Add(30 * time.Second)}
	del.DeletionGracePeriodSeconds = ptr.To(int64(30))
	if _, err := f.client.CoreV1().Pods("ns").Update(f.ctx, del, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh(del)
	f.client.ClearActions()
	ws := f.drain()
	if got := steps(ws); got != "terminating,terminated" {
		t.Fatalf("steps = %s, want terminating,terminated", got)
	}
	if g := *ws[0].GracePeriod; g != 30 {
		t.Errorf("grace = %d, want the pod's 30", g)
	}
	if _, ok := f.rt.Pod("u1"); ok {
		t.Error("runtime still holds u1")
	}
	var sawStatus, sawDelete bool
	for _, act := range f.client.Actions() {
		switch a := act.(type) {
		case k8stesting.UpdateAction:
			if act.GetVerb() == "update" && act.GetSubresource() == "status" {
				st := a.GetObject().(*v1.Pod).Status
				sawStatus = st.Phase == v1.PodSucceeded && st.ContainerStatuses[0].State.Terminated != nil
			}
		case k8stesting.DeleteAction:
			o := a.GetDeleteOptions()
			sawDelete = o.GracePeriodSeconds != nil && *o.GracePeriodSeconds == 0 &&
				o.Preconditions != nil && o.Preconditions.UID != nil && *o.Preconditions.UID == "u1"
		}
	}
	if !sawStatus || !sawDelete {
		t.Errorf("final status written %v (want Succeeded, terminated), delete with grace 0 and UID precondition %v; actions %v", sawStatus, sawDelete, f.client.Actions())
	}
	if c := f.a.Counters(); c.PodsDeleted != 1 {
		t.Errorf("PodsDeleted = %d, want 1", c.PodsDeleted)
	}
}

func podCond(p *v1.Pod, typ v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// TestForceDeleteWhileRuntimeFails (kubernetes/kubernetes#113091): a pod is
// force-deleted while the runtime fails kills. Nothing more arrives from
// the API, yet the workers retry the kill every backoff period; once the
// runtime recovers the container is killed, the worker finishes and the
// next housekeeping forgets it.
func TestForceDeleteWhileRuntimeFails(t *testing.T) {
	f := newFixture(t, nil)
	p := f.addPod(pod("p", "u1"))
	f.drain()
	f.rt.Fail(FailKills, 0)
	if err := f.client.CoreV1().Pods("ns").Delete(f.ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	_ = f.a.informer.GetIndexer().Delete(p)
	gone := p.DeepCopy()
	gone.DeletionTimestamp = &metav1.Time{Time: f.clk.Now()}
	gone.DeletionGracePeriodSeconds = new(int64)
	f.a.podDeleted(gone)
	f.a.Housekeeping(f.ctx)
	for i := range 3 {
		ws := f.drain()
		if got := steps(ws); got != "terminating" {
			t.Fatalf("attempt %d: steps = %s, want terminating", i, got)
		}
		if *ws[0].GracePeriod != 1 {
			t.Errorf("force delete grace = %d, want 1", *ws[0].GracePeriod)
		}
		f.clk.Step(10 * time.Second)
		f.a.Housekeeping(f.ctx)
	}
	if !f.rt.Running("u1") {
		t.Fatal("u1 stopped although kills fail")
	}
	if s := f.a.PublishedStats(); s.WorkingPods(podworker.TerminatingWork, podworker.ConfigOrphan, false) != 1 {
		t.Errorf("working terminating/orphan = %d, want 1 (%+v)", s.WorkingPods(podworker.TerminatingWork, podworker.ConfigOrphan, false), s.Working)
	}
	f.rt.Recover()
	if got := steps(f.drain()); got != "terminating,terminated" {
		t.Fatalf("after recovery steps = %s, want terminating,terminated", got)
	}
	if _, ok := f.rt.Pod("u1"); ok {
		t.Error("runtime still holds u1 after recovery")
	}
	f.a.Housekeeping(f.ctx)
	if s := f.a.PublishedStats(); s.Known != 0 {
		t.Errorf("Known = %d after housekeeping, want 0", s.Known)
	}
	if _, failed := f.rt.Calls("KillPod"); failed != 3 {
		t.Errorf("failed kills = %d, want 3", failed)
	}
}

// TestRestartKillsOrphans: a new agent over a runtime that still runs a pod
// the API no longer has kills it (grace 1) on its first housekeeping, and
// counts it in kubelet_orphaned_runtime_pods_total; a pod the API still
// has is adopted, not killed.
func TestRestartKillsOrphans(t *testing.T) {
	f := newFixture(t, nil)
	kept := pod("kept", "u-kept")
	if _, err := f.rt.StartPod(f.ctx, "n1", kept); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rt.StartPod(f.ctx, "n1", pod("gone", "u-gone")); err != nil {
		t.Fatal(err)
	}
	f.addPod(kept)
	f.a.Housekeeping(f.ctx)
	ws := f.drain()
	if got := steps(ws); got != "sync,terminating" && got != "terminating,sync" {
		t.Fatalf("steps = %s, want a sync (kept) and a runtime-only terminating (gone)", got)
	}
	if _, ok := f.rt.Pod("u-gone"); ok {
		t.Error("orphan u-gone still in the runtime")
	}
	if !f.rt.Running("u-kept") {
		t.Error("u-kept was killed")
	}
	f.a.Housekeeping(f.ctx)
	if s := f.a.PublishedStats(); s.OrphanedRuntimePods != 1 {
		t.Errorf("OrphanedRuntimePods = %d, want 1", s.OrphanedRuntimePods)
	}
}

// TestStaticPodUIDReuse: a static pod's manifest is removed and written
// again with the same UID while the pod terminates (its kills fail). The
// new instance is dropped (restart requested), starts only after the old
// one finished, and counts in kubelet_restarted_pods_total{static="true"};
// the mirror pod carries the hash and follows.
func TestStaticPodUIDReuse(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, func(c *Config) { c.StaticPodPath = dir })
	manifest := func(image string) {
		t.Helper()
		m := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  uid: static-1\nspec:\n  containers:\n  - name: c\n    image: " + image + "\n"
		if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	manifest("img:1")
	f.a.SyncStaticPods(f.ctx)
	if got := steps(f.drain()); got != "sync" {
		t.Fatalf("steps = %s, want sync", got)
	}
	if !f.rt.Running("static-1") {
		t.Fatal("static pod not running")
	}
	mirror, err := f.client.CoreV1().Pods("default").Get(f.ctx, "web-n1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("mirror pod: %v", err)
	}
	if mirror.Annotations[MirrorAnnotation] != "static-1" || mirror.Annotations[podworker.ConfigSourceAnnotation] != "file" {
		t.Errorf("mirror annotations = %v", mirror.Annotations)
	}

	f.rt.Fail(FailKills, 0)
	if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	f.a.SyncStaticPods(f.ctx)
	ws := f.drain()
	if got := steps(ws); got != "terminating" {
		t.Fatalf("after removal steps = %s, want a failing terminating", got)
	}
	if g := *ws[0].GracePeriod; g != 30 {
		t.Errorf("static pod grace = %d, want the API default 30", g)
	}
	manifest("img:2")
	f.a.SyncStaticPods(f.ctx)
	f.a.Housekeeping(f.ctx)
	if got := steps(f.drain()); got != "" {
		t.Fatalf("steps while the old instance's kill backs off = %s, want none", got)
	}
	f.rt.Recover()
	f.clk.Step(10 * time.Second)
	if got := steps(f.drain()); got != "terminating,terminated" {
		t.Fatalf("steps = %s, want the old instance to finish first", got)
	}
	if f.rt.Running("static-1") {
		t.Fatal("new instance started before the old one finished")
	}
	f.a.Housekeeping(f.ctx) // purges the finished record and restarts
	ws = f.drain()
	if got := steps(ws); got != "sync" {
		t.Fatalf("after housekeeping steps = %s, want sync", got)
	}
	if img := ws[0].Pod.Spec.Containers[0].Image; img != "img:2" {
		t.Errorf("restarted with image %s, want img:2", img)
	}
	if !f.rt.Running("static-1") {
		t.Error("new instance not running")
	}
	f.a.Housekeeping(f.ctx)
	if s := f.a.PublishedStats(); s.RestartedStaticPods != 1 || s.MirrorPods != 1 {
		t.Errorf("RestartedStaticPods = %d, MirrorPods = %d, want 1 and 1", s.RestartedStaticPods, s.MirrorPods)
	}
}

// TestMetricsNames: the collector exports the kubelet's names and types.
func TestMetricsNames(t *testing.T) {
	f := newFixture(t, nil)
	f.addPod(pod("p", "u1"))
	f.drain()
	f.a.Housekeeping(f.ctx)
	reg := prometheus.NewRegistry()
	reg.MustRegister(f.a.Collector())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]dto.MetricType{
		"kubelet_desired_pods": dto.MetricType_GAUGE, "kubelet_active_pods": dto.MetricType_GAUGE,
		"kubelet_mirror_pods": dto.MetricType_GAUGE, "kubelet_working_pods": dto.MetricType_GAUGE,
		"kubelet_restarted_pods_total": dto.MetricType_COUNTER, "kubelet_orphaned_runtime_pods_total": dto.MetricType_COUNTER,
	}
	got := map[string]*dto.MetricFamily{}
	for _, fam := range fams {
		got[fam.GetName()] = fam
	}
	for name, typ := range want {
		fam, ok := got[name]
		if !ok || fam.GetType() != typ {
			t.Errorf("%s: present %v type %v, want %v", name, ok, fam.GetType(), typ)
		}
	}
	if n := len(got["kubelet_working_pods"].GetMetric()); n != 15 {
		t.Errorf("kubelet_working_pods series = %d, want 15", n)
	}
	for _, m := range got["kubelet_desired_pods"].GetMetric() {
		if m.GetLabel()[0].GetValue() == "" && m.GetGauge().GetValue() != 1 {
			t.Errorf("kubelet_desired_pods{static=\"\"} = %v, want 1", m.GetGauge().GetValue())
		}
	}
}

// TestFakeRuntimeFaults: a fault for a period ends by itself; a stop that
// takes longer than the grace period ends with exit code 137.
func TestFakeRuntimeFaults(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	rt := NewFakeRuntime(clk)
	ctx := context.Background()
	p := pod("p", "u1")
	rt.Fail(FailAll, 5*time.Second)
	if _, err := rt.StartPod(ctx, "n1", p); err == nil {
		t.Fatal("StartPod during FailAll = nil")
	}
	clk.Step(5 * time.Second)
	if _, err := rt.StartPod(ctx, "n1", p); err != nil {
		t.Fatalf("StartPod after the fault = %v", err)
	}
	rt.Fail(FailKills, 0)
	if _, err := rt.ListPods(ctx); err != nil {
		t.Errorf("ListPods during FailKills = %v", err)
	}
	if _, err := rt.KillPod(ctx, podworker.RunningPod{UID: "u1"}, time.Second); err == nil {
		t.Error("KillPod during FailKills = nil")
	}
	rt.Recover()
	rt.SetStopDelay(3 * time.Second)
	done := make(chan RuntimePod)
	go func() {
		rp, _ := rt.KillPod(ctx, podworker.RunningPod{UID: "u1"}, 2*time.Second)
		done <- rp
	}()
	for !clk.HasWaiters() {
		runtime.Gosched() // until the goroutine blocks on the fake clock
	}
	clk.Step(2 * time.Second)
	if rp := <-done; rp.Running || rp.ExitCode != 137 || !rp.FinishedAt.Equal(epoch.Add(7*time.Second)) {
		t.Errorf("KillPod past grace = %+v, want stopped with 137 at epoch+7s", rp)
	}
}

// hookRuntime runs hook once, at the start of the next ListPods.
type hookRuntime struct {
	*FakeRuntime
	hook func()
}

func (r *hookRuntime) ListPods(ctx context.Context) ([]RuntimePod, error) {
	if h := r.hook; h != nil {
		r.hook = nil
		h()
	}
	return r.FakeRuntime.ListPods(ctx)
}

// TestHousekeepingRaceWithNewPod: a pod that arrives and starts while
// housekeeping runs (here: just as the runtime is listed) is neither
// taken for an orphan nor killed as a runtime pod unknown to the workers.
// Found by the scale test: 27 of 15,000 new pods were killed this way when
// the runtime was listed after SyncKnownPods.
func TestHousekeepingRaceWithNewPod(t *testing.T) {
	var hr *hookRuntime
	f := newFixture(t, func(c *Config) {
		hr = &hookRuntime{FakeRuntime: c.Runtime.(*FakeRuntime)}
		c.Runtime = hr
	})
	hr.hook = func() {
		// A worker starts the pod between the config snapshot and the
		// listing (no configMu: the Create came just before housekeeping).
		p, err := f.client.CoreV1().Pods("ns").Create(f.ctx, pod("late", "u-late"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = f.a.informer.GetIndexer().Add(p)
		f.a.update(podworker.UpdateOptions{Type: podworker.TypeCreate, Pod: p})
		f.drain()
	}
	f.a.Housekeeping(f.ctx)
	if ws := f.drain(); len(ws) != 0 {
		t.Errorf("steps after housekeeping = %s, want none (the new pod keeps running)", steps(ws))
	}
	if !f.rt.Running("u-late") {
		t.Error("the new pod was killed by housekeeping")
	}
	if s := f.a.PublishedStats(); s.OrphanedRuntimePods != 0 {
		t.Errorf("OrphanedRuntimePods = %d, want 0", s.OrphanedRuntimePods)
	}
}

// setPodReady writes the pod's Ready condition as another writer (the
// node lifecycle controller's MarkPodsNotReady) does, and delivers the
// update to the agent.
func (f *fixture) setPodReady(p *v1.Pod, st v1.ConditionStatus) *v1.Pod {
	f.t.Helper()
	cur, err := f.client.CoreV1().Pods(p.Namespace).Get(f.ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	if c := podCond(cur, v1.PodReady); c != nil {
		c.Status = st
	}
	if _, err := f.client.CoreV1().Pods(p.Namespace).UpdateStatus(f.ctx, cur, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	return f.refresh(p)
}

// TestPodReadinessPutBackAtStatusSync: a running pod another writer marks
// Ready=False (the node lifecycle controller on a node it thinks Unknown)
// is not written back at once, as the kubelet does not sync a pod for a
// status-only change, nor by its periodic resync, whose status is the
// agent's cached one, but at the next status sync (the kubelet's status
// manager, every 10 s), which writes Ready=True. A pod being deleted is
// left alone.
func TestPodReadinessPutBackAtStatusSync(t *testing.T) {
	f := newFixture(t, nil)
	p := f.addPod(pod("p", "u1"))
	if got := steps(f.drain()); got != "sync" {
		t.Fatalf("steps = %s, want sync", got)
	}
	p = f.refresh(p)
	if c := podCond(p, v1.PodReady); c == nil || c.Status != v1.ConditionTrue {
		t.Fatalf("Ready = %v after the first sync, want True", c)
	}

	p = f.setPodReady(p, v1.ConditionFalse)
	if got := steps(f.drain()); got != "" {
		t.Errorf("steps after a status-only update = %q, want none (a reconcile waits for the status sync)", got)
	}
	if c := podCond(f.refresh(p), v1.PodReady); c.Status != v1.ConditionFalse {
		t.Errorf("Ready = %s before the status sync, want the other writer's False", c.Status)
	}
	// The pod's periodic resync writes nothing: the status is the one the
	// agent wrote, as far as it knows (the kubelet's status cache).
	f.clk.Step(time.Minute + time.Second)
	if got := steps(f.drain()); got != "sync" {
		t.Errorf("steps after the resync interval = %q, want sync", got)
	}
	if c := podCond(f.refresh(p), v1.PodReady); c.Status != v1.ConditionFalse {
		t.Errorf("Ready = %s after a resync, want the other writer's False until the status sync", c.Status)
	}

	if n := f.a.SyncStatuses(f.ctx); n != 1 {
		t.Errorf("SyncStatuses = %d, want 1 pod", n)
	}
	if got := steps(f.drain()); got != "sync" {
		t.Errorf("steps after the status sync = %q, want sync", got)
	}
	p = f.refresh(p)
	if c := podCond(p, v1.PodReady); c.Status != v1.ConditionTrue {
		t.Errorf("Ready = %s after the status sync, want True", c.Status)
	}
	if n := f.a.SyncStatuses(f.ctx); n != 0 {
		t.Errorf("SyncStatuses with the status the agent's = %d, want 0", n)
	}

	// Being deleted: the status sync leaves it to its termination.
	p = f.setPodReady(p, v1.ConditionFalse)
	del := p.DeepCopy()
	del.DeletionTimestamp = &metav1.Time{Time: f.clk.Now().Add(30 * time.Second)}
	del.DeletionGracePeriodSeconds = ptr.To(int64(30))
	if _, err := f.client.CoreV1().Pods("ns").Update(f.ctx, del, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh(del)
	if n := f.a.SyncStatuses(f.ctx); n != 0 {
		t.Errorf("SyncStatuses with a pod being deleted = %d, want 0", n)
	}
	if c := f.a.Counters(); c.StatusSyncs != 3 || c.StatusResyncs != 1 || !c.LastStatusSync.Equal(f.clk.Now()) {
		t.Errorf("Counters: StatusSyncs %d, StatusResyncs %d, LastStatusSync %v; want 3, 1, %v", c.StatusSyncs, c.StatusResyncs, c.LastStatusSync, f.clk.Now())
	}
}

func TestPodsDifferSemantically(t *testing.T) {
	base := pod("p", "u1")
	base.Labels = map[string]string{"a": "1"}
	for _, tc := range []struct {
		name   string
		change func(*v1.Pod)
		want   bool
	}{
		{"status only", func(p *v1.Pod) { p.Status.Phase = v1.PodRunning; p.ResourceVersion = "9" }, false},
		{"uid", func(p *v1.Pod) { p.UID = "u2" }, true},
		{"spec", func(p *v1.Pod) { p.Spec.Containers[0].Image = "img:2" }, true},
		{"labels", func(p *v1.Pod) { p.Labels = map[string]string{"a": "2"} }, true},
		{"annotations", func(p *v1.Pod) { p.Annotations = map[string]string{"x": "y"} }, true},
		{"deletion", func(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: epoch} }, true},
		{"grace", func(p *v1.Pod) { p.DeletionGracePeriodSeconds = ptr.To(int64(5)) }, true},
	} {
		p := base.DeepCopy()
		tc.change(p)
		if got := podsDifferSemantically(base, p); got != tc.want {
			t.Errorf("%s: podsDifferSemantically = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestNodeStatusReportFrequency: with StatusReportFrequency, a status
// update tick posts only when the Node in the API differs from the
// agent's conditions (the node lifecycle controller's Ready=Unknown) or the
// report frequency has passed, as the kubelet's tryUpdateNodeStatus; at 0
// every tick posts.
func TestNodeStatusReportFrequency(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.StatusReportFrequency = 5 * time.Minute })
	if err := f.a.RegisterNode(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	tick := func(want bool) {
		t.Helper()
		f.clk.Step(10 * time.Second)
		if posted, err := f.a.UpdateNodeStatus(f.ctx, "n1"); err != nil || posted != want {
			t.Errorf("UpdateNodeStatus at %v = %v, %v; want %v", f.clk.Since(epoch), posted, err, want)
		}
	}
	tick(true) // never posted
	tick(false)
	n, err := f.client.CoreV1().Nodes().Get(f.ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n.Status.Conditions {
		if c := &n.Status.Conditions[i]; c.Type == v1.NodeReady {
			c.Status, c.Reason, c.Message = v1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
		}
	}
	if _, err := f.client.CoreV1().Nodes().UpdateStatus(f.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tick(true) // the controller's Unknown differs
	n, _ = f.client.CoreV1().Nodes().Get(f.ctx, "n1", metav1.GetOptions{})
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady && (c.Status != v1.ConditionTrue || c.Reason != "KubeletReady") {
			t.Errorf("Ready after the update = %s/%s, want True/KubeletReady", c.Status, c.Reason)
		}
	}
	tick(false)
	f.clk.Step(5 * time.Minute)
	tick(true) // the report frequency passed
	if c := f.a.Counters(); c.NodeStatusPosts != 3 {
		t.Errorf("NodeStatusPosts = %d, want 3", c.NodeStatusPosts)
	}

	every := newFixture(t, nil)
	if err := every.a.RegisterNode(every.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		every.clk.Step(10 * time.Second)
		if posted, err := every.a.UpdateNodeStatus(every.ctx, "n1"); err != nil || !posted {
			t.Errorf("UpdateNodeStatus without a report frequency = %v, %v; want a post at every tick", posted, err)
		}
	}
}
