package taints

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ErrInvalidConditionTaints is wrapped by NewConditionTaints' errors.
var ErrInvalidConditionTaints = errors.New("taints: invalid condition taint table")

// MaxConditionTaints is the most distinct taints (key and effect), and the
// most distinct condition types, a ConditionTaints table may hold.
const MaxConditionTaints = 64

// ConditionTaint is one row of a condition → taint table: a node whose
// condition of type Type has status Status gets Taint (its key, value and
// effect; TimeAdded is set when the taint is added). Several rows may give
// the same taint (upstream's table maps two Ready statuses to two taints,
// node-problem-detector users often map several conditions to one).
type ConditionTaint struct {
	Type   v1.NodeConditionType
	Status v1.ConditionStatus
	Taint  v1.Taint
}

// DefaultConditionTaints returns upstream's condition rows of "taint nodes
// by condition" (pkg/controller/nodelifecycle/node_lifecycle_controller.go,
// nodeConditionToTaintKeyStatusMap at v1.37.2), in ForConditions' order:
// Ready False → node.kubernetes.io/not-ready, Ready Unknown →
// node.kubernetes.io/unreachable, MemoryPressure, DiskPressure, PIDPressure
// and NetworkUnavailable True → their keys, all NoSchedule. ForConditions
// also manages node.kubernetes.io/unschedulable from spec.unschedulable,
// which is not a condition and has no row. The slice is the caller's.
func DefaultConditionTaints() []ConditionTaint {
	ns := func(key string) v1.Taint { return v1.Taint{Key: key, Effect: v1.TaintEffectNoSchedule} }
	return []ConditionTaint{
		{v1.NodeReady, v1.ConditionFalse, ns(v1.TaintNodeNotReady)},
		{v1.NodeReady, v1.ConditionUnknown, ns(v1.TaintNodeUnreachable)},
		{v1.NodeMemoryPressure, v1.ConditionTrue, ns(v1.TaintNodeMemoryPressure)},
		{v1.NodeDiskPressure, v1.ConditionTrue, ns(v1.TaintNodeDiskPressure)},
		{v1.NodePIDPressure, v1.ConditionTrue, ns(v1.TaintNodePIDPressure)},
		{v1.NodeNetworkUnavailable, v1.ConditionTrue, ns(v1.TaintNodeNetworkUnavailable)},
	}
}

// ConditionTaints is a validated condition → taint table, for conditions
// upstream's table does not know: node-problem-detector's KernelDeadlock or
// ReadonlyFilesystem, a vendor agent's own. Its For method is
// ForConditions with this table; ForConditions runs on the same code with
// DefaultConditionTaints (plus spec.unschedulable).
//
// The taints a table manages are the distinct key and effect pairs of its
// rows; For adds and removes only those, so a table and ForConditions, or
// two tables, can run side by side on one node as long as their taints
// differ.
//
// A ConditionTaints is immutable and safe for concurrent use. The zero
// value manages nothing; create one with NewConditionTaints.
type ConditionTaints struct {
	wants         [][3]uint64            // per type: the taints wanted for status True, False, Unknown
	types         []v1.NodeConditionType // distinct condition types, in first-row order
	taints        []v1.Taint             // distinct managed taints, in first-row order (TimeAdded nil)
	unschedulable int                    // index in taints of spec.unschedulable's taint, or -1 (0 in the zero value: see For)
	knownType     [numKnownTypes]int8    // index+1 in types of each upstream condition type; 0: not in the table
	knownTaint    [numKnownKeys][3]int8  // index+1 in taints of each upstream key, by effect (effectIndex)
	typeByLen     lenIndex               // other types, by length
	taintByLen    lenIndex               // taints with other keys, by key length
}

// Upstream's condition types and taint keys are found by a switch on
// constants (as fast as a hard-coded table), others through a lenIndex.
const (
	numKnownTypes = 5
	numKnownKeys  = 7
)

// knownTypeIndex numbers upstream's condition types; -1 for others.
func knownTypeIndex(t v1.NodeConditionType) int {
	switch t {
	case v1.NodeReady:
		return 0
	case v1.NodeMemoryPressure:
		return 1
	case v1.NodeDiskPressure:
		return 2
	case v1.NodePIDPressure:
		return 3
	case v1.NodeNetworkUnavailable:
		return 4
	}
	return -1
}

// knownKeyIndex numbers upstream's condition taint keys; -1 for others.
func knownKeyIndex(key string) int {
	switch key {
	case v1.TaintNodeNotReady:
		return 0
	case v1.TaintNodeUnreachable:
		return 1
	case v1.TaintNodeMemoryPressure:
		return 2
	case v1.TaintNodeDiskPressure:
		return 3
	case v1.TaintNodePIDPressure:
		return 4
	case v1.TaintNodeNetworkUnavailable:
		return 5
	case v1.TaintNodeUnschedulable:
		return 6
	}
	return -1
}

// effectIndex numbers the three taint effects; -1 for others.
func effectIndex(e v1.TaintEffect) int {
	switch e {
	case v1.TaintEffectNoSchedule:
		return 0
	case v1.TaintEffectPreferNoSchedule:
		return 1
	case v1.TaintEffectNoExecute:
		return 2
	}
	return -1
}

// addTaint appends a managed taint (key, value, effect) and indexes it.
func (c *ConditionTaints) addTaint(t v1.Taint) int {
	i := len(c.taints)
	c.taints = append(c.taints, v1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	if k := knownKeyIndex(t.Key); k >= 0 {
		c.knownTaint[k][effectIndex(t.Effect)] = int8(i + 1)
	} else {
		c.taintByLen.add(len(t.Key), i)
	}
	return i
}

// addType appends a condition type and indexes it.
func (c *ConditionTaints) addType(t v1.NodeConditionType) int {
	i := len(c.types)
	c.types = append(c.types, t)
	if k := knownTypeIndex(t); k >= 0 {
		c.knownType[k] = int8(i + 1)
	} else {
		c.typeByLen.add(len(t), i)
	}
	return i
}

// lenIndex finds a string among up to MaxConditionTaints by its length
// first: for each length below lenIndexMax, the index of the only string of
// that length (lenNone: none; lenMany: several, scan). Most lookups are of
// strings the table does not hold, or tables whose strings differ in
// length, so one comparison (or none) decides.
type lenIndex [lenIndexMax]int8

const (
	lenIndexMax = 64
	lenNone     = 0 // stored as index+1, so the zero lenIndex holds nothing
	lenMany     = -1
)

// add records string number i of length n.
func (x *lenIndex) add(n, i int) {
	if n >= lenIndexMax {
		return
	}
	if x[n] == lenNone {
		x[n] = int8(i + 1)
	} else {
		x[n] = lenMany
	}
}

// lookup returns the only candidate of length n (and true), -1 when there
// is none, or scan (false) when the caller must compare every string.
func (x *lenIndex) lookup(n int) (int, bool) {
	if n >= lenIndexMax {
		return 0, false
	}
	switch v := x[n]; v {
	case lenNone:
		return -1, true
	case lenMany:
		return 0, false
	default:
		return int(v) - 1, true
	}
}

// row is a compiled ConditionTaint.
type row struct {
	typ    int // index in types
	status v1.ConditionStatus
	taint  int // index in taints
}

// NewConditionTaints validates table and returns its compiled form (the
// rows are copied). An error wrapping ErrInvalidConditionTaints names the
// first bad row (index and content): an empty Type; a Status other than
// True, False or Unknown; a taint key that is not a qualified name, a value
// that is not a valid label value, or an effect other than NoSchedule,
// PreferNoSchedule or NoExecute; the same row twice; two rows with the same
// taint key and effect but different values; more than MaxConditionTaints
// distinct taints or condition types. An empty table is an error too.
// TimeAdded in a row is ignored.
func NewConditionTaints(table []ConditionTaint) (*ConditionTaints, error) {
	if len(table) == 0 {
		return nil, fmt.Errorf("%w: no rows", ErrInvalidConditionTaints)
	}
	c := &ConditionTaints{unschedulable: -1}
	var added []row // the rows so far, for the duplicate check
	for i := range table {
		r := &table[i]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: row %d (%s): %s", ErrInvalidConditionTaints, i, r.describe(), fmt.Sprintf(format, args...))
		}
		if r.Type == "" {
			return nil, bad("empty condition type")
		}
		switch r.Status {
		case v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown:
		default:
			return nil, bad("status %q is not True, False or Unknown", r.Status)
		}
		if errs := validation.IsQualifiedName(r.Taint.Key); len(errs) > 0 {
			return nil, bad("taint key %q: %s", r.Taint.Key, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(r.Taint.Value); len(errs) > 0 {
			return nil, bad("taint value %q: %s", r.Taint.Value, strings.Join(errs, "; "))
		}
		switch r.Taint.Effect {
		case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			return nil, bad("taint effect %q is not NoSchedule, PreferNoSchedule or NoExecute", r.Taint.Effect)
		}
		ti := c.taintIndex(&r.Taint)
		if ti >= 0 && c.taints[ti].Value != r.Taint.Value {
			return nil, bad("taint %s:%s has value %q in an earlier row and %q here; one taint, one value",
				r.Taint.Key, r.Taint.Effect, c.taints[ti].Value, r.Taint.Value)
		}
		if ti < 0 {
			if len(c.taints) == MaxConditionTaints {
				return nil, bad("more than MaxConditionTaints (%d) distinct taints", MaxConditionTaints)
			}
			ti = c.addTaint(r.Taint)
		}
		ci := c.typeIndex(r.Type)
		if ci < 0 {
			if len(c.types) == MaxConditionTaints {
				return nil, bad("more than MaxConditionTaints (%d) distinct condition types", MaxConditionTaints)
			}
			ci = c.addType(r.Type)
		}
		for len(c.wants) <= ci {
			c.wants = append(c.wants, [3]uint64{})
		}
		if w := &c.wants[ci][statusIndex(r.Status)]; *w&(1<<ti) == 0 {
			*w |= 1 << ti
		} else {
			for j, o := range added {
				if o.typ == ci && o.status == r.Status && o.taint == ti {
					return nil, bad("same as row %d", j)
				}
			}
		}
		added = append(added, row{typ: ci, status: r.Status, taint: ti})
	}
	return c, nil
}

// describe renders a row for error messages: "KernelDeadlock=True →
// example.com/kernel-deadlock:NoSchedule".
func (r *ConditionTaint) describe() string {
	return string(r.Type) + "=" + string(r.Status) + " → " + r.Taint.ToString()
}

// statusIndex returns 0, 1, 2 for True, False, Unknown and -1 otherwise.
func statusIndex(s v1.ConditionStatus) int {
	switch s {
	case v1.ConditionTrue:
		return 0
	case v1.ConditionFalse:
		return 1
	case v1.ConditionUnknown:
		return 2
	}
	return -1
}

// taintIndex returns the index of the managed taint with t's key and
// effect, or -1.
func (c *ConditionTaints) taintIndex(t *v1.Taint) int {
	if k := knownKeyIndex(t.Key); k >= 0 {
		if e := effectIndex(t.Effect); e >= 0 {
			return int(c.knownTaint[k][e]) - 1
		}
		return -1
	}
	if i, ok := c.taintByLen.lookup(len(t.Key)); ok {
		if i >= 0 && c.taints[i].Key == t.Key && c.taints[i].Effect == t.Effect {
			return i
		}
		return -1
	}
	for i := range c.taints {
		if c.taints[i].Key == t.Key && c.taints[i].Effect == t.Effect { // keys mostly differ in length: cheap
			return i
		}
	}
	return -1
}

// typeIndex returns the index of condition type t, or -1.
func (c *ConditionTaints) typeIndex(t v1.NodeConditionType) int {
	if k := knownTypeIndex(t); k >= 0 {
		return int(c.knownType[k]) - 1
	}
	if i, ok := c.typeByLen.lookup(len(t)); ok {
		if i >= 0 && c.types[i] == t {
			return i
		}
		return -1
	}
	for i := range c.types {
		if c.types[i] == t {
			return i
		}
	}
	return -1
}

// Taints returns the taints the table manages (key, value, effect; no
// TimeAdded), in table order. The slice is the caller's.
func (c *ConditionTaints) Taints() []v1.Taint {
	if c == nil {
		return nil
	}
	return append([]v1.Taint(nil), c.taints...)
}

// For is ForConditions with this table: it returns the table's taints that
// node's conditions call for and it lacks (add, each with TimeAdded = now),
// and those it has but no longer needs (remove, copies of the node's
// entries). A node's taint counts as current when its key and effect are
// one of the table's taints (values and TimeAdded are ignored); other
// taints are never in either list. When a condition type appears more than
// once, the first one counts. Both lists are in table order and nil when
// the node is up to date, and then nothing is allocated. A nil node, or a
// nil or zero table, gives (nil, nil). O(conditions × types + taints ×
// managed taints).
func (c *ConditionTaints) For(node *v1.Node, now time.Time) (add, remove []v1.Taint) {
	if node == nil || c == nil || len(c.taints) == 0 {
		return nil, nil
	}
	var seen, want uint64
	for i := range node.Status.Conditions {
		cond := &node.Status.Conditions[i]
		var ci int
		if k := knownTypeIndex(cond.Type); k >= 0 {
			ci = int(c.knownType[k]) - 1 // inlined: the common case
		} else {
			ci = c.typeIndex(cond.Type)
		}
		if ci < 0 || seen&(1<<ci) != 0 {
			continue
		}
		seen |= 1 << ci
		if si := statusIndex(cond.Status); si >= 0 {
			want |= c.wants[ci][si]
		}
	}
	if c.unschedulable >= 0 && node.Spec.Unschedulable {
		want |= 1 << c.unschedulable
	}
	var have uint64
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		var ti int
		if k := knownKeyIndex(t.Key); k >= 0 {
			ti = -1
			if e := effectIndex(t.Effect); e >= 0 {
				ti = int(c.knownTaint[k][e]) - 1 // inlined: the common case
			}
		} else {
			ti = c.taintIndex(t)
		}
		if ti >= 0 {
			have |= 1 << ti
		}
	}
	if addBits := want &^ have; addBits != 0 {
		add = make([]v1.Taint, 0, bits.OnesCount64(addBits))
		for i := range c.taints {
			if addBits&(1<<i) != 0 {
				t := c.taints[i]
				t.TimeAdded = metaTime(now)
				add = append(add, t)
			}
		}
	}
	if rmBits := have &^ want; rmBits != 0 {
		remove = make([]v1.Taint, 0, bits.OnesCount64(rmBits))
		for i := range c.taints {
			if rmBits&(1<<i) == 0 {
				continue
			}
			m := &c.taints[i]
			for k := range node.Spec.Taints { // the node's first entry of taint i
				if t := &node.Spec.Taints[k]; t.Effect == m.Effect && t.Key == m.Key {
					remove = append(remove, copyTaint(node.Spec.Taints[k]))
					break
				}
			}
		}
	}
	return add, remove
}
