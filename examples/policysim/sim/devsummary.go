package sim

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/taints"
)

// DeviceSummary is what the device taint eviction controller did in a run
// with devices (Summary.Devices; nil without). Times are durations since
// the start (seconds in JSON), nil when it never happened.
type DeviceSummary struct {
	// The blast-radius limit the run had (policy.deviceEvictionQPS, ...);
	// all zero: none, upstream's behaviour.
	EvictionQPS   float64       `json:"evictionQPS"`
	EvictionBurst int           `json:"evictionBurst"`
	MaxShare      float64       `json:"maxShare"`
	MinDevices    int           `json:"minDevices"`
	ResumeShare   float64       `json:"resumeShare"`
	ResumeAfter   time.Duration `json:"resumeAfter"`
	// The cluster's devices, those allocated to claims, the claims, and
	// the pods using them.
	Devices          int `json:"devices"`
	AllocatedDevices int `json:"allocatedDevices"`
	Claims           int `json:"claims"`
	PodsWithClaims   int `json:"podsWithClaims"`
	// DevicesTainted counts the devices their driver gave a NoExecute
	// taint (device-taint), FirstTaint the first such taint.
	DevicesTainted int            `json:"devicesTainted"`
	FirstTaint     *time.Duration `json:"firstTaint"`
	// PodsEvicted counts the pods deleted for device taints, from
	// FirstEviction to LastEviction; LongestDelay is the longest an
	// eviction waited past its due time (for its driver's rate).
	PodsEvicted   int            `json:"podsEvicted"`
	FirstEviction *time.Duration `json:"firstEviction"`
	LastEviction  *time.Duration `json:"lastEviction"`
	LongestDelay  time.Duration  `json:"longestDelay"`
	// At the end: pods whose eviction a driver's breaker holds, and
	// evictions scheduled, due or waiting for their driver's rate.
	// PeakHeld sums the drivers' most pods held at once.
	PeakHeld         int `json:"peakHeld"`
	PodsHeld         int `json:"podsHeld"`
	EvictionsPending int `json:"evictionsPending"`
	// Cancelled counts the scheduled evictions cancelled ("Cancelling
	// deletion"), Warnings the TimeAdded and selector hazards reported
	// (device-warning entries; the ones beyond what a pass keeps are
	// counted too).
	Cancelled int `json:"cancelled"`
	Warnings  int `json:"warnings"`
	// Drivers has the same per DRA driver, by name; Rules each
	// DeviceTaintRule, by name.
	Drivers []DriverSummary `json:"drivers"`
	Rules   []RuleSummary   `json:"rules"`
}

// DriverSummary is one DRA driver's part of a DeviceSummary.
type DriverSummary struct {
	Driver           string         `json:"driver"`
	Devices          int            `json:"devices"`
	AllocatedDevices int            `json:"allocatedDevices"`
	Claims           int            `json:"claims"`
	PodsWithClaims   int            `json:"podsWithClaims"`
	DevicesTainted   int            `json:"devicesTainted"`
	FirstTaint       *time.Duration `json:"firstTaint"`
	PodsEvicted      int            `json:"podsEvicted"`
	FirstEviction    *time.Duration `json:"firstEviction"`
	LastEviction     *time.Duration `json:"lastEviction"`
	LongestDelay     time.Duration  `json:"longestDelay"`
	PodsHeld         int            `json:"podsHeld"`
	EvictionsPending int            `json:"evictionsPending"`
	Cancelled        int            `json:"cancelled"`
	// PeakHeld is the most pods its breaker held at once (counted after
	// each change of the inputs while it held).
	PeakHeld int `json:"peakHeld"`
	// Holds are its breaker's state changes (DeviceBlastRadius.MaxShare);
	// FinalState its state at the end ("" without a breaker).
	Holds      []HoldChange `json:"holds"`
	FinalState string       `json:"finalState,omitempty"`
}

// HoldChange is a driver's breaker entering State at T, with the counts
// that decided it (taints.DeviceDriverLimit).
type HoldChange struct {
	T                time.Duration `json:"t"`
	State            string        `json:"state"` // Armed, Holding or Released
	TaintedDevices   int           `json:"taintedDevices"`
	AllocatedDevices int           `json:"allocatedDevices"`
}

// RuleSummary is one DeviceTaintRule: the pods its taint evicted and its
// last EvictionInProgress condition as written.
type RuleSummary struct {
	Rule        string `json:"rule"`
	Deleted     bool   `json:"deleted"`
	PodsEvicted int    `json:"podsEvicted"`
	Status      string `json:"status"` // True or False ("" if never written)
	Reason      string `json:"reason"`
	Message     string `json:"message"`
}

// MarshalJSON writes the device summary with its times in seconds.
func (d DeviceSummary) MarshalJSON() ([]byte, error) { return marshalSeconds(d) }

// UnmarshalJSON reads a device summary whose times are in seconds.
func (d *DeviceSummary) UnmarshalJSON(b []byte) error { return unmarshalSeconds(b, d) }

// MarshalJSON writes the driver summary with its times in seconds.
func (d DriverSummary) MarshalJSON() ([]byte, error) { return marshalSeconds(d) }

// UnmarshalJSON reads a driver summary whose times are in seconds.
func (d *DriverSummary) UnmarshalJSON(b []byte) error { return unmarshalSeconds(b, d) }

// MarshalJSON writes the hold change with its time in seconds.
func (h HoldChange) MarshalJSON() ([]byte, error) { return marshalSeconds(h) }

// UnmarshalJSON reads a hold change whose time is in seconds.
func (h *HoldChange) UnmarshalJSON(b []byte) error { return unmarshalSeconds(b, h) }

// summarizeDevices computes the device summary from the timeline and the
// device side as the run left it.
func summarizeDevices(res *Result, s *sim) *DeviceSummary {
	dv := s.dev
	p := res.Scenario.Policy
	out := &DeviceSummary{EvictionQPS: p.DeviceEvictionQPS, MaxShare: p.DeviceMaxShare, MinDevices: p.DeviceMinDevices,
		ResumeShare: p.DeviceResumeShare, ResumeAfter: p.DeviceResumeAfter.D(), Rules: []RuleSummary{}}
	if p.DeviceEvictionQPS > 0 {
		out.EvictionBurst = p.DeviceEvictionBurst
	}
	index := map[string]int{}
	drv := func(name string) *DriverSummary {
		i, ok := index[name]
		if !ok {
			i = len(out.Drivers)
			index[name] = i
			out.Drivers = append(out.Drivers, DriverSummary{Driver: name, Holds: []HoldChange{}})
		}
		return &out.Drivers[i]
	}
	var names []string
	for zi := range dv.zones {
		for _, set := range dv.zones[zi].sets {
			if !slices.Contains(names, set.driver) {
				names = append(names, set.driver)
			}
		}
	}
	slices.Sort(names)
	for _, n := range names {
		drv(n)
	}
	for _, n := range s.nodes {
		z := &dv.zones[n.zone]
		for _, set := range z.sets {
			drv(set.driver).Devices += len(set.names)
		}
		for _, g := range z.groups {
			if g.set < 0 {
				continue
			}
			d := drv(z.sets[g.set].driver)
			d.Claims += g.shape.claims
			d.AllocatedDevices += g.shape.claims * g.shape.devices
			d.PodsWithClaims += g.shape.pods
		}
	}
	first := func(p **time.Duration, t time.Duration) {
		if *p == nil {
			*p = at(t)
		}
	}
	tainted := map[string]bool{}
	for _, e := range res.Entries {
		switch e.Kind {
		case KindDeviceTaint:
			if strings.HasSuffix(e.Detail, ":NoExecute") && !tainted[e.Device] {
				tainted[e.Device] = true
				d := drv(e.Driver)
				d.DevicesTainted++
				first(&d.FirstTaint, e.At)
			}
		case KindDevicePodEvicted:
			d := drv(e.Driver)
			d.PodsEvicted++
			first(&d.FirstEviction, e.At)
			d.LastEviction = at(e.At)
		case KindDeviceEvictionCancelled:
			if e.Driver != "" {
				drv(e.Driver).Cancelled++
			}
			out.Cancelled++
		case KindDeviceWarning:
			out.Warnings++
		}
	}
	out.Cancelled += int(dv.cancelledDropped)
	out.Warnings += int(dv.d.WarningsDropped())
	for _, h := range dv.holds {
		d := drv(h.l.Driver)
		d.Holds = append(d.Holds, HoldChange{T: h.at, State: h.l.State.String(), TaintedDevices: h.l.TaintedDevices, AllocatedDevices: h.l.AllocatedDevices})
	}
	for d, delay := range dv.delays {
		drv(d).LongestDelay = delay
	}
	for d, n := range dv.peakHeld {
		drv(d).PeakHeld = n
	}
	if p.DeviceMaxShare > 0 {
		for _, l := range dv.d.DriverLimits(nil) {
			drv(l.Driver).FinalState = l.State.String()
		}
	}
	// Each pod with a claim still there: held, or an eviction pending.
	now := Epoch.Add(s.t)
	for _, n := range s.nodes {
		z := &dv.zones[n.zone]
		for _, g := range z.groups {
			if g.set < 0 {
				continue
			}
			d := drv(z.sets[g.set].driver)
			for j := range g.shape.pods {
				switch x := dv.d.Explain(now, types.NamespacedName{Namespace: podNamespace, Name: podName(n.name, g.name, j)}); x.State {
				case taints.DeviceHeld:
					d.PodsHeld++
				case taints.DeviceScheduled, taints.DeviceDue, taints.DeviceRetrying, taints.DeviceHandedOut, taints.DeviceThrottled:
					d.EvictionsPending++
				}
			}
		}
	}
	for i := range out.Drivers {
		d := &out.Drivers[i]
		out.Devices += d.Devices
		out.AllocatedDevices += d.AllocatedDevices
		out.Claims += d.Claims
		out.PodsWithClaims += d.PodsWithClaims
		out.DevicesTainted += d.DevicesTainted
		out.FirstTaint = minPtr(out.FirstTaint, d.FirstTaint)
		out.PodsEvicted += d.PodsEvicted
		out.FirstEviction = minPtr(out.FirstEviction, d.FirstEviction)
		out.LastEviction = maxPtr(out.LastEviction, d.LastEviction)
		out.LongestDelay = max(out.LongestDelay, d.LongestDelay)
		out.PodsHeld += d.PodsHeld
		out.PeakHeld += d.PeakHeld
		out.EvictionsPending += d.EvictionsPending
	}
	for _, name := range slices.Sorted(maps.Keys(dv.rules)) {
		r := dv.rules[name]
		rs := RuleSummary{Rule: name, Deleted: r.deleted, PodsEvicted: dv.ruleEvicted[name]}
		if c, ok := dv.ruleStatus[name]; ok {
			rs.Status, rs.Reason, rs.Message = string(c.Status), c.Reason, c.Message
		}
		out.Rules = append(out.Rules, rs)
	}
	return out
}

// pct formats a share as a percentage ("5%").
func pct(x float64) string { return strconv.FormatFloat(x*100, 'f', -1, 64) + "%" }

func minPtr(a, b *time.Duration) *time.Duration {
	if a == nil || b != nil && *b < *a {
		return b
	}
	return a
}

// devicePolicyText describes the device taint eviction controller's
// policy in one line.
func devicePolicyText(p Policy) string {
	if p.DeviceEvictionQPS == 0 && p.DeviceMaxShare == 0 {
		return "upstream v1.37.2: a pod goes as soon as a NoExecute taint on one of its claims' devices is not tolerated (no rate, no breaker)"
	}
	var parts []string
	if p.DeviceEvictionQPS > 0 {
		parts = append(parts, fmt.Sprintf("evictions at %g pods/s (burst %d)", p.DeviceEvictionQPS, p.DeviceEvictionBurst))
	}
	if p.DeviceMaxShare > 0 {
		b := "evictions held once more than " + pct(p.DeviceMaxShare) + " of its allocated devices are tainted"
		if p.DeviceMinDevices > 0 {
			b += fmt.Sprintf(" (and more than %d)", p.DeviceMinDevices)
		}
		who, is, has := "none", "is", "has"
		if p.DeviceResumeShare > 0 {
			who, is, has = pct(p.DeviceResumeShare)+" or fewer", "are", "have"
		}
		if p.DeviceResumeAfter > 0 {
			b += ", until " + who + " " + has + " been for " + Dur(p.DeviceResumeAfter.D())
		} else {
			b += ", until " + who + " " + is
		}
		parts = append(parts, b)
	}
	return "per driver, " + strings.Join(parts, "; ") + " (ours; upstream has no limit)"
}

// writeDeviceHeader writes the header's devices line.
func writeDeviceHeader(w io.Writer, res *Result) {
	sum := res.Summary.Devices
	if sum == nil {
		return
	}
	var drivers []string
	for _, d := range sum.Drivers {
		drivers = append(drivers, fmt.Sprintf("%d %s", d.Devices, d.Driver))
	}
	fmt.Fprintf(w, "devices   %s devices, %d allocated to %s used by %s; device taints: %s\n", strings.Join(drivers, ", "),
		sum.AllocatedDevices, plural(sum.Claims, "claim", "claims"), plural(sum.PodsWithClaims, "pod", "pods"), devicePolicyText(res.Scenario.Policy))
}

// writeDeviceSummary writes the summary's device part: per driver, when
// its devices were tainted, the pods evicted, its breaker's holds and
// what was held or pending at the end; then each rule.
func writeDeviceSummary(w io.Writer, res *Result) {
	sum := res.Summary.Devices
	if sum == nil {
		return
	}
	for _, d := range sum.Drivers {
		fmt.Fprintf(w, "driver %s: %d devices, %d allocated to %s used by %s\n", d.Driver, d.Devices, d.AllocatedDevices,
			plural(d.Claims, "claim", "claims"), plural(d.PodsWithClaims, "pod", "pods"))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		share := ""
		if d.AllocatedDevices > 0 {
			share = " (" + strconv.FormatFloat(float64(d.DevicesTainted)*100/float64(d.AllocatedDevices), 'f', 1, 64) + "% of the allocated)"
		}
		fmt.Fprintf(tw, "  tainted\t%s\t%s NoExecute by the driver%s\n", when(d.FirstTaint), plural(d.DevicesTainted, "device", "devices"), share)
		fmt.Fprintf(tw, "  evicted\t%s\t%s", when(d.FirstEviction), plural(d.PodsEvicted, "pod", "pods"))
		if d.LastEviction != nil && *d.LastEviction != *d.FirstEviction {
			fmt.Fprintf(tw, "; last at %s", Offset(*d.LastEviction))
			if d.FirstTaint != nil {
				fmt.Fprintf(tw, ", %s after the first taint", Dur(*d.LastEviction-*d.FirstTaint))
			}
		}
		if d.LongestDelay > 0 {
			fmt.Fprintf(tw, "; the rate delayed one by up to %s", Dur(d.LongestDelay))
		}
		fmt.Fprintln(tw)
		if len(d.Holds) > 0 {
			var parts []string
			for _, h := range d.Holds {
				parts = append(parts, fmt.Sprintf("%s %s (%d of %d tainted)", Offset(h.T), h.State, h.TaintedDevices, h.AllocatedDevices))
			}
			fmt.Fprintf(tw, "  breaker\t\t%s; %s held at most\n", strings.Join(parts, ", "), plural(d.PeakHeld, "pod", "pods"))
		}
		if d.Cancelled > 0 {
			fmt.Fprintf(tw, "  cancelled\t\t%s (Cancelling deletion)\n", plural(d.Cancelled, "eviction", "evictions"))
		}
		if d.PodsHeld > 0 || d.EvictionsPending > 0 {
			fmt.Fprintf(tw, "  at the end\t%s\t%s held by the breaker, %s pending\n", Offset(res.Summary.Duration),
				plural(d.PodsHeld, "pod", "pods"), plural(d.EvictionsPending, "eviction", "evictions"))
		}
		tw.Flush()
	}
	for _, r := range sum.Rules {
		fmt.Fprintf(w, "rule %s: %s evicted", r.Rule, plural(r.PodsEvicted, "pod", "pods"))
		if r.Deleted {
			fmt.Fprint(w, ", deleted")
		}
		if r.Reason != "" {
			fmt.Fprintf(w, "; last status %s %s", r.Status, r.Reason)
			if r.Message != "" {
				fmt.Fprintf(w, ": %s", r.Message)
			}
		}
		fmt.Fprintln(w)
	}
	if sum.Warnings > 0 {
		fmt.Fprintf(w, "device warnings: %d (device-warning in the timeline)\n", sum.Warnings)
	}
}

// writeDeviceSweep writes a sweep's device table: per run and driver, the
// devices tainted, the pods evicted and when, the longest delay, the
// breaker's holds, and what was held or pending at the end.
func writeDeviceSweep(w io.Writer, fields []string, runs []SweepRun) {
	if runs[0].Result.Summary.Devices == nil {
		return
	}
	fmt.Fprintln(w, "\nDEVICES")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tdriver\tdevices tainted\tpods evicted\tfirst eviction\tlast eviction\tlongest delay\tbreaker\tmost held\theld at the end\tpending at the end\n", strings.Join(fields, "\t"))
	for _, r := range runs {
		sum := r.Result.Summary.Devices
		if sum == nil {
			continue
		}
		vals := strings.Join(runValues(r, len(fields)), "\t")
		for _, d := range sum.Drivers {
			breaker := "-"
			if len(d.Holds) > 0 {
				var parts []string
				for _, h := range d.Holds {
					parts = append(parts, Offset(h.T)+" "+h.State)
				}
				breaker = strings.Join(parts, ", ")
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\n", vals, d.Driver, d.DevicesTainted, d.PodsEvicted, when(d.FirstEviction), when(d.LastEviction),
				Dur(d.LongestDelay), breaker, d.PeakHeld, d.PodsHeld, d.EvictionsPending)
		}
	}
	tw.Flush()
}

// drawDevices draws one small chart per driver from top: the devices its
// taints hold at each instant (purple, scaled to its peak) and the pods
// evicted for device taints, cumulative (dark blue, scaled to the pods the
// taints reached: evicted, held, cancelled or pending), over bands
// while its breaker holds (orange) or is released (yellow).
func drawDevices(w io.Writer, res *Result, top float64, x func(time.Duration) float64) {
	sum := res.Summary.Devices
	end := res.Scenario.Duration.D()
	p := res.Scenario.Policy
	limit := "no limit (upstream)"
	if p.DeviceEvictionQPS > 0 || p.DeviceMaxShare > 0 {
		var parts []string
		if p.DeviceEvictionQPS > 0 {
			parts = append(parts, fmt.Sprintf("rate %g pods/s (burst %d)", p.DeviceEvictionQPS, p.DeviceEvictionBurst))
		}
		if p.DeviceMaxShare > 0 {
			parts = append(parts, "breaker over "+pct(p.DeviceMaxShare)+" tainted, resuming at "+pct(p.DeviceResumeShare))
		}
		limit = strings.Join(parts, ", ")
	}
	fmt.Fprintf(w, `<text x="12" y="%.0f" font-size="11" fill="#444"><tspan font-weight="bold">DEVICES (per driver)</tspan>  devices carrying the driver's NoExecute taint and pods evicted for device taints (cumulative), each line scaled to its peak; breaker holds; %s</text>`+"\n",
		top-8, esc(limit))
	tainted := map[string][]cumPoint{}
	evicted := map[string][]cumPoint{}
	on := map[string]bool{}
	step := func(series []cumPoint, at time.Duration, delta int) []cumPoint {
		n := len(series)
		c := delta
		if n > 0 {
			c += series[n-1].n
		}
		if n > 0 && series[n-1].at == at {
			series[n-1].n = c
			return series
		}
		return append(series, cumPoint{at, c})
	}
	for _, e := range res.Entries {
		switch {
		case e.Kind == KindDeviceTaint && strings.HasSuffix(e.Detail, ":NoExecute") && !on[e.Device]:
			on[e.Device] = true
			tainted[e.Driver] = step(tainted[e.Driver], e.At, 1)
		case e.Kind == KindDeviceUntaint && on[e.Device]:
			delete(on, e.Device)
			tainted[e.Driver] = step(tainted[e.Driver], e.At, -1)
		case e.Kind == KindDevicePodEvicted:
			evicted[e.Driver] = step(evicted[e.Driver], e.At, 1)
		}
	}
	for i, d := range sum.Drivers {
		ry := top + float64(i)*svgCumRow
		peak := 0
		for _, p := range tainted[d.Driver] {
			peak = max(peak, p.n)
		}
		// The pods the taints reached: evicted, and those held (at most)
		// or cancelled or still pending.
		reached := max(d.PodsEvicted+max(d.PeakHeld, d.Cancelled+d.EvictionsPending+d.PodsHeld), 1)
		fmt.Fprintf(w, `<text x="12" y="%.0f" font-size="11">%s</text>`+"\n", ry+13, esc(d.Driver))
		fmt.Fprintf(w, `<text x="12" y="%.0f" font-size="10" fill="%s">%d of %d devices tainted</text>`+"\n", ry+26, colDevTainted, peak, d.AllocatedDevices)
		fmt.Fprintf(w, `<text x="12" y="%.0f" font-size="10" fill="%s">%d/%d pods evicted</text>`+"\n", ry+38, colEvicted, d.PodsEvicted, reached)
		// The breaker's holds, under the lines.
		for k, h := range d.Holds {
			to := end
			if k+1 < len(d.Holds) {
				to = d.Holds[k+1].T
			}
			c := map[string]string{"Holding": colHolding, "Released": colReleased}[h.State]
			if c == "" {
				continue
			}
			fmt.Fprintf(w, `<rect x="%.1f" y="%.0f" width="%.1f" height="%d" fill="%s" fill-opacity="0.35"><title>breaker %s from %s (%d of %d allocated devices tainted)</title></rect>`+"\n",
				x(h.T), ry+2, max(x(to)-x(h.T), 1), svgCumH, c, esc(h.State), Offset(h.T), h.TaintedDevices, h.AllocatedDevices)
			if lbl := h.State + " " + Offset(h.T); x(to)-x(h.T) > float64(len(lbl)*svgMinLabelW) {
				fmt.Fprintf(w, `<text x="%.1f" y="%.0f" font-size="10" fill="#222">%s</text>`+"\n", x(h.T)+4, ry+13, esc(lbl))
			}
		}
		fmt.Fprintf(w, `<rect x="%d" y="%.0f" width="%d" height="%d" fill="none" stroke="#ccc"/>`+"\n", svgLeft, ry+2, svgChartW, svgCumH)
		base := ry + 2 + svgCumH
		line := func(series []cumPoint, total int, colour, what string) {
			if len(series) == 0 {
				return
			}
			total = max(total, 1)
			yv := func(n int) float64 { return base - float64(svgCumH-2)*float64(n)/float64(total) }
			var b strings.Builder
			fmt.Fprintf(&b, "%.1f,%.1f", x(0), base)
			prev := 0
			for _, p := range series {
				fmt.Fprintf(&b, " %.1f,%.1f %.1f,%.1f", x(p.at), yv(prev), x(p.at), yv(p.n))
				prev = p.n
			}
			fmt.Fprintf(&b, " %.1f,%.1f", x(end), yv(prev))
			fmt.Fprintf(w, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"><title>%s: %d at the end</title></polyline>`+"\n", b.String(), colour, esc(what), prev)
		}
		line(tainted[d.Driver], peak, colDevTainted, "devices tainted by "+d.Driver)
		line(evicted[d.Driver], reached, colEvicted, "pods evicted for device taints")
		if d.PodsHeld > 0 || d.EvictionsPending > 0 {
			label := fmt.Sprintf("at the end: %s held, %s pending", plural(d.PodsHeld, "pod", "pods"), plural(d.EvictionsPending, "eviction", "evictions"))
			fmt.Fprintf(w, `<text x="%.1f" y="%.0f" text-anchor="end" font-size="10" fill="%s" font-weight="bold" stroke="white" stroke-width="3" paint-order="stroke">%s</text>`+"\n", x(end)-4, ry+14, colHolding, esc(label))
		}
	}
}
