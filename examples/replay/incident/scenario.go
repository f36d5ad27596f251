package incident

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/kubelifecycle/lifecycle/examples/policysim/sim"
)

// Scenario returns a policysim scenario (examples/policysim/sim, YAML)
// that gives the run's timeline: the log's zones and nodes (renamed
// zone-index as policysim names them; the mapping is in a comment), their
// pods, the run's policy, each kubelet silence longer than 20s as a stop
// and a resume, and the stalls of the Lease watch. policysim's kubelets
// renew on one 10s grid from t=0 and its zones hold identical nodes, so
// times may move by up to a Lease interval and a zone's pods per node are
// its most common count; the comments say what was approximated.
func (r *Run) Scenario(h *History, name string) []byte {
	var b strings.Builder
	var notes []string
	// Zones and the name mapping.
	type zoneOf struct {
		name  string
		nodes []string
	}
	zones := map[string]*zoneOf{}
	for _, n := range h.Nodes {
		z := zoneName(n.Zone)
		if zones[z] == nil {
			zones[z] = &zoneOf{name: z}
		}
		zones[z].nodes = append(zones[z].nodes, n.Name)
	}
	var zs []*zoneOf
	for _, z := range zones {
		zs = append(zs, z)
	}
	slices.SortFunc(zs, func(a, b *zoneOf) int { return cmp.Compare(a.name, b.name) })
	rename := map[string]string{}
	for _, z := range zs {
		for i, n := range z.nodes {
			rename[n] = sim.NodeName(z.name, i, len(z.nodes))
		}
	}
	podsOn := map[string][]*PodInfo{}
	for i := range h.Pods {
		p := &h.Pods[i]
		if p.Node != "" {
			podsOn[p.Node] = append(podsOn[p.Node], p)
		}
	}
	fmt.Fprintf(&b, "# Exported by examples/replay from the audit log %s to %s (t=0 is its first event).\n", rfc(h.First), rfc(h.Last))
	fmt.Fprintf(&b, "# Policy: %s; monitor pass phase %v (policysim's passes run from t=0).\n", r.Policy, r.Phase)
	b.WriteString("# Nodes, renamed as policysim names them:\n")
	for _, z := range zs {
		for _, n := range z.nodes {
			fmt.Fprintf(&b, "#   %s -> %s\n", n, rename[n])
		}
	}
	fmt.Fprintf(&b, "name: %s\n", strconv.Quote(name))
	b.WriteString("description: \"exported from an audit log by examples/replay\"\n")
	dur := h.Last.Sub(h.First)
	dur = time.Duration(math.Ceil(dur.Seconds())) * time.Second
	fmt.Fprintf(&b, "duration: %s\n", dur)
	p := r.Policy
	fmt.Fprintf(&b, "policy:\n  nodeMonitorPeriod: %s\n  nodeMonitorGracePeriod: %s\n  nodeStartupGracePeriod: %s\n", p.NodeMonitorPeriod, p.NodeMonitorGracePeriod, p.NodeStartupGracePeriod)
	fmt.Fprintf(&b, "  nodeEvictionRate: %s\n  secondaryNodeEvictionRate: %s\n  largeClusterSizeThreshold: %d\n  unhealthyZoneThreshold: %s\n  nodeControllerLeaseCircuitBreaker: %t\n",
		ff(p.NodeEvictionRate), ff(p.SecondaryNodeEvictionRate), p.LargeClusterSizeThreshold, ff(p.UnhealthyZoneThreshold), p.LeaseCircuitBreaker)
	b.WriteString("zones:\n")
	for _, z := range zs {
		fmt.Fprintf(&b, "  - name: %s\n    nodes: %d\n", z.name, len(z.nodes))
		counts := map[int]int{}
		var tol []v1.Toleration
		tolSet, tolSame := false, true
		for _, n := range z.nodes {
			counts[len(podsOn[n])]++
			for _, pod := range podsOn[n] {
				if !tolSet {
					tol, tolSet = pod.Tolerations, true
				} else if !equality.Semantic.DeepEqual(tol, pod.Tolerations) {
					tolSame = false
				}
			}
		}
		per, best := 0, -1
		for c, k := range counts {
			if k > best || (k == best && c > per) {
				per, best = c, k
			}
		}
		if len(counts) > 1 {
			notes = append(notes, fmt.Sprintf("zone %s: nodes carry different numbers of pods; %d per node used", z.name, per))
		}
		if !tolSame {
			notes = append(notes, fmt.Sprintf("zone %s: pods' tolerations differ; the first pod's used", z.name))
		}
		if per > 0 {
			fmt.Fprintf(&b, "    pods:\n      - name: pod\n        perNode: %d\n", per)
			if len(tol) > 0 {
				j, _ := json.Marshal(tol)
				fmt.Fprintf(&b, "        tolerations: %s\n", j)
			}
		}
	}
	// Events.
	type event struct {
		at     time.Duration
		action string
		node   string
	}
	var evs []event
	for name, f := range r.nodes {
		for _, s := range f.silences {
			evs = append(evs, event{s.From.Sub(h.First) + time.Millisecond, sim.ActionStop, rename[name]})
			if !s.To.IsZero() {
				evs = append(evs, event{s.To.Sub(h.First), sim.ActionResume, rename[name]})
			}
		}
		if len(f.silences) == maxSilences {
			notes = append(notes, fmt.Sprintf("node %s: only its first %d silences", rename[name], maxSilences))
		}
	}
	for _, w := range r.leaseStalls {
		evs = append(evs, event{w.From.Sub(h.First), sim.ActionLeaseWatchStall, ""}, event{w.To.Sub(h.First), sim.ActionLeaseWatchResume, ""})
	}
	if r.nodeStalls > 0 {
		notes = append(notes, "the Node watch stalls (-node-watch-stall) have no policysim action: left out")
	}
	slices.SortFunc(evs, func(a, b event) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.node, b.node), cmp.Compare(a.action, b.action))
	})
	if len(evs) == 0 {
		b.WriteString("events: []\n")
	} else {
		b.WriteString("events:\n")
	}
	for _, e := range evs {
		fmt.Fprintf(&b, "  - at: %s\n    action: %s\n", max(e.at, 0).Round(time.Millisecond), e.action)
		if e.node != "" {
			fmt.Fprintf(&b, "    node: %s\n", e.node)
		}
	}
	notes = append(notes, "kubelets renew on policysim's 10s grid from t=0: a stop or resume may move by up to a Lease interval")
	b.WriteString("# Approximations:\n")
	for _, n := range notes {
		fmt.Fprintf(&b, "#   - %s\n", n)
	}
	return []byte(b.String())
}

func ff(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// zoneName returns a policysim zone name for a zone label: lower case
// letters, digits and '-', "zone" for none.
func zoneName(z string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(z) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "zone"
	}
	return s
}
