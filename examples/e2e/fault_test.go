package e2e

// The data-path fault matrix: a controller (kube-controller-manager v1.37.2
// or examples/nodecontroller, as a process) reaches its kube-apiserver only
// through a fault proxy the test owns (package faultproxy), while the node
// agents and the test reach the apiserver directly. The test injects a fault
// on the controller's path and judges only from the apiserver's audit log
// and the API, never from the controller's own logs.

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/examples/e2e/faultproxy"
	"github.com/kubelifecycle/lifecycle/examples/e2e/parity"
	"github.com/kubelifecycle/lifecycle/examples/nodeagent/agent"
)

// The shortened timings of the fault tests (both controllers, upstream's
// flag names).
const (
	faultGrace         = 10 * time.Second
	faultStartupGrace  = 20 * time.Second
	faultMonitorPeriod = time.Second
	faultRenew         = 2 * time.Second
	faultNS            = "fault"
)

func faultFlags(prefix string) []string {
	return timingFlags(prefix, faultMonitorPeriod, faultGrace, faultStartupGrace)
}

// faultPolicy is parity.Policy with, at level Metadata, every other
// request of the controllers (admin, or kube-controller-manager's own
// identity: reads and watches too, and the leader election's Lease writes,
// so the audit log shows which replica held the leadership when, and
// whether a cut-off controller reached the apiserver at all), and first of
// all the controllers' GETs of node Leases in kube-node-lease (the Lease
// circuit breaker's live reads), which parity.Policy never logs, and, as
// recordPolicy, the kubelets' Lease renewals (the replay's input).
var faultPolicy = parity.PolicyWithFirst(`- level: Metadata
  users: ["admin", "`+kcmUser+`"]
  verbs: ["get"]
  namespaces: ["kube-node-lease"]
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
`+recordLeaseRule, `- level: Metadata
  users: ["admin", "`+kcmUser+`"]
`)

// faultWorld is one fresh cluster with an audit log and a world of nodes
// and pods run by node agents.
type faultWorld struct {
	c        *cluster.Cluster
	cs       kubernetes.Interface
	w        *world
	nodes    []worldNode
	auditLog string
	dir      string
}

func startFaultWorld(t *testing.T, bins cluster.Binaries, nodes []worldNode, pods []worldPod, silent []string) *faultWorld {
	t.Helper()
	c, auditLog := startRecordedCluster(t, bins, faultPolicy, nodes)
	fw := &faultWorld{c: c, cs: c.Clientset(t), nodes: nodes, auditLog: auditLog, dir: filepath.Dir(auditLog)}
	fw.w = startWorld(t, c, faultNS, nodes, pods, silent, faultRenew)
	return fw
}

// proxy starts a fault proxy in front of the world's apiserver and returns
// it with the path of a kubeconfig (the admin token) that goes through it.
// tag is appended to the User-Agent of every request it forwards.
func (fw *faultWorld) proxy(t *testing.T, tag string) (*faultproxy.Proxy, string) {
	t.Helper()
	px, err := faultproxy.New(fw.c.Server(), fw.c.CAData(), faultproxy.Options{UserAgentSuffix: tag})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	kc := filepath.Join(fw.dir, "kubeconfig-"+tag)
	if err := px.WriteKubeconfig(kc, fw.c.Token()); err != nil {
		t.Fatal(err)
	}
	return px, kc
}

// faultController is how a test starts the controller under test against
// a kubeconfig: kube-controller-manager or examples/nodecontroller, with
// their extra flags.
type faultController struct {
	name string
	// kcm: kube-controller-manager, whose audit log is a recording
	// (selfReplay); flags: its extra flags.
	kcm   bool
	flags []string
	start func(t *testing.T, fw *faultWorld, kubeconfig, tag string, extra ...string) *cluster.Process
}

func kcmController(bins cluster.Binaries, flags ...string) faultController {
	name := "kube-controller-manager"
	if out, err := exec.Command(bins.ControllerManager, "--version").Output(); err == nil {
		name += " " + strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes ")
	}
	return faultController{name: name, kcm: true, flags: flags, start: func(t *testing.T, fw *faultWorld, kubeconfig, tag string, extra ...string) *cluster.Process {
		args := append(faultFlags("--"), "--kubeconfig="+kcmProxyKubeconfig(t, fw.c, kubeconfig)) // the last --kubeconfig wins
		args = append(args, flags...)
		args = append(args, prefixed("--", extra)...)
		p, err := fw.c.StartControllerManager(bins, []string{"node-lifecycle-controller", "taint-eviction-controller"}, args...)
		if err != nil {
			t.Fatal(err)
		}
		stopProcessAtEnd(t, p)
		return p
	}}
}

func oursController(name string, flags ...string) faultController {
	return faultController{name: name, start: func(t *testing.T, fw *faultWorld, kubeconfig, tag string, extra ...string) *cluster.Process {
		// Leader election off, as kube-controller-manager's here (a
		// replica that cannot renew would stop at its renew deadline);
		// flags given later win.
		args := append([]string{"-kubeconfig=" + kubeconfig, "-port=0", "-leader-elect=false"}, faultFlags("-")...)
		args = append(args, flags...)
		args = append(args, prefixed("-", extra)...)
		p, err := fw.c.StartProcess("nodecontroller-"+tag, nodeControllerBinary(t), args...)
		if err != nil {
			t.Fatal(err)
		}
		stopProcessAtEnd(t, p)
		return p
	}}
}

// faultOutcome is what a controller wrote, from the audit log: its
// successful writes only.
type faultOutcome struct {
	// unknown: node status writes that took Ready from True (or no
	// condition) to Unknown; unknownNodes: the nodes they wrote.
	unknown      int
	unknownNodes map[string]bool
	// taints: unreachable or not-ready taints (any effect) the controller
	// added.
	taints int
	// notReady: pods the controller set Ready=False (distinct).
	notReady map[string]bool
	// evictions: pods the controller deleted.
	evictions int
	// writes are the controller's writes to Nodes and Pods (not Events),
	// with their times: unknownAt for the Unknown writes.
	writes    int
	unknownAt []time.Time
}

func (o faultOutcome) row(name string) string {
	return fmt.Sprintf("| %-40s | %7d (%d nodes) | %6d | %17d | %9d |", name, o.unknown, len(o.unknownNodes), o.taints, len(o.notReady), o.evictions)
}

const faultTableHeader = "| controller                               | Unknown writes     | taints | pods set NotReady | evictions |\n" +
	"|------------------------------------------|--------------------|--------|-------------------|-----------|"

// byController selects the requests of the controller under test:
// kube-controller-manager's own identity, or the admin user with a user
// agent other than the test's and the agents'.
func byController(e *parity.AuditEvent) bool { return recordedController(e) }

// byTag selects the requests that came through the fault proxy tagged tag
// (Options.UserAgentSuffix): one controller's, one replica's.
func byTag(tag string) func(*parity.AuditEvent) bool {
	return func(e *parity.AuditEvent) bool {
		return (e.User.Username == "admin" || e.User.Username == kcmUser) && strings.HasSuffix(e.UserAgent, " "+tag)
	}
}

// received returns the audited requests that sel selects and the
// apiserver received in [from, to) (RequestReceivedTimestamp: for a watch,
// when it was opened).
func (fw *faultWorld) received(t *testing.T, sel func(*parity.AuditEvent) bool, from, to time.Time) []parity.AuditEvent {
	t.Helper()
	events, err := parity.ReadAuditLog(fw.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	var out []parity.AuditEvent
	for _, e := range events {
		if sel(&e) && !e.RequestReceivedTimestamp.Before(from) && e.RequestReceivedTimestamp.Before(to) {
			out = append(out, e)
		}
	}
	return out
}

// leaseGets counts the live reads of node Leases (GET in kube-node-lease)
// among events.
func leaseGets(events []parity.AuditEvent) int {
	n := 0
	for _, e := range events {
		if e.Verb == "get" && e.ObjectRef != nil && e.ObjectRef.Resource == "leases" && e.ObjectRef.Namespace == agent.LeaseNamespace {
			n++
		}
	}
	return n
}

// describe lists up to 5 of events (verb, resource, name, time), for a
// failure message.
func describe(events []parity.AuditEvent) string {
	var b strings.Builder
	for i, e := range events {
		if i == 5 {
			fmt.Fprintf(&b, " and %d more", len(events)-5)
			break
		}
		what := e.RequestURI
		if e.ObjectRef != nil {
			what = e.ObjectRef.Resource + "/" + e.ObjectRef.Name
		}
		fmt.Fprintf(&b, "%s %s at %s (%d); ", e.Verb, what, stamp(e.RequestReceivedTimestamp), e.Code())
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// healthTaint reports whether tk is one the node lifecycle controller adds
// for an unhealthy node.
func healthTaint(tk v1.Taint) bool {
	return tk.Key == v1.TaintNodeUnreachable || tk.Key == v1.TaintNodeNotReady && tk.Effect == v1.TaintEffectNoExecute
}

// outcome reads the audit log: every successful node write (any writer)
// updates the last known state of the node, and the controller's writes
// that change it are counted.
func (fw *faultWorld) outcome(t *testing.T, sel func(*parity.AuditEvent) bool) faultOutcome {
	t.Helper()
	events, err := parity.ReadAuditLog(fw.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	o := faultOutcome{unknownNodes: map[string]bool{}, notReady: map[string]bool{}}
	ready := map[string]v1.ConditionStatus{}
	taints := map[string]map[v1.Taint]bool{}
	for i := range events {
		e := &events[i]
		if e.ObjectRef == nil || !isWrite(e) || e.Code() < 200 || e.Code() > 299 {
			continue
		}
		ctl := sel(e)
		switch e.ObjectRef.Resource {
		case "nodes":
			var n v1.Node
			if e.Verb == "delete" || json.Unmarshal(e.ResponseObject, &n) != nil || n.Name == "" {
				continue
			}
			if ctl {
				o.writes++
			}
			st := readyStatus(&n)
			if ctl && st == v1.ConditionUnknown && ready[n.Name] != v1.ConditionUnknown {
				o.unknown++
				o.unknownNodes[n.Name] = true
				o.unknownAt = append(o.unknownAt, e.StageTimestamp)
			}
			ready[n.Name] = st
			now := map[v1.Taint]bool{}
			for _, tk := range n.Spec.Taints {
				if healthTaint(tk) {
					k := v1.Taint{Key: tk.Key, Effect: tk.Effect}
					now[k] = true
					if ctl && !taints[n.Name][k] {
						o.taints++
					}
				}
			}
			taints[n.Name] = now
		case "pods":
			if !ctl {
				continue
			}
			o.writes++
			if e.Verb == "delete" {
				o.evictions++
				continue
			}
			var p v1.Pod
			if e.ObjectRef.Subresource == "status" && json.Unmarshal(e.ResponseObject, &p) == nil {
				if c := podCondition(&p, v1.PodReady); c != nil && c.Status == v1.ConditionFalse {
					o.notReady[p.Name] = true
				}
			}
		}
	}
	return o
}

// controllerRows runs run for each controller of ctls at the same time, in
// subtests of "sides" named after the controller's first word, and returns
// the table rows run returned, in the order of ctls (empty where a run
// stopped the test).
func controllerRows(t *testing.T, ctls []faultController, run func(t *testing.T, i int, ctl faultController) string) []string {
	t.Helper()
	var mu sync.Mutex
	rows := make([]string, len(ctls))
	t.Run("sides", func(t *testing.T) {
		for i, ctl := range ctls {
			t.Run(strings.Fields(ctl.name)[0], func(t *testing.T) {
				t.Parallel()
				row := run(t, i, ctl)
				mu.Lock()
				rows[i] = row
				mu.Unlock()
			})
		}
	})
	return rows
}

// startUnderTest starts a fault world of nodes and pods (silent as in
// startWorld) and the controller ctl behind a fault proxy tagged
// "under-test", and waits until the controller has taken over the nodes.
func startUnderTest(t *testing.T, bins cluster.Binaries, ctl faultController, nodes []worldNode, pods []worldPod, silent []string) (*faultWorld, *faultproxy.Proxy, *cluster.Process) {
	t.Helper()
	fw := startFaultWorld(t, bins, nodes, pods, silent)
	px, kc := fw.proxy(t, "under-test")
	p := ctl.start(t, fw, kc, "under-test")
	if ctl.kcm {
		selfReplayAtEnd(t, fw.c, p, append(faultFlags(""), ctl.flags...))
	}
	fw.waitTakeover(t, p)
	return fw, px, p
}

// stopUnderTest stops the controller p, failing the test if it had exited
// on its own.
func stopUnderTest(t *testing.T, p *cluster.Process) {
	t.Helper()
	if p.Exited() {
		t.Fatalf("controller exited: %v", p.Err())
	}
	p.Stop(10 * time.Second)
}

// waitTakeover waits until the controller has removed the admission's
// not-ready:NoSchedule taint from every node (it runs and has synced).
func (fw *faultWorld) waitTakeover(t *testing.T, p *cluster.Process) {
	t.Helper()
	started := time.Now()
	waitNoAdmissionTaints(t, fw.cs, fw.nodes, p)
	t.Logf("controller took over the %d nodes in %v", len(fw.nodes), time.Since(started).Round(100*time.Millisecond))
}

// leaseRenewals returns the renew times of the nodes' Leases.
func (fw *faultWorld) leaseRenewals(t *testing.T) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	for _, n := range fw.nodes {
		l, err := fw.cs.CoordinationV1().Leases(agent.LeaseNamespace).Get(context.Background(), n.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Spec.RenewTime != nil {
			out[n.name] = l.Spec.RenewTime.Time
		}
	}
	return out
}

// sixNodes is the world of the stall and cut-off tests: six nodes in one
// zone, three pods each (admission's 300 s, 0 s, 3 s for unreachable).
func sixNodes() ([]worldNode, []worldPod) {
	var nodes []worldNode
	var pods []worldPod
	for i := 1; i <= 6; i++ {
		n := fmt.Sprintf("f%d", i)
		nodes = append(nodes, worldNode{n, "zone-a"})
		pods = append(pods, worldPod{n + "-none", n, tolNone}, worldPod{n + "-zero", n, 0}, worldPod{n + "-short", n, 3})
	}
	return nodes, pods
}

// leaseWatchStall is the stall rule of TestFaultLeaseWatchStall: every
// Lease watch (kube-controller-manager's Lease informer watches every
// namespace, ours kube-node-lease only).
var leaseWatchStall = faultproxy.Rule{Name: "stall-lease-watch", Resource: "leases", Watch: faultproxy.OnlyWatch, Action: faultproxy.Stall}

// TestFaultLeaseWatchStall: the controller's Lease watch stalls (the
// connection stays open, no event arrives) for 2 × the grace period while
// every kubelet keeps renewing its Lease every 2 s, then resumes; nothing
// else is faulty. Six nodes, 18 pods. What must hold: no node written
// Unknown, no taint, no eviction, no pod set NotReady; a controller whose
// cache is behind must check the live Lease before it writes a node
// Unknown (the Lease circuit breaker of KEP-5647, upstream's
// NodeControllerLeaseCircuitBreaker, on by default from v1.37:
// tryUpdateNodeHealth in pkg/controller/nodelifecycle/node_lifecycle_controller.go).
//
// Three controllers, each on a fresh apiserver at the same time:
// kube-controller-manager v1.37.2 and examples/nodecontroller by default
// (both must hold), and examples/nodecontroller with
// -feature-gates=NodeControllerLeaseCircuitBreaker=false (the v1.36
// behaviour). The fault must take effect, which the audit log shows: the
// controllers with the breaker read live Leases during the stall (they do
// only when their cached Lease is older than the grace period), and the
// one without it writes nodes Unknown. The table of outcomes is logged.
func TestFaultLeaseWatchStall(t *testing.T) {
	bins := binariesWithKCM(t)
	variants := []struct {
		ctl     faultController
		breaker bool
	}{
		{kcmController(bins), true},
		{oursController("nodecontroller, breaker off", "-feature-gates=NodeControllerLeaseCircuitBreaker=false"), false},
		{oursController("nodecontroller, default"), true},
	}
	var mu sync.Mutex
	rows := make([]string, len(variants))
	t0 := time.Now()
	t.Run("sides", func(t *testing.T) {
		for i, v := range variants {
			t.Run(strings.NewReplacer(" ", "-", ",", "").Replace(v.ctl.name), func(t *testing.T) {
				t.Parallel()
				o, gets := runLeaseWatchStall(t, bins, v.ctl)
				mu.Lock()
				rows[i] = o.row(v.ctl.name) + fmt.Sprintf(" %15d |", gets)
				mu.Unlock()
				if !v.breaker {
					if o.unknown == 0 {
						t.Errorf("%s (no Lease circuit breaker) wrote no node Unknown under a stalled Lease watch (audit log): its Lease cache did not fall behind, the fault did not take effect", v.ctl.name)
					}
					return
				}
				if gets == 0 {
					t.Errorf("%s read no live Lease during the stall (audit log): its Lease cache did not fall behind the grace period, the fault did not take effect", v.ctl.name)
				}
				if o.unknown+o.taints+o.evictions+len(o.notReady) > 0 {
					t.Errorf("%s under a stalled Lease watch: %d Unknown writes, %d taints, %d pods set NotReady, %d evictions; want none", v.ctl.name, o.unknown, o.taints, len(o.notReady), o.evictions)
				}
			})
		}
	})
	t.Logf("Lease watch stalled for %v (grace %v), kubelets renewing every %v; %v for all three:\n%s\n%s", 2*faultGrace, faultGrace, faultRenew, time.Since(t0).Round(time.Second), stallTableHeader, strings.Join(rows, "\n"))
}

// stallTableHeader is faultTableHeader with the live Lease GETs during the
// stall.
const stallTableHeader = "| controller                               | Unknown writes     | taints | pods set NotReady | evictions | live Lease GETs |\n" +
	"|------------------------------------------|--------------------|--------|-------------------|-----------|-----------------|"

// runLeaseWatchStall runs the stall against ctl and returns what it wrote
// and how many live Lease GETs of it the apiserver received during the
// stall.
func runLeaseWatchStall(t *testing.T, bins cluster.Binaries, ctl faultController) (faultOutcome, int) {
	nodes, pods := sixNodes()
	fw, px, p := startUnderTest(t, bins, ctl, nodes, pods, nil)
	time.Sleep(2 * faultMonitorPeriod)

	before := fw.leaseRenewals(t)
	remove, err := px.Add(leaseWatchStall)
	if err != nil {
		t.Fatal(err)
	}
	stallStart := time.Now()
	time.Sleep(2 * faultGrace)
	remove()
	stallEnd := time.Now()
	after := fw.leaseRenewals(t)
	for _, n := range nodes {
		if !after[n.name].After(before[n.name].Add(faultGrace)) {
			t.Errorf("node %s: Lease renewed at %s before the stall and %s after; want renewals throughout", n.name, stamp(before[n.name]), stamp(after[n.name]))
		}
	}
	// Whatever the stall set off lands within a grace period after it.
	time.Sleep(faultGrace + 2*faultMonitorPeriod)
	stopUnderTest(t, p)

	_ = px.Close() // every request logged
	held, proxyGets := 0, 0
	for _, e := range px.Log() {
		if e.Resource == "leases" && e.Watch && e.Held > 0 {
			held++
		}
		if e.Resource == "leases" && !e.Watch && e.Name != "" && e.Method == "GET" && e.Start.After(stallStart) && e.Start.Before(stallEnd) {
			proxyGets++
		}
	}
	if held == 0 {
		t.Errorf("no Lease watch was held (proxy log): the fault was not applied")
	}
	gets := leaseGets(fw.received(t, byTag("under-test"), stallStart, stallEnd))
	o := fw.outcome(t, byController)
	t.Logf("%s: %d Lease watches held, %d live Lease GETs during the stall (%d through the proxy); %d Unknown writes (%d nodes), %d taints, %d pods set NotReady, %d evictions, %d writes in all",
		ctl.name, held, gets, proxyGets, o.unknown, len(o.unknownNodes), o.taints, len(o.notReady), o.evictions, o.writes)
	return o, gets
}

// TestFaultControllerCutOff: the controller is cut off from the apiserver
// (every connection closed, new ones refused) for 2 × the grace period
// while every kubelet keeps renewing, then reconnected. What must hold: no
// Unknown write lands (any would rest on the Leases the controller saw
// before the cut), hence no taint and no eviction. Run against
// kube-controller-manager v1.37.2 and examples/nodecontroller (default
// flags) at the same time. The cut must take effect and end: the proxy
// refused the controller's connections during it; in the audit log, the
// apiserver ended the controller's open watches at the cut, received no
// request of the controller during it (a request forwarded just before
// the cut may reach it up to cutSlack later) and received some after the
// reconnection. The time from the reconnection to the
// controller's first answered request is logged.
func TestFaultControllerCutOff(t *testing.T) {
	bins := binariesWithKCM(t)
	ctls := []faultController{kcmController(bins), oursController("nodecontroller")}
	rows := controllerRows(t, ctls, func(t *testing.T, i int, ctl faultController) string {
		o := runCutOff(t, bins, ctl)
		if o.unknown+o.taints+o.evictions+len(o.notReady) > 0 {
			t.Errorf("%s after a cut-off of %v: %d Unknown writes (at %v), %d taints, %d pods set NotReady, %d evictions; want none", ctl.name, 2*faultGrace, o.unknown, o.unknownAt, o.taints, len(o.notReady), o.evictions)
		}
		return o.row(ctl.name)
	})
	t.Logf("controller cut off for %v (grace %v), kubelets renewing every %v:\n%s\n%s", 2*faultGrace, faultGrace, faultRenew, faultTableHeader, strings.Join(rows, "\n"))
}

// cutSlack is how long after a cut (or a rule put in place) a request the
// proxy had already forwarded may still reach the apiserver's handler on
// the loaded machine.
const cutSlack = time.Second

func runCutOff(t *testing.T, bins cluster.Binaries, ctl faultController) faultOutcome {
	nodes, pods := sixNodes()
	fw, px, p := startUnderTest(t, bins, ctl, nodes, pods, nil)
	time.Sleep(2 * faultMonitorPeriod)

	cutStart := time.Now()
	px.Cut()
	cutAt := time.Now()
	time.Sleep(2 * faultGrace)
	px.Restore()
	restored := time.Now()
	time.Sleep(faultGrace + 2*faultMonitorPeriod)
	stopUnderTest(t, p)
	_ = px.Close()
	var first, firstWatch time.Duration = -1, -1
	for _, e := range px.Log() {
		if e.Start.After(restored) && e.Status == 200 {
			d := e.End.Sub(restored)
			if e.Watch && e.Resource == "leases" && (firstWatch < 0 || e.Start.Sub(restored) < firstWatch) {
				firstWatch = e.Start.Sub(restored)
			}
			if !e.Watch && (first < 0 || d < first) {
				first = d
			}
		}
	}
	refused := px.Refused()
	// The watches the controller had open end at the cut, in the
	// apiserver too (an idle controller sends nothing else then).
	cutWatches := 0
	for _, e := range fw.received(t, byTag("under-test"), time.Time{}, cutStart) {
		if e.Verb == "watch" && !e.StageTimestamp.Before(cutStart) && e.StageTimestamp.Before(cutAt.Add(cutSlack)) {
			cutWatches++
		}
	}
	during := fw.received(t, byTag("under-test"), cutAt.Add(cutSlack), restored)
	afterwards := fw.received(t, byTag("under-test"), restored, time.Now())
	o := fw.outcome(t, byController)
	t.Logf("%s: %d connections refused during the cut; the apiserver ended %d of its watches at the cut, received %d requests during it and %d after it; first answered request %v after the reconnection, Lease watch re-opened after %v; %d Unknown writes (%d nodes), %d taints, %d pods set NotReady, %d evictions",
		ctl.name, refused, cutWatches, len(during), len(afterwards), first.Round(time.Millisecond), firstWatch.Round(time.Millisecond), o.unknown, len(o.unknownNodes), o.taints, len(o.notReady), o.evictions)
	if refused == 0 {
		t.Errorf("%s: the proxy refused no connection during the cut: the cut did not take effect", ctl.name)
	}
	if cutWatches == 0 {
		t.Errorf("%s: the apiserver ended none of the controller's watches at the cut (audit log): the cut did not take effect", ctl.name)
	}
	if len(during) > 0 {
		t.Errorf("%s: the apiserver received %d requests of the controller during the cut (audit log, from %v after it): %s", ctl.name, len(during), cutSlack, describe(during))
	}
	if len(afterwards) == 0 {
		t.Errorf("%s: the apiserver received no request of the controller after the reconnection (audit log): it never came back, so its writes prove nothing", ctl.name)
	}
	return o
}

// controllerDeletes returns, per pod, the times the controller's deletes
// of it were answered 200 (audit log).
func (fw *faultWorld) controllerDeletes(t *testing.T, sel func(*parity.AuditEvent) bool) map[string][]time.Time {
	t.Helper()
	events, err := parity.ReadAuditLog(fw.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]time.Time{}
	for i := range events {
		e := &events[i]
		if e.ObjectRef != nil && e.ObjectRef.Resource == "pods" && e.Verb == "delete" && e.Code() == 200 && sel(e) {
			out[e.ObjectRef.Name] = append(out[e.ObjectRef.Name], e.StageTimestamp)
		}
	}
	return out
}

// waitUnreachableTaint waits up to within for node's unreachable NoExecute
// taint and returns its timeAdded; it fails at once when the controller p
// (if not nil) has exited.
func waitUnreachableTaint(t *testing.T, cs kubernetes.Interface, node string, within time.Duration, p *cluster.Process) time.Time {
	t.Helper()
	var added time.Time
	cluster.Eventually(t, within, node+" tainted unreachable:NoExecute", func(ctx context.Context) (bool, error) {
		if p != nil && p.Exited() {
			return false, fmt.Errorf("controller exited: %v", p.Err())
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if tk := findTaint(n, unreachableNoExecute); tk != nil && tk.TimeAdded != nil {
			added = tk.TimeAdded.Time
			return true, nil
		}
		return false, nil
	})
	return added
}

// fourNodes: one zone of four nodes; the first (silent in the tests that
// use it) runs pods with 0 s, short and no own unreachable toleration,
// every other node a 0 s pod.
func fourNodes(prefix string, short int64) ([]worldNode, []worldPod) {
	var nodes []worldNode
	var pods []worldPod
	for i := 1; i <= 4; i++ {
		n := fmt.Sprintf("%s%d", prefix, i)
		nodes = append(nodes, worldNode{n, "zone-a"})
		pods = append(pods, worldPod{n + "-zero", n, 0})
	}
	n := nodes[0].name
	pods = append(pods, worldPod{n + "-short", n, short}, worldPod{n + "-none", n, tolNone})
	return nodes, pods
}

// TestFaultAPIServerOverloaded: while a node is really silent, every
// non-watch request of the controller is answered 429 Too Many Requests
// (Retry-After: 2) for 30 s, then 503 Service Unavailable (Retry-After: 2)
// for 30 s; watches flow. The overload must take effect on both sides: the
// proxy answered both statuses, and the apiserver received no request of
// the controller but its watches during the window (audit log). What must
// hold for examples/nodecontroller: nothing is lost (once the overload
// ends the node is written Unknown once, gets both unreachable taints
// once, its 0 s and 3 s pods are deleted once each, its 300 s pod is kept,
// no other node is touched); tainting and evictions resume within one
// monitor period plus one Retry-After of the end (a request the client
// holds back for Retry-After goes out then), +1 s for the loaded machine;
// Retry-After is honoured (proxy log, retriesOf): some refused request is
// repeated after its Retry-After, and one is repeated sooner only after
// client-go's 10 retries are used up (the controller's own next attempt
// does not wait for it, in kube-controller-manager as in ours).
// kube-controller-manager v1.37.2 runs the same scenario beside it,
// recorded.
func TestFaultAPIServerOverloaded(t *testing.T) {
	bins := binariesWithKCM(t)
	ctls := []faultController{kcmController(bins), oursController("nodecontroller")}
	rows := controllerRows(t, ctls, func(t *testing.T, i int, ctl faultController) string {
		return runOverload(t, bins, ctl, i == 1)
	})
	t.Logf("overload: 429 then 503, Retry-After 2 s, 60 s in all:\n"+
		"| controller | requests in the window | answered 429 / 503 | repeated after / sooner than Retry-After | Unknown after the end | tainted after | 0 s pod deleted after | 3 s pod deleted after | problems |\n"+
		"|---|---|---|---|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
}

func runOverload(t *testing.T, bins cluster.Binaries, ctl faultController, required bool) string {
	const retryAfter = 2
	nodes, pods := fourNodes("o", 3)
	silent := nodes[0].name
	fw, px, p := startUnderTest(t, bins, ctl, nodes, pods, []string{silent})

	origin, err := fw.w.silence(t)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	remove, err := px.Add(faultproxy.Rule{Name: "429", Watch: faultproxy.NoWatch, Action: faultproxy.Respond, Status: 429, RetryAfter: retryAfter})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Second)
	remove503, err := px.Add(faultproxy.Rule{Name: "503", Watch: faultproxy.NoWatch, Action: faultproxy.Respond, Status: 503, RetryAfter: retryAfter})
	if err != nil {
		t.Fatal(err)
	}
	remove()
	time.Sleep(30 * time.Second)
	remove503()
	end := time.Now()
	// The self-replay (KCM's recording) is given no fault: its decisions
	// come when the kubelet's silence calls for them, KCM's once the
	// overload ended, within a period, a Retry-After, the 3 s toleration
	// and 1 s for the loaded machine.
	delayRecording(fw.c, replayDelay{until: end, within: faultMonitorPeriod + retryAfter*time.Second + 3*time.Second + time.Second,
		reason: "the fault proxy answered KCM's requests 429, then 503, for 60 s: refusals that never reach the apiserver's audit log"})
	T := waitUnreachableTaint(t, fw.cs, silent, 30*time.Second, p)
	for _, name := range []string{silent + "-zero", silent + "-short"} {
		cluster.Eventually(t, 30*time.Second, name+" evicted", func(ctx context.Context) (bool, error) {
			pod, err := fw.cs.CoreV1().Pods(faultNS).Get(ctx, name, metav1.GetOptions{})
			return err == nil && pod.DeletionTimestamp != nil, err
		})
	}
	time.Sleep(3 * faultMonitorPeriod)
	p.Stop(10 * time.Second)
	_ = px.Close()

	o := fw.outcome(t, byController)
	deletes := fw.controllerDeletes(t, byController)
	var unknownAt time.Time
	if len(o.unknownAt) > 0 {
		unknownAt = o.unknownAt[0]
	}
	// Checked for ours, recorded for kube-controller-manager.
	var problems []string
	check := func(ok bool, format string, args ...any) {
		if !ok {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	bound := faultMonitorPeriod + retryAfter*time.Second + time.Second
	check(o.unknown == 1 && o.unknownNodes[silent], "Unknown writes: %d on %v; want 1, on %s", o.unknown, o.unknownNodes, silent)
	check(o.taints == 2, "health taints added: %d; want 2 (unreachable NoSchedule and NoExecute on %s)", o.taints, silent)
	check(!unknownAt.Before(end) && !unknownAt.After(end.Add(bound)), "Unknown written at %s; want within %v of the overload's end %s", stamp(unknownAt), bound, stamp(end))
	check(!firstOf(deletes[silent+"-zero"]).After(end.Add(bound+time.Second)), "%s-zero deleted at %s; want within %v of the overload's end %s", silent, stamp(firstOf(deletes[silent+"-zero"])), bound+time.Second, stamp(end))
	for _, name := range []string{silent + "-zero", silent + "-short"} {
		check(len(deletes[name]) == 1, "pod %s deleted %d times; want once", name, len(deletes[name]))
	}
	check(!firstOf(deletes[silent+"-short"]).Before(T.Add(3*time.Second)), "%s-short deleted at %s, before its taint's timeAdded %s + 3 s", silent, stamp(firstOf(deletes[silent+"-short"])), stamp(T))
	check(o.evictions == 2, "evictions: %d, want 2 (%v)", o.evictions, deletes)

	// The overload took effect, on both sides: the proxy answered both
	// statuses, and the apiserver received no request of the controller
	// but its watches while it lasted.
	log := px.Log()
	served := map[int]int{}
	inWindow := 0
	kinds := map[string]int{}
	for _, e := range log {
		if e.Rule == strconv.Itoa(e.Status) && e.RetryAfter == retryAfter {
			served[e.Status]++
		}
		if e.Start.After(start) && e.Start.Before(end) && !e.Watch {
			inWindow++
			k := e.Method + " " + e.Resource
			if e.Subresource != "" {
				k += "/" + e.Subresource
			}
			kinds[k]++
		}
	}
	if served[429] == 0 || served[503] == 0 {
		t.Errorf("%s: the proxy answered %d requests 429 and %d 503 (Retry-After %d); want both: the overload did not take effect", ctl.name, served[429], served[503], retryAfter)
	}
	var reached []parity.AuditEvent
	for _, e := range fw.received(t, byTag("under-test"), start.Add(cutSlack), end) {
		if e.Verb != "watch" {
			reached = append(reached, e)
		}
	}
	if len(reached) > 0 {
		t.Errorf("%s: the apiserver received %d requests of the controller other than watches during the overload (audit log, from %v after its start): %s", ctl.name, len(reached), cutSlack, describe(reached))
	}

	// Retry-After, from the proxy's log: client-go repeats a refused
	// request after its Retry-After, up to clientGoMaxRetries times; only
	// the controller's own next attempt, once they are used up, may come
	// sooner.
	r := retriesOf(log)
	for _, e := range r.early {
		t.Logf("%s %s?%s: answered %d (Retry-After %d) at %s, the %s refusal in a row, repeated %v later", e.Method, e.Path, e.Query, e.Status, e.RetryAfter, stamp(e.End), ordinal(e.run), e.wait.Round(time.Millisecond))
	}
	check(r.honoured > 0, "no refused request was repeated after its Retry-After (%d refused): client-go's retries were not seen", r.refused)
	for _, e := range r.early {
		check(e.run > clientGoMaxRetries, "%s %s?%s repeated %v after a %d answer with Retry-After %d s, the %s refusal in a row: before client-go's %d retries were used up", e.Method, e.Path, e.Query, e.wait.Round(time.Millisecond), e.Status, e.RetryAfter, ordinal(e.run), clientGoMaxRetries)
	}
	for _, pr := range problems {
		if required {
			t.Error(pr)
		} else {
			t.Log("recorded: " + pr)
		}
	}
	t.Logf("%s: requests in the overload window by kind: %v", ctl.name, kinds)
	t.Logf("%s: silent since %s; overload %s–%s: %d requests (%.1f/s), %d answered 429 and %d 503; of the refused requests (not POSTs) %d repeated after their Retry-After, %d sooner; after its end: Unknown written %v, tainted (timeAdded, whole seconds) %v, %s-zero deleted %v, %s-short %v",
		ctl.name, stamp(origin), stamp(start), stamp(end), inWindow, float64(inWindow)/end.Sub(start).Seconds(), served[429], served[503], r.honoured, len(r.early),
		unknownAt.Sub(end).Round(time.Millisecond), T.Sub(end).Round(time.Millisecond),
		silent, firstOf(deletes[silent+"-zero"]).Sub(end).Round(time.Millisecond), silent, firstOf(deletes[silent+"-short"]).Sub(end).Round(time.Millisecond))
	return fmt.Sprintf("| %s | %d | %d / %d | %d / %d | %v | %v | %v | %v | %d problems |", ctl.name, inWindow, served[429], served[503], r.honoured, len(r.early),
		unknownAt.Sub(end).Round(100*time.Millisecond), T.Sub(end).Round(100*time.Millisecond),
		firstOf(deletes[silent+"-zero"]).Sub(end).Round(100*time.Millisecond), firstOf(deletes[silent+"-short"]).Sub(end).Round(100*time.Millisecond), len(problems))
}

// clientGoMaxRetries is how many times client-go's rest client repeats a
// request answered 429 or 5xx with Retry-After, waiting the Retry-After
// each time (maxRetries in k8s.io/client-go/rest/request.go, checkWait in
// with_retry.go).
const clientGoMaxRetries = 10

// earlyRepeat is a refused request repeated sooner than its Retry-After.
type earlyRepeat struct {
	faultproxy.Entry
	// run is how many times in a row the request had been refused, this
	// time included; wait, the time from this answer to the repeat.
	run  int
	wait time.Duration
}

// retries is what retriesOf measures.
type retries struct {
	refused, honoured int
	early             []earlyRepeat
}

// retriesOf pairs each request the proxy refused with a Retry-After (not a
// POST: that creates another object, it repeats nothing) with its repeat,
// the next request with the same method and URL that started after the
// answer: honoured when it came at least Retry-After later (100 ms allowed
// for rounding), early otherwise. An early repeat, or an answer that was
// not a refusal, ends a run of refusals in a row.
func retriesOf(log []faultproxy.Entry) retries {
	type key struct{ method, path, query string }
	byKey := map[key][]faultproxy.Entry{}
	for _, e := range log {
		if !e.Watch && e.Method != "POST" {
			k := key{e.Method, e.Path, e.Query}
			byKey[k] = append(byKey[k], e)
		}
	}
	var r retries
	for _, es := range byKey {
		slices.SortFunc(es, func(a, b faultproxy.Entry) int { return a.Start.Compare(b.Start) })
		run := 0
		for i, e := range es {
			if e.Rule == "" || e.RetryAfter == 0 {
				run = 0
				continue
			}
			r.refused++
			run++
			j := i + 1
			for j < len(es) && !es[j].Start.After(e.End) {
				j++
			}
			if j == len(es) {
				continue
			}
			wait := es[j].Start.Sub(e.End)
			if wait >= time.Duration(e.RetryAfter)*time.Second-100*time.Millisecond {
				r.honoured++
				continue
			}
			r.early = append(r.early, earlyRepeat{Entry: e, run: run, wait: wait})
			run = 0
		}
	}
	slices.SortFunc(r.early, func(a, b earlyRepeat) int { return a.End.Compare(b.End) })
	return r
}

// ordinal writes n as 1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st.
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}

func firstOf(ts []time.Time) time.Time {
	if len(ts) == 0 {
		return time.Time{}
	}
	return ts[0]
}

// TestFaultWatchGone: during an outage (one node silent, tainted
// NoExecute at T, a pod tolerating it 10 s counting down), every watch of
// the controller is ended and its re-watches are answered 410 Gone (an
// ERROR event with a 410 Expired Status, as the apiserver answers a
// resourceVersion it no longer has) for 2 s, forcing the informers to
// relist (the relists pass: a LIST, or client-go's watch-list, which the
// apiserver never answers 410). What must hold: countdowns are kept (the 10 s pod is evicted no
// earlier than T + 10 s and no later than one monitor period plus 1 s
// after), nothing is evicted twice (one delete per pod), the taint is not
// re-added (one NoExecute taint write, timeAdded unchanged), the pod
// tolerating forever stays.
func TestFaultWatchGone(t *testing.T) {
	bins := binariesWithKCM(t)
	const tol = 10
	nodes, pods := fourNodes("g", tol)
	silent := nodes[0].name
	fw, px, p := startUnderTest(t, bins, oursController("nodecontroller"), nodes, pods, []string{silent})
	if _, err := fw.w.silence(t); err != nil {
		t.Fatal(err)
	}
	T := waitUnreachableTaint(t, fw.cs, silent, faultGrace+30*time.Second, p)
	time.Sleep(time.Until(T.Add(3 * time.Second)))
	goneAt := time.Now()
	remove, err := px.Add(faultproxy.Rule{Name: "gone", Watch: faultproxy.OnlyResumeWatch, Action: faultproxy.Gone})
	if err != nil {
		t.Fatal(err)
	}
	ended := px.EndWatches(faultproxy.Rule{})
	time.Sleep(2 * time.Second)
	remove()
	name := silent + "-short"
	cluster.Eventually(t, tol*time.Second+30*time.Second, name+" evicted", func(ctx context.Context) (bool, error) {
		pod, err := fw.cs.CoreV1().Pods(faultNS).Get(ctx, name, metav1.GetOptions{})
		return err == nil && pod.DeletionTimestamp != nil, err
	})
	time.Sleep(3 * faultMonitorPeriod)
	n, err := fw.cs.CoreV1().Nodes().Get(context.Background(), silent, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Stop(10 * time.Second)
	_ = px.Close()

	gone, lists := 0, 0
	for _, e := range px.Log() {
		if e.Rule == "gone" {
			gone++
		}
		// A relist: a LIST, or client-go's watch-list (WatchListClient).
		if e.Method == "GET" && e.Name == "" && e.Resource != "" && e.Rule == "" && (!e.Watch || e.InitialEvents) && e.Start.After(goneAt) {
			lists++
		}
	}
	o := fw.outcome(t, byController)
	deletes := fw.controllerDeletes(t, byController)
	evicted := firstOf(deletes[name])
	t.Logf("tainted at %s; %d watches ended, %d re-watches answered 410, %d lists after; %s evicted %v after the taint (toleration %d s); %d evictions",
		stamp(T), ended, gone, lists, name, evicted.Sub(T).Round(time.Millisecond), tol, o.evictions)
	if ended == 0 || gone == 0 || lists == 0 {
		t.Errorf("the fault did not force a relist: %d watches ended, %d answers 410, %d lists", ended, gone, lists)
	}
	if evicted.Before(T.Add(tol*time.Second)) || evicted.After(T.Add(tol*time.Second+faultMonitorPeriod+time.Second)) {
		t.Errorf("%s evicted at %s; want in [T+%ds, T+%ds+%v] with T = %s", name, stamp(evicted), tol, tol, faultMonitorPeriod+time.Second, stamp(T))
	}
	for pod, ts := range deletes {
		if len(ts) != 1 {
			t.Errorf("pod %s deleted %d times", pod, len(ts))
		}
	}
	if _, ok := deletes[silent+"-none"]; ok {
		t.Errorf("%s-none (admission's 300 s) evicted", silent)
	}
	if o.evictions != 2 {
		t.Errorf("evictions: %d, want 2 (%s-zero, %s)", o.evictions, silent, name)
	}
	if o.taints != 2 {
		t.Errorf("health taints added: %d; want 2 (unreachable NoSchedule and NoExecute, once each)", o.taints)
	}
	if tk := findTaint(n, unreachableNoExecute); tk == nil || tk.TimeAdded == nil || !tk.TimeAdded.Time.Equal(T) {
		t.Errorf("%s's NoExecute taint at the end: %v; want timeAdded %s", silent, tk, stamp(T))
	}
}

// Leader election timings of TestFaultLeaderPartition (kube-controller-manager's
// 15 s / 10 s / 2 s, shortened).
const (
	faultLease         = 6 * time.Second
	faultRenewDeadline = 4 * time.Second
	faultRetry         = 500 * time.Millisecond
)

// TestFaultLeaderPartition: two replicas of examples/nodecontroller with
// leader election, each through its own proxy (tagged replica-a and
// replica-b in the audit log's User-Agent). A node is silent and tainted at
// T; a pod tolerates it 12 s. At T+2 s the leader is partitioned (its proxy
// cut), the process alive; after the grace period plus 2 s (more than the
// lease duration plus the renew deadline) the partition heals. What must
// hold (audit log and the proxies' logs): the standby takes the leader
// Lease within the lease duration plus the retry period (+ jitter and 1 s
// for load) and writes; no write of the old leader lands after the new
// leader's first write, also after the partition heals; the old leader
// sends no node or pod write after the heal (it stopped leading at its
// renew deadline and, as kube-controller-manager, exits); the pod is
// evicted once, no earlier than T + 12 s.
func TestFaultLeaderPartition(t *testing.T) {
	bins := binariesWithKCM(t)
	const tol = 12
	nodes, pods := fourNodes("l", tol)
	silent := nodes[0].name
	fw := startFaultWorld(t, bins, nodes, pods, []string{silent})
	le := []string{
		"-leader-elect=true",
		"-leader-elect-lease-duration=" + faultLease.String(),
		"-leader-elect-renew-deadline=" + faultRenewDeadline.String(),
		"-leader-elect-retry-period=" + faultRetry.String(),
	}
	tags := []string{"replica-a", "replica-b"}
	pxs := map[string]*faultproxy.Proxy{}
	procs := map[string]*cluster.Process{}
	for _, tag := range tags {
		px, kc := fw.proxy(t, tag)
		pxs[tag] = px
		procs[tag] = oursController("nodecontroller", le...).start(t, fw, kc, tag)
	}
	fw.waitTakeover(t, procs[tags[0]])
	leader := ""
	cluster.Eventually(t, 30*time.Second, "a leader renews its Lease", func(context.Context) (bool, error) {
		for _, tag := range tags {
			for _, e := range pxs[tag].Log() {
				if e.Resource == "leases" && e.Namespace == metav1.NamespaceSystem && (e.Method == "PUT" || e.Method == "POST") && e.Status/100 == 2 {
					leader = tag
					return true, nil
				}
			}
		}
		return false, nil
	})
	standby := tags[0]
	if leader == tags[0] {
		standby = tags[1]
	}
	t.Logf("leader %s, standby %s", leader, standby)

	if _, err := fw.w.silence(t); err != nil {
		t.Fatal(err)
	}
	T := waitUnreachableTaint(t, fw.cs, silent, faultGrace+30*time.Second, nil)
	time.Sleep(time.Until(T.Add(2 * time.Second)))
	pxs[leader].Cut()
	cutAt := time.Now()
	name := silent + "-short"
	cluster.Eventually(t, tol*time.Second+30*time.Second, name+" evicted", func(ctx context.Context) (bool, error) {
		pod, err := fw.cs.CoreV1().Pods(faultNS).Get(ctx, name, metav1.GetOptions{})
		return err == nil && pod.DeletionTimestamp != nil, err
	})
	time.Sleep(time.Until(cutAt.Add(faultGrace + 2*time.Second)))
	pxs[leader].Restore()
	healed := time.Now()
	time.Sleep(5 * time.Second)
	for _, tag := range tags {
		if procs[tag].Exited() {
			t.Logf("%s exited: %v", tag, procs[tag].Err())
		}
		procs[tag].Stop(10 * time.Second)
		_ = pxs[tag].Close()
	}

	events, err := parity.ReadAuditLog(fw.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	oldW, newW := byTag(leader), byTag(standby)
	var first, firstLease time.Time
	for i := range events {
		e := &events[i]
		if e.ObjectRef == nil || !isWrite(e) || e.Code()/100 != 2 || !newW(e) || e.StageTimestamp.Before(cutAt) {
			continue
		}
		if e.ObjectRef.Resource == "leases" {
			if firstLease.IsZero() {
				firstLease = e.StageTimestamp
			}
		} else if first.IsZero() {
			first = e.StageTimestamp
		}
	}
	// The partition took effect: the leader's proxy refused its
	// connections, and none of its requests reached the apiserver.
	if n := pxs[leader].Refused(); n == 0 {
		t.Errorf("the proxy of the old leader %s refused no connection during the partition: the partition did not take effect", leader)
	}
	if during := fw.received(t, oldW, cutAt.Add(cutSlack), healed); len(during) > 0 {
		t.Errorf("the apiserver received %d requests of the old leader %s during the partition (audit log, from %v after the cut): %s", len(during), leader, cutSlack, describe(during))
	}
	if firstLease.IsZero() || first.IsZero() {
		t.Fatalf("the standby %s never wrote after the cut (Lease %s, other %s)", standby, stamp(firstLease), stamp(first))
	}
	late := 0
	for i := range events {
		e := &events[i]
		if e.ObjectRef != nil && isWrite(e) && e.Code()/100 == 2 && oldW(e) && !e.StageTimestamp.Before(firstLease) {
			late++
			t.Errorf("old leader %s wrote %s %s/%s at %s, after the new leader's first write at %s", leader, e.Verb, e.ObjectRef.Resource, e.ObjectRef.Name, stamp(e.StageTimestamp), stamp(firstLease))
		}
	}
	attempts := 0
	for _, e := range pxs[leader].Log() {
		if e.Start.After(healed) && e.Method != "GET" && e.Resource != "leases" && e.Resource != "events" {
			attempts++
			t.Errorf("old leader %s sent %s %s after the heal", leader, e.Method, e.Path)
		}
	}
	deletes := fw.controllerDeletes(t, func(e *parity.AuditEvent) bool { return oldW(e) || newW(e) })
	evicted := firstOf(deletes[name])
	took := firstLease.Sub(cutAt)
	t.Logf("cut at T+%v; the standby took the Lease %v after the cut (bound %v), its first other write %v after; %s evicted at T+%v (toleration %d s) by %s; the old leader: %d writes landed after the takeover, %d node/pod writes sent after the heal",
		cutAt.Sub(T).Round(time.Millisecond), took.Round(time.Millisecond), faultLease+3*faultRetry+time.Second, first.Sub(cutAt).Round(time.Millisecond),
		name, evicted.Sub(T).Round(time.Millisecond), tol, map[bool]string{true: standby, false: leader}[len(deletes[name]) > 0 && evicted.After(firstLease)], late, attempts)
	// client-go waits up to retry × (1 + JitterFactor 1.2) between
	// attempts; +1 s for the loaded machine.
	if bound := faultLease + 3*faultRetry + time.Second; took > bound {
		t.Errorf("the standby took the Lease %v after the cut; want within %v (lease duration %v + 3 × retry %v + 1 s)", took, bound, faultLease, faultRetry)
	}
	if len(deletes[name]) != 1 || evicted.Before(T.Add(tol*time.Second)) {
		t.Errorf("%s deleted at %v; want once, no earlier than T + %d s = %s", name, deletes[name], tol, stamp(T.Add(tol*time.Second)))
	}
}
