package zonestate

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeQueue records what Queues does to it. items stands for pending work;
// due is its NextDeadline while it has items and a rate.
type fakeQueue struct {
	mu      sync.Mutex
	zone    string
	qps     float64
	items   int
	due     time.Time
	log     []string
	rateErr error
}

func (f *fakeQueue) SetRate(now time.Time, qps float64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, "rate "+strconvG(qps))
	if f.rateErr != nil {
		return f.rateErr
	}
	f.qps = qps
	return nil
}

func (f *fakeQueue) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, "clear")
	f.items = 0
}

func (f *fakeQueue) NextDeadline() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.items == 0 || f.qps == 0 {
		return time.Time{}, false
	}
	return f.due, true
}

func (f *fakeQueue) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.items
}

func (f *fakeQueue) calls() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := strings.Join(f.log, ",")
	f.log = nil
	return s
}

func strconvG(v float64) string {
	switch v {
	case 0:
		return "0"
	case 0.1:
		return "0.1"
	case 0.01:
		return "0.01"
	}
	return "other"
}

// fakeSet returns a Queues of fakeQueues and the log of constructor calls.
func fakeSet(t *testing.T, fail map[string]error) (*Queues[*fakeQueue], *[]string) {
	t.Helper()
	var created []string
	s, err := NewQueues(func(now time.Time, zone string, qps float64) (*fakeQueue, error) {
		if err := fail[zone]; err != nil {
			return nil, err
		}
		created = append(created, zone+"@"+strconvG(qps))
		return &fakeQueue{zone: zone, qps: qps}, nil
	})
	if err != nil {
		t.Fatalf("NewQueues = %v", err)
	}
	return s, &created
}

func mustGet(t *testing.T, s *Queues[*fakeQueue], zone string) *fakeQueue {
	t.Helper()
	q, ok := s.Get(zone)
	if !ok {
		t.Fatalf("Get(%q) = false, want a queue", zone)
	}
	return q
}

func TestNewQueuesNeedsConstructor(t *testing.T) {
	if _, err := NewQueues[*fakeQueue](nil); !errors.Is(err, ErrNoConstructor) {
		t.Fatalf("NewQueues(nil) = %v, want ErrNoConstructor", err)
	}
}

// TestQueuesApplyFollowsDecisions drives a Tracker and a Queues together
// through the mode edges and checks each queue's calls.
func TestQueuesApplyFollowsDecisions(t *testing.T) {
	tr, _ := NewTracker(DefaultPolicy())
	s, created := fakeSet(t, nil)
	apply := func(z zonesT) Decision {
		t.Helper()
		d := tr.Update(z)
		if err := s.Apply(epoch, d); err != nil {
			t.Fatalf("Apply = %v", err)
		}
		return d
	}

	apply(zonesT{"b": conds("TT"), "a": conds("TT")})
	if got, want := strings.Join(*created, " "), "a@0.1 b@0.1"; got != want {
		t.Fatalf("created %q, want %q (sorted, at each zone's rate)", got, want)
	}
	a, b := mustGet(t, s, "a"), mustGet(t, s, "b")
	if got := s.Zones(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Zones() = %q, want [a b]", got)
	}

	apply(zonesT{"a": conds("TT"), "b": conds("TT")})
	if ca, cb := a.calls(), b.calls(); ca != "" || cb != "" {
		t.Fatalf("steady pass: calls a=%q b=%q, want none", ca, cb)
	}

	apply(zonesT{"a": conds("TUUU"), "b": conds("TT")}) // a partial, small: rate 0
	if ca, cb := a.calls(), b.calls(); ca != "rate 0" || cb != "" {
		t.Fatalf("a partial: calls a=%q b=%q, want a=\"rate 0\" b=\"\"", ca, cb)
	}

	a.items, b.items = 3, 2
	d := apply(zonesT{"a": conds("UU"), "b": conds("UU")})
	if !d.EnteredFullDisruption {
		t.Fatal("want EnteredFullDisruption")
	}
	if ca, cb := a.calls(), b.calls(); ca != "clear,rate 0" || cb != "clear,rate 0" {
		t.Fatalf("entering full disruption: calls a=%q b=%q, want clear,rate 0 on both", ca, cb)
	}
	if n := s.Len(); n != 0 {
		t.Fatalf("Len() = %d after entering full disruption, want 0", n)
	}

	apply(zonesT{"a": conds("UU"), "b": conds("UU")})
	if ca, cb := a.calls(), b.calls(); ca != "" || cb != "" {
		t.Fatalf("staying in full disruption: calls a=%q b=%q, want none", ca, cb)
	}

	d = apply(zonesT{"a": conds("UU"), "b": conds("TU")})
	if !d.ExitedFullDisruption {
		t.Fatal("want ExitedFullDisruption")
	}
	if ca, cb := a.calls(), b.calls(); ca != "rate 0.1" || cb != "rate 0.1" {
		t.Fatalf("exiting full disruption: calls a=%q b=%q, want rate 0.1 on both", ca, cb)
	}
}

// TestQueuesRemovedZones: the queue of a removed zone is kept, empty or
// not, runs at the Decision's UndecidedQPS (a zone stopped by its state
// runs again: upstream's new queue for it runs at evictionLimiterQPS), and
// is reused, with the zone's rate, if the zone comes back.
func TestQueuesRemovedZones(t *testing.T) {
	tr, _ := NewTracker(DefaultPolicy())
	s, created := fakeSet(t, nil)
	apply := func(z zonesT) {
		t.Helper()
		if err := s.Apply(epoch, tr.Update(z)); err != nil {
			t.Fatalf("Apply = %v", err)
		}
	}
	apply(zonesT{"a": conds("T"), "b": conds("T"), "c": conds("T"), "d": conds("TUUU")}) // d partial, small: rate 0
	b, c, dq := mustGet(t, s, "b"), mustGet(t, s, "c"), mustGet(t, s, "d")
	c.items, dq.items = 2, 1
	for _, q := range []*fakeQueue{b, c, dq} {
		q.calls()
	}

	for pass := range 3 {
		apply(zonesT{"a": conds("T")})
		for _, q := range []*fakeQueue{b, c, dq} {
			if got := mustGet(t, s, q.zone); got != q {
				t.Fatalf("pass %d: removed zone %s has another queue, want its own kept", pass, q.zone)
			}
		}
		want := map[*fakeQueue]string{b: "", c: "", dq: "rate 0.1"}
		if pass > 0 {
			want[dq] = ""
		}
		for q, w := range want {
			if got := q.calls(); got != w {
				t.Fatalf("pass %d: removed zone %s: calls %q, want %q", pass, q.zone, got, w)
			}
		}
	}
	if c.items != 2 || dq.items != 1 {
		t.Fatalf("removed zones' items: c %d, d %d; want 2, 1 (kept)", c.items, dq.items)
	}

	apply(zonesT{"a": conds("T"), "d": conds("TUUU")}) // back, partial: rate 0
	if got := mustGet(t, s, "d"); got != dq {
		t.Fatal("zone d came back with a new queue, want its kept queue")
	}
	if got := dq.calls(); got != "rate 0" {
		t.Fatalf("zone d came back: calls %q, want \"rate 0\"", got)
	}
	if got := s.Zones(); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Fatalf("Zones() = %q, want [a b c d] (no queue dropped)", got)
	}
	if got, want := strings.Join(*created, " "), "a@0.1 b@0.1 c@0.1 d@0"; got != want {
		t.Fatalf("created %q, want %q", got, want)
	}
}

// TestQueuesEnsure: Ensure creates once; a queue without a decision is
// cleared and stopped on entering full disruption, kept, and runs at
// UndecidedQPS again on exit.
func TestQueuesEnsure(t *testing.T) {
	tr, _ := NewTracker(DefaultPolicy())
	s, created := fakeSet(t, nil)
	x, err := s.Ensure(epoch, "x", 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := s.Ensure(epoch, "x", 0.5); again != x {
		t.Fatal("second Ensure created a new queue")
	}
	x.items = 1
	if err := s.Apply(epoch, tr.Update(zonesT{"a": conds("T")})); err != nil {
		t.Fatal(err)
	}
	if got := x.calls(); got != "" {
		t.Fatalf("ensured at UndecidedQPS: calls %q, want none", got)
	}
	if err := s.Apply(epoch, tr.Update(zonesT{"a": conds("U")})); err != nil {
		t.Fatal(err)
	}
	if got := x.calls(); got != "clear,rate 0" {
		t.Fatalf("entering full disruption: ensured queue calls %q, want clear,rate 0", got)
	}
	if got := mustGet(t, s, "x"); got != x {
		t.Fatal("cleared queue without a decision replaced, want kept")
	}
	if err := s.Apply(epoch, tr.Update(zonesT{"a": conds("T")})); err != nil {
		t.Fatal(err)
	}
	if got := x.calls(); got != "rate 0.1" {
		t.Fatalf("exiting full disruption: ensured queue calls %q, want rate 0.1", got)
	}
	if got, want := strings.Join(*created, " "), "x@0.1 a@0.1"; got != want {
		t.Fatalf("created %q, want %q", got, want)
	}
	if _, err := (func() (*fakeQueue, error) {
		s2, _ := fakeSet(t, map[string]error{"y": errors.New("boom")})
		return s2.Ensure(epoch, "y", 1)
	})(); err == nil || !strings.Contains(err.Error(), `zone "y"`) {
		t.Fatalf("Ensure with a failing constructor = %v, want an error naming the zone", err)
	}
}

// TestQueuesApplyErrors: a failing constructor or SetRate is reported with
// its zone, every other zone is still applied, and the next Apply retries.
func TestQueuesApplyErrors(t *testing.T) {
	boom := errors.New("boom")
	fail := map[string]error{"b": boom}
	tr, _ := NewTracker(DefaultPolicy())
	s, _ := fakeSet(t, fail)
	err := s.Apply(epoch, tr.Update(zonesT{"a": conds("T"), "b": conds("T"), "c": conds("T")}))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `zone "b"`) {
		t.Fatalf("Apply = %v, want boom naming zone b", err)
	}
	if got := s.Zones(); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("Zones() = %q, want [a c]", got)
	}
	delete(fail, "b")
	if err := s.Apply(epoch, tr.Update(zonesT{"a": conds("T"), "b": conds("T"), "c": conds("T")})); err != nil {
		t.Fatalf("second Apply = %v", err)
	}
	mustGet(t, s, "b")

	mustGet(t, s, "a").rateErr = boom
	err = s.Apply(epoch, tr.Update(zonesT{"a": conds("U"), "b": conds("U"), "c": conds("U")}))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `zone "a": stop`) {
		t.Fatalf("Apply(full disruption) = %v, want boom naming zone a", err)
	}
	if q := mustGet(t, s, "c"); q.qps != 0 {
		t.Fatalf("zone c rate %v after a failed stop of zone a, want 0", q.qps)
	}
	// A failed SetRate is tried again by the next Apply.
	a := mustGet(t, s, "a")
	a.rateErr = nil
	a.calls()
	if err := s.Apply(epoch, tr.Update(zonesT{"a": conds("U"), "b": conds("U"), "c": conds("U")})); err != nil {
		t.Fatalf("Apply after the failure = %v", err)
	}
	if got := a.calls(); got != "rate 0" || a.qps != 0 {
		t.Fatalf("zone a after a failed stop: calls %q, rate %v; want rate 0 again", got, a.qps)
	}
}

func TestQueuesNextDeadlineAndEach(t *testing.T) {
	s, _ := fakeSet(t, nil)
	if _, ok := s.NextDeadline(); ok {
		t.Fatal("NextDeadline of an empty set reported true")
	}
	for _, z := range []string{"c", "a", "b"} {
		q, _ := s.Ensure(epoch, z, 0.1)
		q.items = 1
		q.due = epoch.Add(time.Duration(len(z)+int(z[0]-'a')) * time.Second)
	}
	mustGet(t, s, "a").qps = 0 // stopped: no deadline
	at, ok := s.NextDeadline()
	if want := epoch.Add(2 * time.Second); !ok || !at.Equal(want) {
		t.Fatalf("NextDeadline() = %v, %v, want %v (zone b; a is stopped)", at, ok, want)
	}
	if n := testing.AllocsPerRun(100, func() { s.NextDeadline(); s.Len() }); n != 0 {
		t.Errorf("NextDeadline+Len: %v allocs/op, want 0", n)
	}
	var seen []string
	s.Each(func(zone string, q *fakeQueue) bool {
		seen = append(seen, zone)
		return zone != "b"
	})
	if !slices.Equal(seen, []string{"a", "b"}) {
		t.Fatalf("Each visited %q, want [a b] (sorted, stopped after false)", seen)
	}
	// Each runs fn with no lock held: fn may call Apply.
	s.Each(func(zone string, q *fakeQueue) bool {
		_ = s.Apply(epoch, Decision{Removed: []string{zone}})
		return true
	})
}

// TestQueuesConcurrentUse exercises every method from several goroutines
// (meaningful with -race).
func TestQueuesConcurrentUse(t *testing.T) {
	tr, _ := NewTracker(DefaultPolicy())
	s, _ := fakeSet(t, nil)
	inputs := []zonesT{
		{"a": conds("TTU"), "b": conds("UUU")},
		{"a": conds("UUU"), "b": conds("UUU")},
		{"b": conds("T"), "c": conds("nnT")},
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				_ = s.Apply(epoch, tr.Update(inputs[(g+i)%len(inputs)]))
				_, _ = s.Ensure(epoch, "x", 0.1)
				s.NextDeadline()
				s.Len()
				s.Zones()
				s.Each(func(string, *fakeQueue) bool { return true })
			}
		}()
	}
	wg.Wait()
}

// TestQueuesSteadyApplyAllocs pins the steady state: Apply of a decision
// that creates, drops and stops nothing, and NextDeadline, allocate nothing.
func TestQueuesSteadyApplyAllocs(t *testing.T) {
	tr, _ := NewTracker(DefaultPolicy())
	s, _ := fakeSet(t, nil)
	in := zonesT{"a": conds("TT"), "b": conds("TU"), "c": conds("UUUT")}
	if err := s.Apply(epoch, tr.Update(in)); err != nil {
		t.Fatal(err)
	}
	d := tr.Update(in)
	if n := testing.AllocsPerRun(100, func() { _ = s.Apply(epoch, d); s.NextDeadline() }); n != 0 {
		t.Errorf("steady Apply + NextDeadline: %v allocs/op, want 0", n)
	}
}

// TestQueuesInvariants drives a Tracker and a Queues with random passes,
// random pending items and occasional Ensure calls, and checks after every
// Apply: each decided zone has a queue at its QPS; every other queue runs
// at UndecidedQPS; in full disruption mode every queue is stopped, and on
// entering it every queue is empty; no queue is ever dropped or replaced;
// Zones is sorted.
func TestQueuesInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for seq := range 200 {
		tr, _ := NewTracker(DefaultPolicy())
		s, _ := fakeSet(t, nil)
		seen := map[string]*fakeQueue{} // every queue the set has held
		for step := range 30 {
			d := tr.Update(randomZones(rng))
			if err := s.Apply(epoch, d); err != nil {
				t.Fatal(err)
			}
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("sequence %d step %d: %s (decision %s)", seq, step, fmt.Sprintf(format, args...), fmtDecision(d))
			}
			if want := map[bool]float64{false: 0.1, true: 0}[d.InFullDisruption]; d.UndecidedQPS != want {
				fail("UndecidedQPS = %v, want %v", d.UndecidedQPS, want)
			}
			decided := map[string]bool{}
			for _, z := range d.Zones {
				decided[z.Key] = true
				q, ok := s.Get(z.Key)
				if !ok {
					fail("zone %q decided but has no queue", z.Key)
				}
				if q.qps != z.QPS {
					fail("zone %q queue rate %v, want %v", z.Key, q.qps, z.QPS)
				}
			}
			zones := s.Zones()
			if !slices.IsSorted(zones) {
				fail("Zones() = %q, not sorted", zones)
			}
			for k, q := range seen {
				if got, ok := s.Get(k); !ok || got != q {
					fail("queue of zone %q dropped or replaced", k)
				}
			}
			for _, k := range zones {
				q, _ := s.Get(k)
				seen[k] = q
				if d.InFullDisruption && q.qps != 0 {
					fail("full disruption: zone %q rate %v, want stopped", k, q.qps)
				}
				if d.EnteredFullDisruption && q.items != 0 {
					fail("entered full disruption: zone %q has %d items, want empty", k, q.items)
				}
				if !decided[k] && q.qps != d.UndecidedQPS {
					fail("undecided zone %q runs at %v, want UndecidedQPS %v", k, q.qps, d.UndecidedQPS)
				}
			}
			// Random work between passes.
			for _, k := range zones {
				if q, _ := s.Get(k); rng.IntN(3) == 0 {
					q.items = rng.IntN(3)
				}
			}
			if rng.IntN(5) == 0 {
				k := modelKeys[rng.IntN(len(modelKeys))]
				_, had := s.Get(k)
				q, err := s.Ensure(epoch, k, 0.5)
				if err != nil {
					t.Fatal(err)
				}
				if !had && d.InFullDisruption && q.qps != 0 {
					fail("Ensure during full disruption created zone %q at %v, want stopped", k, q.qps)
				}
				q.items = rng.IntN(2)
			}
		}
	}
}

// TestQueuesEnsureDuringFullDisruption: a queue ensured while the cluster
// is in full disruption mode starts stopped; on exit it runs at
// UndecidedQPS, and so does a removed zone's queue that got items during
// the mode.
func TestQueuesEnsureDuringFullDisruption(t *testing.T) {
	tr, _ := NewTracker(DefaultPolicy())
	s, _ := fakeSet(t, nil)
	apply := func(z zonesT) {
		t.Helper()
		if err := s.Apply(epoch, tr.Update(z)); err != nil {
			t.Fatal(err)
		}
	}
	apply(zonesT{"a": conds("T"), "b": conds("TTTT")})
	apply(zonesT{"a": conds("U"), "b": conds("UUUU")}) // enter
	x, _ := s.Ensure(epoch, "x", 0.5)
	if x.qps != 0 {
		t.Fatalf("Ensure during full disruption: rate %v, want 0", x.qps)
	}
	x.items = 1
	b := mustGet(t, s, "b")
	b.items = 2                    // queued while stopped
	apply(zonesT{"a": conds("U")}) // b removed, still in the mode
	if x.qps != 0 || b.qps != 0 {
		t.Fatalf("undecided queues in the mode: rates x %v, b %v; want 0, 0", x.qps, b.qps)
	}
	apply(zonesT{"a": conds("T")}) // exit
	if x.qps != 0.1 {
		t.Fatalf("ensured queue after exit: rate %v, want UndecidedQPS 0.1", x.qps)
	}
	if b.qps != 0.1 {
		t.Fatalf("removed zone's queue after exit: rate %v, want UndecidedQPS 0.1", b.qps)
	}
}

// lockProbe is a queue that checks, in every method, that the set's zone
// map lock is not held, so that a queue method may call Get, Each, Zones,
// NextDeadline or Len of the set that holds it.
type lockProbe struct {
	fakeQueue
	t   *testing.T
	set **Queues[*lockProbe]
}

func (p *lockProbe) probe(method string) {
	if !(*p.set).mu.TryLock() {
		p.t.Errorf("%s of zone %s's queue called with the zone map locked", method, p.zone)
		return
	}
	(*p.set).mu.Unlock()
}

func (p *lockProbe) SetRate(now time.Time, qps float64) error {
	p.probe("SetRate")
	return p.fakeQueue.SetRate(now, qps)
}

func (p *lockProbe) Clear() { p.probe("Clear"); p.fakeQueue.Clear() }

func (p *lockProbe) NextDeadline() (time.Time, bool) {
	p.probe("NextDeadline")
	return p.fakeQueue.NextDeadline()
}

func (p *lockProbe) Len() int { p.probe("Len"); return p.fakeQueue.Len() }

// TestQueuesCallQueuesUnlocked: no queue method runs under the lock that
// guards the zone map (a queue calling back into the set would deadlock).
func TestQueuesCallQueuesUnlocked(t *testing.T) {
	var s *Queues[*lockProbe]
	s, err := NewQueues(func(now time.Time, zone string, qps float64) (*lockProbe, error) {
		q := &lockProbe{fakeQueue: fakeQueue{zone: zone, qps: qps}, t: t, set: &s}
		q.probe("constructor")
		return q, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := NewTracker(DefaultPolicy())
	for _, in := range []zonesT{
		{"a": conds("TTT"), "b": conds("TTU")},
		{"a": conds("UUU"), "b": conds("UUU")}, // enter full disruption: Clear, SetRate 0
		{"a": conds("TTT")},                    // exit: SetRate; b absent
		{"a": conds("UUT")},                    // b kept at UndecidedQPS
	} {
		if err := s.Apply(epoch, tr.Update(in)); err != nil {
			t.Fatal(err)
		}
		s.NextDeadline()
		s.Len()
	}
	if _, err := s.Ensure(epoch, "c", 0.1); err != nil {
		t.Fatal(err)
	}
	if got := s.Zones(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("Zones() = %q, want [a b c]", got)
	}
}

// TestQueuesApplyUnsortedDecision: a Decision built by hand need not be
// sorted; each queue still gets its own zone's rate, and the others
// UndecidedQPS.
func TestQueuesApplyUnsortedDecision(t *testing.T) {
	s, _ := fakeSet(t, nil)
	d := Decision{Zones: []ZoneDecision{{Key: "c", QPS: 0.01}, {Key: "a", QPS: 0}, {Key: "b", QPS: 0.1}}, UndecidedQPS: 0.1}
	if err := s.Apply(epoch, d); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ensure(epoch, "x", 0.01); err != nil {
		t.Fatal(err)
	}
	d.Zones[0].QPS, d.Zones[2].QPS = 0.1, 0.01
	if err := s.Apply(epoch, d); err != nil {
		t.Fatal(err)
	}
	for zone, want := range map[string]float64{"a": 0, "b": 0.01, "c": 0.1, "x": 0.1} {
		if q := mustGet(t, s, zone); q.qps != want {
			t.Errorf("zone %s: rate %v, want %v", zone, q.qps, want)
		}
	}
}
