package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Offset formats a virtual time as an offset from the start: "+5m45.0s".
func Offset(d time.Duration) string {
	if d < 0 {
		return "-" + Dur(-d)
	}
	return "+" + Dur(d)
}

// Dur formats a duration like time.Duration.String but always with the
// tenths of a second ("45.0s", "5m45.0s", "1h0m5.0s"), or the exact
// fraction when it is finer than that.
func Dur(d time.Duration) string {
	if d < 0 {
		return "-" + Dur(-d)
	}
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	d -= m * time.Minute
	var s string
	switch {
	case d%(100*time.Millisecond) == 0:
		s = strconv.FormatFloat(d.Seconds(), 'f', 1, 64)
	case d%time.Millisecond == 0:
		s = strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
	default:
		s = strconv.FormatFloat(d.Seconds(), 'f', 9, 64)
	}
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%dm%ss", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm%ss", m, s)
	}
	return s + "s"
}

// line is one line of the text timeline: an entry, or several collapsed.
type line struct {
	at     time.Duration
	kind   string
	zone   string
	who    string
	detail string
}

// collapseMin is the group size from which entries of the same instant, kind,
// zone and detail are printed as one line.
const collapseMin = 4

// timeline turns entries into readable lines: within each instant, the pods
// evicted from one node become one line ("30 pods evicted"), then groups of
// at least collapseMin nodes with the same kind, zone and detail become one
// line ("1000 nodes"); everything else is printed as is, in order of first
// appearance.
func timeline(entries []Entry) []line {
	var out []line
	for i := 0; i < len(entries); {
		j := i
		for j < len(entries) && entries[j].At == entries[i].At {
			j++
		}
		out = appendInstant(out, entries[i:j])
		i = j
	}
	return out
}

func appendInstant(out []line, es []Entry) []line {
	// 1. Pod evictions per node.
	type podGroup struct {
		idx     int // index in lines
		n       int
		reasons []string
		counts  map[string]int
	}
	type podKey struct {
		kind Kind
		node string
	}
	var lines []line
	pods := map[podKey]*podGroup{}
	for _, e := range es {
		if e.Kind != KindPodEvicted && e.Kind != KindDevicePodEvicted {
			who := e.Node
			if e.Kind == KindDeviceTaint || e.Kind == KindDeviceUntaint {
				who = strings.TrimPrefix(e.Device, e.Driver+"/") // node/device
			}
			lines = append(lines, line{e.At, string(e.Kind), e.Zone, who, e.Detail})
			continue
		}
		reason, _, _ := strings.Cut(e.Detail, " (attempt")
		if e.Kind == KindDevicePodEvicted {
			reason, _, _ = strings.Cut(reason, " (due at")
		}
		k := podKey{e.Kind, e.Node}
		g, ok := pods[k]
		if !ok {
			g = &podGroup{idx: len(lines), counts: map[string]int{}}
			pods[k] = g
			lines = append(lines, line{e.At, string(e.Kind), e.Zone, e.Node, "pod " + e.Pod + ": " + e.Detail})
		}
		g.n++
		if g.counts[reason] == 0 {
			g.reasons = append(g.reasons, reason)
		}
		g.counts[reason]++
	}
	for k, g := range pods {
		if g.n == 1 && k.kind == KindDevicePodEvicted && len(g.reasons) == 1 && !strings.Contains(lines[g.idx].detail, " (due at") {
			// A device eviction's detail names no pod-specific thing but
			// the pod, so the nodes that lost one pod each at an instant
			// group.
			lines[g.idx].detail = "1 pod evicted: " + g.reasons[0]
			continue
		}
		if g.n == 1 {
			continue
		}
		parts := make([]string, len(g.reasons))
		for i, r := range g.reasons {
			parts[i] = r
			if len(g.reasons) > 1 {
				parts[i] = fmt.Sprintf("%d %s", g.counts[r], r)
			}
		}
		lines[g.idx].detail = fmt.Sprintf("%d pods evicted: %s", g.n, strings.Join(parts, ", "))
	}
	// 2. The same thing happening to many nodes.
	type key struct{ kind, zone, detail string }
	groups := map[key][]int{}
	var order []key
	for i, l := range lines {
		k := key{l.kind, l.zone, l.detail}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	for _, k := range order {
		idx := groups[k]
		if len(idx) < collapseMin {
			for _, i := range idx {
				out = append(out, lines[i])
			}
			continue
		}
		first, last := lines[idx[0]], lines[idx[len(idx)-1]]
		lo, hi := first.who, last.who
		first.who = fmt.Sprintf("%d nodes", len(idx))
		if strings.HasPrefix(k.kind, "device-") {
			// A device action's devices come in a shuffled order, and so
			// do their evictions: the range is their names'.
			if k.kind == string(KindDeviceTaint) || k.kind == string(KindDeviceUntaint) {
				first.who = fmt.Sprintf("%d devices", len(idx))
			}
			for _, i := range idx {
				lo, hi = min(lo, lines[i].who), max(hi, lines[i].who)
			}
		}
		first.detail = fmt.Sprintf("%s [%s … %s]", perNode(k.detail, len(idx)), lo, hi)
		out = append(out, first)
	}
	return out
}

// perNode rewrites the detail of a line standing for nodes nodes when it
// counts pods ("30 pods evicted: TolerationExpired"): the count is each
// node's, so it says so and gives the total ("30 pods evicted on each node
// (1800 in all): TolerationExpired").
func perNode(detail string, nodes int) string {
	head, tail, _ := strings.Cut(detail, ":")
	num, rest, ok := strings.Cut(head, " ")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || !strings.HasPrefix(rest, "pod") {
		return detail
	}
	out := fmt.Sprintf("%s on each node (%d in all)", head, n*nodes)
	if tail != "" || strings.Contains(detail, ":") {
		out += ":" + tail
	}
	return out
}

// WriteText writes the text report: the scenario and policy, the timeline
// (unless summaryOnly), and the summary.
func WriteText(w io.Writer, res *Result, summaryOnly bool) error {
	ew := &errWriter{w: w}
	writeHeader(ew, res)
	if !summaryOnly {
		fmt.Fprintln(ew, "\nTIMELINE")
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "time\tkind\tzone\tnode\tdetail")
		for _, l := range timeline(res.Entries) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", Offset(l.at), l.kind, dash(l.zone), dash(l.who), l.detail)
		}
		tw.Flush()
	}
	fmt.Fprintln(ew, "\nSUMMARY")
	writeSummary(ew, res)
	return ew.err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeHeader(w io.Writer, res *Result) {
	sc, p := res.Scenario, res.Scenario.Policy
	fmt.Fprintf(w, "scenario  %s", sc.Name)
	if sc.Description != "" {
		fmt.Fprintf(w, ": %s", sc.Description)
	}
	fmt.Fprintln(w)
	if res.Options.PodEvictionTimeout > 0 {
		fmt.Fprintf(w, "mode      legacy node eviction (before 1.27): all of a node's pods are deleted through the zone queue once it has been not ready for %v (since its last heartbeat, or its Ready=False transition)\n", res.Options.PodEvictionTimeout)
	} else {
		fmt.Fprintln(w, "mode      taint-based eviction (every release since 1.27): zone queues taint nodes, pods go when their toleration runs out")
	}
	full := fmt.Sprintf("%g (nodeEvictionRate, upstream)", p.NodeEvictionRate)
	if p.FullDisruptionQPS != nil {
		full = fmt.Sprintf("%g", *p.FullDisruptionQPS)
	}
	fmt.Fprintf(w, "policy    monitor every %v, grace %v (startup %v), default tolerations %ds not-ready / %ds unreachable\n",
		p.NodeMonitorPeriod.D(), p.NodeMonitorGracePeriod.D(), p.NodeStartupGracePeriod.D(),
		p.DefaultNotReadyTolerationSeconds, p.DefaultUnreachableTolerationSeconds)
	fmt.Fprintf(w, "rates     per zone, nodes/s: Normal %g; PartialDisruption (>= %s not ready) %g above %d nodes, else 0; FullDisruption %s\n",
		p.NodeEvictionRate, strconv.FormatFloat(p.UnhealthyZoneThreshold*100, 'f', -1, 32)+"%", p.SecondaryNodeEvictionRate, p.LargeClusterSizeThreshold, full)
	k := sc.Kubelet
	fmt.Fprintf(w, "kubelets  Lease renewed every %v, status posted every %v; ", k.LeaseRenewInterval.D(), k.StatusUpdateInterval.D())
	if k.Reconcile {
		fmt.Fprintf(w, "the controller's writes over their status undone at the next node status update (every %v) and pod status sync (every %v)\n",
			k.NodeStatusUpdateFrequency.D(), k.PodStatusSyncPeriod.D())
	} else {
		fmt.Fprintln(w, "the controller's writes over their status left as they are (reconcile off)")
	}
	fmt.Fprintf(w, "cluster   %s, %s, %s; simulated %s\n", plural(len(sc.Zones), "zone", "zones"), plural(res.Summary.Nodes, "node", "nodes"), plural(res.Summary.Pods, "pod", "pods"), Dur(sc.Duration.D()))
	writeDeviceHeader(w, res)
}

func writeSummary(w io.Writer, res *Result) {
	sum := &res.Summary
	for zi, z := range sum.Zones {
		state := z.FinalState
		if state == "" {
			state = "-"
		}
		fmt.Fprintf(w, "zone %s: %s, %s, final state %s", z.Zone, plural(z.Nodes, "node", "nodes"), plural(z.Pods, "pod", "pods"), state)
		if z.OutageAt == nil && z.NodesUnknown == 0 && z.NodesTainted == 0 && z.NodesEvicting == 0 && z.PodsEvicted == 0 {
			if z.DevicePodsEvicted > 0 {
				fmt.Fprintf(w, "; nodes untouched; %s evicted for device taints (see the drivers below)\n", plural(z.DevicePodsEvicted, "pod", "pods"))
			} else {
				fmt.Fprintln(w, "; untouched")
			}
			continue
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		since := func(t *time.Duration) string {
			if t == nil || z.OutageAt == nil {
				return ""
			}
			return ", " + Dur(*t-*z.OutageAt) + " after the outage"
		}
		if z.OutageAt != nil {
			fmt.Fprintf(tw, "  outage\t%s\t%s\n", when(z.OutageAt), plural(z.KubeletsDown, "kubelet", "kubelets")+" stopped or not ready")
		}
		if len(z.States) > 0 {
			var parts []string
			for _, s := range z.States {
				parts = append(parts, fmt.Sprintf("%s %s (%g nodes/s)", Offset(s.T), s.State, s.Rate))
			}
			fmt.Fprintf(tw, "  states\t\t%s\n", strings.Join(parts, ", "))
		}
		fmt.Fprintf(tw, "  Unknown\t%s\t%s%s%s\n", when(z.FirstUnknown), plural(z.NodesUnknown, "node", "nodes"), times(z.TimesUnknown, z.NodesUnknown), since(z.FirstUnknown))
		if res.Options.PodEvictionTimeout > 0 {
			fmt.Fprintf(tw, "  queued for eviction\t%s\t%s%s\n", when(z.FirstNodeEvicting), plural(z.NodesEvicting, "node", "nodes"), since(z.FirstNodeEvicting))
		} else {
			fmt.Fprintf(tw, "  tainted\t%s\t%s%s%s", when(z.FirstTaint), plural(z.NodesTainted, "node", "nodes"), times(z.TimesTainted, z.NodesTainted), since(z.FirstTaint))
			if z.NodesTainted > 1 {
				fmt.Fprintf(tw, "; last at %s", when(z.LastTaint))
			}
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "  evicted\t%s\t%s%s", when(z.FirstEviction), plural(z.PodsEvicted, "pod", "pods"), since(z.FirstEviction))
		if z.LastEviction != nil && *z.LastEviction != *z.FirstEviction {
			fmt.Fprintf(tw, "; last at %s%s", when(z.LastEviction), since(z.LastEviction))
		}
		fmt.Fprintln(tw)
		if z.DevicePodsEvicted > 0 {
			fmt.Fprintf(tw, "  device taints		%s evicted (see the drivers below)\n", plural(z.DevicePodsEvicted, "pod", "pods"))
		}
		if sp := z.Slowest; sp != nil {
			fmt.Fprintf(tw, "  slowest pod\t%s\t%s on %s: %s\n", Offset(sp.EvictedAt), sp.Pod, sp.Node, sp.Constraint)
		}
		for _, k := range z.NotEvicted {
			fmt.Fprintf(tw, "  not evicted\t\t%s: %s\n", plural(k.Pods, "pod", "pods"), k.Why)
		}
		if z.NodeSecondsDown > 0 || z.PodSecondsNotReady > 0 {
			fmt.Fprintf(tw, "  down\t\t%s\n", downLine(z.NodeSecondsDown, z.LongestNodeDown, z.NodesDownAtEnd, z.PodSecondsNotReady, z.LongestPodNotReady, z.PodsNotReadyAtEnd))
		}
		if p := sum.Pending; p != nil && zi < len(p.Zones) {
			if zp := p.Zones[zi]; zp.NodesQueued > 0 || zp.Evictions > 0 {
				fmt.Fprintf(tw, "  NOT FINISHED\t%s\t%s\n", Offset(sum.end()), pendingLabel(zp))
			}
		}
		tw.Flush()
	}
	writeDeviceSummary(w, res)
	byDevice := ""
	if sum.Devices != nil {
		byDevice = fmt.Sprintf(" (%d for device taints)", sum.Devices.PodsEvicted)
	}
	fmt.Fprintf(w, "all zones: %d pods, %d marked not ready (%d ready again), %d evicted%s, %d left\n",
		sum.Pods, sum.PodsMarkedNotReady, sum.PodsReadyAgain, sum.PodsEvicted, byDevice, sum.Pods-sum.PodsEvicted)
	fmt.Fprintf(w, "down: %s\n", downLine(sum.NodeSecondsDown, sum.LongestNodeDown, sum.NodesDownAtEnd, sum.PodSecondsNotReady, sum.LongestPodNotReady, sum.PodsNotReadyAtEnd))
	writePending(w, sum)
	if len(sum.FullDisruption) == 0 {
		fmt.Fprintln(w, "full disruption mode: never")
	} else {
		var parts []string
		for _, s := range sum.FullDisruption {
			to := "the end"
			if s.To != nil {
				to = Offset(*s.To)
			}
			parts = append(parts, fmt.Sprintf("%s to %s", Offset(s.From), to))
		}
		fmt.Fprintf(w, "full disruption mode (no evictions anywhere): %s\n", strings.Join(parts, ", "))
	}
}

// writePending says whether the run finished its work and, if not, what
// was left and when the last of it would happen at the rates of the end.
func writePending(w io.Writer, sum *Summary) {
	p := sum.Pending
	switch {
	case p == nil:
		return
	case p.Done:
		fmt.Fprint(w, "pending at the end: nothing (no node queued for tainting, no eviction scheduled)")
		if d := sum.Devices; d != nil && d.PodsHeld > 0 {
			fmt.Fprintf(w, "; %s held by a device breaker", plural(d.PodsHeld, "pod", "pods"))
		}
		fmt.Fprintln(w)
		return
	}
	var parts []string
	if p.NodesQueued > 0 {
		parts = append(parts, plural(p.NodesQueued, "node", "nodes")+" queued for tainting")
	}
	if p.Evictions > 0 {
		parts = append(parts, plural(p.Evictions, "eviction", "evictions")+" scheduled")
	}
	if p.DeviceEvictions > 0 {
		parts = append(parts, plural(p.DeviceEvictions, "device taint eviction", "device taint evictions")+" scheduled or waiting for a driver's rate")
	}
	if d := sum.Devices; d != nil && d.PodsHeld > 0 {
		parts = append(parts, plural(d.PodsHeld, "pod", "pods")+" held by a device breaker")
	}
	fmt.Fprintf(w, "NOT FINISHED at %s: %s", Offset(sum.end()), strings.Join(parts, ", "))
	var proj []string
	if p.LastTaint != nil {
		proj = append(proj, "last taint ≈ "+Offset(*p.LastTaint))
	}
	if p.LastEviction != nil {
		proj = append(proj, "last eviction ≈ "+Offset(*p.LastEviction))
	}
	if len(proj) > 0 {
		fmt.Fprintf(w, "; at the rates of the end, %s (lengthen duration to see it)", strings.Join(proj, ", "))
	}
	if p.Never {
		fmt.Fprint(w, "; some queued nodes are in a zone whose rate is 0: never tainted while it stays so")
	}
	fmt.Fprintln(w)
}

func (s *Summary) end() time.Duration { return s.Duration }

// downLine says how long nodes and pods were down: their time down added
// up (node- and pod-seconds), the longest span, and how many were still
// down at the end.
func downLine(nodeSecs float64, longestNode time.Duration, nodesAtEnd int, podSecs float64, longestPod time.Duration, podsAtEnd int) string {
	return fmt.Sprintf("%s of node time (longest %s; %s down at the end), %s of pod time not ready (longest %s; %s at the end)",
		seconds(nodeSecs), Dur(longestNode), plural(nodesAtEnd, "node", "nodes"), seconds(podSecs), Dur(longestPod), plural(podsAtEnd, "pod", "pods"))
}

// seconds formats a number of seconds (node- or pod-seconds) as Dur does
// up to 100 hours, in hours with one decimal from there ("6380.8h").
func seconds(s float64) string {
	if s >= 100*3600 {
		return strconv.FormatFloat(s/3600, 'f', 1, 64) + "h"
	}
	return Dur(time.Duration(math.Round(s*10)) * 100 * time.Millisecond)
}

// times notes that n events happened to fewer nodes ("(3 times)").
func times(n, nodes int) string {
	if n <= nodes {
		return ""
	}
	return fmt.Sprintf(" (%d times)", n)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// JSONEntry is an Entry in the JSON report.
type JSONEntry struct {
	T      float64 `json:"t"` // seconds since the start
	Kind   string  `json:"kind"`
	Node   string  `json:"node"`
	Pod    string  `json:"pod"`
	Zone   string  `json:"zone"`
	Detail string  `json:"detail"`
	// The device kinds' DRA driver and device (driver/pool/device).
	Driver string `json:"driver,omitempty"`
	Device string `json:"device,omitempty"`
}

// JSONReport is the -format json output.
type JSONReport struct {
	Events  []JSONEntry `json:"events"`
	Summary Summary     `json:"summary"`
	// RealTimeMs is how long the run took in real time (not deterministic).
	RealTimeMs *float64 `json:"realTimeMs,omitempty"`
}

// NewJSONReport converts a result.
func NewJSONReport(res *Result) JSONReport {
	r := JSONReport{Events: make([]JSONEntry, len(res.Entries)), Summary: res.Summary}
	for i, e := range res.Entries {
		r.Events[i] = JSONEntry{T: e.At.Seconds(), Kind: string(e.Kind), Node: e.Node, Pod: e.Pod, Zone: e.Zone, Detail: e.Detail, Driver: e.Driver, Device: e.Device}
	}
	return r
}

// WriteJSON writes the JSON report, one event per line and the summary
// indented; elapsed < 0 omits realTimeMs.
func WriteJSON(w io.Writer, res *Result, elapsed time.Duration) error {
	r := NewJSONReport(res)
	if elapsed >= 0 {
		ms := float64(elapsed.Microseconds()) / 1e3
		r.RealTimeMs = &ms
	}
	return writeJSONReport(w, r)
}

func writeJSONReport(w io.Writer, r JSONReport) error {
	ew := &errWriter{w: w}
	ew.Write([]byte("{\"events\": ["))
	for i, e := range r.Events {
		b, err := marshal(e, "")
		if err != nil {
			return err
		}
		if i > 0 {
			ew.Write([]byte(","))
		}
		ew.Write([]byte("\n  "))
		ew.Write(b)
	}
	ew.Write([]byte("\n ],\n \"summary\": "))
	b, err := marshal(r.Summary, " ")
	if err != nil {
		return err
	}
	ew.Write(b)
	if r.RealTimeMs != nil {
		fmt.Fprintf(ew, ",\n \"realTimeMs\": %s", strconv.FormatFloat(*r.RealTimeMs, 'f', -1, 64))
	}
	ew.Write([]byte("\n}\n"))
	return ew.err
}

// marshal is json.Marshal without HTML escaping, indented by indent ("":
// compact), without the trailing newline.
func marshal(v any, indent string) ([]byte, error) {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent(indent, " ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(buf.String(), "\n")), nil
}

// WriteComparison writes the key numbers of a taint-mode and a legacy-mode
// run of the same scenario side by side.
func WriteComparison(w io.Writer, taint, legacy *Result) error {
	ew := &errWriter{w: w}
	writeHeader(ew, taint)
	fmt.Fprintf(ew, "\nCOMPARISON  taint-based eviction vs legacy node eviction (pod-eviction-timeout %v)\n", legacy.Options.PodEvictionTimeout)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "zone\tmode\tUnknown\ttainted / queued\tfirst eviction\tlast eviction\tpods evicted")
	for i := range taint.Summary.Zones {
		for _, r := range []*Result{taint, legacy} {
			z := r.Summary.Zones[i]
			mark := z.FirstTaint
			if r.Options.PodEvictionTimeout > 0 {
				mark = z.FirstNodeEvicting
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", z.Zone, r.Options.Mode(), when(z.FirstUnknown), when(mark), when(z.FirstEviction), when(z.LastEviction), z.PodsEvicted)
		}
	}
	fmt.Fprintf(tw, "all\ttaint\t\t\t\t\t%d\n", taint.Summary.PodsEvicted)
	fmt.Fprintf(tw, "all\tlegacy\t\t\t\t\t%d\n", legacy.Summary.PodsEvicted)
	tw.Flush()
	return ew.err
}

// errWriter remembers the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	_, e.err = e.w.Write(p)
	return len(p), nil
}

// WriteJSONValue writes v as indented JSON without HTML escaping.
func WriteJSONValue(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	return enc.Encode(v)
}

// when renders an offset from the start, or "never".
func when(t *time.Duration) string {
	if t == nil {
		return "never"
	}
	return Offset(*t)
}
