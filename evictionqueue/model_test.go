package evictionqueue_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// A naive reference queue: a sorted slice of pending items, a map of known
// keys, and a token bucket written out from its definition. Instants are
// nanoseconds from Epoch. Model runs use a 250ms time grid and rates that are
// binary fractions, so the bucket arithmetic is exact in float64 and the
// reference needs none of rate.Limiter's rounding.

type refState int

const (
	refPending refState = iota + 1
	refInFlight
	refDone
)

type refItem struct {
	key            string
	uid            types.UID
	added, process int64
	seq            int
	state          refState
	cancelled      bool // forgotten while in flight
}

type refQueue struct {
	pending []*refItem // sorted by (process, added, seq)
	known   map[string]*refItem
	seq     int
	clock   int64
	qps     float64
	burst   int
	tokens  float64 // whole-bucket state as of last
	last    int64
}

func newRef(cfg evictionqueue.Config) *refQueue {
	return &refQueue{known: map[string]*refItem{}, qps: cfg.QPS, burst: cfg.Burst, tokens: float64(cfg.Burst)}
}

func (r *refQueue) advance(now int64) int64 {
	r.clock = max(r.clock, now)
	return r.clock
}

func (r *refQueue) tokensAt(t int64) float64 {
	return min(float64(r.burst), r.tokens+float64(t-r.last)/1e9*r.qps)
}

func (r *refQueue) insert(it *refItem) {
	i, _ := slices.BinarySearchFunc(r.pending, it, func(a, b *refItem) int {
		if c := cmpInt(a.process, b.process); c != 0 {
			return c
		}
		if c := cmpInt(a.added, b.added); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	r.pending = slices.Insert(r.pending, i, it)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (r *refQueue) add(now int64, key string, uid types.UID) bool {
	n := r.advance(now)
	if r.known[key] != nil {
		return false
	}
	r.seq++
	it := &refItem{key: key, uid: uid, added: n, process: n, seq: r.seq, state: refPending}
	r.known[key] = it
	r.insert(it)
	return true
}

func (r *refQueue) remove(key string) bool {
	it := r.known[key]
	if it == nil {
		return false
	}
	delete(r.known, key)
	switch it.state {
	case refPending:
		r.pending = slices.DeleteFunc(r.pending, func(p *refItem) bool { return p == it })
	case refInFlight:
		it.cancelled = true
	}
	return true
}

func (r *refQueue) clear() {
	for _, it := range r.known {
		if it.state == refInFlight {
			it.cancelled = true
		}
	}
	r.known = map[string]*refItem{}
	r.pending = nil
}

func (r *refQueue) setRate(now int64, qps float64) bool {
	if math.IsNaN(qps) || math.IsInf(qps, 0) || qps < 0 || (qps > 0 && r.burst < 1) {
		return false
	}
	n := r.advance(now)
	if qps == r.qps {
		return true
	}
	carried := 0.0
	if r.qps > 0 {
		carried = math.Floor(r.tokensAt(n))
	}
	r.qps, r.tokens, r.last = qps, carried, n
	return true
}

// try mirrors Queue.Try; act is called for each attempted item.
func (r *refQueue) try(now int64, act func(it refItem) (bool, time.Duration)) int {
	n := 0
	for {
		c := r.advance(now)
		if len(r.pending) == 0 || r.qps == 0 || r.pending[0].process > c {
			return n
		}
		if tk := r.tokensAt(c); tk < 1 {
			return n
		} else {
			r.tokens, r.last = tk-1, c
		}
		it := r.pending[0]
		r.pending = r.pending[1:]
		it.state = refInFlight
		done, after := act(*it)
		n++
		switch {
		case it.cancelled:
		case done:
			it.state = refDone
		default:
			it.process = c + int64(max(after, time.Nanosecond))
			it.state = refPending
			r.insert(it)
		}
	}
}

// nextDeadline is the later of the head's ProcessAt and the instant the
// bucket regains a whole token, computed from the bucket's state at last.
// With the model's rates and grid that instant is a whole nanosecond.
func (r *refQueue) nextDeadline() (int64, bool) {
	if len(r.pending) == 0 || r.qps == 0 {
		return 0, false
	}
	token := r.last
	if r.tokens < 1 {
		token += int64((1 - r.tokens) / r.qps * 1e9)
	}
	return max(r.pending[0].process, token), true
}

func (r *refQueue) state(key string) evictionqueue.KeyState {
	it := r.known[key]
	if it == nil {
		return evictionqueue.KeyAbsent
	}
	return map[refState]evictionqueue.KeyState{
		refPending: evictionqueue.KeyPending, refInFlight: evictionqueue.KeyInFlight, refDone: evictionqueue.KeyDone,
	}[it.state]
}

// Operations shared by the random model test and the fuzz test.

type mopKind uint8

const (
	mAdd mopKind = iota
	mRemove
	mTry
	mSetRate
	mClear
	numMopKinds
)

type actKind uint8

const (
	aDone actKind = iota
	aRetry
	aRemoveSelfRetry
	aRemoveSelfDone
	aReAddSelf
	aAddOther
	aRemoveOther
	aClear
	numActKinds
)

type act struct {
	kind  actKind
	after time.Duration
	other string
}

type mop struct {
	kind mopKind
	dt   time.Duration // clock step before the op (may be negative)
	key  string
	qps  float64
	acts []act // for mTry: decisions for successive attempts (then done)
}

var (
	modelKeys    = []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	modelSteps   = []time.Duration{0, 0, 250 * time.Millisecond, time.Second, 10 * time.Second, -time.Second}
	modelRates   = []float64{0, 0.25, 0.5, 1, 2, 4, math.NaN()}
	modelRetries = []time.Duration{-time.Second, 0, time.Nanosecond, 250 * time.Millisecond, time.Second, 5 * time.Second}
	modelConfigs = []evictionqueue.Config{{QPS: 1, Burst: 1}, {QPS: 0.5, Burst: 3}, {QPS: 4, Burst: 2}, {QPS: 0, Burst: 1}, {}}
)

func (o mop) String() string {
	switch o.kind {
	case mAdd:
		return fmt.Sprintf("%+v Add(%q)", o.dt, o.key)
	case mRemove:
		return fmt.Sprintf("%+v Remove(%q)", o.dt, o.key)
	case mTry:
		return fmt.Sprintf("%+v Try(%v)", o.dt, o.acts)
	case mSetRate:
		return fmt.Sprintf("%+v SetRate(%v)", o.dt, o.qps)
	}
	return fmt.Sprintf("%+v Clear()", o.dt)
}

// randomOps draws n operations from r.
func randomOps(r *rand.Rand, n int) []mop {
	ops := make([]mop, n)
	for i := range ops {
		o := mop{dt: modelSteps[r.IntN(len(modelSteps))], key: modelKeys[r.IntN(len(modelKeys))]}
		switch x := r.IntN(20); {
		case x < 7:
			o.kind = mAdd
		case x < 9:
			o.kind = mRemove
		case x < 17:
			o.kind = mTry
			for range r.IntN(4) {
				o.acts = append(o.acts, act{
					kind:  actKind(r.IntN(int(numActKinds))),
					after: modelRetries[r.IntN(len(modelRetries))],
					other: modelKeys[r.IntN(len(modelKeys))],
				})
			}
		case x < 19:
			o.kind = mSetRate
			o.qps = modelRates[r.IntN(len(modelRates))]
		default:
			o.kind = mClear
		}
		ops[i] = o
	}
	return ops
}

// decodeOps turns fuzz input into operations: one byte for the kind and
// clock step, one for the key or rate, and for Try a count byte followed by
// one byte per decision.
func decodeOps(data []byte) (evictionqueue.Config, []mop) {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	cfg := modelConfigs[int(next())%len(modelConfigs)]
	var ops []mop
	for len(data) > 0 && len(ops) < 200 {
		b := next()
		o := mop{kind: mopKind(b % byte(numMopKinds)), dt: modelSteps[int(b/byte(numMopKinds))%len(modelSteps)]}
		a := next()
		o.key = modelKeys[int(a)%len(modelKeys)]
		o.qps = modelRates[int(a)%len(modelRates)]
		if o.kind == mTry {
			for range next() % 4 {
				c := next()
				o.acts = append(o.acts, act{
					kind:  actKind(c % byte(numActKinds)),
					after: modelRetries[int(c/byte(numActKinds))%len(modelRetries)],
					other: modelKeys[int(c>>4)%len(modelKeys)],
				})
			}
		}
		ops = append(ops, o)
	}
	return cfg, ops
}

// checkModel runs ops against a Queue and the reference and fails at the
// first difference in any result or observable state.
func checkModel(t *testing.T, base time.Time, cfg evictionqueue.Config, ops []mop) {
	t.Helper()
	checkModelStepped(t, base, cfg, ops, nil)
}

// checkModelStepped is checkModel with the wall clock of op i's instant
// moved by step(i) (base must then carry a monotonic reading): the queue
// must not notice.
func checkModelStepped(t *testing.T, base time.Time, cfg evictionqueue.Config, ops []mop, step func(i int) time.Duration) {
	t.Helper()
	q, err := evictionqueue.New[string](base, cfg)
	if err != nil {
		t.Fatalf("New(%+v) = %v", cfg, err)
	}
	r := newRef(cfg)
	var now time.Duration
	fail := func(i int, format string, args ...any) {
		t.Helper()
		var hist strings.Builder
		for _, o := range ops[:i+1] {
			fmt.Fprintf(&hist, "\n  %v", o)
		}
		t.Fatalf("config %+v, clock from %v, after ops:%s\n%s", cfg, base, hist.String(), fmt.Sprintf(format, args...))
	}
	for i, o := range ops {
		now += o.dt
		at := base.Add(now)
		if step != nil {
			at = testutil.StepWallClock(at, step(i))
		}
		var got, want string
		switch o.kind {
		case mAdd:
			uid := types.UID(fmt.Sprintf("uid-%d", i))
			got, want = fmt.Sprint(q.Add(at, o.key, uid)), fmt.Sprint(r.add(int64(now), o.key, uid))
		case mRemove:
			got, want = fmt.Sprint(q.Remove(o.key)), fmt.Sprint(r.remove(o.key))
		case mClear:
			q.Clear()
			r.clear()
		case mSetRate:
			got, want = fmt.Sprint(q.SetRate(at, o.qps) == nil), fmt.Sprint(r.setRate(int64(now), o.qps))
		case mTry:
			var gotSeen, wantSeen []string
			k := 0
			n := q.Try(at, func(it evictionqueue.Item[string]) (bool, time.Duration) {
				gotSeen = append(gotSeen, fmt.Sprintf("%s/%s@%d/%d", it.Key, it.UID, it.AddedAt.Sub(base), it.ProcessAt.Sub(base)))
				k++
				return applyAct(o.acts, k-1, it.Key, func(key string) bool { return q.Remove(key) },
					func(key string) bool { return q.Add(at, key, types.UID("re-"+key)) }, q.Clear)
			})
			k = 0
			m := r.try(int64(now), func(it refItem) (bool, time.Duration) {
				wantSeen = append(wantSeen, fmt.Sprintf("%s/%s@%d/%d", it.key, it.uid, it.added, it.process))
				k++
				return applyAct(o.acts, k-1, it.key, r.remove,
					func(key string) bool { return r.add(int64(now), key, types.UID("re-"+key)) }, r.clear)
			})
			got, want = fmt.Sprint(n, gotSeen), fmt.Sprint(m, wantSeen)
		}
		if got != want {
			fail(i, "%v = %s, want %s", o, got, want)
		}
		// Observable state after every operation.
		if g, w := q.Len(), len(r.pending); g != w {
			fail(i, "Len() = %d, want %d", g, w)
		}
		var gi, wi []string
		for _, it := range q.Items() {
			gi = append(gi, fmt.Sprintf("%s/%s@%d/%d", it.Key, it.UID, it.AddedAt.Sub(base), it.ProcessAt.Sub(base)))
		}
		for _, it := range r.pending {
			wi = append(wi, fmt.Sprintf("%s/%s@%d/%d", it.key, it.uid, it.added, it.process))
		}
		if g, w := fmt.Sprint(gi), fmt.Sprint(wi); g != w {
			fail(i, "Items() = %s, want %s", g, w)
		}
		gd, gok := q.NextDeadline()
		wd, wok := r.nextDeadline()
		if gok != wok || (gok && gd.Sub(base) != time.Duration(wd)) {
			fail(i, "NextDeadline() = %v, %v, want %v, %v", gd.Sub(base), gok, time.Duration(wd), wok)
		}
		if g, w := q.Rate(), r.qps; g != w {
			fail(i, "Rate() = %v, want %v", g, w)
		}
		for _, k := range modelKeys {
			if g, w := q.State(k), r.state(k); g != w {
				fail(i, "State(%q) = %v, want %v", k, g, w)
			}
			if g, w := q.Contains(k), r.known[k] != nil; g != w {
				fail(i, "Contains(%q) = %v, want %v", k, g, w)
			}
		}
	}
}

// applyAct performs decision i (done when there is none) on one queue.
func applyAct(acts []act, i int, self string, remove, add func(string) bool, clear func()) (bool, time.Duration) {
	if i >= len(acts) {
		return true, 0
	}
	a := acts[i]
	switch a.kind {
	case aRetry:
		return false, a.after
	case aRemoveSelfRetry:
		remove(self)
		return false, a.after
	case aRemoveSelfDone:
		remove(self)
		return true, 0
	case aReAddSelf:
		remove(self)
		add(self)
		return a.after > 0, a.after
	case aAddOther:
		add(a.other)
		return false, a.after
	case aRemoveOther:
		remove(a.other)
		return true, 0
	case aClear:
		clear()
		return false, a.after
	}
	return true, 0
}

// modelClocks are the instants the model runs start from: the usual epoch,
// a virtual clock at the zero time.Time, and a clock before 1970.
var modelClocks = []time.Time{testutil.Epoch, {}, time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)}

// TestModel checks the queue against the reference over random operation
// sequences, including re-entrant callbacks, rate changes, stops and clocks
// going backwards.
func TestModel(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 2))
		cfg := modelConfigs[r.IntN(len(modelConfigs))]
		checkModel(t, modelClocks[seed%uint64(len(modelClocks))], cfg, randomOps(r, 300))
	}
}

// TestModelWallClockSteps runs the model on a real clock's instants whose
// wall clock jumps by up to an hour either way at every operation (NTP
// steps, VM resumes): the queue measures time on the monotonic clock, so it
// behaves exactly as on a clock that never stepped.
func TestModelWallClockSteps(t *testing.T) {
	base := time.Now()
	for seed := uint64(0); seed < 60; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		cfg := modelConfigs[r.IntN(len(modelConfigs))]
		steps := rand.New(rand.NewPCG(seed, 4))
		checkModelStepped(t, base, cfg, randomOps(r, 300), func(int) time.Duration {
			return time.Duration(steps.Int64N(int64(2*time.Hour))) - time.Hour
		})
	}
}
