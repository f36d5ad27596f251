package taints

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

const (
	kernelDeadlock     v1.NodeConditionType = "KernelDeadlock"
	readonlyFilesystem v1.NodeConditionType = "ReadonlyFilesystem"
)

// npdTable maps node-problem-detector conditions to taints: two
// conditions to NoSchedule taints, and both also to one shared NoExecute
// taint.
func npdTable(t *testing.T) *ConditionTaints {
	t.Helper()
	c, err := NewConditionTaints([]ConditionTaint{
		{kernelDeadlock, v1.ConditionTrue, v1.Taint{Key: "example.com/kernel-deadlock", Effect: v1.TaintEffectNoSchedule}},
		{readonlyFilesystem, v1.ConditionTrue, v1.Taint{Key: "example.com/readonly-fs", Effect: v1.TaintEffectNoSchedule}},
		{kernelDeadlock, v1.ConditionTrue, v1.Taint{Key: "example.com/problem", Value: "npd", Effect: v1.TaintEffectNoExecute}},
		{readonlyFilesystem, v1.ConditionTrue, v1.Taint{Key: "example.com/problem", Value: "npd", Effect: v1.TaintEffectNoExecute}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConditionTaintsFor(t *testing.T) {
	const T, F, U = v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown
	now := testutil.At(10 * time.Second)
	kd := v1.Taint{Key: "example.com/kernel-deadlock", Effect: v1.TaintEffectNoSchedule}
	ro := v1.Taint{Key: "example.com/readonly-fs", Effect: v1.TaintEffectNoSchedule}
	pr := v1.Taint{Key: "example.com/problem", Value: "npd", Effect: v1.TaintEffectNoExecute}
	tests := []struct {
		name        string
		conds       []v1.NodeCondition
		taints      []v1.Taint
		add, remove string
	}{
		{"healthy", []v1.NodeCondition{cond(kernelDeadlock, F), cond(readonlyFilesystem, F)}, nil, "", ""},
		{"kernel deadlock", []v1.NodeCondition{cond(kernelDeadlock, T)}, nil,
			"example.com/kernel-deadlock:NoSchedule@+10s example.com/problem=npd:NoExecute@+10s", ""},
		{"both, shared taint once", []v1.NodeCondition{cond(kernelDeadlock, T), cond(readonlyFilesystem, T)}, nil,
			"example.com/kernel-deadlock:NoSchedule@+10s example.com/readonly-fs:NoSchedule@+10s example.com/problem=npd:NoExecute@+10s", ""},
		{"up to date", []v1.NodeCondition{cond(readonlyFilesystem, T)}, []v1.Taint{ro, pr}, "", ""},
		{"value ignored in the diff", []v1.NodeCondition{cond(readonlyFilesystem, T)},
			[]v1.Taint{ro, {Key: pr.Key, Value: "other", Effect: v1.TaintEffectNoExecute}}, "", ""},
		{"recovered", []v1.NodeCondition{cond(kernelDeadlock, F)}, []v1.Taint{kd, pr}, "",
			"example.com/kernel-deadlock:NoSchedule example.com/problem=npd:NoExecute"},
		{"one of two problems left keeps the shared taint", []v1.NodeCondition{cond(kernelDeadlock, F), cond(readonlyFilesystem, T)},
			[]v1.Taint{kd, ro, pr}, "", "example.com/kernel-deadlock:NoSchedule"},
		{"unknown status is not True", []v1.NodeCondition{cond(kernelDeadlock, U)}, []v1.Taint{kd}, "",
			"example.com/kernel-deadlock:NoSchedule"},
		{"first condition of a type counts", []v1.NodeCondition{cond(kernelDeadlock, F), cond(kernelDeadlock, T)}, nil, "", ""},
		{"other effect and foreign taints untouched", []v1.NodeCondition{cond(v1.NodeReady, U)},
			[]v1.Taint{{Key: kd.Key, Effect: v1.TaintEffectNoExecute}, ns(v1.TaintNodeUnreachable), ns("x")}, "", ""},
		{"duplicates count once", nil, []v1.Taint{kd, kd}, "", "example.com/kernel-deadlock:NoSchedule"},
	}
	c := npdTable(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := nodeWith(tt.conds, true, tt.taints...)
			add, remove := c.For(node, now)
			if got := renderTaints(add); got != tt.add {
				t.Errorf("add = %q, want %q", got, tt.add)
			}
			if got := renderTaints(remove); got != tt.remove {
				t.Errorf("remove = %q, want %q", got, tt.remove)
			}
		})
	}
	if add, remove := c.For(nil, now); add != nil || remove != nil {
		t.Errorf("For(nil) = %v, %v", add, remove)
	}
	var zero *ConditionTaints
	if add, remove := zero.For(nodeWith(nil, false, kd), now); add != nil || remove != nil {
		t.Errorf("nil table For = %v, %v", add, remove)
	}
	if add, remove := (&ConditionTaints{}).For(nodeWith([]v1.NodeCondition{cond(kernelDeadlock, T)}, false), now); add != nil || remove != nil {
		t.Errorf("zero table For = %v, %v", add, remove)
	}
	if got := renderTaints(c.Taints()); got != "example.com/kernel-deadlock:NoSchedule example.com/readonly-fs:NoSchedule example.com/problem=npd:NoExecute" {
		t.Errorf("Taints() = %q", got)
	}
	node := nodeWith([]v1.NodeCondition{cond(readonlyFilesystem, T)}, false, ro, pr)
	if n := testing.AllocsPerRun(100, func() { c.For(node, now) }); n != 0 {
		t.Errorf("For on an up-to-date node allocated %v times, want 0", n)
	}
}

// TestForConditionsMatchesNaive: ForConditions (the default rows plus
// spec.unschedulable) against a direct reading of its contract, over random
// conditions, taints and spec.unschedulable.
func TestForConditionsMatchesNaive(t *testing.T) {
	types := []v1.NodeConditionType{v1.NodeReady, v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeNetworkUnavailable, kernelDeadlock}
	statuses := []v1.ConditionStatus{v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown, "bogus"}
	keys := []string{v1.TaintNodeNotReady, v1.TaintNodeUnreachable, v1.TaintNodeMemoryPressure, v1.TaintNodeDiskPressure,
		v1.TaintNodePIDPressure, v1.TaintNodeNetworkUnavailable, v1.TaintNodeUnschedulable, "example.com/x"}
	effects := []v1.TaintEffect{v1.TaintEffectNoSchedule, v1.TaintEffectNoExecute, v1.TaintEffectPreferNoSchedule}
	r := rand.New(rand.NewPCG(3, 4))
	now := testutil.At(time.Minute)
	for i := range 5000 {
		var conds []v1.NodeCondition
		for range r.IntN(8) {
			conds = append(conds, cond(types[r.IntN(len(types))], statuses[r.IntN(len(statuses))]))
		}
		var ts []v1.Taint
		for range r.IntN(8) {
			ts = append(ts, v1.Taint{Key: keys[r.IntN(len(keys))], Value: []string{"", "v"}[r.IntN(2)], Effect: effects[r.IntN(len(effects))]})
		}
		node := nodeWith(conds, r.IntN(2) == 0, ts...)
		add, remove := ForConditions(node, now)
		wantAdd, wantRemove := naiveFor(DefaultConditionTaints(), true, node, now)
		if renderTaints(add) != renderTaints(wantAdd) || renderTaints(remove) != renderTaints(wantRemove) {
			t.Fatalf("case %d: ForConditions = %q / %q, want %q / %q (conditions %v, taints %v, unschedulable %v)",
				i, renderTaints(add), renderTaints(remove), renderTaints(wantAdd), renderTaints(wantRemove), conds, ts, node.Spec.Unschedulable)
		}
	}
}

func TestNewConditionTaintsValidates(t *testing.T) {
	ok := ConditionTaint{kernelDeadlock, v1.ConditionTrue, v1.Taint{Key: "example.com/kd", Effect: v1.TaintEffectNoSchedule}}
	with := func(f func(*ConditionTaint)) ConditionTaint { r := ok; f(&r); return r }
	many := func(n int, f func(i int, r *ConditionTaint)) []ConditionTaint {
		out := make([]ConditionTaint, n)
		for i := range out {
			out[i] = ok
			f(i, &out[i])
		}
		return out
	}
	tests := []struct {
		name  string
		table []ConditionTaint
		want  string // substring of the error; "" for valid
	}{
		{"valid", []ConditionTaint{ok}, ""},
		{"default", DefaultConditionTaints(), ""},
		{"empty", nil, "no rows"},
		{"empty type", []ConditionTaint{ok, with(func(r *ConditionTaint) { r.Type = "" })}, `row 1 (=True → example.com/kd:NoSchedule): empty condition type`},
		{"bad status", []ConditionTaint{with(func(r *ConditionTaint) { r.Status = "true" })}, `row 0 (KernelDeadlock=true → example.com/kd:NoSchedule): status "true" is not True, False or Unknown`},
		{"empty key", []ConditionTaint{with(func(r *ConditionTaint) { r.Taint.Key = "" })}, `row 0 (KernelDeadlock=True → :NoSchedule): taint key ""`},
		{"bad key", []ConditionTaint{with(func(r *ConditionTaint) { r.Taint.Key = "a b" })}, `taint key "a b"`},
		{"bad value", []ConditionTaint{with(func(r *ConditionTaint) { r.Taint.Value = "no spaces" })}, `taint value "no spaces"`},
		{"bad effect", []ConditionTaint{with(func(r *ConditionTaint) { r.Taint.Effect = "" })}, `taint effect "" is not NoSchedule, PreferNoSchedule or NoExecute`},
		{"duplicate row", []ConditionTaint{ok, ok}, "row 1 (KernelDeadlock=True → example.com/kd:NoSchedule): same as row 0"},
		{"one taint two values", []ConditionTaint{ok, with(func(r *ConditionTaint) { r.Type = readonlyFilesystem; r.Taint.Value = "ro" })},
			`row 1 (ReadonlyFilesystem=True → example.com/kd=ro:NoSchedule): taint example.com/kd:NoSchedule has value "" in an earlier row and "ro" here`},
		{"same taint, other effect, other value", []ConditionTaint{ok, with(func(r *ConditionTaint) { r.Taint.Effect = v1.TaintEffectNoExecute; r.Taint.Value = "x" })}, ""},
		{"64 taints", many(64, func(i int, r *ConditionTaint) { r.Taint.Key = "example.com/k" + strconv.Itoa(i) }), ""},
		{"65 taints", many(65, func(i int, r *ConditionTaint) { r.Taint.Key = "example.com/k" + strconv.Itoa(i) }),
			"row 64 (KernelDeadlock=True → example.com/k64:NoSchedule): more than MaxConditionTaints (64) distinct taints"},
		{"65 types", many(65, func(i int, r *ConditionTaint) { r.Type = v1.NodeConditionType("C" + strconv.Itoa(i)) }),
			"row 64 (C64=True → example.com/kd:NoSchedule): more than MaxConditionTaints (64) distinct condition types"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewConditionTaints(tt.table)
			if tt.want == "" {
				if err != nil || c == nil {
					t.Fatalf("NewConditionTaints = %v, %v; want a table", c, err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalidConditionTaints) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewConditionTaints error = %v, want one wrapping ErrInvalidConditionTaints containing %q", err, tt.want)
			}
		})
	}
}

// TestNewConditionTaintsCopies: the table does not alias the caller's rows.
func TestNewConditionTaintsCopies(t *testing.T) {
	rows := []ConditionTaint{{kernelDeadlock, v1.ConditionTrue, v1.Taint{Key: "example.com/kd", Effect: v1.TaintEffectNoSchedule}}}
	c, err := NewConditionTaints(rows)
	if err != nil {
		t.Fatal(err)
	}
	rows[0].Taint.Key = "example.com/changed"
	rows[0].Type = readonlyFilesystem
	add, _ := c.For(nodeWith([]v1.NodeCondition{cond(kernelDeadlock, v1.ConditionTrue)}, false), testutil.Epoch)
	if got := renderTaints(add); got != "example.com/kd:NoSchedule@+0s" {
		t.Errorf("add = %q after the caller changed its rows, want example.com/kd:NoSchedule@+0s", got)
	}
}

// TestConditionTaintsMatchesNaive: random tables (upstream and custom
// types and keys, several of one length, every effect) against a direct
// reading of For's contract.
func TestConditionTaintsMatchesNaive(t *testing.T) {
	types := []v1.NodeConditionType{v1.NodeReady, v1.NodeDiskPressure, "AAAAA", "BBBBB", "KernelDeadlock", "C", kernelDeadlock + "X"}
	keys := []string{v1.TaintNodeNotReady, v1.TaintNodeUnschedulable, "example.com/aa", "example.com/bb", "example.com/c", "x"}
	effects := []v1.TaintEffect{v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute}
	statuses := []v1.ConditionStatus{v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown}
	r := rand.New(rand.NewPCG(5, 6))
	now := testutil.At(time.Minute)
	for i := range 3000 {
		var rows []ConditionTaint
		for range 1 + r.IntN(8) {
			rows = append(rows, ConditionTaint{types[r.IntN(len(types))], statuses[r.IntN(3)],
				v1.Taint{Key: keys[r.IntN(len(keys))], Effect: effects[r.IntN(3)]}})
		}
		c, err := NewConditionTaints(rows)
		if err != nil {
			continue // a duplicate row
		}
		var conds []v1.NodeCondition
		for range r.IntN(6) {
			conds = append(conds, cond(types[r.IntN(len(types))], append(statuses, "bogus")[r.IntN(4)]))
		}
		var ts []v1.Taint
		for range r.IntN(6) {
			ts = append(ts, v1.Taint{Key: keys[r.IntN(len(keys))], Value: []string{"", "v"}[r.IntN(2)], Effect: effects[r.IntN(3)]})
		}
		node := nodeWith(conds, r.IntN(2) == 0, ts...)
		add, remove := c.For(node, now)

		wantAdd, wantRemove := naiveFor(rows, false, node, now)
		if got, w := renderTaints(add), renderTaints(wantAdd); got != w {
			t.Fatalf("case %d: add = %q, want %q (rows %v, conditions %v, taints %v)", i, got, w, rows, conds, ts)
		}
		if got, w := renderTaints(remove), renderTaints(wantRemove); got != w {
			t.Fatalf("case %d: remove = %q, want %q (rows %v, conditions %v, taints %v)", i, got, w, rows, conds, ts)
		}
	}
}

// naiveFor is a direct reading of For's contract for the table rows (plus
// spec.unschedulable's taint, managed last, when unschedulable is set): the
// first condition of each type counts; taints compare by key and effect.
func naiveFor(rows []ConditionTaint, unschedulable bool, node *v1.Node, now time.Time) (add, remove []v1.Taint) {
	first := map[v1.NodeConditionType]v1.ConditionStatus{}
	for _, x := range node.Status.Conditions {
		if _, ok := first[x.Type]; !ok {
			first[x.Type] = x.Status
		}
	}
	type ke struct {
		k string
		e v1.TaintEffect
	}
	var order []ke
	want, managed := map[ke]bool{}, map[ke]bool{}
	manage := func(k ke, wanted bool) {
		if !managed[k] {
			managed[k] = true
			order = append(order, k)
		}
		want[k] = want[k] || wanted
	}
	for _, row := range rows {
		s, ok := first[row.Type]
		manage(ke{row.Taint.Key, row.Taint.Effect}, ok && s == row.Status)
	}
	if unschedulable {
		manage(ke{v1.TaintNodeUnschedulable, v1.TaintEffectNoSchedule}, node.Spec.Unschedulable)
	}
	have := map[ke]bool{}
	for _, x := range node.Spec.Taints {
		have[ke{x.Key, x.Effect}] = true
	}
	for _, k := range order {
		switch {
		case want[k] && !have[k]:
			add = append(add, v1.Taint{Key: k.k, Effect: k.e, TimeAdded: testutil.MetaTime(now)})
		case !want[k] && have[k]:
			for _, x := range node.Spec.Taints {
				if x.Key == k.k && x.Effect == k.e {
					remove = append(remove, x)
					break
				}
			}
		}
	}
	return add, remove
}
