package taints

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// cancelled drains AppendCancelled and renders "ns/name@node@+at" entries.
type cancelled struct{}

func (cancelled) run(e *Evictor, _ time.Time) string {
	var b strings.Builder
	for i, c := range e.AppendCancelled(nil) {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(c.Pod.String() + "@" + c.Node + "@" + rel(c.At))
	}
	return b.String()
}
func (cancelled) String() string { return "AppendCancelled()" }

// TestEvictorAppendCancelled covers upstream cancelWorkWithEvent
// (pkg/controller/tainteviction/taint_eviction.go): a cancellation is
// reported only when an eviction was scheduled.
func TestEvictorAppendCancelled(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"taint removed: scheduled eviction cancelled", []step{
			{0, setPod{pod("a", "n1", tolFor(unreachable, 300))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{10 * s, setTaints{"n1", nil}, ""},
			{10 * s, cancelled{}, "default/a@n1@+300s"},
			{10 * s, cancelled{}, ""},
		}},
		{"new toleration (forever): cancelled", []step{
			{0, setPod{pod("a", "n1", tolFor(unreachable, 300))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{5 * s, setPod{pod("a", "n1", tolForever(unreachable))}, ""},
			{5 * s, cancelled{}, "default/a@n1@+300s"},
		}},
		{"nothing scheduled: no cancellation", []step{
			{0, setPod{pod("a", "n1", tolForever(unreachable))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{1 * s, setTaints{"n1", nil}, ""},
			{1 * s, setPod{pod("b", "n2")}, ""},
			{1 * s, deletePod{"b"}, ""},
			{1 * s, deleteNode{"n1"}, ""},
			{1 * s, cancelled{}, ""},
		}},
		{"handed out or done: no cancellation", []step{
			{0, setPod{pod("a", "n1")}, ""},
			{0, setPod{pod("b", "n1")}, ""},
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{0, due{}, "default/a@+0s:NotTolerated#1 default/b@+0s:NotTolerated#1"},
			{1 * s, done{"a"}, ""},
			{1 * s, setTaints{"n1", nil}, ""},
			{1 * s, deletePod{"a"}, ""},
			{1 * s, deletePod{"b"}, ""},
			{1 * s, cancelled{}, ""},
		}},
		{"pod deleted, node deleted, retry cancelled", []step{
			{0, setPod{pod("a", "n1", tolFor(unreachable, 300))}, ""},
			{0, setPod{pod("b", "n1", tolFor(unreachable, 60))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{1 * s, deletePod{"a"}, ""},
			{60 * s, due{}, "default/b@+60s:TolerationExpired#1"},
			{60 * s, retry{"b", 5 * s}, ""},
			{61 * s, deleteNode{"n1"}, ""},
			{61 * s, cancelled{}, "default/a@n1@+300s default/b@n1@+65s"},
		}},
		{"untolerated taint added: cancelled and due at once, as upstream", []step{
			{0, setPod{pod("a", "n1", tolFor(unreachable, 300))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{5 * s, setTaints{"n1", []v1.Taint{ne(unreachable), ne("other")}}, ""},
			{5 * s, cancelled{}, "default/a@n1@+300s"},
			{5 * s, due{}, "default/a@+5s:NotTolerated#1"},
		}},
		{"rescheduled by RescheduleNever: nothing moves, no cancellation", []step{
			{0, setPod{pod("a", "n1", tolFor(unreachable, 300))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{5 * s, setPod{pod("a", "n1", tolFor(unreachable, 100))}, ""},
			{5 * s, cancelled{}, ""},
		}},
	}
	for _, tt := range tests {
		steps := append([]step{{0, keep{8}, ""}}, tt.steps...)
		t.Run(tt.name, func(t *testing.T) { runSteps(t, EvictorConfig{}, steps) })
	}
}

// TestEvictorCancelledBounded: past KeepCancellations, cancellations are
// counted, not kept; zero keeps none.
func TestEvictorCancelledBounded(t *testing.T) {
	for _, max := range []int{0, 2} {
		e := newKeeping(t, max)
		now := testutil.At(0)
		for _, name := range []string{"a", "b", "c"} {
			e.SetPod(now, pod(name, "n1", tolFor(unreachable, 300)))
		}
		e.SetNodeTaints(now, "n1", []v1.Taint{ne(unreachable)})
		e.SetNodeTaints(now, "n1", nil)
		if got := len(e.AppendCancelled(nil)); got != max {
			t.Errorf("KeepCancellations %d: %d kept, want %d", max, got, max)
		}
		if got := e.CancelledDropped(); got != uint64(3-max) {
			t.Errorf("KeepCancellations %d: CancelledDropped() = %d, want %d", max, got, 3-max)
		}
	}
	for _, bad := range []int{-1, MaxCancellationsLimit + 1} {
		if err := newKeeping(t, 0).KeepCancellations(bad); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "KeepCancellations") {
			t.Errorf("KeepCancellations %d: error %v, want ErrInvalidConfig naming the field", bad, err)
		}
	}
}

// TestEvictorCancelledNoAllocs: once the buffer has grown, cancelling,
// rescheduling and draining allocate nothing; an empty drain never does.
func TestEvictorCancelledNoAllocs(t *testing.T) {
	tainted, clean := []v1.Taint{ne(unreachable)}, []v1.Taint(nil)
	now := testutil.At(0)
	setup := func(max int) *Evictor {
		e := newKeeping(t, max)
		e.SetPod(now, pod("a", "n1", tolFor(unreachable, 300)))
		return e
	}
	// The node's taint entries are rebuilt on each change (not this
	// feature's cost): measure them on an Evictor that keeps nothing, and
	// require no more allocations with cancellations kept and drained.
	off := setup(0)
	base := testing.AllocsPerRun(100, func() {
		off.SetNodeTaints(now, "n1", tainted)
		off.SetNodeTaints(now, "n1", clean)
	})
	e := setup(16)
	buf := make([]Cancellation, 0, 16)
	cycle := func() {
		e.SetNodeTaints(now, "n1", tainted)
		e.SetNodeTaints(now, "n1", clean)
		buf = e.AppendCancelled(buf[:0])
	}
	cycle() // grow the Evictor's buffer
	if with := testing.AllocsPerRun(100, cycle); with != base {
		t.Errorf("cancel+drain cycle: %v allocs, want %v (the taint changes alone)", with, base)
	}
	if len(buf) != 1 {
		t.Errorf("cycle drained %d cancellations, want 1", len(buf))
	}
	if n := testing.AllocsPerRun(100, func() { buf = e.AppendCancelled(buf[:0]) }); n != 0 {
		t.Errorf("empty AppendCancelled: %v allocs, want 0", n)
	}
	if len(buf) != 0 {
		t.Errorf("pending after drain: %v", buf)
	}
}

// keep calls KeepCancellations(max).
type keep struct{ max int }

func (c keep) run(e *Evictor, _ time.Time) string {
	if err := e.KeepCancellations(c.max); err != nil {
		return err.Error()
	}
	return ""
}
func (c keep) String() string { return "KeepCancellations()" }

// newKeeping returns a default Evictor keeping max cancellations.
func newKeeping(t testing.TB, max int) *Evictor {
	t.Helper()
	e, err := NewEvictor(EvictorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.KeepCancellations(max); err != nil {
		t.Fatal(err)
	}
	return e
}

// BenchmarkEvictorCancelDrain: a node of 100 pods with scheduled evictions
// is tainted and cleaned (100 cancellations kept), then drained.
func BenchmarkEvictorCancelDrain(b *testing.B) {
	e, err := NewEvictor(EvictorConfig{})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.KeepCancellations(128); err != nil {
		b.Fatal(err)
	}
	now := testutil.At(0)
	for i := range 100 {
		e.SetPod(now, pod(fmt.Sprintf("p%03d", i), "n1", tolFor(unreachable, 300)))
	}
	tainted := []v1.Taint{ne(unreachable)}
	buf := make([]Cancellation, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		e.SetNodeTaints(now, "n1", tainted)
		e.SetNodeTaints(now, "n1", nil)
		buf = e.AppendCancelled(buf[:0])
	}
	if len(buf) != 100 {
		b.Fatalf("drained %d, want 100", len(buf))
	}
}

// BenchmarkEvictorAppendCancelledEmpty: the steady-state drain, nothing
// pending.
func BenchmarkEvictorAppendCancelledEmpty(b *testing.B) {
	e := newKeeping(b, 128)
	var buf []Cancellation
	b.ReportAllocs()
	for b.Loop() {
		buf = e.AppendCancelled(buf[:0])
	}
}
