package zonestate

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Condition builders. Only Status matters to this package.
var (
	condTrue    = &v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue}
	condFalse   = &v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse}
	condUnknown = &v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionUnknown}
)

// conds builds a zone from a pattern: T True, F False, U Unknown, n nil.
func conds(pattern string) []*v1.NodeCondition {
	out := make([]*v1.NodeCondition, 0, len(pattern))
	for _, r := range pattern {
		switch r {
		case 'T':
			out = append(out, condTrue)
		case 'F':
			out = append(out, condFalse)
		case 'U':
			out = append(out, condUnknown)
		case 'n':
			out = append(out, nil)
		default:
			panic(fmt.Sprintf("conds: bad pattern rune %q", r))
		}
	}
	return out
}

// zoneOf builds a zone of ready True nodes followed by notReady Unknown ones.
func zoneOf(ready, notReady int) []*v1.NodeCondition {
	out := make([]*v1.NodeCondition, 0, ready+notReady)
	for range ready {
		out = append(out, condTrue)
	}
	for range notReady {
		out = append(out, condUnknown)
	}
	return out
}

// zonesT is a compact zone map literal for step tables.
type zonesT = map[string][]*v1.NodeCondition

// fmtZones prints an Update input for failure messages: {a:2/5 b:0/3}
// (not ready / size), sorted by key.
func fmtZones(zs map[string][]*v1.NodeCondition) string {
	keys := make([]string, 0, len(zs))
	for k := range zs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		n, _ := Compute(zs[k], 0.55)
		fmt.Fprintf(&b, "%q:%d/%d", k, n, len(zs[k]))
	}
	b.WriteByte('}')
	return b.String()
}

// fmtDecision prints a Decision on one line for failure messages.
func fmtDecision(d Decision) string {
	var b strings.Builder
	b.WriteString("{Zones:[")
	for i, z := range d.Zones {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "{%q size=%d notReady=%d %v->%v qps=%v changed=%v}",
			z.Key, z.Size, z.NotReady, z.Previous, z.State, z.QPS, z.RateChanged)
	}
	fmt.Fprintf(&b, "] Removed:%q Entered:%v Exited:%v In:%v Undecided:%v}",
		d.Removed, d.EnteredFullDisruption, d.ExitedFullDisruption, d.InFullDisruption, d.UndecidedQPS)
	return b.String()
}

// decisionEqual compares decisions, treating nil and empty slices alike.
// It leaves out UndecidedQPS, which the step tables do not spell out; the
// model comparisons and checkInvariants check it.
func decisionEqual(a, b Decision) bool {
	return slices.Equal(a.Zones, b.Zones) && slices.Equal(a.Removed, b.Removed) &&
		a.EnteredFullDisruption == b.EnteredFullDisruption &&
		a.ExitedFullDisruption == b.ExitedFullDisruption &&
		a.InFullDisruption == b.InFullDisruption
}

func ptr[T any](v T) *T { return &v }
