package sim

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor/monitortest"
	"github.com/kubelifecycle/lifecycle/internal/uid"
	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/taints"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// Epoch is the virtual instant a run starts at (t=0). Any fixed instant
// would do; reports show offsets from it.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Options selects how a scenario runs.
type Options struct {
	// PodEvictionTimeout > 0 runs the pre-1.27 node eviction mode
	// (monitor.Config.PodEvictionTimeout); 0 runs taint-based eviction.
	PodEvictionTimeout time.Duration
	// Tick runs the taint and eviction passes at every TaintPeriod tick, as
	// the real controller does. By default a tick runs only when
	// Monitor.NextDeadline says a pass has work; the results are identical
	// (tested), only faster.
	Tick bool
	// Budget bounds the run's work; zero fields take DefaultBudget's.
	Budget Budget

	// plain turns off the shortcuts that give identical results faster
	// (monitortest.Cluster.ReuseEventPods), for the tests that check they
	// do.
	plain bool
}

// Budget bounds the work of a run (or, for Sweep, of all its runs
// together), so a scenario whose fields are each within their limits
// (100,000 nodes, 7 days, a 100ms monitor period, a 1 MiB file of events)
// cannot ask for hours of CPU and gigabytes of memory in combination.
// Scenario.Work measures a scenario in the same units.
type Budget struct {
	// NodePasses bounds nodes × (monitor passes + Lease renewals + status
	// posts per node): the per-node steps the run takes.
	NodePasses int64
	// Pods bounds the pods the cluster holds.
	Pods int64
	// EventSteps bounds the work of the scenario's events: Σ over events of
	// the nodes it targets × (1 + the pods on each). Every targeted node is
	// a kubelet stopped or restarted, a node going Unknown and Ready again,
	// its pods marked not ready and ready again: a timeline entry and a few
	// object writes each, so this is also what bounds the timeline's size.
	EventSteps int64
}

// The default budget: about ten times the large-cluster scenario's node
// passes (5,000 nodes for an hour, 5.5 million) and pods (150,000), three
// times its event steps (2,603 targeted nodes with 30 pods each, 80,693).
// An event step costs a few hundred bytes (a node target without pods
// about 1.7 KB), so the default keeps a scenario's events under about half
// a gigabyte.
const (
	DefaultMaxNodePasses = 60_000_000
	DefaultMaxPods       = 1_000_000
	DefaultMaxEventSteps = 250_000
)

// DefaultBudget returns the budget Run applies to fields left zero.
func DefaultBudget() Budget {
	return Budget{NodePasses: DefaultMaxNodePasses, Pods: DefaultMaxPods, EventSteps: DefaultMaxEventSteps}
}

// ErrBudget is wrapped by the error Run returns for a scenario over its
// Budget.
var ErrBudget = errors.New("policysim: scenario over the work budget")

// Work returns what the scenario costs in the units of Budget: node passes
// (nodes × (duration/nodeMonitorPeriod + duration/leaseRenewInterval +
// duration/statusUpdateInterval), each term at least 1), pods, and event
// steps (Σ over events of targeted nodes × (1 + pods per node); a device
// action counts its devices, see deviceWork in devscenario.go). Call it on
// a valid scenario; it saturates instead of overflowing.
func (sc *Scenario) Work() Budget {
	var w Budget
	var nodes int64
	perNode := make(map[string]int64, len(sc.Zones))
	for _, z := range sc.Zones {
		n := int64(max(z.Nodes, 0))
		nodes = satAdd(nodes, n)
		var pn int64
		for _, g := range z.PodGroups() {
			pn = satAdd(pn, int64(max(g.PerNode, 0)))
		}
		perNode[z.Name] = pn
		w.Pods = satAdd(w.Pods, satMul(n, pn))
	}
	d := sc.Duration.D()
	var steps int64
	for _, every := range []Duration{sc.Policy.NodeMonitorPeriod, sc.Kubelet.LeaseRenewInterval, sc.Kubelet.StatusUpdateInterval} {
		if every <= 0 {
			every = Duration(MinInterval)
		}
		steps = satAdd(steps, int64(d/every.D())+1)
	}
	w.NodePasses = satMul(nodes, steps)
	zoneOf := func(node string) string {
		if i := strings.LastIndexByte(node, '-'); i > 0 {
			return node[:i]
		}
		return ""
	}
	for i := range sc.Events {
		e := &sc.Events[i]
		switch {
		case isDeviceAction(e.Action):
			// Counted by deviceWork: a device event's scope is not a
			// kubelet target.
		case e.Node != "":
			w.EventSteps = satAdd(w.EventSteps, 1+perNode[zoneOf(e.Node)])
		case len(e.Nodes) > 0:
			for _, n := range e.Nodes {
				w.EventSteps = satAdd(w.EventSteps, 1+perNode[zoneOf(n)])
			}
		case e.Zone != "":
			n := int64(e.Count)
			if n <= 0 {
				for _, z := range sc.Zones {
					if z.Name == e.Zone {
						n = int64(max(z.Nodes, 0))
					}
				}
			}
			w.EventSteps = satAdd(w.EventSteps, satMul(n, 1+perNode[e.Zone]))
		}
	}
	w.EventSteps = satAdd(w.EventSteps, sc.deviceWork())
	return w
}

// add returns the sum of two works, saturating.
func (b Budget) add(o Budget) Budget {
	return Budget{NodePasses: satAdd(b.NodePasses, o.NodePasses), Pods: satAdd(b.Pods, o.Pods), EventSteps: satAdd(b.EventSteps, o.EventSteps)}
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// withDefaults fills the fields left zero (or negative) from DefaultBudget.
func (b Budget) withDefaults() Budget {
	def := DefaultBudget()
	if b.NodePasses <= 0 {
		b.NodePasses = def.NodePasses
	}
	if b.Pods <= 0 {
		b.Pods = def.Pods
	}
	if b.EventSteps <= 0 {
		b.EventSteps = def.EventSteps
	}
	return b
}

// allow returns an error naming the limit and the flag (and Budget field)
// that raises it when work w is over the budget; what names the work ("the
// scenario", "the sweep's 5 runs in all").
func (b Budget) allow(w Budget, what string) error {
	b = b.withDefaults()
	switch {
	case w.NodePasses > b.NodePasses:
		return fmt.Errorf("%w: %s needs %d node passes (nodes × (duration/nodeMonitorPeriod + duration/leaseRenewInterval + duration/statusUpdateInterval)), over the budget of %d; raise it with -max-node-passes (Options.Budget.NodePasses) or shorten the run", ErrBudget, what, w.NodePasses, b.NodePasses)
	case w.Pods > b.Pods:
		return fmt.Errorf("%w: %s needs %d pods, over the budget of %d; raise it with -max-pods (Options.Budget.Pods)", ErrBudget, what, w.Pods, b.Pods)
	case w.EventSteps > b.EventSteps:
		return fmt.Errorf("%w: %s needs %d event steps (Σ over events of targeted nodes × (1 + pods per node)), over the budget of %d; raise it with -max-event-steps (Options.Budget.EventSteps) or use fewer events", ErrBudget, what, w.EventSteps, b.EventSteps)
	}
	return nil
}

// check returns an error naming the limit when the scenario's work is over
// the budget.
func (b Budget) check(sc *Scenario) error { return b.allow(sc.Work(), "the scenario") }

// Mode names the eviction mode of a run.
func (o Options) Mode() string {
	if o.PodEvictionTimeout > 0 {
		return "legacy"
	}
	return "taint"
}

// Entry is one line of the timeline: a monitor.Event, or a scenario event
// applied to one kubelet.
type Entry struct {
	At     time.Duration // since Epoch
	Kind   Kind
	Node   string
	Pod    string // namespace/name
	Zone   string // the scenario's zone name
	Detail string

	// The typed facts of the monitor.Event, for the summary and the chart.
	Taint   v1.Taint // taint-added, taint-removed
	State   string   // zone-state: the zone's new state; device-hold: the driver's (Armed, Holding, Released)
	Rate    float64  // zone-state: the zone's new tainting rate, nodes/s
	Entered bool     // disruption-mode: entered (true) or exited

	// The device kinds' DRA driver and device (driver/pool/device; the
	// pool is the node's name).
	Driver, Device string
}

// Result is a finished run.
type Result struct {
	Scenario *Scenario
	Options  Options
	// Config is the scenario's Monitor configuration (MonitorConfig).
	Config monitor.Config
	// Entries is the timeline: one Entry per thing that happened (each pod
	// evicted, each node gone Unknown, each kubelet stopped), in time order
	// and, within an instant, in the order it happened. It is not grouped:
	// the text timeline (WriteText) collapses an instant's like entries into
	// one line ("30 pods evicted", "60 nodes"); the JSON report lists them
	// as they are here.
	Entries []Entry
	Summary Summary
	// Nodes lists every node name, in name order, with its zone name.
	Nodes []NodeInfo
	// Passes counts the passes run: monitor passes, and ticks at which the
	// taint and eviction passes ran.
	MonitorPasses, TaintPasses int
	// End is the last instant simulated (the scenario's duration).
	End time.Duration
	// Pending is the work left when the run ended, with its projection.
	Pending Pending

	sim *sim // for Pods: the Monitor and cluster as the run left them
}

// Release drops the run's Monitor and cluster, which a Result keeps for
// Pods (a large cluster's are hundreds of megabytes); Pods then returns
// nil. Everything else stays.
func (r *Result) Release() { r.sim = nil }

// NodeInfo names a node and its zone.
type NodeInfo struct{ Name, Zone string }

// MonitorConfig returns the Monitor configuration a scenario runs with:
// the scenario's policy on top of monitor.DefaultConfig, one worker (a
// deterministic pass), and the options' eviction mode. RunOptions runs the
// Monitor with two changes that decide the same (see the README's
// Shortcuts): Config.LeaseEvents, and without lease-watch events no
// confirmation (Health.Confirmation: the live reads would find what the
// cache holds).
func MonitorConfig(sc *Scenario, opt Options) monitor.Config {
	p := sc.Policy
	cfg := monitor.DefaultConfig()
	cfg.Workers = 1
	cfg.MonitorPeriod = p.NodeMonitorPeriod.D()
	cfg.Health = nodehealth.Config{GracePeriod: p.NodeMonitorGracePeriod.D(), StartupGracePeriod: p.NodeStartupGracePeriod.D(),
		Confirmation: leaseConfirmation(p)}
	cfg.Zones = zonestate.Policy{
		EvictionQPS:            p.NodeEvictionRate,
		SecondaryEvictionQPS:   p.SecondaryNodeEvictionRate,
		LargeClusterThreshold:  p.LargeClusterSizeThreshold,
		UnhealthyZoneThreshold: p.UnhealthyZoneThreshold,
		FullDisruptionQPS:      p.FullDisruptionQPS,
	}
	cfg.PodEvictionTimeout = opt.PodEvictionTimeout
	return cfg
}

// Run simulates the scenario with the default Options (taint-based
// eviction) on a virtual clock; see RunOptions.
func Run(ctx context.Context, sc *Scenario) (*Result, error) {
	return RunOptions(ctx, sc, Options{})
}

// RunOptions simulates the scenario on a virtual clock and returns its
// timeline, summary, pod outcomes and the work still pending at the end.
// At every instant, in this order: the kubelets due to heartbeat do so, the
// scenario's events of that instant apply (in file order), the monitor pass
// runs (every policy.nodeMonitorPeriod from t=0), then the taint pass and
// the eviction pass (every 100ms from t=0). Instants up to and including the
// scenario's duration are simulated. An invalid scenario (see
// Scenario.Validate) or one over opt.Budget is an error; so is ctx ending:
// the run looks at ctx before it builds anything and then after every
// cancelEvery node or pod steps (building the cluster, delivering it to the
// Monitor, heartbeats, events), and between instants, so it stops within a
// bounded amount of work.
func RunOptions(ctx context.Context, sc *Scenario, opt Options) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("policysim: not started: %w", err)
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if opt.PodEvictionTimeout < 0 {
		return nil, fmt.Errorf("policysim: negative pod eviction timeout %v", opt.PodEvictionTimeout)
	}
	if err := opt.Budget.check(sc); err != nil {
		return nil, err
	}
	cfg := MonitorConfig(sc, opt)
	// The cluster forwards every Lease renewal (LeaseChanged), so a pass
	// evaluates a steady node only when it renewed.
	cfg.LeaseEvents = !opt.plain
	if !opt.plain && !hasLeaseWatchEvents(sc) {
		// The circuit breaker's live reads would always find what the
		// cache holds (no stall), and confirm every stale verdict: the
		// path without confirmation (v1.36's) decides the same without them.
		cfg.Health.Confirmation = nodehealth.ConfirmNone
	}
	var err error
	s := &sim{sc: sc, opt: opt, cfg: cfg, ctx: ctx, zoneOfKey: map[string]string{},
		slowest: make([]slowPod, len(sc.Zones)), byName: map[string]int{}}
	if s.c, err = s.build(Epoch); err != nil {
		return nil, err
	}
	s.stall = monitortest.NewLeaseStall(s.c)
	m, err := monitor.New(cfg, s.stall, s.record)
	if err != nil {
		return nil, fmt.Errorf("policysim: %w", err)
	}
	s.m = m
	s.c.Attach(m)
	// The Monitor keeps nothing of a pod object it is sent but strings
	// and the template's tolerations, so the millions of pods sent by
	// the initial sync need not be new objects each.
	s.c.ReuseEventPods(!opt.plain)
	// One worker (MonitorConfig), and the summary is done with a node's
	// pods before it lists the next: a list's pods may be reused.
	s.c.ReuseListedPods(!opt.plain)
	s.c.BeforeEvict(s.onEvict)
	for zi, z := range sc.Zones {
		s.zoneOfKey[zonestate.Key(newNode(NodeName(z.Name, 0, z.Nodes), &sc.Zones[zi], Epoch, Epoch))] = z.Name
	}
	s.kubelets = make([]kubelet, len(s.nodes))
	s.down = make([]nodeDown, len(s.nodes))
	s.downs = make([]zoneDown, len(sc.Zones))
	for i := range s.kubelets {
		s.kubelets[i] = kubelet{alive: true, ready: v1.ConditionTrue}
		s.down[i].api = v1.ConditionTrue
		s.schedule(i, 0)
	}
	// The kubelets' and the cache's events; the device actions are the
	// device side's (devices.go).
	s.events = slices.DeleteFunc(slices.Clone(sc.Events), func(e Event) bool { return isDeviceAction(e.Action) })
	slices.SortStableFunc(s.events, func(a, b Event) int { return cmp.Compare(a.At, b.At) })
	if s.space = s.spacing(); s.space > sc.Kubelet.LeaseRenewInterval.D() {
		s.indexEvents()
	}
	s.c.Sync(ctx) // stops early when ctx ends
	if err := s.stopped(); err != nil {
		return nil, err
	}
	if sc.HasDevices() {
		if s.dev, err = newDevSim(s); err != nil {
			return nil, err
		}
	}
	if err := s.loop(); err != nil {
		return nil, err
	}
	s.closeDown()

	res := &Result{Scenario: sc, Options: opt, Config: MonitorConfig(sc, opt), Entries: s.entries,
		MonitorPasses: s.monitorPasses, TaintPasses: s.taintPasses, End: s.t, sim: s}
	res.Nodes = make([]NodeInfo, len(s.nodes))
	for i, n := range s.nodes {
		res.Nodes[i] = NodeInfo{Name: n.name, Zone: sc.Zones[n.zone].Name}
	}
	res.Summary = summarize(res, s)
	res.Pending = s.pending(res)
	res.Summary.Pending = &res.Pending
	return res, nil
}

// nodeOf is one simulated node: its name and zone index.
type nodeOf struct {
	name string
	zone int
}

// build creates the scenario's cluster at epoch: every node Ready with a
// heartbeat and a Lease renewal at epoch (the kubelets' first beat), and its
// pods running and Ready, created an hour before.
func (s *sim) build(epoch time.Time) (*monitortest.Cluster, error) {
	sc := s.sc
	c := monitortest.New(epoch)
	ctx := context.Background()
	created := epoch.Add(nodeCreated)
	readyPod := []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(created)}}
	for zi := range sc.Zones {
		z := &sc.Zones[zi]
		for i := range z.Nodes {
			s.nodes = append(s.nodes, nodeOf{name: NodeName(z.Name, i, z.Nodes), zone: zi})
		}
	}
	slices.SortFunc(s.nodes, func(a, b nodeOf) int { return cmp.Compare(a.name, b.name) })
	groups := make([][]podGroupOf, len(sc.Zones))
	s.podsPerNode = make([]int, len(sc.Zones))
	for zi := range sc.Zones {
		groups[zi] = podGroupsOf(sc, zi)
		for _, g := range groups[zi] {
			s.podsPerNode[zi] += g.n
		}
	}
	c.Reserve(len(s.nodes), 0) // the pods are stamped (AddStampedPods)
	pods := 0
	for _, n := range s.nodes {
		pods += s.podsPerNode[n.zone]
	}
	c.ReserveStamped(pods)
	// One template per zone and pod group, for every node; and the bytes of
	// a node's pod names ("<node>-<group>-<i>"), but for the node names.
	tmpls := make([][]*v1.Pod, len(sc.Zones))
	nameBytes := make([]int, len(sc.Zones))
	for zi, gs := range groups {
		for _, g := range gs {
			tmpls[zi] = append(tmpls[zi], &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: podNamespace, CreationTimestamp: metav1.NewTime(created), OwnerReferences: g.owners},
				Spec:       v1.PodSpec{Tolerations: g.tol},
				Status:     v1.PodStatus{Phase: v1.PodRunning, Conditions: readyPod},
			})
			for j := range g.n {
				nameBytes[zi] += 1 + len(g.name) + 1 + len(strconv.Itoa(j))
			}
		}
	}
	var (
		names strings.Builder
		ends  []int
		num   [20]byte
		seq   uint64 // the pods' UIDs, in the order they are made (podUID)
	)
	for i, n := range s.nodes {
		if err := s.spend(1 + s.podsPerNode[n.zone]); err != nil {
			return nil, err
		}
		s.byName[n.name] = i
		z := &sc.Zones[n.zone]
		c.AddNode(ctx, newNode(n.name, z, created, epoch), monitortest.NewLease(n.name, epoch))
		// The node's pods are stamped from one template per group
		// (monitortest.Cluster.AddStampedPods: about 75 bytes a pod
		// instead of a v1.Pod's 1.3 KB), their names in one allocation: a
		// large cluster has millions of them.
		ends = ends[:0]
		names.Reset()
		names.Grow(nameBytes[n.zone] + s.podsPerNode[n.zone]*len(n.name))
		for _, g := range groups[n.zone] {
			for j := range g.n {
				names.WriteString(n.name)
				names.WriteByte('-')
				names.WriteString(g.name)
				names.WriteByte('-')
				names.Write(strconv.AppendInt(num[:0], int64(j), 10))
				ends = append(ends, names.Len())
			}
		}
		all, k := names.String(), 0
		for gi, g := range groups[n.zone] {
			c.AddStampedPods(ctx, n.name, tmpls[n.zone][gi], g.n, func(int) (string, types.UID) {
				start := 0
				if k > 0 {
					start = ends[k-1]
				}
				name := all[start:ends[k]]
				k++
				seq++
				return name, podUID(seq)
			})
		}
	}
	return c, nil
}

// podUID is the UID of the seq-th pod the simulation makes: a canonical
// UUID, as an API server's, which the cluster and the Evictor keep in 16
// bytes (a string UID would cost a pod another 36 to 48).
func podUID(seq uint64) types.UID {
	// 00000000-0000-4000-8000-<seq in 12 hex digits>: a version-4 UUID's
	// fixed bits, the pod's number in the last 6 bytes.
	r := uid.Raw{6: 0x40, 8: 0x80}
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], seq)
	copy(r[10:], n[2:])
	return r.UID()
}

// podGroupOf is a pod group as its pods carry it.
type podGroupOf struct {
	name   string
	n      int
	tol    []v1.Toleration
	owners []metav1.OwnerReference
}

// podGroupsOf returns zone zi's pod groups with their final tolerations
// (shared by every pod of the group): the group's own, the DaemonSet
// controller's, the admission plugin's defaults.
func podGroupsOf(sc *Scenario, zi int) []podGroupOf {
	z := &sc.Zones[zi]
	var out []podGroupOf
	for _, g := range z.PodGroups() {
		tol := slices.Clone(g.Tolerations)
		var owners []metav1.OwnerReference
		if g.DaemonSet {
			// The DaemonSet controller's tolerations (forever).
			tol = append(tol,
				v1.Toleration{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute},
				v1.Toleration{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute})
			owners = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: g.Name, UID: types.UID("uid-ds-" + z.Name + "-" + g.Name), Controller: ptr.To(true)}}
		}
		if g.admissionDefaults() {
			tol = taints.WithDefaultTolerations(tol,
				time.Duration(sc.Policy.DefaultNotReadyTolerationSeconds)*time.Second,
				time.Duration(sc.Policy.DefaultUnreachableTolerationSeconds)*time.Second)
		}
		out = append(out, podGroupOf{name: g.Name, n: g.PerNode, tol: tol, owners: owners})
	}
	return out
}

// nodeCreated is when every simulated node (and pod) was created: an hour
// before the run starts.
const nodeCreated = -time.Hour

const podNamespace = "default"

func podName(node, group string, i int) string {
	return node + "-" + group + "-" + strconv.Itoa(i)
}

func newNode(name string, z *Zone, created, heartbeat time.Time) *v1.Node {
	labels := map[string]string{v1.LabelHostname: name, v1.LabelTopologyZone: z.Name}
	if z.Region != "" {
		labels[v1.LabelTopologyRegion] = z.Region
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: labels, CreationTimestamp: metav1.NewTime(created)},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{
			Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: monitortest.ReasonKubeletReady, Message: "kubelet is posting ready status",
			LastHeartbeatTime: metav1.NewTime(heartbeat), LastTransitionTime: metav1.NewTime(created),
		}}},
	}
}

// sim is one run in progress.
type sim struct {
	sc  *Scenario
	opt Options
	cfg monitor.Config
	ctx context.Context
	c   *monitortest.Cluster
	m   *monitor.Monitor
	// stall is c as the Monitor sees it: a Lease cache that can stall
	// (stall.go).
	stall *monitortest.LeaseStall

	nodes  []nodeOf // by name
	byName map[string]int
	// podsPerNode is each zone's pods per node.
	podsPerNode []int
	// work counts the node and pod steps since ctx was last looked at.
	work int

	t         time.Duration // the current instant
	zoneOfKey map[string]string
	entries   []Entry
	events    []Event // sorted by At (stable)
	kubelets  []kubelet
	cal       calendar
	slowest   []slowPod // per zone: the last pod evicted

	monitorPasses, taintPasses int

	// space is how far apart a steady kubelet renews its Lease, evTimes
	// when events concern each kubelet (renewals.go).
	space   time.Duration
	evTimes eventTimes

	// down is each node's Ready status and pods in the API server, downs
	// each zone's time down (downtime.go); counts the cluster's Counts
	// when they were last read.
	down   []nodeDown
	downs  []zoneDown
	counts monitortest.Counts

	// dev is the device taint eviction controller's side (devices.go),
	// nil in a scenario without devices.
	dev *devSim
}

// kubelet is one simulated kubelet. gen invalidates its scheduled
// heartbeats when it stops or restarts.
type kubelet struct {
	alive bool
	ready v1.ConditionStatus
	gen   uint32
	// start is when it last (re)started: its node status updates and pod
	// status syncs tick from then (reconcile.go). podsReadyAt is when its
	// pods are Ready in its own view (a restart's PodReadyDelay later).
	start, podsReadyAt time.Duration
	// nodeSync and podSync: a reaction to the controller's writes is
	// planned.
	nodeSync, podSync bool
}

// slowPod is the first pod evicted at the latest eviction instant of a zone,
// with the Evictor's explanation taken while its eviction was handed out.
type slowPod struct {
	set  bool
	at   time.Duration
	pod  types.NamespacedName
	node string
	x    *taints.Explanation // nil in legacy mode
}

func (s *sim) now() time.Time { return Epoch.Add(s.t) }

// record receives the Monitor's events.
func (s *sim) record(e monitor.Event) {
	zone := e.Zone
	if name, ok := s.zoneOfKey[zone]; ok {
		zone = name
	}
	if e.Node != "" {
		// The Monitor knows a node's zone from its first pass on; events
		// before it (e.g. a NoSchedule taint at t=0) come without one.
		if i, ok := s.byName[e.Node]; ok {
			zone = s.sc.Zones[s.nodes[i].zone].Name
		}
	}
	en := Entry{At: e.At.Sub(Epoch), Kind: Kind(e.Kind), Node: e.Node, Pod: e.Pod, Zone: zone, Detail: e.Detail,
		Taint: e.Taint, Rate: e.QPS, Entered: e.Entered}
	if e.Kind == monitor.KindZoneState {
		en.State = e.State.String()
	}
	s.entries = append(s.entries, en)
	if i, ok := s.byName[e.Node]; ok {
		s.written(i, e.Kind)
	}
}

// onEvict runs inside the cluster's EvictPod, while the Evictor still has
// the eviction handed out: the moment Explain names the binding taint and
// toleration. Only the first pod of each new latest instant is explained.
func (s *sim) onEvict(now time.Time, p *v1.Pod) {
	if dv := s.dev; dv != nil {
		if dv.evicting { // the device side's deletion
			dv.evictNode = p.Spec.NodeName
			return
		}
		// The node path's: the device taint eviction controller's pod
		// informer sees it go.
		dv.d.DeletePod(types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
	}
	i, ok := s.byName[p.Spec.NodeName]
	if !ok {
		return
	}
	pod := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	sp := &s.slowest[s.nodes[i].zone]
	at := now.Sub(Epoch)
	if sp.set && at <= sp.at {
		return
	}
	*sp = slowPod{set: true, at: at, pod: pod, node: p.Spec.NodeName}
	if s.opt.PodEvictionTimeout == 0 {
		x := s.m.Explain(now, pod)
		sp.x = &x
	}
}

// loop advances the virtual clock from t=0 to the end of the scenario, or
// until ctx ends.
func (s *sim) loop() error {
	end := s.sc.Duration.D()
	mp, tp := s.cfg.MonitorPeriod, s.cfg.TaintPeriod
	var nextMonitor, nextTick time.Duration
	ev := 0
	for {
		t := nextMonitor
		if ct, ok := s.cal.next(); ok && ct < t {
			t = ct
		}
		if ev < len(s.events) && s.events[ev].At.D() < t {
			t = s.events[ev].At.D()
		}
		t = min(t, nextTick)
		if s.dev != nil {
			t = min(t, s.dev.deviceNext(s.t))
		}
		if t > end {
			// The run ends at its duration, whether or not anything
			// happened at that instant (Result.End, the pending work).
			s.t = end
			s.c.SetNow(s.now())
			return nil
		}
		if err := s.stopped(); err != nil {
			return err
		}
		s.t = t
		s.c.SetNow(s.now())
		if ct, ok := s.cal.next(); ok && ct == t {
			if err := s.heartbeats(t); err != nil {
				return err
			}
		}
		for ev < len(s.events) && s.events[ev].At.D() == t {
			if err := s.apply(&s.events[ev]); err != nil {
				return err
			}
			ev++
		}
		if s.dev != nil {
			if err := s.applyDevices(t); err != nil {
				return err
			}
		}
		if t == nextMonitor {
			s.m.MonitorPass(s.ctx, s.now())
			s.monitorPasses++
			nextMonitor += mp
		}
		if t%tp == 0 && (s.opt.Tick || s.hasWork(t)) {
			s.m.TaintPass(s.ctx, s.now())
			s.m.EvictionPass(s.ctx, s.now())
			s.taintPasses++
		}
		if s.dev != nil && s.dev.deviceDue(t) {
			if err := s.devicePass(); err != nil {
				return err
			}
		}
		nextTick = s.nextTick(t)
	}
}

const never = time.Duration(1<<63 - 1)

// hasWork reports whether a taint or eviction pass at t could do anything.
func (s *sim) hasWork(t time.Duration) bool {
	return s.m.PassDue(Epoch.Add(t))
}

// nextTick returns the next tick after t at which the passes must run.
func (s *sim) nextTick(t time.Duration) time.Duration {
	tp := s.cfg.TaintPeriod
	next := (t/tp + 1) * tp
	if s.opt.Tick {
		return next
	}
	if next, ok := s.m.NextPassTick(Epoch, t, tp); ok {
		return next
	}
	return never
}

// heartbeats runs the kubelet heartbeats due at t, in node order. It stops
// when ctx ends.
func (s *sim) heartbeats(t time.Duration) error {
	due := s.cal.pop()
	defer s.cal.release(due)
	slices.SortFunc(due, func(a, b calEntry) int {
		if a.node != b.node {
			return int(a.node) - int(b.node)
		}
		return int(a.what) - int(b.what)
	})
	for _, e := range due {
		k := &s.kubelets[e.node]
		if !k.alive || k.gen != e.gen {
			continue
		}
		if err := s.spend(1); err != nil {
			return err
		}
		name := s.nodes[e.node].name
		switch e.what {
		case beatLease:
			s.c.RenewLease(name, s.now())
			s.cal.add(s.nextLease(int(e.node), t), e)
		case beatStatus:
			if !s.skipStatus(int(e.node), t) {
				s.post(int(e.node), k.ready)
			}
			s.cal.add(t+s.sc.Kubelet.StatusUpdateInterval.D(), e)
		case beatPods:
			if k.ready == v1.ConditionTrue {
				s.podsReady(int(e.node))
				if err := s.spend(s.podsPerNode[s.nodes[e.node].zone]); err != nil {
					return err
				}
			}
		case beatNodeSync:
			s.nodeSync(int(e.node))
		case beatPodSync:
			if err := s.podSync(int(e.node)); err != nil {
				return err
			}
		}
	}
	return nil
}

// cancelEvery is how many node or pod steps a run takes between two looks
// at its context: a few hundred microseconds of work.
const cancelEvery = 4096

// spend counts n node or pod steps and, every cancelEvery of them, returns
// ctx's error once it has ended.
func (s *sim) spend(n int) error {
	if s.work += n; s.work < cancelEvery {
		return nil
	}
	s.work = 0
	return s.stopped()
}

// stopped returns an error naming the virtual instant when ctx has ended.
func (s *sim) stopped() error {
	if err := s.ctx.Err(); err != nil {
		return fmt.Errorf("policysim: stopped at %s: %w", Offset(s.t), err)
	}
	return nil
}

// schedule plans kubelet i's next heartbeats, counting from its last beat
// at last.
func (s *sim) schedule(i int, last time.Duration) {
	gen := s.kubelets[i].gen
	s.cal.add(last+s.sc.Kubelet.LeaseRenewInterval.D(), calEntry{node: int32(i), what: beatLease, gen: gen})
	s.cal.add(last+s.sc.Kubelet.StatusUpdateInterval.D(), calEntry{node: int32(i), what: beatStatus, gen: gen})
}

// apply applies one scenario event to its kubelets. It stops when ctx ends.
func (s *sim) apply(e *Event) error {
	if s.applyCache(e) {
		return nil
	}
	for _, i := range s.targets(e) {
		k := &s.kubelets[i]
		n := s.nodes[i]
		if err := s.spend(1 + s.podsPerNode[n.zone]); err != nil {
			return err
		}
		add := func(kind Kind) {
			s.entries = append(s.entries, Entry{At: s.t, Kind: kind, Node: n.name, Zone: s.sc.Zones[n.zone].Name, Detail: "scenario: " + e.Action})
		}
		switch e.Action {
		case ActionStop, ActionZoneDark:
			if !k.alive {
				continue
			}
			k.alive = false
			k.gen++
			k.nodeSync, k.podSync = false, false
			add(KindKubeletStopped)
		case ActionResume, ActionZoneRestore:
			if k.alive && k.ready == v1.ConditionTrue {
				continue
			}
			add(KindKubeletStarted)
			s.start(i, v1.ConditionTrue)
		case ActionNotReady:
			if k.alive && k.ready == v1.ConditionFalse {
				continue
			}
			add(KindKubeletNotReady)
			s.start(i, v1.ConditionFalse)
		}
	}
	return nil
}

// start (re)starts kubelet i reporting ready: it renews its Lease and posts
// its status at once, then beats on its own schedule from now.
func (s *sim) start(i int, ready v1.ConditionStatus) {
	k := &s.kubelets[i]
	k.alive, k.ready = true, ready
	k.gen++
	k.start, k.podsReadyAt = s.t, s.t+s.sc.Kubelet.PodReadyDelay.D()
	k.nodeSync, k.podSync = false, false
	name := s.nodes[i].name
	s.c.RenewLease(name, s.now())
	s.post(i, ready)
	s.schedule(i, s.t)
	if ready == v1.ConditionTrue {
		if d := s.sc.Kubelet.PodReadyDelay.D(); d > 0 {
			s.cal.add(s.t+d, calEntry{node: int32(i), what: beatPods, gen: k.gen})
		} else {
			s.podsReady(i)
		}
	}
}

// targets returns the node indexes an event applies to, in name order.
func (s *sim) targets(e *Event) []int {
	var out []int
	switch {
	case e.Node != "":
		out = append(out, s.byName[e.Node])
	case len(e.Nodes) > 0:
		for _, n := range e.Nodes {
			out = append(out, s.byName[n])
		}
	case e.Zone != "":
		zi := slices.IndexFunc(s.sc.Zones, func(z Zone) bool { return z.Name == e.Zone })
		z := &s.sc.Zones[zi]
		n := z.Nodes
		if e.Count > 0 {
			n = e.Count
		}
		for j := range n {
			out = append(out, s.byName[NodeName(z.Name, j, z.Nodes)])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// The kinds of kubelet heartbeat, in the order a kubelet's of one instant
// run.
const (
	beatLease uint8 = iota + 1
	beatStatus
	beatPods     // once, after a restart: the pods are Ready again
	beatNodeSync // a node status update that finds the controller's write (reconcile.go)
	beatPodSync  // a pod status sync that finds the controller's writes
)

// calEntry is one planned heartbeat.
type calEntry struct {
	node int32
	what uint8
	gen  uint32
}

// calendar holds the planned heartbeats in buckets by instant: thousands of
// kubelets beat at the same instants, so a bucket per instant keeps the
// ordering work per distinct instant, not per beat.
type calendar struct {
	times   durationHeap
	buckets map[time.Duration][]calEntry
	free    [][]calEntry
}

func (c *calendar) add(at time.Duration, e calEntry) {
	if c.buckets == nil {
		c.buckets = map[time.Duration][]calEntry{}
	}
	b, ok := c.buckets[at]
	if !ok {
		heap.Push(&c.times, at)
		if n := len(c.free); n > 0 {
			b, c.free = c.free[n-1][:0], c.free[:n-1]
		}
	}
	c.buckets[at] = append(b, e)
}

// next returns the earliest planned instant.
func (c *calendar) next() (time.Duration, bool) {
	if len(c.times) == 0 {
		return 0, false
	}
	return c.times[0], true
}

// pop removes and returns the earliest bucket; give it back with release.
func (c *calendar) pop() []calEntry {
	at := heap.Pop(&c.times).(time.Duration)
	b := c.buckets[at]
	delete(c.buckets, at)
	return b
}

func (c *calendar) release(b []calEntry) { c.free = append(c.free, b) }

type durationHeap []time.Duration

func (h durationHeap) Len() int           { return len(h) }
func (h durationHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h durationHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *durationHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *durationHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
