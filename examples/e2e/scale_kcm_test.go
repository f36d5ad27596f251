//go:build linux

package e2e

// The scale test beside kube-controller-manager
// (LIFECYCLE_E2E_SCALE_KCM=1): the same workload, at two sizes, under
// kube-controller-manager v1.37.2 (only node-lifecycle-controller and
// taint-eviction-controller) and under examples/nodecontroller (the binary,
// built without -race), each on a fresh kube-apiserver with an audit log.
// Node agents (examples/nodeagent) in the test process play the kubelets
// of N nodes in 4 zones with 30 pods each; once both controllers have taken
// the nodes over and run steady for a minute, the agent of one zone stops
// (a zone lost: its nodes' last renewals spread over a renew interval, as
// when a zone's network goes). The test reports per controller and size:
// CPU seconds (steady minute, outage), RSS (end of the steady minute, peak),
// its API requests by verb (audit log, by user agent), the times from the
// zone's last renewal to the first Unknown write, the last taint patch and
// the last pod deletion, and the RSS slope per pod between the two sizes;
// and checks that no field the controller does not own changed on a sample
// of the lost zone's nodes and pods (scaleOwnedFields).
//
//	LIFECYCLE_E2E_SCALE_KCM=1 LIFECYCLE_E2E_SCALE_KCM_NODES=500,1000 \
//	LIFECYCLE_E2E_SCALE_KCM_SVG=$PWD/scale-rss.svg go test -run TestScaleBesideKCM -v -timeout 3h .

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/examples/nodeagent/agent"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

const (
	envScaleKCM      = "LIFECYCLE_E2E_SCALE_KCM"
	envScaleKCMNodes = "LIFECYCLE_E2E_SCALE_KCM_NODES" // sizes, "500,1000" when unset
	envScaleKCMSVG   = "LIFECYCLE_E2E_SCALE_KCM_SVG"   // where to write the RSS chart
	// envScaleKCMResults names a JSON file of results: those of earlier
	// runs are read from it and merged (a controller and size run again
	// replaces its old figures), and the merged set is written back after
	// each run, so that sizes can be run one invocation at a time.
	envScaleKCMResults = "LIFECYCLE_E2E_SCALE_KCM_RESULTS"
	// envScaleKCMOnly names the one controller to run
	// ("kube-controller-manager" or "nodecontroller"); unset: both.
	envScaleKCMOnly = "LIFECYCLE_E2E_SCALE_KCM_ONLY"
	// envScaleKCMGOGC is the GOGC the node controller runs with (unset:
	// the binary's own default, 25: examples/nodecontroller/gogc.go), to
	// measure memory against GC CPU.
	envScaleKCMGOGC  = "LIFECYCLE_E2E_SCALE_KCM_GOGC"
	scaleKCMZones    = 4
	scaleKCMLostZone = "zone-3"
	scaleKCMNS       = "scale"
)

// scaleParams are a scenario's sizes and timings, the same for both
// controllers.
type scaleParams struct {
	nodes, podsPerNode int
	renew              time.Duration // the agents' Lease renew interval
	grace, period      time.Duration // --node-monitor-grace-period, --node-monitor-period
	evictionRate       float64       // --node-eviction-rate (a lost zone among healthy ones uses it)
	tolerationSeconds  int64         // every pod's unreachable NoExecute toleration
	qps, burst         int           // --kube-api-qps/--kube-api-burst (per client on both sides)
	steady             time.Duration // the steady window measured before the outage
	outageWait         time.Duration // bound on the outage
	sample             int           // lost-zone nodes whose objects are checked for unowned changes
}

// scaleKCMParams is the scale scenario at n nodes: kubelet timings
// (renew 10 s, grace 40 s), eviction rate 2 nodes/s so that a lost zone of
// 250 nodes is tainted in about two minutes, a 60 s toleration so that the
// run stays short, and QPS 100 / burst 200 per client on both sides.
func scaleKCMParams(n int) scaleParams {
	return scaleParams{nodes: n, podsPerNode: 30, renew: 10 * time.Second, grace: 40 * time.Second, period: 5 * time.Second,
		evictionRate: 2, tolerationSeconds: 60, qps: 100, burst: 200, steady: time.Minute, outageWait: 20 * time.Minute, sample: 5}
}

func (p scaleParams) flags() []string {
	return []string{
		"--node-monitor-period=" + p.period.String(),
		"--node-monitor-grace-period=" + p.grace.String(),
		"--node-startup-grace-period=" + (p.grace + 20*time.Second).String(),
		fmt.Sprintf("--node-eviction-rate=%g", p.evictionRate),
		"--secondary-node-eviction-rate=0.01",
		"--large-cluster-size-threshold=50",
		"--unhealthy-zone-threshold=0.55",
		fmt.Sprintf("--kube-api-qps=%d", p.qps),
		fmt.Sprintf("--kube-api-burst=%d", p.burst),
	}
}

// scaleResult is one controller's figures at one size.
type scaleResult struct {
	Controller                 string
	Nodes, Pods                int
	CPUSteady, CPUOutage       time.Duration
	RSSSteady, RSSPeak         int64
	RSSSteadyMean              int64          // mean of the steady window's once-a-second RSS samples
	HeapSteady                 int64          // live heap after the last GC of the steady minute (gctrace; 0: unknown)
	Requests                   map[string]int // verb -> count
	FirstUnknown, LastTaint    time.Duration  // from the lost zone's last renewal
	LastDeletion               time.Duration
	Tainted, Deleted, LostPods int
	Events                     map[string]int // reason -> Events in the API at the end (scaleEvents)
	UnownedChanges             []string
	Took                       time.Duration
}

var plainNC struct {
	once sync.Once
	path string
	err  error
}

// plainNodeControllerBinary builds examples/nodecontroller without -race
// (memory and CPU figures), once per test binary.
func plainNodeControllerBinary(t *testing.T) string {
	t.Helper()
	plainNC.once.Do(func() {
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			plainNC.err = err
			return
		}
		dir, err := os.MkdirTemp("", "nodecontroller-plain-")
		if err != nil {
			plainNC.err = err
			return
		}
		plainNC.path = filepath.Join(dir, "nodecontroller")
		cmd := exec.Command("go", "build", "-o", plainNC.path, "./examples/nodecontroller")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			plainNC.err = fmt.Errorf("go build ./examples/nodecontroller: %v\n%s", err, out)
		}
	})
	if plainNC.err != nil {
		t.Fatalf("e2e: %v", plainNC.err)
	}
	return plainNC.path
}

// scaleAuditPolicy logs every request at Metadata level (verb, resource,
// user agent, times), except the node Leases' renewals and reads.
const scaleAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted", "Panic"]
rules:
- level: None
  namespaces: ["kube-node-lease"]
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
  verbs: ["get", "update", "patch", "create"]
- level: Metadata
`

func TestScaleBesideKCM(t *testing.T) {
	if os.Getenv(envScaleKCM) == "" {
		t.Skip("set " + envScaleKCM + "=1 to run both controllers at two sizes (500 and 1,000 nodes by default: about an hour)")
	}
	sizes := []int{500, 1000}
	if s := os.Getenv(envScaleKCMNodes); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < scaleKCMZones*2 {
				t.Fatalf("%s=%q: want sizes of at least %d nodes, comma-separated", envScaleKCMNodes, s, scaleKCMZones*2)
			}
			sizes = append(sizes, n)
		}
	}
	sides := []string{"kube-controller-manager", "nodecontroller"}
	if only := os.Getenv(envScaleKCMOnly); only != "" {
		if !slices.Contains(sides, only) {
			t.Fatalf("%s=%q: want one of %q", envScaleKCMOnly, only, sides)
		}
		sides = []string{only}
	}
	bins := binariesWithKCM(t)
	ours := plainNodeControllerBinary(t)
	resultsFile := os.Getenv(envScaleKCMResults)
	var results []scaleResult
	if resultsFile != "" {
		if b, err := os.ReadFile(resultsFile); err == nil {
			if err := json.Unmarshal(b, &results); err != nil {
				t.Fatalf("%s: %v", resultsFile, err)
			}
		}
	}
	for _, n := range sizes {
		for _, side := range sides {
			t.Run(fmt.Sprintf("%s/nodes=%d", side, n), func(t *testing.T) {
				p := scaleKCMParams(n)
				r := runScaleSide(t, p, bins, side, func(c *cluster.Cluster) (*cluster.Process, error) {
					if side == "nodecontroller" {
						// GODEBUG=gctrace=1 for this process only (the shell
						// execs it, keeping its PID): the live heap in its log.
						env := "GODEBUG=gctrace=1"
						if g := os.Getenv(envScaleKCMGOGC); g != "" {
							if _, err := strconv.Atoi(g); err != nil && g != "off" {
								t.Fatalf("%s=%q: want a percentage or off", envScaleKCMGOGC, g)
							}
							env += " GOGC=" + g
						}
						args := append([]string{"-c", env + ` exec "$0" "$@"`, ours,
							"-kubeconfig=" + c.Kubeconfig(), "-leader-elect=false", "-port=0"}, p.flags()...)
						return c.StartProcess("nodecontroller", "/bin/sh", args...)
					}
					return c.StartControllerManager(bins, []string{"node-lifecycle-controller", "taint-eviction-controller"}, p.flags()...)
				})
				results = slices.DeleteFunc(results, func(o scaleResult) bool { return o.Controller == r.Controller && o.Nodes == r.Nodes })
				results = append(results, r)
				sort.SliceStable(results, func(i, j int) bool { return results[i].Nodes < results[j].Nodes })
				t.Log(scaleTable([]scaleResult{r}))
				t.Log(scaleEventTable([]scaleResult{r}))
				if resultsFile != "" {
					b, _ := json.MarshalIndent(results, "", "  ")
					if err := os.WriteFile(resultsFile, b, 0o644); err != nil {
						t.Errorf("saving %s: %v", resultsFile, err)
					}
				}
			})
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("%s; load average %s\n%s", time.Now().UTC().Format("2006-01-02 15:04 MST"), strings.Join(strings.Fields(string(load))[:3], " "), scaleTable(results))
	t.Log(scaleEventTable(results))
	t.Log(scaleSlopes(results))
	if path := os.Getenv(envScaleKCMSVG); path != "" {
		if err := os.WriteFile(path, []byte(scaleSVG(results)), 0o644); err != nil {
			t.Errorf("writing %s: %v", path, err)
		}
	}
}

// runScaleSide runs the scenario on a fresh cluster under the controller
// start starts, and returns its figures.
func runScaleSide(t *testing.T, p scaleParams, bins cluster.Binaries, name string, start func(*cluster.Cluster) (*cluster.Process, error)) scaleResult {
	began := time.Now()
	r := scaleResult{Controller: name, Nodes: p.nodes, Pods: p.nodes * p.podsPerNode}
	dir := t.TempDir()
	policy, auditLog := filepath.Join(dir, "audit-policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(scaleAuditPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{Binaries: bins, Logf: t.Logf, ExtraAPIServerFlags: []string{
		"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog, "--audit-log-format=json",
		"--audit-log-mode=batch", "--audit-log-maxbackup=0", "--audit-log-maxsize=0"}})
	if err != nil {
		t.Fatalf("cluster.Start() = %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	cs := c.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scaleKCMNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The kubelets: one agent for the lost zone, one for the rest.
	var live, lost []agent.NodeConfig
	var lostNames []string
	for i := range p.nodes {
		zone := fmt.Sprintf("zone-%d", i%scaleKCMZones)
		nc := agent.NodeConfig{Name: fmt.Sprintf("n-%04d", i), Labels: map[string]string{v1.LabelTopologyRegion: ncRegion, v1.LabelTopologyZone: zone}}
		if zone == scaleKCMLostZone {
			lost, lostNames = append(lost, nc), append(lostNames, nc.Name)
		} else {
			live = append(live, nc)
		}
	}
	ac := agentClient(t, c)
	startGroup := func(group []agent.NodeConfig) *agentRun {
		cfg := agent.DefaultConfig()
		cfg.Nodes, cfg.Namespace = group, scaleKCMNS
		cfg.Runtime = agent.NewFakeRuntime(clock.RealClock{})
		cfg.LeaseDuration = p.grace
		cfg.LeaseRenewInterval = p.renew
		cfg.StatusUpdateFrequency = time.Hour // the Lease tells that a node is alive (nodeStatusReportFrequency)
		cfg.Parallelism = 32
		return startAgent(t, ac, cfg, 0)
	}
	_, lostAgent := startGroup(live), startGroup(lost) // the live group runs until the test ends
	wait := time.Duration(p.nodes/50+2) * time.Minute
	waitNodesReady(t, cs, wait, metav1.ListOptions{ResourceVersion: "0"}, p.nodes)

	// The pods, created in parallel (protobuf, as the kubelets' and the
	// controllers' clients).
	prc := c.Config()
	prc.QPS, prc.Burst = 500, 1000
	prc.ContentType = "application/vnd.kubernetes.protobuf"
	pc, err := kubernetes.NewForConfig(prc)
	if err != nil {
		t.Fatal(err)
	}
	var next atomic.Int64
	var createErr atomic.Value
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= r.Pods {
					return
				}
				node := i % p.nodes
				pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: scaleKCMNS, Name: fmt.Sprintf("p-%04d-%02d", node, i/p.nodes),
					Labels: map[string]string{"zone": fmt.Sprintf("zone-%d", node%scaleKCMZones)}},
					Spec: v1.PodSpec{NodeName: fmt.Sprintf("n-%04d", node),
						Containers:  []v1.Container{{Name: "c", Image: "registry.invalid/none:1", Env: []v1.EnvVar{{Name: "A", Value: "b"}}}},
						Tolerations: []v1.Toleration{unreachableToleration(testutil.Seconds(p.tolerationSeconds))}}}
				if _, err := pc.CoreV1().Pods(scaleKCMNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					createErr.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := createErr.Load().(error); err != nil {
		t.Fatalf("creating pods: %v", err)
	}
	cluster.Eventually(t, wait, fmt.Sprintf("%d pods Running", r.Pods), func(ctx context.Context) (bool, error) {
		l, err := pc.CoreV1().Pods(scaleKCMNS).List(ctx, metav1.ListOptions{ResourceVersion: "0", FieldSelector: "status.phase!=Running"})
		return err == nil && len(l.Items) == 0, err
	})
	t.Logf("%d nodes and %d pods Running after %v", p.nodes, r.Pods, time.Since(began).Round(time.Second))

	// The controller takes the nodes over (it removes the admission's
	// not-ready:NoSchedule), then runs steady.
	proc, err := start(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Stop(10 * time.Second) })
	worldNodes := make([]worldNode, p.nodes)
	for i := range worldNodes {
		worldNodes[i] = worldNode{name: fmt.Sprintf("n-%04d", i)}
	}
	takeover := time.Now()
	waitNoAdmissionTaints(t, cs, worldNodes, proc)
	t.Logf("%s took the %d nodes over in %v", name, p.nodes, time.Since(takeover).Round(100*time.Millisecond))
	cpu0, _, _, err := procStats(proc.PID())
	if err != nil {
		t.Fatal(err)
	}
	// RSS once a second through the steady window: where the Go heap is in
	// its GC cycle moves the RSS at one instant by up to the GC headroom,
	// so the mean is the steadier figure.
	var rssSum, samples int64
	for end := time.Now().Add(p.steady); time.Now().Before(end); {
		time.Sleep(min(time.Second, time.Until(end)))
		if _, rss, _, err := procStats(proc.PID()); err == nil {
			rssSum, samples = rssSum+rss, samples+1
		}
	}
	cpu1, rss, _, err := procStats(proc.PID())
	if err != nil {
		t.Fatal(err)
	}
	r.CPUSteady, r.RSSSteady = cpu1-cpu0, rss
	if samples > 0 {
		r.RSSSteadyMean = rssSum / samples
	}
	if h, ok := lastLiveHeap(proc.LogPath()); ok {
		r.HeapSteady = h
	}
	t.Logf("%s: RSS %s at the end of the steady window, %s on average over it; live heap %s after its last GC", name, mib(rss), mib(r.RSSSteadyMean), mib(r.HeapSteady))

	// What the controller may not change: a sample of the lost zone's
	// nodes and their pods, as the API holds them before the outage.
	sample := lostNames[:min(p.sample, len(lostNames))]
	before := scaleObjects(t, cs, sample)

	// The zone is lost: its agent stops.
	lostAgent.stop(t)
	origin := lastRenewal(t, cs, lostNames)
	t.Logf("zone %s lost: %d nodes, last renewal %s", scaleKCMLostZone, len(lostNames), stamp(origin))
	lostPods := len(lostNames) * p.podsPerNode
	r.LostPods = lostPods
	labelled := lostPods // the lost zone's pods that still carry their zone label
	var listErr error    // the last failed List, retried
	waitErr := utilwait.PollUntilContextTimeout(ctx, 100*time.Millisecond, p.outageWait, true, func(ctx context.Context) (bool, error) {
		if proc.Exited() {
			return false, fmt.Errorf("%s exited: %v", name, proc.Err())
		}
		l, err := pc.CoreV1().Pods(scaleKCMNS).List(ctx, metav1.ListOptions{ResourceVersion: "0", LabelSelector: "zone=" + scaleKCMLostZone})
		if err != nil {
			listErr = err
			return false, nil
		}
		if labelled = len(l.Items); labelled != lostPods {
			// Their kubelet is stopped, so no pod is finalized: a write
			// changed labels (a status PUT of a trimmed cached pod does).
			return true, nil
		}
		deleted := 0
		for i := range l.Items {
			if l.Items[i].DeletionTimestamp != nil {
				deleted++
			}
		}
		r.Deleted = deleted
		return deleted == lostPods, nil
	})
	time.Sleep(2 * p.period) // the last writes' Events and the audit batch
	// The fields first, whatever became of the deletions: a write that
	// changed what it does not own can also keep them from happening (a
	// status PUT of a trimmed cached object), and the finding is the write.
	r.UnownedChanges = scaleOwnedFields(before, scaleObjects(t, cs, sample))
	if name == "nodecontroller" {
		for _, d := range r.UnownedChanges {
			t.Errorf("nodecontroller changed a field it does not own: %s", d)
		}
	} else if len(r.UnownedChanges) > 0 {
		t.Logf("kube-controller-manager changed fields ours does not own: %v", r.UnownedChanges)
	}
	if labelled != lostPods {
		t.Fatalf("%s: %d of the lost zone's %d pods carry the label zone=%s; fields changed that it does not own: %v",
			name, labelled, lostPods, scaleKCMLostZone, r.UnownedChanges)
	}
	if waitErr != nil {
		t.Fatalf("e2e: the %d pods of the lost zone deleted: not within %v (%d deleted): %v (last List error: %v)", lostPods, p.outageWait, r.Deleted, waitErr, listErr)
	}
	cpu2, _, hwm, err := procStats(proc.PID())
	if err != nil {
		t.Fatal(err)
	}
	r.CPUOutage, r.RSSPeak = cpu2-cpu1, hwm
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1.LabelTopologyZone + "=" + scaleKCMLostZone})
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes.Items {
		if findTaint(&nodes.Items[i], v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}) != nil {
			r.Tainted++
		}
	}
	r.Events = scaleEvents(t, cs, p.period)
	proc.Stop(10 * time.Second)
	time.Sleep(2 * time.Second) // the audit batch is flushed at least every second
	if err := scaleAudit(auditLog, name, origin, &r); err != nil {
		t.Fatal(err)
	}
	r.Took = time.Since(began)
	if r.Tainted != len(lostNames) {
		t.Errorf("%s: %d of the lost zone's %d nodes tainted NoExecute, want all", name, r.Tainted, len(lostNames))
	}
	return r
}

// TestNodeControllerWritesOnlyOwnedFields: the trimmed informer cache
// never leaks into a write. examples/nodecontroller (the binary) takes 8
// nodes with 3 pods each (run by node agents: container statuses, five
// pod conditions, node addresses, capacity and info) over; one zone of two
// nodes is lost; its nodes go Unknown and are tainted, their pods are
// marked Ready=False and evicted (3 s toleration). On those nodes and pods
// nothing but the fields the controller owns has changed: a status PUT of
// a trimmed cached pod would have wiped its container statuses, its other
// conditions and its labels (a pod's status subresource takes labels and
// annotations from the request). The fields are compared as soon as the
// outage wait ends, however it ends, and before anything else can fail the
// test: checked by reverting the status writes to whole-status PUTs (the
// test then fails with one error per changed field, the wiped labels,
// conditions and container statuses).
func TestNodeControllerWritesOnlyOwnedFields(t *testing.T) {
	bins, err := cluster.FindBinaries()
	if err != nil {
		if cluster.Required() {
			t.Fatalf("e2e: %v", err)
		}
		t.Skipf("e2e: %v", err)
	}
	ours := nodeControllerBinary(t)
	p := scaleParams{nodes: 8, podsPerNode: 3, renew: time.Second, grace: 4 * time.Second, period: time.Second,
		evictionRate: 10, tolerationSeconds: 3, qps: 100, burst: 200, steady: 2 * time.Second, outageWait: time.Minute, sample: 2}
	r := runScaleSide(t, p, bins, "nodecontroller", func(c *cluster.Cluster) (*cluster.Process, error) {
		args := append([]string{"-kubeconfig=" + c.Kubeconfig(), "-leader-elect=false", "-port=0"}, p.flags()...)
		return c.StartProcess("nodecontroller", ours, args...)
	})
	t.Log(scaleTable([]scaleResult{r}))
}

// lastLiveHeap is the live heap the last gctrace line of a log reports
// ("gc N @Ts P%: ..., A->B->C MB, ...": C, the heap marked live), with
// false when the log has none (a process run without GODEBUG=gctrace=1).
func lastLiveHeap(path string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var live int64
	found := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "gc ") {
			continue
		}
		for _, field := range strings.Split(line, ",") {
			field = strings.TrimSpace(field)
			mb, ok := strings.CutSuffix(field, " MB")
			if !ok || strings.Count(mb, "->") != 2 {
				continue
			}
			if n, err := strconv.ParseInt(mb[strings.LastIndex(mb, "->")+2:], 10, 64); err == nil {
				live, found = n<<20, true
			}
		}
	}
	return live, found
}

// lastRenewal is the latest Lease renewal of the named nodes.
func lastRenewal(t *testing.T, cs kubernetes.Interface, names []string) time.Time {
	t.Helper()
	l, err := cs.CoordinationV1().Leases(agent.LeaseNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for i := range l.Items {
		if r := l.Items[i].Spec.RenewTime; r != nil && slices.Contains(names, l.Items[i].Name) && r.After(last) {
			last = r.Time
		}
	}
	return last
}

// scaleObjects reads the named nodes and their pods as JSON objects, keyed
// "node/NAME" and "pod/NAME".
func scaleObjects(t *testing.T, cs kubernetes.Interface, nodes []string) map[string]map[string]any {
	t.Helper()
	ctx := context.Background()
	out := map[string]map[string]any{}
	add := func(key string, obj any) {
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		out[key] = m
	}
	for _, n := range nodes {
		node, err := cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		add("node/"+n, node)
		pods, err := cs.CoreV1().Pods(scaleKCMNS).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n})
		if err != nil {
			t.Fatal(err)
		}
		for i := range pods.Items {
			add("pod/"+pods.Items[i].Name, &pods.Items[i])
		}
	}
	return out
}

// scaleOwnedFields lists what changed between before and after outside
// the fields a node lifecycle controller owns: on a node its taints and
// status conditions; on a pod its Ready and DisruptionTarget conditions
// and what a deletion sets (deletionTimestamp, its grace period,
// generation); on both resourceVersion and managedFields.
func scaleOwnedFields(before, after map[string]map[string]any) []string {
	strip := func(key string, o map[string]any) map[string]any {
		o = deepCopyJSON(o).(map[string]any)
		md, _ := o["metadata"].(map[string]any)
		for _, f := range []string{"resourceVersion", "managedFields"} {
			delete(md, f)
		}
		st, _ := o["status"].(map[string]any)
		if strings.HasPrefix(key, "node/") {
			if spec, _ := o["spec"].(map[string]any); spec != nil {
				delete(spec, "taints")
			}
			delete(st, "conditions")
			return o
		}
		for _, f := range []string{"deletionTimestamp", "deletionGracePeriodSeconds", "generation"} {
			delete(md, f)
		}
		if conds, ok := st["conditions"].([]any); ok {
			st["conditions"] = slices.DeleteFunc(conds, func(c any) bool {
				m, _ := c.(map[string]any)
				return m["type"] == string(v1.PodReady) || m["type"] == string(v1.DisruptionTarget)
			})
		}
		return o
	}
	var diffs []string
	for key, b := range before {
		a, ok := after[key]
		if !ok {
			diffs = append(diffs, key+": gone")
			continue
		}
		sb, sa := strip(key, b), strip(key, a)
		for _, part := range []string{"metadata", "spec", "status"} {
			if !reflect.DeepEqual(sb[part], sa[part]) {
				bj, _ := json.Marshal(sb[part])
				aj, _ := json.Marshal(sa[part])
				diffs = append(diffs, fmt.Sprintf("%s %s: before %.300s, after %.300s", key, part, bj, aj))
			}
		}
	}
	sort.Strings(diffs)
	return diffs
}

func deepCopyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopyJSON(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopyJSON(e)
		}
		return s
	}
	return v
}

// scaleAudit reads the audit log and fills r's request counts (by verb,
// the controller's requests only, told by user agent) and the times of
// its first node status write, last node patch and last pod deletion
// after origin.
func scaleAudit(path, controller string, origin time.Time, r *scaleResult) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	prefix := "node-lifecycle-controller"
	if controller == "kube-controller-manager" {
		prefix = "kube-controller-manager"
	}
	r.Requests = map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var first, lastTaint, lastDelete time.Time
	for sc.Scan() {
		var e struct {
			Verb      string `json:"verb"`
			UserAgent string `json:"userAgent"`
			ObjectRef *struct {
				Resource, Subresource string
			} `json:"objectRef"`
			Received time.Time `json:"requestReceivedTimestamp"`
			Status   *struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return err
		}
		if !strings.HasPrefix(e.UserAgent, prefix) {
			continue
		}
		r.Requests[e.Verb]++
		if e.ObjectRef == nil || e.Received.Before(origin) || e.Status == nil || e.Status.Code >= 300 {
			continue
		}
		switch ref := *e.ObjectRef; {
		case ref.Resource == "nodes" && ref.Subresource == "status" && (e.Verb == "update" || e.Verb == "patch"):
			if first.IsZero() || e.Received.Before(first) {
				first = e.Received
			}
		case ref.Resource == "nodes" && ref.Subresource == "" && (e.Verb == "update" || e.Verb == "patch"):
			if e.Received.After(lastTaint) {
				lastTaint = e.Received
			}
		case ref.Resource == "pods" && ref.Subresource == "" && e.Verb == "delete":
			if e.Received.After(lastDelete) {
				lastDelete = e.Received
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	since := func(at time.Time) time.Duration {
		if at.IsZero() {
			return -1
		}
		return at.Sub(origin)
	}
	r.FirstUnknown, r.LastTaint, r.LastDeletion = since(first), since(lastTaint), since(lastDelete)
	return nil
}

func scaleTable(rs []scaleResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| controller | nodes | pods | CPU steady (60 s) | CPU outage | RSS steady | RSS peak | requests by verb | first Unknown | last taint | last deletion | tainted | deleted |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		var verbs []string
		for v, n := range r.Requests {
			verbs = append(verbs, fmt.Sprintf("%s %d", v, n))
		}
		sort.Strings(verbs)
		sec := func(d time.Duration) string {
			if d < 0 {
				return "—"
			}
			return fmt.Sprintf("%.0f s", d.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f s | %.1f s | %s | %s | %s | %s | %s | %s | %d | %d/%d |\n",
			r.Controller, r.Nodes, r.Pods, r.CPUSteady.Seconds(), r.CPUOutage.Seconds(), mib(r.RSSSteady), mib(r.RSSPeak),
			strings.Join(verbs, ", "), sec(r.FirstUnknown), sec(r.LastTaint), sec(r.LastDeletion), r.Tainted, r.Deleted, r.LostPods)
	}
	return b.String()
}

// scaleSlopes is each controller's RSS slope per pod between each two
// consecutive sizes it ran.
func scaleSlopes(rs []scaleResult) string {
	var b strings.Builder
	for _, name := range []string{"kube-controller-manager", "nodecontroller"} {
		var sel []scaleResult
		for _, r := range rs {
			if r.Controller == name {
				sel = append(sel, r)
			}
		}
		sort.Slice(sel, func(i, j int) bool { return sel[i].Pods < sel[j].Pods })
		for i := 1; i < len(sel); i++ {
			lo, hi := sel[i-1], sel[i]
			d := float64(hi.Pods - lo.Pods)
			fmt.Fprintf(&b, "%s: RSS slope %.2f KB per pod at steady state (%d -> %d pods), peak %.2f KB per pod\n", name,
				float64(hi.RSSSteady-lo.RSSSteady)/d/1000, lo.Pods, hi.Pods, float64(hi.RSSPeak-lo.RSSPeak)/d/1000)
			if lo.RSSSteadyMean > 0 && hi.RSSSteadyMean > 0 {
				fmt.Fprintf(&b, "%s: mean RSS slope %.2f KB per pod over the steady window (%s -> %s)\n", name,
					float64(hi.RSSSteadyMean-lo.RSSSteadyMean)/d/1000, mib(lo.RSSSteadyMean), mib(hi.RSSSteadyMean))
			}
			if lo.HeapSteady > 0 && hi.HeapSteady > 0 {
				fmt.Fprintf(&b, "%s: live heap slope %.2f KB per pod at steady state (%s -> %s)\n", name,
					float64(hi.HeapSteady-lo.HeapSteady)/d/1000, mib(lo.HeapSteady), mib(hi.HeapSteady))
			}
		}
	}
	return b.String()
}

// scaleSVG draws steady RSS against pods, one line per controller.
func scaleSVG(rs []scaleResult) string {
	const w, h, left, bottom, top, right = 520, 300, 60, 40, 20, 150
	maxPods, maxRSS := 1, int64(1)
	for _, r := range rs {
		maxPods = max(maxPods, r.Pods)
		maxRSS = max(maxRSS, r.RSSSteady, r.RSSPeak)
	}
	maxMiB := float64(maxRSS)/(1<<20)*1.1 + 1
	x := func(p int) float64 { return left + float64(p)/float64(maxPods)*float64(w-left-right) }
	y := func(b int64) float64 { return float64(h-bottom) - float64(b)/(1<<20)/maxMiB*float64(h-bottom-top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n",
		left, h-bottom, w-right, h-bottom, left, top, left, h-bottom)
	for i := 0; i <= 4; i++ {
		mibv := maxMiB * float64(i) / 4
		yy := float64(h-bottom) - float64(i)/4*float64(h-bottom-top)
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%.0f</text>`+"\n", left-4, yy+4, mibv)
		pods := maxPods * i / 4
		fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">%d</text>`+"\n", x(pods), h-bottom+14, pods)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">pods</text><text x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">RSS MiB (steady)</text>`+"\n",
		(left+w-right)/2, h-6, (top+h-bottom)/2, (top+h-bottom)/2)
	colors := map[string]string{"kube-controller-manager": "#d62728", "nodecontroller": "#1f77b4"}
	row := 0
	for _, name := range []string{"kube-controller-manager", "nodecontroller"} {
		var pts []string
		var sel []scaleResult
		for _, r := range rs {
			if r.Controller == name {
				sel = append(sel, r)
			}
		}
		sort.Slice(sel, func(i, j int) bool { return sel[i].Pods < sel[j].Pods })
		for _, r := range sel {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(r.Pods), y(r.RSSSteady)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x(r.Pods), y(r.RSSSteady), colors[name])
		}
		if len(pts) == 0 {
			continue
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", colors[name], strings.Join(pts, " "))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			w-right+10, top+row*18, colors[name], w-right+24, top+row*18+9, name)
		row++
	}
	b.WriteString("</svg>\n")
	return b.String()
}
