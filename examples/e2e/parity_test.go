package e2e

// Parity with kube-controller-manager v1.37.2. The same scenario runs twice,
// at the same time, each on a fresh kube-apiserver with an audit log:
// once under kube-controller-manager with only node-lifecycle-controller
// and taint-eviction-controller, once under examples/nodecontroller (the
// binary), with the same flags. Node agents (examples/nodeagent) play the
// kubelets: the same fixed names, Leases renewed every second, pods with and
// without tolerations; the silenced nodes' agent is stopped. Each audit log
// is reduced to the controller's writes (by user agent: the test's own
// clients, the agents' included, are "lifecycle-e2e") and its Events, with
// times relative to the silenced nodes' last sign of life, and
// the two are compared with package parity: the same objects written, the
// same fields changed, the same Events (reason, message, type, source,
// count), the same times within parityTolerance. Known differences are an
// explicit allow-list (parityKnown), each with its reason.
//
// CI runs the one-silent-node scenario (TestParityOneSilentNode).
// examples/e2e/parity/run-all.sh runs all four (LIFECYCLE_E2E_PARITY=all);
// LIFECYCLE_E2E_PARITY_OUT=dir saves each side's trace and the diff.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/examples/e2e/parity"
	"github.com/kubelifecycle/lifecycle/examples/replay/incident"
)

// The shortened timings both controllers run with (upstream's flag names;
// examples/nodecontroller uses the same names).
const (
	parityGrace         = 4 * time.Second
	parityStartupGrace  = 6 * time.Second
	parityMonitorPeriod = time.Second
	parityEvictionRate  = 10.0
	paritySecondaryRate = 2.0
	parityRenewPeriod   = time.Second
	// parityTolerance: how far apart the two controllers' times may be. One
	// monitor period (their passes are not in phase) plus 1 s for the
	// machine's noise (two apiservers, two etcds and two controllers at
	// once on two shared cores).
	parityTolerance = parityMonitorPeriod + time.Second
	// parityNS is the namespace of every scenario's pods.
	parityNS = "parity"
)

func parityFlags(prefix string) []string {
	return timingFlags(prefix, parityMonitorPeriod, parityGrace, parityStartupGrace)
}

// timingFlags returns both controllers' flags (each name after prefix) for
// a monitor period, grace period and startup grace period, with the parity
// eviction rates and zone thresholds.
func timingFlags(prefix string, monitorPeriod, grace, startupGrace time.Duration) []string {
	return []string{
		prefix + "node-monitor-period=" + monitorPeriod.String(),
		prefix + "node-monitor-grace-period=" + grace.String(),
		prefix + "node-startup-grace-period=" + startupGrace.String(),
		prefix + fmt.Sprintf("node-eviction-rate=%g", parityEvictionRate),
		prefix + fmt.Sprintf("secondary-node-eviction-rate=%g", paritySecondaryRate),
		prefix + "large-cluster-size-threshold=50",
		prefix + "unhealthy-zone-threshold=0.55",
		prefix + "v=2",
	}
}

type parityScenario struct {
	name   string
	nodes  []worldNode
	pods   []worldPod
	silent []string
	// evicted are the pods both controllers must evict (deletionTimestamp);
	// the scenario waits for them, then records until window after the
	// origin.
	evicted []string
	window  time.Duration
	// orderFree: compare the times of equivalent writes by rank (a
	// rate-limited queue of many equal nodes).
	orderFree bool
	// known are the differences expected in this scenario only, besides
	// parityKnown.
	known []parity.Known
	// flags are extra flags for both controllers (names without dashes).
	flags []string
	// replayKnown are the differences expected between KCM's recording and
	// its self-replay (selfReplay), each with its reason.
	replayKnown []replayKnown
	// replayGap: why the self-replay does not reproduce KCM yet (logged,
	// not failed); "" when it must.
	replayGap string
	// noBetaLabels are nodes whose deprecated beta.kubernetes.io/os and
	// arch labels the test removes before the controllers start (a node
	// registered without them): both controllers add them back.
	noBetaLabels []string
}

func scenarioOneSilentNode() parityScenario {
	return parityScenario{
		name:  "one-silent-node",
		nodes: []worldNode{{"n1", "zone-a"}, {"n2", "zone-a"}, {"n3", "zone-a"}},
		pods: []worldPod{
			{"n1-none", "n1", tolNone}, {"n1-zero", "n1", 0}, {"n1-short", "n1", 3}, {"n1-forever", "n1", tolForever},
			{"n2-zero", "n2", 0},
		},
		silent:       []string{"n1"},
		evicted:      []string{"n1-zero", "n1-short"},
		window:       parityGrace + 3*time.Second + 4*parityMonitorPeriod,
		noBetaLabels: []string{"n3"},
	}
}

func scenarioZoneDark() parityScenario {
	return parityScenario{
		name:  "zone-dark",
		nodes: []worldNode{{"a1", "zone-a"}, {"a2", "zone-a"}, {"b1", "zone-b"}, {"b2", "zone-b"}},
		pods: []worldPod{
			{"a1-zero", "a1", 0}, {"b1-zero", "b1", 0}, {"b1-short", "b1", 3}, {"b2-zero", "b2", 0}, {"b2-none", "b2", tolNone},
		},
		silent:  []string{"b1", "b2"},
		evicted: []string{"b1-zero", "b1-short", "b2-zero"},
		window:  parityGrace + 3*time.Second + 5*parityMonitorPeriod,
	}
}

func scenarioAllDark() parityScenario {
	return parityScenario{
		name:  "all-dark",
		nodes: []worldNode{{"a1", "zone-a"}, {"a2", "zone-a"}, {"b1", "zone-b"}},
		pods: []worldPod{
			{"a1-short", "a1", 3}, {"a2-short", "a2", 3}, {"b1-short", "b1", 3}, {"a1-none", "a1", tolNone},
		},
		silent: []string{"a1", "a2", "b1"},
		window: parityGrace + 3*3*time.Second,
		known:  allDarkKnown,
		replayKnown: []replayKnown{
			{Kind: incident.KindTaintAdded, Detail: "node.kubernetes.io/unreachable:NoExecute", Missing: true,
				Reason: "kubernetes/kubernetes#111385: KCM's NoExecute taint in full disruption (its tainting goroutine races handleDisruption's stale copy); the library excludes tainting passes during a monitor pass and removes the taints from the current node"},
			{Kind: incident.KindPodEvicted, Missing: true, Reason: "kubernetes/kubernetes#111385: KCM evicts a pod in full disruption after that taint; the library does not"},
		},
	}
}

func scenarioLargeZone() parityScenario {
	sc := parityScenario{name: "large-zone-40-of-60", orderFree: true,
		// Client-side rate limits out of the way: at the default 20 QPS
		// (burst 30) each controller's writes queue behind its own client
		// limiter, in an order that is its own (upstream's monitor pass
		// took 8 s for the 40 nodes, tainting meanwhile at the normal rate
		// as far as the limiter let it), so the comparison would be of the
		// two clients' queues rather than of the two controllers.
		flags: []string{"kube-api-qps=1000", "kube-api-burst=1000"}}
	for i := range 60 {
		n := fmt.Sprintf("big-%02d", i)
		sc.nodes = append(sc.nodes, worldNode{n, "zone-big"})
		if i < 40 {
			sc.silent = append(sc.silent, n)
			sc.pods = append(sc.pods, worldPod{n + "-zero", n, 0})
		}
	}
	for i := range 3 {
		sc.nodes = append(sc.nodes, worldNode{fmt.Sprintf("small-%d", i), "zone-small"})
	}
	// 40 nodes at the secondary rate (partial disruption of a large zone).
	sc.window = parityGrace + time.Duration(40/paritySecondaryRate)*time.Second + 6*parityMonitorPeriod
	sc.known = retaintKnown
	sc.replayKnown = []replayKnown{{Kind: incident.KindPodEvicted, Missing: true, Repeat: true,
		Reason: "KCM v1.37.2 re-taints a node its pass's stale copy shows untainted (kubernetes/kubernetes#89012's re-taint rule, retaintKnown) and its taint-eviction-controller deletes the already deleted pod again; the library keeps the taint as it is and deletes once"}}
	sc.replayGap = "KCM's tainting goroutine taints the zone's first nodes at the normal rate while the monitor pass that turns the zone PartiallyDisrupted is still running (4 nodes in the recordings of 2026-12-02; the race of kubernetes/kubernetes#111385, which the library does not have: it runs no tainting pass during a monitor pass), so KCM's later taints at the secondary rate come 1.5-3 s before the replay's (a taint's recorded time is its timeAdded, truncated to the second); when KCM's pass also sees some of the 40 last renewals a pass before the others, the replay follows that only with the pass drift (incident.DefaultPassDrift)"
	return sc
}

// retaintKnown: kube-controller-manager v1.37.2 taints some nodes of the
// large zone twice. Its monitor pass works on the copies of the nodes it
// listed when it started; when a node's copy does not show yet the
// unreachable:NoExecute taint its tainting pass has just added,
// markNodeForTainting (pkg/controller/nodelifecycle/node_lifecycle_controller.go)
// takes the node out of the tainting queue's set and queues it again (the
// re-taint rule of kubernetes/kubernetes#89012). The node is tainted a
// second time (SwapNodeControllerTaint rewrites the taint: only timeAdded
// changes), and the taint-eviction-controller, seeing the taint change,
// deletes the already deleted pod again (a delete that changes nothing) and
// records a second TaintManagerEviction. Seen for 2-4 of the 40 nodes in 5 of
// 5 runs with the NodeControllerLeaseCircuitBreaker gate on (its default),
// in none of 2 with it off: the breaker's live Lease GET for every
// Unknown node in every pass makes the pass, and so the age of its copies,
// longer. Ours applies a queued taint to the node as read for the write and
// keeps a taint that is already there as it is (taints.SwapHealthTaint keeps
// its timeAdded), so a stale list costs no write.
var retaintKnown = []parity.Known{
	{
		Pattern: regexp.MustCompile(`^write patch nodes//\S+ #\d+ missing$`),
		Detail:  regexp.MustCompile(`^upstream at \S+: \{spec\.taints\[node\.kubernetes\.io/unreachable:NoExecute\]\.timeAdded=t\S+\}; ours: none$`),
		Reason:  "KCM v1.37.2 re-taints a node its pass's stale copy shows untainted (markNodeForTainting; kubernetes/kubernetes#89012's re-taint rule): only timeAdded changes; ours keeps the taint as it is",
	},
	{
		Pattern: regexp.MustCompile(`^write delete pods/\S+ #\d+ missing$`),
		Detail:  regexp.MustCompile(`^upstream at \S+: \{\}; ours: none$`),
		Reason:  "KCM v1.37.2's taint-eviction-controller deletes the pod again after the re-taint; the pod is already deleted, nothing changes",
	},
	{
		Pattern: regexp.MustCompile(`^event Pod \S+ TaintManagerEviction count$`),
		Detail:  regexp.MustCompile(`^upstream 2, ours 1$`),
		Reason:  "KCM v1.37.2 records TaintManagerEviction again for the second delete after the re-taint",
	},
}

// parityKnown are the differences that remain between
// examples/nodecontroller and kube-controller-manager v1.37.2, each with
// its reason. Every other difference fails the test.
var parityKnown = []parity.Known{
	known(`^write delete pods/\S+ #\d+ request$`,
		"Unlike upstream, the pod Delete carries a UID precondition (preconditions.uid), so a pod "+
			"deleted and re-created under the same name meanwhile is never evicted in its place; "+
			"upstream deletes by name (pkg/controller/tainteviction/taint_eviction.go, addConditionAndDeletePod)."),
	known(`^event Pod \S+ NodeNotReady count$`,
		"Unlike upstream, a pod may be evicted before its Ready=False write: our eviction pass runs "+
			"concurrently with the monitor pass that marks the node's pods not ready, so the DisruptionTarget "+
			"patch can land first; the Ready=False update (based on the cached pod) then conflicts and is "+
			"retried a monitor period later, and the warning is recorded once per attempt, as upstream's "+
			"MarkPodsNotReady does (pkg/controller/util/node/controller_utils.go): 2 instead of 1. Upstream "+
			"marks a node's pods in the same worker right after the node's status, before its taint "+
			"goroutine and the taint-eviction-controller act."),
}

// betaLabelsKnown: the label reconciliation (scenarios with noBetaLabels).
var betaLabelsKnown = parity.Known{
	Pattern: regexp.MustCompile(`^write patch nodes//\S+ #\d+ request$`),
	Detail:  regexp.MustCompile(`^upstream sends \[(metadata\.labels\.\S+ ?)+\], ours \[(metadata\.labels\.\S+ )+metadata\.resourceVersion\]$`),
	Reason: "Unlike upstream, the beta label patch carries the resourceVersion it was computed from, as every " +
		"node patch of ours does, so it is never blind; upstream's carries none (AddOrUpdateLabelsOnNode in " +
		"pkg/controller/controller_utils.go, called by reconcileNodeLabels).",
}

// allDarkKnown: upstream's race when every node goes dark at once
// (kubernetes/kubernetes#111385). Its tainting goroutine may taint a node
// NoExecute between the monitor pass that enqueued it and that pass's
// handleDisruption; entering full disruption, markNodeAsReachable then
// works on the pass's stale copy of the node, which lacks the taint, so
// RemoveTaintOffNode does nothing: the taint stays and the node's pods are
// evicted in full disruption. Ours excludes tainting passes during a
// monitor pass and removes the taints from the current node, so it writes
// none of this. (Intermittent upstream: seen in 1 of the first 2 runs.)
var allDarkKnown = []parity.Known{
	known(`^write patch nodes//\S+ #\d+ missing$`, "kubernetes/kubernetes#111385: upstream's NoExecute taint during full disruption; ours: none"),
	known(`^write status\[DisruptionTarget\] pods/\S+/status #\d+ missing$`, "kubernetes/kubernetes#111385: upstream's DisruptionTarget of a pod evicted in full disruption; ours: none"),
	known(`^write delete pods/\S+ #\d+ missing$`, "kubernetes/kubernetes#111385: upstream evicts a pod in full disruption; ours does not"),
	known(`^event Pod \S+ TaintManagerEviction missing$`, "kubernetes/kubernetes#111385: upstream's eviction event in full disruption; ours: none"),
}

// TestParityOneSilentNode: the kubelet of one node of three stops; on
// it a pod without a toleration of its own (admission's 300 s), one with
// 0 s, one with 3 s, one tolerating unreachable forever; a 0 s pod on a
// healthy node; a third node without the beta OS and architecture labels.
func TestParityOneSilentNode(t *testing.T) { runParity(t, scenarioOneSilentNode()) }

// TestParityScenarios runs the other three scenarios when
// LIFECYCLE_E2E_PARITY=all (examples/e2e/parity/run-all.sh): a zone dark
// while another is healthy, every node dark, 40 of 60 nodes of a large
// zone silent.
func TestParityScenarios(t *testing.T) {
	if os.Getenv("LIFECYCLE_E2E_PARITY") != "all" {
		t.Skip("set LIFECYCLE_E2E_PARITY=all (examples/e2e/parity/run-all.sh) to run every parity scenario")
	}
	for _, sc := range []parityScenario{scenarioZoneDark(), scenarioAllDark(), scenarioLargeZone()} {
		t.Run(sc.name, func(t *testing.T) { runParity(t, sc) })
	}
}

func runParity(t *testing.T, sc parityScenario) {
	bins := binariesWithKCM(t)
	ours := nodeControllerBinary(t)
	t0 := time.Now()
	var up, nc parity.Trace
	sideBySide(t, bins, ours, append(parityFlags(""), sc.flags...), func(t *testing.T, side string, start controllerStarter) {
		tr, auditLog := runParitySide(t, sc, bins, start)
		if side == sideUpstream {
			up = tr
			if !t.Failed() {
				selfReplay(t, "parity-"+sc.name+envFlagsSuffix(), auditLog, append(parityFlags(""), sc.flags...), sc.replayKnown, sc.orderFree, sc.replayGap, nil)
			}
		} else {
			nc = tr
		}
	})
	if t.Failed() {
		return
	}
	up, nc = statusWritesByResult(up), statusWritesByResult(nc)
	skew, at := parity.MaxSkew(up, nc, sc.orderFree)
	t.Logf("both sides in %v; largest time difference %v (%s), tolerance %v", time.Since(t0).Round(100*time.Millisecond), skew.Round(time.Millisecond), at, parityTolerance)
	diffs := parity.Compare(up, nc, parity.Options{Tolerance: parityTolerance, FieldTolerance: time.Second, OrderFree: sc.orderFree})
	knownList := append(slices.Clone(parityKnown), sc.known...)
	if len(sc.noBetaLabels) > 0 {
		knownList = append(knownList, betaLabelsKnown)
	}
	explained, unexplained := parity.Split(diffs, knownList)
	var report strings.Builder
	fmt.Fprintf(&report, "# parity %s: %d differences, %d known, %d unexplained; largest time difference %v (%s)\n",
		sc.name, len(diffs), len(diffs)-len(unexplained), len(unexplained), skew.Round(time.Millisecond), at)
	for i, k := range knownList {
		for _, d := range explained[i] {
			fmt.Fprintf(&report, "known   %s\n        reason: %s\n", d, k.Reason)
		}
	}
	for _, d := range unexplained {
		fmt.Fprintf(&report, "UNKNOWN %s\n", d)
	}
	for i, k := range knownList {
		if len(explained[i]) == 0 {
			fmt.Fprintf(&report, "not seen in this scenario: %s\n", k.Pattern)
		}
	}
	t.Logf("kube-controller-manager wrote:\n%s", up.Summary())
	t.Logf("examples/nodecontroller wrote:\n%s", nc.Summary())
	t.Log(report.String())
	if dir := os.Getenv("LIFECYCLE_E2E_PARITY_OUT"); dir != "" {
		for name, s := range map[string]string{"upstream.txt": up.Summary(), "ours.txt": nc.Summary(), "diff.txt": report.String()} {
			p := filepath.Join(dir, sc.name, name)
			err := os.MkdirAll(filepath.Dir(p), 0o755)
			if err == nil {
				err = os.WriteFile(p, []byte(s), 0o644)
			}
			if err != nil {
				t.Errorf("saving %s: %v", p, err)
			}
		}
	}
	for _, d := range unexplained {
		t.Errorf("parity: %s", d)
	}
	if len(up.Writes) == 0 || len(nc.Writes) == 0 {
		t.Errorf("parity: kube-controller-manager made %d writes, examples/nodecontroller %d; want some on both sides", len(up.Writes), len(nc.Writes))
	}
}

// runParitySide runs sc on a fresh recorded cluster (startRecordedCluster)
// with the controller start starts, and returns the controller's trace
// and the audit log.
func runParitySide(t *testing.T, sc parityScenario, bins cluster.Binaries, start controllerStarter) (parity.Trace, string) {
	ctx := context.Background()
	c, auditLog := startRecordedCluster(t, bins, recordPolicy, sc.nodes)
	cs := c.Clientset(t)
	w := startWorld(t, c, parityNS, sc.nodes, sc.pods, sc.silent, parityRenewPeriod)
	for _, name := range sc.noBetaLabels {
		patch := []byte(`{"metadata":{"labels":{"beta.kubernetes.io/os":null,"beta.kubernetes.io/arch":null}}}`)
		if _, err := cs.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("removing the beta labels of %s: %v", name, err)
		}
	}
	p, err := start(c)
	if err != nil {
		t.Fatal(err)
	}
	stopProcessAtEnd(t, p)

	// The controller is running once it has removed the not-ready:NoSchedule
	// taint the NodeTaint admission gives every new node.
	started := time.Now()
	waitNoAdmissionTaints(t, cs, sc.nodes, p)
	t.Logf("controller took over the %d nodes in %v", len(sc.nodes), time.Since(started).Round(100*time.Millisecond))

	origin, err := w.silence(t)
	if err != nil {
		t.Fatal(err)
	}
	silenced := time.Now()
	t.Logf("origin (last renewal of the %d silenced nodes): %s", len(sc.silent), stamp(origin))
	for _, name := range sc.evicted {
		cluster.Eventually(t, sc.window+60*time.Second, "pod "+name+" evicted", func(ctx context.Context) (bool, error) {
			if p.Exited() {
				return false, fmt.Errorf("controller exited: %v", p.Err())
			}
			pod, err := cs.CoreV1().Pods(parityNS).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return pod.DeletionTimestamp != nil, nil
		})
	}
	// Record the rest of the window: what did not happen is compared too.
	time.Sleep(time.Until(origin.Add(sc.window)))
	if p.Exited() {
		t.Fatalf("controller exited: %v", p.Err())
	}
	p.Stop(10 * time.Second)
	for _, name := range sc.silent {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if readyStatus(n) != v1.ConditionUnknown {
			t.Errorf("silent node %s: Ready = %s, want Unknown", name, readyStatus(n))
		}
	}
	return controllerTrace(t, auditLog, origin, silenced), auditLog
}

// startAuditedClusterWith starts a fresh etcd and kube-apiserver for one
// test, with an audit log (returned) of the audit policy policyYAML,
// stopped when the test ends. The audit log is in a temporary directory of
// the test's own.
func startAuditedClusterWith(t *testing.T, bins cluster.Binaries, policyYAML string) (*cluster.Cluster, string) {
	t.Helper()
	return startAuditedClusterOpts(t, bins, policyYAML, nil)
}

// startAuditedClusterOpts is startAuditedClusterWith with the token users
// users besides admin (cluster.Options.Users).
func startAuditedClusterOpts(t *testing.T, bins cluster.Binaries, policyYAML string, users []cluster.TokenUser) (*cluster.Cluster, string) {
	t.Helper()
	dir := t.TempDir()
	policy := filepath.Join(dir, "audit-policy.yaml")
	auditLog := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(policyYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(context.Background(), cluster.Options{Binaries: bins, ExtraAPIServerFlags: parity.APIServerFlags(policy, auditLog), Users: users, Logf: t.Logf})
	if err != nil {
		t.Fatalf("cluster.Start() = %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("apiserver log tail:\n%s", c.LogTails(20))
		}
		_ = c.Stop()
	})
	return c, auditLog
}

// controllerTrace reads the audit log and returns the controller's writes
// and Events (kube-controller-manager's own identity's requests and every
// admin request not made by the test's own clients),
// with times from origin; those before start are setup.
func controllerTrace(t *testing.T, auditLog string, origin, start time.Time) parity.Trace {
	t.Helper()
	events, err := parity.ReadAuditLog(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := parity.BuildTrace(events, recordedWriter, origin, start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d audit events; the controller wrote %d times (%d failed, %d empty patches not compared) and recorded %d kinds of Event", len(events), len(tr.Writes), len(tr.Failed), tr.Empty, len(tr.Events))
	return tr
}

// controllerStarter starts one controller against c.
type controllerStarter func(c *cluster.Cluster) (*cluster.Process, error)

// envKCMFlags names extra kube-controller-manager flags for every
// side-by-side test, separated by spaces: for example
// LIFECYCLE_E2E_KCM_FLAGS=--feature-gates=NodeControllerLeaseCircuitBreaker=false
// to see whether a difference comes from that v1.37 feature.
const envKCMFlags = "LIFECYCLE_E2E_KCM_FLAGS"

// The two sides of [sideBySide].
const (
	sideUpstream = "kube-controller-manager"
	sideOurs     = "nodecontroller"
)

// sideBySide runs side twice in parallel subtests of a "sides" subtest:
// once with kube-controller-manager (only node-lifecycle-controller and
// taint-eviction-controller) and once with the examples/nodecontroller
// binary ours, both given flags (upstream's names, without dashes).
func sideBySide(t *testing.T, bins cluster.Binaries, ours string, flags []string, side func(t *testing.T, name string, start controllerStarter)) {
	t.Run("sides", func(t *testing.T) {
		t.Run(sideUpstream, func(t *testing.T) {
			t.Parallel()
			side(t, sideUpstream, func(c *cluster.Cluster) (*cluster.Process, error) {
				extra := append(prefixed("--", flags), strings.Fields(os.Getenv(envKCMFlags))...)
				extra = append(extra, kcmKubeconfig(t, c)...)
				p, err := c.StartControllerManager(bins, []string{"node-lifecycle-controller", "taint-eviction-controller"}, extra...)
				if err == nil {
					selfReplayAtEnd(t, c, p, flags)
				}
				return p, err
			})
		})
		t.Run(sideOurs, func(t *testing.T) {
			t.Parallel()
			side(t, sideOurs, ourControllerStarter(ours, flags))
		})
	})
}

// sideResults runs run under both controllers, as sideBySide does, and
// returns what each side's run returned by side name (a side that failed
// may be missing). It logs how long the two sides took when both passed.
func sideResults[T any](t *testing.T, bins cluster.Binaries, ours string, flags []string, run func(t *testing.T, side string, start controllerStarter) T) map[string]T {
	t.Helper()
	t0 := time.Now()
	var mu sync.Mutex
	results := map[string]T{}
	sideBySide(t, bins, ours, flags, func(t *testing.T, side string, start controllerStarter) {
		r := run(t, side, start)
		mu.Lock()
		results[side] = r
		mu.Unlock()
	})
	if !t.Failed() {
		t.Logf("both sides in %v", time.Since(t0).Round(100*time.Millisecond))
	}
	return results
}

// ourControllerStarter starts the examples/nodecontroller binary bin
// without leader election nor endpoints, with flags (without dashes).
func ourControllerStarter(bin string, flags []string) controllerStarter {
	return func(c *cluster.Cluster) (*cluster.Process, error) {
		args := append([]string{"-kubeconfig=" + c.Kubeconfig(), "-leader-elect=false", "-port=0"}, prefixed("-", flags)...)
		return c.StartProcess("nodecontroller", bin, args...)
	}
}

// waitNoAdmissionTaints waits until no node has not-ready:NoSchedule.
func waitNoAdmissionTaints(t *testing.T, cs kubernetes.Interface, nodes []worldNode, p *cluster.Process) {
	t.Helper()
	cluster.Eventually(t, 90*time.Second, "the controller removes not-ready:NoSchedule from every node", func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("controller exited: %v", p.Err())
		}
		l, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(l.Items) < len(nodes) {
			return false, fmt.Errorf("%d nodes, want %d", len(l.Items), len(nodes))
		}
		for i := range l.Items {
			if findTaint(&l.Items[i], notReadyNoSched) != nil {
				return false, nil
			}
		}
		return true, nil
	})
}

func prefixed(prefix string, flags []string) []string {
	out := make([]string, len(flags))
	for i, f := range flags {
		out[i] = prefix + f
	}
	return out
}

// known builds a parity.Known.
func known(pattern, reason string) parity.Known {
	return parity.Known{Pattern: regexp.MustCompile(pattern), Reason: reason}
}
