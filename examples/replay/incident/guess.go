package incident

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// Bounds on the kube-controller-manager command lines the first pass
// keeps: a hostile pod costs bounded memory and time.
const (
	// maxCommandLineArgs bounds the command and args examined, after a
	// shell form is split into words.
	maxCommandLineArgs = 512
	// maxArgBytes bounds one argument examined (longer ones are skipped).
	maxArgBytes = 4096
	// maxKCMPods bounds the kube-controller-manager pods kept (an HA
	// control plane has three).
	maxKCMPods = 16
)

const kcmName = "kube-controller-manager"

// CommandLine is kube-controller-manager's command line as a pod create
// (or update) in the log carries it: kubeadm's static pod, mirrored by the
// kubelet.
type CommandLine struct {
	// Pod is "kube-system/<name>".
	Pod string
	// At is when the log shows the pod created (or updated: Verb).
	At   time.Time
	Verb string
	// Source is the event's file:line.
	Source string
	// Flags are the policy flags the command line sets, by name without
	// dashes (feature-gates: "NodeControllerLeaseCircuitBreaker=<bool>",
	// only when it names that gate).
	Flags map[string]string
	// Ignored are the policy flags whose value could not be read, each
	// with why; they are not guessed from the command line.
	Ignored []string
	// Truncated counts the arguments beyond maxCommandLineArgs (or longer
	// than maxArgBytes) not examined.
	Truncated int
}

// where says which pod carried the command line and when.
func (c *CommandLine) where() string {
	what := "created"
	if c.Verb == "update" {
		what = "updated"
	}
	return fmt.Sprintf("pod %s, %s %s", c.Pod, what, rfc(c.At))
}

// parseCommandLine reads the policy flags from kube-controller-manager's
// command and args, as pflag does: --flag=value or --flag value, the last
// occurrence winning, --feature-gates lists merged. Values that cannot be
// read are ignored with a reason, never an error: kube-controller-manager
// would not have started with them, so the pod is not what ran.
func parseCommandLine(argv []string) (flags map[string]string, ignored []string, truncated int) {
	var toks []string
	for _, a := range argv {
		if len(toks) >= maxCommandLineArgs {
			truncated++
			continue
		}
		if len(a) > maxArgBytes {
			truncated++
			continue
		}
		// The shell form (sh -c "kube-controller-manager --a=b ..."): one
		// argument holding the whole command line.
		if strings.ContainsAny(a, " \t\n") && strings.Contains(a, "--") {
			for _, w := range strings.Fields(a) {
				if len(toks) >= maxCommandLineArgs {
					truncated++
					continue
				}
				toks = append(toks, w)
			}
			continue
		}
		toks = append(toks, a)
	}
	flags = map[string]string{}
	bad := map[string]string{}
	gate := ""
	for i := 0; i < len(toks); i++ {
		name, ok := strings.CutPrefix(toks[i], "--")
		if !ok {
			continue
		}
		name, val, hasVal := strings.Cut(name, "=")
		if !slices.Contains(PolicyFlags, name) {
			continue
		}
		if !hasVal {
			if i+1 >= len(toks) {
				bad[name] = "--" + name + " without a value"
				continue
			}
			i++
			val = toks[i]
		}
		val = strings.Trim(val, `"'`)
		if name == FlagFeatureGates {
			for _, kv := range strings.Split(val, ",") {
				k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
				if strings.TrimSpace(k) != GateLeaseCircuitBreaker {
					continue // a gate the replay does not model
				}
				b, err := strconv.ParseBool(strings.TrimSpace(v))
				if err != nil {
					bad[name] = fmt.Sprintf("--feature-gates=...%s=%s...: not a bool", GateLeaseCircuitBreaker, shorten(v))
					continue
				}
				gate = GateLeaseCircuitBreaker + "=" + strconv.FormatBool(b)
				delete(bad, name)
			}
			continue
		}
		scratch := DefaultPolicy()
		if err := scratch.set(name, val); err != nil {
			bad[name] = shorten(err.Error())
			continue
		}
		flags[name] = val
		delete(bad, name)
	}
	if gate != "" {
		flags[FlagFeatureGates] = gate
	}
	for _, f := range PolicyFlags {
		if why, ok := bad[f]; ok {
			if _, set := flags[f]; set {
				why += " (an earlier value is used)"
			}
			ignored = append(ignored, why)
		}
	}
	return flags, ignored, truncated
}

// kcmPod is the part of a Pod body the command line is read from.
type kcmPod struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Containers []kcmContainer `json:"containers"`
	} `json:"spec"`
}

type kcmContainer struct {
	Name    string   `json:"name"`
	Command []string `json:"command"`
	Args    []string `json:"args"`
}

// guessWatch gathers, during the first pass, the evidence of the policy
// the recorded controller ran with. It keeps a few numbers per node and
// at most maxKCMPods command lines.
type guessWatch struct {
	users map[string]bool
	lim   Limits

	kcm                              map[string]*CommandLine
	kcmDropped, kcmNoBody, kcmTooBig int64
	kcmBad                           string

	// The recorded controller's reads of Leases in kube-node-lease.
	leaseGets, leaseReads int64
	firstGet              string

	// lastLease and lastBeat are each node's last Lease renewal and last
	// heartbeat (renewal or status post); posted the nodes whose kubelet
	// posted a status.
	lastLease, lastBeat map[string]time.Time
	posted              map[string]bool
	// leaseEvery is each node's shortest interval between two Lease
	// renewals (its kubelet's renew interval, or less).
	leaseEvery map[string]time.Duration
	// quiet is the longest silence between two heartbeats of a node that
	// the recorded controller did not answer with a Ready=Unknown write.
	quiet nodeDelay
	// The delays from a node's last heartbeat to the recorded
	// controller's Ready=Unknown write of it (each node's first write
	// after a heartbeat).
	delays     []nodeDelay
	leaseDelay *nodeDelay // the shortest from the last Lease renewal
	startup    int        // writes of nodes that never posted a status (startup grace)
	noBeat     int        // writes of nodes without a heartbeat in the log
	// lastUnknown is when the controller last wrote each node Unknown.
	lastUnknown map[string]time.Time
	// taints are the controller's first maxTaintSnapshots NoExecute
	// taints, with their zone's state then.
	taints        []taintSnap
	taintsDropped int
}

// maxTaintSnapshots bounds the NoExecute taints the eviction rate guess
// looks at (each costs a scan of the nodes).
const maxTaintSnapshots = 256

// taintSnap is one NoExecute taint by the recorded controller and its
// zone then.
type taintSnap struct {
	node, zone    string
	at            time.Time // the write's RequestReceivedTimestamp
	unknownAt     time.Time // the node's last Ready=Unknown write before (zero: none)
	size, unknown int       // the zone's nodes, and those Unknown in the recorded view
	src           string
}

// noExecute notes a NoExecute taint the recorded controller added.
func (g *guessWatch) noExecute(t taintSnap) {
	if len(g.taints) >= maxTaintSnapshots {
		g.taintsDropped++
		return
	}
	t.unknownAt = g.lastUnknown[t.node]
	g.taints = append(g.taints, t)
}

type nodeDelay struct {
	node string
	d    time.Duration
	src  audit.Position
}

func newGuessWatch(users []string, lim Limits) *guessWatch {
	g := &guessWatch{users: map[string]bool{}, lim: lim, kcm: map[string]*CommandLine{},
		lastLease: map[string]time.Time{}, lastBeat: map[string]time.Time{}, posted: map[string]bool{},
		leaseEvery: map[string]time.Duration{}, lastUnknown: map[string]time.Time{}}
	if len(users) == 0 {
		users = DefaultControllerUsers
	}
	for _, u := range users {
		g.users[u] = true
	}
	return g
}

// observe looks at an event the classifier may have left out: a
// kube-controller-manager pod, the controller's Lease reads.
func (g *guessWatch) observe(e *audit.Event) {
	ref := e.ObjectRef
	if ref == nil || (e.Stage != "" && e.Stage != "ResponseComplete") {
		return
	}
	switch {
	case ref.Resource == "leases" && ref.APIGroup == "coordination.k8s.io" && ref.Namespace == "kube-node-lease" && g.users[e.EffectiveUser().Username]:
		switch e.Verb {
		case "get":
			if g.leaseGets == 0 {
				g.firstGet = e.Source.String()
			}
			g.leaseGets++
		case "list", "watch":
			g.leaseReads++
		}
	case ref.Resource == "pods" && ref.APIGroup == "" && ref.Namespace == "kube-system" && ref.Subresource == "" &&
		(e.Verb == "create" || e.Verb == "update") && ok2xx(e.Code()):
		g.pod(e)
	}
}

func (g *guessWatch) pod(e *audit.Event) {
	named := strings.HasPrefix(e.ObjectRef.Name, kcmName)
	body := e.RequestObject
	if len(body) == 0 {
		body = e.ResponseObject
	}
	if len(body) == 0 {
		if named {
			g.kcmNoBody++
		}
		return
	}
	if int64(len(body)) > g.lim.MaxObjectBytes {
		if named || bytes.Contains(body, []byte(kcmName)) {
			g.kcmTooBig++
		}
		return
	}
	if !named && !bytes.Contains(body, []byte(kcmName)) {
		return // cheap: most pods never name it
	}
	var p kcmPod
	if err := json.Unmarshal(body, &p); err != nil {
		if named && g.kcmBad == "" {
			g.kcmBad = e.Source.String() + ": " + shorten(err.Error())
		}
		return
	}
	name := cmp.Or(e.ObjectRef.Name, p.Metadata.Name)
	ci := slices.IndexFunc(p.Spec.Containers, func(c kcmContainer) bool {
		return c.Name == kcmName || slices.ContainsFunc(c.Command, func(s string) bool { return strings.Contains(s, kcmName) })
	})
	if ci < 0 && named && len(p.Spec.Containers) == 1 {
		ci = 0
	}
	if ci < 0 {
		return
	}
	c := p.Spec.Containers[ci]
	argv := append(slices.Clip(c.Command), c.Args...)
	flags, ignored, truncated := parseCommandLine(argv)
	key := "kube-system/" + name
	if _, ok := g.kcm[key]; !ok && len(g.kcm) >= maxKCMPods {
		g.kcmDropped++
		return
	}
	g.kcm[key] = &CommandLine{Pod: key, At: cmp.Or(e.StageTimestamp, e.RequestReceivedTimestamp), Verb: e.Verb, Source: e.Source.String(),
		Flags: flags, Ignored: ignored, Truncated: truncated}
}

// heartbeat notes a kubelet's Lease renewal (lease) or status post.
func (g *guessWatch) heartbeat(node string, at time.Time, lease bool, src audit.Position) {
	if lease {
		if l, ok := g.lastLease[node]; ok && at.After(l) {
			if e, ok := g.leaseEvery[node]; !ok || at.Sub(l) < e {
				g.leaseEvery[node] = at.Sub(l)
			}
		}
		g.lastLease[node] = at
	} else {
		g.posted[node] = true
	}
	if b, ok := g.lastBeat[node]; ok && at.Sub(b) > g.quiet.d {
		g.quiet = nodeDelay{node, at.Sub(b), src}
	}
	if at.After(g.lastBeat[node]) {
		g.lastBeat[node] = at
	}
}

// unknown notes the recorded controller's Ready=Unknown write of node,
// made at recv, that is a node-unknown decision.
func (g *guessWatch) unknown(node string, recv time.Time, created bool, src audit.Position) {
	g.lastUnknown[node] = recv
	beat, ok := g.lastBeat[node]
	switch {
	case !ok:
		g.noBeat++
		return
	case created && !g.posted[node]:
		// Never Ready: --node-startup-grace-period, from its creation.
		g.startup++
		return
	}
	g.delays = append(g.delays, nodeDelay{node, recv.Sub(beat), src})
	if l, ok := g.lastLease[node]; ok {
		if d := recv.Sub(l); g.leaseDelay == nil || d < g.leaseDelay.d {
			g.leaseDelay = &nodeDelay{node, d, src}
		}
	}
	// The next heartbeat starts a new countdown.
	delete(g.lastBeat, node)
	delete(g.lastLease, node)
}

// PolicyGuess is what a log tells of the policy its recorded controller
// ran with (History.Guess): kube-controller-manager's command line when a
// pod in the log carries it, else what the recorded controller's timing
// shows. Apply sets it on the flags a caller did not give.
type PolicyGuess struct {
	// CommandLine is the kube-controller-manager command line used (the
	// latest created of those in the log), nil when the log has none.
	CommandLine *CommandLine
	// Others are the other kube-controller-manager pods' command lines
	// (an HA control plane), by pod name.
	Others []*CommandLine
	// Evidence lists what the guess rests on and what it could not use.
	Evidence []string

	// GraceDelays are the delays from each node's last heartbeat to the
	// recorded controller's Ready=Unknown write of it, shortest first.
	GraceDelays []time.Duration
	// GraceNodes counts the nodes those delays come from.
	GraceNodes int
	// LeaseGets counts the recorded controller's GETs of Leases in
	// kube-node-lease (the circuit breaker's live reads); LeaseReads its
	// lists and watches of them (the audit policy logs its Lease reads).
	LeaseGets, LeaseReads int64

	firstGet   string
	leaseDelay *nodeDelay
	graceNode  string
	graceSrc   string
	// renew is the kubelets' Lease renew interval (the median over nodes
	// of their shortest); quiet the longest silence the controller let
	// pass.
	renew time.Duration
	quiet nodeDelay
	// taints are the recorded controller's NoExecute taints with their
	// zone's state.
	taints []taintSnap
}

// timingPeriod is the monitor period a timing guess allows for when the
// caller gives none: v1.37.2's default.
const timingPeriod = 5 * time.Second

// timingLatency is what a timing guess allows for the controller's
// watch delivery and request latency.
const timingLatency = time.Second

func (g *guessWatch) finish() PolicyGuess {
	var pg PolicyGuess
	var lines []*CommandLine
	for _, c := range g.kcm {
		lines = append(lines, c)
	}
	// The latest created last; ties by pod name, for a stable choice.
	slices.SortFunc(lines, func(a, b *CommandLine) int { return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Pod, b.Pod)) })
	ev := func(format string, args ...any) { pg.Evidence = append(pg.Evidence, fmt.Sprintf(format, args...)) }
	if n := len(lines); n > 0 {
		pg.CommandLine, pg.Others = lines[n-1], lines[:n-1]
		c := pg.CommandLine
		ev("kube-controller-manager's command line: %s (%s), %d of the policy flags on it", c.where(), c.Source, len(c.Flags))
		for _, why := range c.Ignored {
			ev("kube-controller-manager's command line: %s: ignored", why)
		}
		if c.Truncated > 0 {
			ev("kube-controller-manager's command line: %d arguments not examined (over %d, or longer than %d bytes)", c.Truncated, maxCommandLineArgs, maxArgBytes)
		}
		for _, o := range pg.Others {
			ev("another kube-controller-manager pod: %s (%s)", o.where(), o.Source)
		}
	} else {
		ev("kube-controller-manager's command line: none in the log (a pod create or update in kube-system named %s* or running it, at level Request or above)", kcmName)
	}
	if g.kcmNoBody > 0 {
		ev("%d kube-controller-manager pod writes without a body (level Metadata): their command lines are unknown", g.kcmNoBody)
	}
	if g.kcmTooBig > 0 {
		ev("%d kube-controller-manager pod bodies over MaxObjectBytes=%d: not read", g.kcmTooBig, g.lim.MaxObjectBytes)
	}
	if g.kcmBad != "" {
		ev("a kube-controller-manager pod body could not be read: %s", g.kcmBad)
	}
	if g.kcmDropped > 0 {
		ev("%d kube-controller-manager pods beyond the first %d: not read", g.kcmDropped, maxKCMPods)
	}
	for _, d := range g.delays {
		pg.GraceDelays = append(pg.GraceDelays, d.d)
	}
	slices.Sort(pg.GraceDelays)
	nodes := map[string]bool{}
	for _, d := range g.delays {
		nodes[d.node] = true
	}
	pg.GraceNodes = len(nodes)
	if len(g.delays) > 0 {
		m := slices.MinFunc(g.delays, func(a, b nodeDelay) int { return cmp.Compare(a.d, b.d) })
		pg.graceNode, pg.graceSrc = m.node, m.src.String()
	}
	if g.startup > 0 {
		ev("%d Ready=Unknown writes of nodes created in the log that never posted a status (--node-startup-grace-period): not used for the grace period", g.startup)
	}
	if g.noBeat > 0 {
		ev("%d Ready=Unknown writes of nodes without a heartbeat in the log before them: not used for the grace period", g.noBeat)
	}
	pg.LeaseGets, pg.LeaseReads, pg.firstGet, pg.leaseDelay = g.leaseGets, g.leaseReads, g.firstGet, g.leaseDelay
	if len(g.leaseEvery) > 0 {
		every := slices.Sorted(maps.Values(g.leaseEvery))
		pg.renew = every[len(every)/2]
	}
	pg.quiet = g.quiet
	pg.taints = g.taints
	if g.taintsDropped > 0 {
		ev("%d NoExecute taints after the first %d: not used for the eviction rate", g.taintsDropped, maxTaintSnapshots)
	}
	ev("the recorded controller's reads of Leases in kube-node-lease: %d GETs (the circuit breaker's live reads), %d lists and watches", g.leaseGets, g.leaseReads)
	return pg
}

// Apply returns p with each flag p does not give set to its guess: the
// command line's value (or the flag's default when the command line
// lacks it), else, for the grace period and the Lease circuit breaker,
// what the recorded controller's timing and reads show. Flags without a
// guess stay assumed.
func (g *PolicyGuess) Apply(p Policy) Policy {
	for _, v := range g.Values(p) {
		_ = p.Guess(v.Flag, v.Value, v.Reason) // the values were checked
	}
	return p
}

// Values returns the guess for each flag p does not give, in PolicyFlags
// order, with Source "guessed" and its reason.
func (g *PolicyGuess) Values(p Policy) []PolicyValue {
	var out []PolicyValue
	guess := map[string]PolicyValue{}
	if c := g.CommandLine; c != nil {
		def := DefaultPolicy()
		for _, f := range PolicyFlags {
			if v, ok := c.Flags[f]; ok {
				guess[f] = PolicyValue{Flag: f, Value: v, Source: SourceGuessed, Reason: "on kube-controller-manager's command line (" + c.where() + ")" + g.disagree(f)}
				continue
			}
			if slices.ContainsFunc(c.Ignored, func(s string) bool { return strings.HasPrefix(s, "--"+f) || strings.Contains(s, "--"+f+"=") }) {
				continue // unreadable: no guess from this command line
			}
			guess[f] = PolicyValue{Flag: f, Value: def.value(f), Source: SourceGuessed, Reason: "not on kube-controller-manager's command line (" + c.where() + "): its default" + g.disagree(f)}
		}
	}
	if _, ok := guess[FlagNodeMonitorGracePeriod]; !ok {
		if v, why := g.graceGuess(p); why == "" {
			guess[FlagNodeMonitorGracePeriod] = v
		}
	}
	if v, why := g.evictionGuess(p); why == "" {
		if _, ok := guess[v.Flag]; !ok {
			guess[v.Flag] = v
		}
	}
	if _, ok := guess[FlagFeatureGates]; !ok {
		if v, ok := g.breakerGuess(p); ok {
			guess[FlagFeatureGates] = v
		}
	}
	for _, f := range PolicyFlags {
		if v, ok := guess[f]; ok && !p.Given(f) {
			out = append(out, v)
		}
	}
	return out
}

// disagree names the other kube-controller-manager pods whose command
// lines give flag f another value ("" when none does).
func (g *PolicyGuess) disagree(f string) string {
	c := g.CommandLine
	var parts []string
	for _, o := range g.Others {
		if o.Flags[f] != c.Flags[f] {
			v := o.Flags[f]
			if v == "" {
				v = "its default"
			}
			parts = append(parts, fmt.Sprintf("%s has %s", o.where(), v))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; the kube-controller-manager pods disagree: " + strings.Join(parts, ", ") + "; the latest created is used"
}

// periodOf is the monitor period a timing guess allows for: p's when
// given, else v1.37.2's default.
func periodOf(p Policy) (time.Duration, string) {
	if p.Given(FlagNodeMonitorPeriod) {
		return p.NodeMonitorPeriod, "the given --node-monitor-period=" + p.NodeMonitorPeriod.String()
	}
	return timingPeriod, "--node-monitor-period up to " + timingPeriod.String()
}

// graceGuess estimates --node-monitor-grace-period from the delays: the
// controller sees a heartbeat at its first monitor pass after it (the
// probe time) and writes the node Unknown at the first pass more than the
// grace period after that, so each delay is in [grace, grace + 2 periods +
// latency], and a silence it let pass without a write is at most that
// long. The estimate is the shortest delay rounded down to a whole second.
// None, with why, when the delays do not fit one grace period (a restart,
// a stall, a cut-off in between) or are shorter than the kubelets' own
// renew interval (a stale cache: no grace period flags a node that
// renews on time).
func (g *PolicyGuess) graceGuess(p Policy) (PolicyValue, string) {
	if len(g.GraceDelays) == 0 {
		return PolicyValue{}, "no Ready=Unknown write by the recorded controller of a node with a heartbeat in the log before it"
	}
	per, perWhy := periodOf(p)
	slack := 2*per + timingLatency
	short, long := g.GraceDelays[0], g.GraceDelays[len(g.GraceDelays)-1]
	lo, hi := max(long-slack, g.quiet.d-slack, 0), short
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	switch {
	case hi < time.Second || hi < g.renew:
		return PolicyValue{}, fmt.Sprintf("a node written Unknown %v after its last heartbeat, less than a second or than the kubelets' Lease renew interval (%v): a stale cache, not a grace period", ms(hi), ms(g.renew))
	case lo > hi:
		why := fmt.Sprintf("the delays from the last heartbeat to the Ready=Unknown writes, %v to %v", ms(short), ms(long))
		if g.quiet.d-slack > hi {
			why += fmt.Sprintf(", and %s's silence of %v without one (%s)", g.quiet.node, ms(g.quiet.d), g.quiet.src)
		}
		return PolicyValue{}, why + fmt.Sprintf(", do not fit one grace period for %s (a restart, a stall or a cut-off in between)", perWhy)
	}
	// A grace period is a flag someone typed: when a release's default
	// fits the range it is the likelier value; else the shortest delay
	// rounded down, an upper bound.
	est, how := hi.Truncate(time.Second), "the shortest delay rounded down, an upper bound: a replay under it may write nodes Unknown up to two monitor periods later than the recording"
	if est < lo {
		est = hi.Truncate(time.Millisecond)
	}
	for _, d := range graceDefaults {
		if d.value >= lo && d.value <= hi {
			est, how = d.value, d.value.String()+" as "+d.release+"'s default is in it"
			break
		}
	}
	nodes := "from 1 node"
	if g.GraceNodes != 1 {
		nodes = fmt.Sprintf("from %d nodes", g.GraceNodes)
	}
	reason := fmt.Sprintf("from timing, weaker than a command line: %s, the recorded controller wrote Ready=Unknown %v to %v after the node's last heartbeat (shortest: %s, %s); the grace period is in [%v, %v] for %s and 1s of latency; guessed %s",
		nodes, ms(short), ms(long), g.graceNode, g.graceSrc, ms(lo), ms(hi), perWhy, how)
	return PolicyValue{Flag: FlagNodeMonitorGracePeriod, Value: est.String(), Source: SourceGuessed, Reason: reason}, ""
}

// graceDefaults are the --node-monitor-grace-period defaults a timing
// guess prefers when they fit (v1.32 raised it from 40s to 50s).
var graceDefaults = []struct {
	value   time.Duration
	release string
}{{50 * time.Second, "v1.32 and later"}, {40 * time.Second, "v1.31 and earlier"}}

// evictionGuess estimates the rate the recorded controller tainted a
// zone's nodes NoExecute at: a zone's taints come one per token of its
// rate limiter while nodes queue for them, so when at least three nodes
// of one zone, in one disruption state, were each already Unknown before
// the taint ahead of theirs, the spacing of their taints is the rate's
// inverse. Normal zones are tainted at --node-eviction-rate, partially
// disrupted ones (more than two nodes Unknown and at least
// --unhealthy-zone-threshold of them) at --secondary-node-eviction-rate.
// Spacings that are not regular, or too short to tell from the 100ms
// tainting pass, give none.
func (g *PolicyGuess) evictionGuess(p Policy) (PolicyValue, string) {
	type group struct {
		zone    string
		partial bool
	}
	groups := map[group][]taintSnap{}
	for _, t := range g.taints {
		if t.size == 0 || t.unknown >= t.size {
			continue // zone unknown, or full disruption (no tainting)
		}
		partial := t.unknown > 2 && float64(t.unknown)/float64(t.size) >= p.UnhealthyZoneThreshold
		k := group{t.zone, partial}
		groups[k] = append(groups[k], t)
	}
	var best []time.Duration
	var bestG group
	var bestTs []taintSnap
	keys := slices.SortedFunc(maps.Keys(groups), func(a, b group) int {
		return cmp.Or(cmp.Compare(a.zone, b.zone), cmp.Compare(fmt.Sprint(a.partial), fmt.Sprint(b.partial)))
	})
	for _, k := range keys {
		ts := groups[k]
		var sp []time.Duration
		for i := 1; i < len(ts); i++ {
			// Queued: the node was Unknown before the taint ahead of it.
			if !ts[i].unknownAt.IsZero() && !ts[i].unknownAt.After(ts[i-1].at) {
				sp = append(sp, ts[i].at.Sub(ts[i-1].at))
			}
		}
		if len(sp) > len(best) {
			best, bestG, bestTs = sp, k, ts
		}
	}
	if len(best) < 2 {
		return PolicyValue{}, "fewer than three NoExecute taints by the recorded controller in one zone and disruption state while their nodes queued (each Unknown before the taint ahead of it)"
	}
	sorted := slices.Sorted(slices.Values(best))
	m := sorted[len(sorted)/2]
	tol := max(m/5, 150*time.Millisecond)
	if m < 500*time.Millisecond {
		return PolicyValue{}, fmt.Sprintf("zone %q's queued NoExecute taints are %v apart: too close to tell from the 100ms tainting pass", bestG.zone, m.Round(time.Millisecond))
	}
	if sorted[0] < m-tol || sorted[len(sorted)-1] > m+tol {
		return PolicyValue{}, fmt.Sprintf("zone %q's queued NoExecute taints are %v to %v apart: not regular", bestG.zone, sorted[0].Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond))
	}
	rate := 1 / m.Seconds()
	rate, _ = strconv.ParseFloat(strconv.FormatFloat(rate, 'g', 2, 64), 64)
	flag, state := FlagNodeEvictionRate, "normal"
	if bestG.partial {
		flag, state = FlagSecondaryNodeEvictionRate, "partial disruption"
	}
	thr := "assumed"
	if p.Given(FlagUnhealthyZoneThreshold) {
		thr = "given"
	}
	first, last := bestTs[0], bestTs[len(bestTs)-1]
	reason := fmt.Sprintf("from timing, weaker than a command line: zone %q's NoExecute taints by the recorded controller while its nodes queued for them (each Unknown before the taint ahead of it), %d spacings from %v to %v (median %v), from %s to %s, the zone in the %s state (%d of %d nodes Unknown at the last, with --unhealthy-zone-threshold=%v %s); the median's inverse",
		bestG.zone, len(best), sorted[0].Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond), m.Round(time.Millisecond), first.src, last.src, state, last.unknown, last.size, p.UnhealthyZoneThreshold, thr)
	return PolicyValue{Flag: flag, Value: strconv.FormatFloat(rate, 'g', -1, 64), Source: SourceGuessed, Reason: reason}, ""
}

// breakerGuess: only the Lease circuit breaker GETs Leases (the informer
// lists and watches them), so a GET in the log says it was on. It was
// off when the log shows the controller's Lease reads but no GET while it
// wrote a node Unknown within the given grace period of the node's Lease
// renewal: the breaker's live read would have stopped that write.
func (g *PolicyGuess) breakerGuess(p Policy) (PolicyValue, bool) {
	if g.LeaseGets > 0 {
		return PolicyValue{Flag: FlagFeatureGates, Value: GateLeaseCircuitBreaker + "=true", Source: SourceGuessed,
			Reason: fmt.Sprintf("its live Lease reads are in the log (GETs of Leases in kube-node-lease by the recorded controller: %d, the first at %s)", g.LeaseGets, g.firstGet)}, true
	}
	if d := g.leaseDelay; g.LeaseReads > 0 && d != nil && p.Given(FlagNodeMonitorGracePeriod) && d.d < p.NodeMonitorGracePeriod {
		return PolicyValue{Flag: FlagFeatureGates, Value: GateLeaseCircuitBreaker + "=false", Source: SourceGuessed,
			Reason: fmt.Sprintf("no live Lease read in the log (%d Lease lists and watches by the recorded controller, no GET) while it wrote %s Unknown %v after its Lease renewal (%s), within the given grace period %v",
				g.LeaseReads, d.node, d.d.Round(time.Millisecond), d.src, p.NodeMonitorGracePeriod)}, true
	}
	return PolicyValue{}, false
}

// Lines returns, for the doctor, each flag's guess under p (or why there
// is none) and what the guess rests on.
func (g *PolicyGuess) Lines(p Policy) []string {
	var out []string
	vals := map[string]PolicyValue{}
	for _, v := range g.Values(p) {
		vals[v.Flag] = v
	}
	for _, f := range PolicyFlags {
		switch v, ok := vals[f]; {
		case p.Given(f):
			out = append(out, fmt.Sprintf("--%s: given (%s)", f, p.value(f)))
		case ok:
			out = append(out, fmt.Sprintf("--%s=%s guessed: %s", f, v.Value, v.Reason))
		default:
			why := "the log does not tell it"
			switch f {
			case FlagNodeMonitorGracePeriod:
				_, why = g.graceGuess(p)
			case FlagNodeEvictionRate, FlagSecondaryNodeEvictionRate:
				_, why = g.evictionGuess(p)
			case FlagFeatureGates:
				why = "no GET of a Lease by the recorded controller in the log, and no Ready=Unknown write within a given grace period of a Lease renewal while its Lease reads are logged"
			}
			out = append(out, fmt.Sprintf("--%s: no guess (%s): v1.37.2's default %s assumed", f, why, DefaultPolicy().value(f)))
		}
	}
	return append(out, g.Evidence...)
}
