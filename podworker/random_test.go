package podworker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// source is the randomness a driver consumes: a seeded math/rand/v2
// generator in TestRandomized, the fuzzer's bytes in FuzzOperations.
type source interface{ IntN(n int) int }

// byteSource reads choices from fuzz input; it reports exhaustion so the
// driver can stop.
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) IntN(n int) int {
	if s.i >= len(s.b) {
		return 0
	}
	v := int(s.b[s.i])
	s.i++
	return v % n
}

func (s *byteSource) done() bool { return s.i >= len(s.b) }

// driver plays a kubelet against a Workers: config changes, runtime kills,
// a runtime that fails on command, housekeeping, and time passing. It
// checks the machine's properties after every operation.
type driver struct {
	t    testing.TB
	w    *Workers
	rnd  source
	now  time.Time
	pods []*v1.Pod // the pool: plain and static pods, some sharing full names

	desired  map[types.UID]bool
	inFlight map[types.UID]Work
	failing  bool
	grace    map[*record]int64 // last grace seen per record incarnation
	killed   map[*record]bool  // records whose termination was requested
	trace    strings.Builder   // rendered steps, for the determinism check
	ops      int
}

func newDriver(t testing.TB, rnd source) *driver {
	d := &driver{
		t: t, w: newWorkers(t), rnd: rnd, now: testutil.Epoch,
		desired: map[types.UID]bool{}, inFlight: map[types.UID]Work{},
		grace: map[*record]int64{}, killed: map[*record]bool{},
	}
	for i := range 8 {
		d.pods = append(d.pods, pod(fmt.Sprintf("p%d", i)))
	}
	for i := range 3 {
		d.pods = append(d.pods, staticPod("st", fmt.Sprintf("st%d", i)))
	}
	for i := range 2 {
		d.pods = append(d.pods, staticPod("sx", fmt.Sprintf("sx%d", i)))
	}
	return d
}

func (d *driver) pick() *v1.Pod { return d.pods[d.rnd.IntN(len(d.pods))] }

// variant returns p as the config would show it now: running, deleting with
// a random grace period (negative included), or in a terminal phase.
func (d *driver) variant(p *v1.Pod) *v1.Pod {
	switch d.rnd.IntN(8) {
	case 0:
		return deleting(p, int64(d.rnd.IntN(40)-5))
	case 1:
		return phase(p, v1.PodSucceeded)
	case 2:
		return phase(p, v1.PodFailed)
	case 3:
		return specGrace(p, nil)
	}
	return p
}

func (d *driver) killOptions() *KillOptions {
	if d.rnd.IntN(2) == 0 {
		return nil
	}
	k := &KillOptions{Evict: d.rnd.IntN(4) == 0}
	if d.rnd.IntN(2) == 0 {
		g := int64(d.rnd.IntN(70) - 5)
		k.GracePeriodOverride = &g
	}
	return k
}

// step performs one random operation and checks the properties.
func (d *driver) step() {
	d.ops++
	switch op := d.rnd.IntN(100); {
	case op < 30:
		p := d.pick()
		o := UpdateOptions{Type: UpdateType(d.rnd.IntN(5)), Pod: d.variant(p), Kill: d.killOptions(),
			RuntimeTerminated: d.rnd.IntN(3) == 0}
		if o.Type == TypeCreate || o.Type == TypeUpdate {
			d.desired[p.UID] = true
		}
		if d.rnd.IntN(20) == 0 {
			o.Pod = nil // bad input: no pod at all
		}
		d.update(o)
	case op < 36:
		p := d.pick()
		o := UpdateOptions{Type: TypeKill, RunningPod: &RunningPod{UID: p.UID, Name: p.Name, Namespace: p.Namespace},
			Kill: d.killOptions()}
		if d.rnd.IntN(10) == 0 {
			o.Type = TypeSync // bad input: runtime-only pods can only be killed
		}
		d.update(o)
	case op < 60:
		d.next()
	case op < 82:
		d.complete()
	case op < 87:
		if d.rnd.IntN(2) == 0 {
			delete(d.desired, d.pick().UID)
		}
		d.sync()
	case op < 90:
		d.failing = !d.failing
	default:
		d.now = d.now.Add(time.Duration(d.rnd.IntN(15000)) * time.Millisecond)
		if d.rnd.IntN(20) == 0 {
			d.now = d.now.Add(-5 * time.Second) // the clock jumps back
		}
	}
	d.checkAll()
}

func (d *driver) update(o UpdateOptions) {
	var uid types.UID
	switch {
	case o.Pod != nil:
		uid = o.Pod.UID
	case o.RunningPod != nil:
		uid = o.RunningPod.UID
	}
	d.w.mu.Lock()
	before := d.w.pods[uid]
	wasFinished := before != nil && before.finished
	d.w.mu.Unlock()

	r := d.w.UpdatePod(d.now, o)
	fmt.Fprintf(&d.trace, "U %s %v %v;", uid, o.Type, r.Outcome)

	if r.Outcome == OutcomeRejected && r.Err == nil {
		d.t.Fatalf("op %d: UpdatePod(%+v) rejected without an error", d.ops, o)
	}
	if r.CancelInFlight {
		if _, ok := d.inFlight[uid]; !ok {
			d.t.Fatalf("op %d: UpdatePod(%s) = cancel, but no step of it is in flight", d.ops, uid)
		}
	}
	d.w.mu.Lock()
	defer d.w.mu.Unlock()
	after := d.w.pods[uid]
	if wasFinished {
		// A finished pod ignores updates (only a runtime-only kill of
		// leftovers is carried out, and the pod stays finished).
		leftover := o.Pod == nil && r.Outcome == OutcomeAccepted
		if after != before || !after.finished ||
			(r.Outcome != OutcomeIgnoredFinished && r.Outcome != OutcomeRestartRequested && !leftover && r.Outcome != OutcomeRejected) {
			d.t.Fatalf("op %d: update of a finished pod %s: outcome %v, still finished %v", d.ops, uid, r.Outcome, after != nil && after.finished)
		}
	}
	if after != nil && after.terminating {
		d.killed[after] = true
	}
}

func (d *driver) next() {
	work, ok := d.w.Next(d.now)
	if !ok {
		if dl, has := d.w.NextDeadline(); has && !dl.After(d.w.last) {
			d.t.Fatalf("op %d: Next() = false but NextDeadline() = %v is due (now %v)", d.ops, dl, d.w.last)
		}
		return
	}
	fmt.Fprintf(&d.trace, "N %s;", renderWork(work))
	if prev, dup := d.inFlight[work.UID]; dup {
		d.t.Fatalf("op %d: two steps in flight for %s: %v and %v", d.ops, work.UID, prev, work)
	}
	if work.Type == TerminatingWork && (work.GracePeriod == nil || *work.GracePeriod < 1) {
		d.t.Fatalf("op %d: terminating step without a grace period ≥ 1: %v", d.ops, work)
	}
	if work.Type != TerminatingWork && work.GracePeriod != nil {
		d.t.Fatalf("op %d: %v step with a grace period", d.ops, work.Type)
	}
	if (work.Pod == nil) == (work.RunningPod == nil) {
		d.t.Fatalf("op %d: step with Pod %v and RunningPod %v", d.ops, work.Pod != nil, work.RunningPod != nil)
	}
	d.inFlight[work.UID] = work
}

func (d *driver) complete() {
	if len(d.inFlight) == 0 {
		if d.rnd.IntN(4) == 0 { // a completion nobody asked for
			d.w.Complete(d.now, Work{UID: d.pick().UID, Generation: uint64(d.rnd.IntN(5))}, Result{})
		}
		return
	}
	// Pick one deterministically: the smallest UID after a random skip.
	var keys []types.UID
	for uid := range d.inFlight {
		keys = append(keys, uid)
	}
	sortUIDs(keys)
	work := d.inFlight[keys[d.rnd.IntN(len(keys))]]
	var res Result
	switch {
	case d.failing:
		res.Err = errRuntime
	case d.rnd.IntN(10) == 0:
		res.Terminal = true
	case d.rnd.IntN(15) == 0:
		res.Err = errors.New("sync failed")
	}
	d.w.Complete(d.now, work, res)
	delete(d.inFlight, work.UID)
	fmt.Fprintf(&d.trace, "C %s %v;", work.UID, res.Err != nil)
	if d.rnd.IntN(10) == 0 {
		before := d.w.Stats().StaleCompletions
		d.w.Complete(d.now, work, Result{}) // duplicate: must be ignored
		if d.w.Stats().StaleCompletions != before+1 {
			d.t.Fatalf("op %d: duplicate Complete(%v) was not ignored", d.ops, work)
		}
	}
}

func (d *driver) sync() {
	var desired []*v1.Pod
	for _, p := range d.pods {
		if d.desired[p.UID] {
			desired = append(desired, p)
		}
	}
	got := d.w.SyncKnownPods(d.now, desired)
	fmt.Fprintf(&d.trace, "S %s;", renderKnown(got))
	d.w.mu.Lock()
	defer d.w.mu.Unlock()
	if len(got) != len(d.w.pods) {
		d.t.Fatalf("op %d: SyncKnownPods returned %d records, %d exist", d.ops, len(got), len(d.w.pods))
	}
	for uid, ps := range got {
		r := d.w.pods[uid]
		if r == nil || ps.State != r.workType() || ps.Orphan == d.desired[uid] || ps.Finished != r.finished {
			d.t.Fatalf("op %d: SyncKnownPods()[%s] = %+v does not match the record", d.ops, uid, ps)
		}
	}
}

// checkAll checks the invariants and that no grace period went up.
func (d *driver) checkAll() {
	if err := d.w.check(); err != nil {
		d.t.Fatalf("op %d: %v", d.ops, err)
	}
	d.w.mu.Lock()
	defer d.w.mu.Unlock()
	for _, r := range d.w.pods {
		if r.grace == 0 {
			continue
		}
		if prev := d.grace[r]; prev != 0 && r.grace > prev {
			d.t.Fatalf("op %d: grace period of %s went up from %d to %d; trace tail: %s", d.ops, r.uid, prev, r.grace, d.tail())
		}
		d.grace[r] = r.grace
	}
	for uid, work := range d.inFlight {
		if r := d.w.pods[uid]; r == nil || !r.inFlight || r.gen != work.Generation {
			d.t.Fatalf("op %d: step %v in flight for the caller but not for the machine", d.ops, work)
		}
	}
}

// settle heals the runtime, completes everything, lets time pass and checks
// that every kill completed. Then it orphans every pod and checks that
// nothing is left: no record, no queued step, no waiting static pod.
func (d *driver) settle() {
	d.failing = false
	run := func() {
		for round := 0; round < 200; round++ {
			for uid, work := range d.inFlight {
				d.w.Complete(d.now, work, Result{})
				delete(d.inFlight, uid)
			}
			work, ok := d.w.Next(d.now)
			if ok {
				d.inFlight[work.UID] = work
				continue
			}
			dl, has := d.w.NextDeadline()
			if !has || len(d.inFlight) > 0 {
				if len(d.inFlight) == 0 {
					return
				}
				continue
			}
			if dl.After(d.now) {
				d.now = dl
			}
			d.checkAll()
		}
	}
	// Pods still syncing resync forever; stop when only they remain.
	for range 50 {
		run()
		if d.onlySyncing() {
			break
		}
	}
	d.w.mu.Lock()
	for r := range d.killed {
		if d.w.pods[r.uid] == r && !r.finished {
			d.w.mu.Unlock()
			d.t.Fatalf("kill of %s never completed (terminated %v)", r.uid, r.terminated)
		}
	}
	d.w.mu.Unlock()

	d.desired = map[types.UID]bool{}
	for range 20 {
		d.sync()
		run()
	}
	d.sync()
	if st := d.w.Stats(); st.Known != 0 || st.WaitingStatic != 0 || d.w.queue.Len() != 0 || len(d.w.startedStatic) != 0 {
		d.t.Fatalf("after orphaning everything: %d records, %d waiting, %d queued, %d slots left",
			st.Known, st.WaitingStatic, d.w.queue.Len(), len(d.w.startedStatic))
	}
}

// onlySyncing reports whether every remaining record is a started pod in
// its sync phase or finished.
func (d *driver) onlySyncing() bool {
	d.w.mu.Lock()
	defer d.w.mu.Unlock()
	for _, r := range d.w.pods {
		if !r.finished && (r.terminating || r.leftover != nil) {
			return false
		}
	}
	return true
}

// tail returns the end of the trace, for failure messages.
func (d *driver) tail() string {
	t := d.trace.String()
	return t[max(0, len(t)-400):]
}

func sortUIDs(u []types.UID) {
	for i := 1; i < len(u); i++ {
		for j := i; j > 0 && u[j] < u[j-1]; j-- {
			u[j], u[j-1] = u[j-1], u[j]
		}
	}
}

// TestRandomized drives long random event sequences and checks, after every
// step: internal invariants (nothing lost, one step in flight per pod, exact
// static waiting lists), grace periods never going up, finished pods
// ignoring updates; and at the end that every kill completed and that
// orphaning every pod leaves nothing behind. Each seed runs twice and must
// produce the same trace (determinism).
func TestRandomized(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			var traces [2]string
			for i := range traces {
				d := newDriver(t, rand.New(rand.NewPCG(seed, 0x9e3779b9)))
				for range 3000 {
					d.step()
				}
				d.settle()
				traces[i] = d.trace.String()
			}
			if traces[0] != traces[1] {
				t.Fatal("two runs with the same seed differ")
			}
		})
	}
}

// FuzzOperations runs the same driver on fuzzer-chosen operations.
func FuzzOperations(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 2, 3, 40, 40, 60, 60, 82, 90, 99})
	f.Add([]byte("create kill next complete sync fail heal advance"))
	seed := make([]byte, 512)
	r := rand.New(rand.NewPCG(7, 7))
	for i := range seed {
		seed[i] = byte(r.IntN(256))
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &byteSource{b: data}
		d := newDriver(t, src)
		for !src.done() {
			d.step()
		}
		d.settle()
	})
}
