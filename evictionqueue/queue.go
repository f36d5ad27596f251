package evictionqueue

import (
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/internal/heap"
)

// Item is one unit of work as handed to a Try callback and listed by
// Queue.Items. Identity is Key; UID is carried along, never compared.
//
// AddedAt is the instant of the Add that created the item; ProcessAt is the
// instant from which it may be attempted (AddedAt at first, then the retry
// instant asked for by the last failed attempt). Both are reported as the
// time passed to New plus an offset, so they carry its location and its
// monotonic clock reading, if any; see the package documentation for how
// instants are measured.
type Item[K comparable] struct {
	Key       K
	UID       types.UID
	AddedAt   time.Time
	ProcessAt time.Time
}

// Instants are stored as nanoseconds since the queue's origin (the now given
// to New, kept as given: with the caller's monotonic reading, so that
// now.Sub(origin) measures elapsed time on the monotonic clock and a
// wall-clock step moves nothing). The queue clock never goes below 0, so every stored instant is in
// [0, maxNano] and the arithmetic on them cannot overflow; the negative
// values are free for the sentinels stored in entry.process once an entry
// has left the heap for good.
const (
	maxNano    = math.MaxInt64 // latest representable instant: origin + about 292 years
	doneMark   = -1            // the callback reported the key done
	cancelMark = -2            // Remove or Clear forgot the key while in flight
)

// entry is the per-key record: 56 bytes for string keys, 64 with the heap
// position. Instants are nanoseconds since the origin rather than time.Time
// (24 bytes each) to keep a pending item well under the 150-byte budget.
//
// An entry is pending while it is in the heap, in flight while it is out of
// the heap with a real instant in process, done when process == doneMark,
// and abandoned when process == cancelMark.
type entry[K comparable] struct {
	key     K
	uid     types.UID
	added   int64  // AddedAt, nanoseconds since the origin
	process int64  // ProcessAt, nanoseconds since the origin, or doneMark/cancelMark
	seq     uint64 // insertion sequence: FIFO among equal instants
}

type elem[K comparable] = heap.Elem[entry[K]]

// less orders entries by ProcessAt, then AddedAt, then insertion sequence.
// AddedAt needs no comparison of its own: it is the queue clock at the Add,
// which never goes backwards, so AddedAt order is insertion order.
func less[K comparable](a, b *entry[K]) bool {
	if a.process != b.process {
		return a.process < b.process
	}
	return a.seq < b.seq
}

// Queue is a rate-limited timed queue of unique keys: the caller-driven form
// of the node lifecycle controller's RateLimitedTimedQueue. Items wait until
// their ProcessAt instant and are then handed, one token each, to the
// callback given to Try, which reports whether the work is done or must be
// retried later. A key is accepted once per Add/Remove cycle: after it is
// done the queue remembers it until Remove (or Clear) forgets it.
//
// Time is an argument: methods that depend on it take now, and the queue
// never reads a clock, sleeps or starts a goroutine. The caller runs Try
// periodically or sleeps until NextDeadline.
//
// The zero Queue is not usable; create one with New. Keys are map keys: an
// interface-typed K holding an unhashable value panics, as a map would.
//
// A Queue is safe for concurrent use by multiple goroutines. Callbacks run
// without the queue's lock held, so they may call any method of the same
// queue, and concurrent Try calls never hand the same item to two callbacks.
type Queue[K comparable] struct {
	mu     sync.Mutex
	h      *heap.Heap[entry[K]]
	keys   map[K]*elem[K] // every known key: pending, in flight or done
	seq    uint64
	origin time.Time // instant 0 of the queue clock: New's now as given (monotonic reading kept)
	last   int64     // the queue clock: latest instant seen, nanoseconds since origin (>= 0)
	qps    float64
	burst  int
	lim    *rate.Limiter // nil while stopped
	limAt  int64         // instant of the limiter's last state change
	flying int           // items handed to a Try callback that has not returned
}

// New returns an empty queue with the rate limit cfg, whose token bucket is
// full at now. now starts the queue's clock: a later call with an earlier
// instant counts as now, and instants up to about 292 years later are
// represented exactly (see the package documentation). now is kept as
// given: pass the caller's clock.Now(), whose monotonic reading makes every
// later interval immune to wall-clock steps. Reported times use now's
// location. It returns an error wrapping ErrInvalidRate or
// ErrInvalidBurst when cfg is invalid (see Config).
func New[K comparable](now time.Time, cfg Config) (*Queue[K], error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	q := &Queue[K]{
		h:      heap.New(less[K]),
		keys:   make(map[K]*elem[K]),
		origin: now,
		qps:    cfg.QPS,
		burst:  cfg.Burst,
	}
	if cfg.QPS > 0 {
		q.lim = rate.NewLimiter(rate.Limit(cfg.QPS), cfg.Burst)
	}
	return q, nil
}

// addNano returns n + d for n >= 0 and d >= 0, saturating at maxNano.
func addNano(n int64, d time.Duration) int64 {
	if int64(d) > maxNano-n {
		return maxNano
	}
	return n + int64(d)
}

// at converts an instant of the queue clock to a time in the location of the
// origin.
func (q *Queue[K]) at(n int64) time.Time { return q.origin.Add(time.Duration(n)) }

// lt converts an instant of the queue clock to the time given to the
// limiter, which only ever sees differences between its times.
func lt(n int64) time.Time { return time.Unix(0, n) }

// advance moves the queue clock to now, unless now is earlier (time going
// backwards counts as no time elapsed), and returns the clock. now.Sub
// compares monotonic readings when now and the origin both have one (a
// wall-clock step is no time elapsed), wall clocks otherwise. Sub saturates,
// so a now more than about 292 years after the origin counts as maxNano.
func (q *Queue[K]) advance(now time.Time) int64 {
	if n := int64(now.Sub(q.origin)); n > q.last {
		q.last = n
	}
	return q.last
}

func (q *Queue[K]) item(e *elem[K]) Item[K] {
	return Item[K]{Key: e.Value.key, UID: e.Value.uid, AddedAt: q.at(e.Value.added), ProcessAt: q.at(e.Value.process)}
}

// Add queues key, due at now, and reports true; it reports false and changes
// nothing when key is already known: pending, waiting for a retry, in flight
// inside a Try callback, or done and not yet Removed. A key reported done
// stays known until Remove: call Remove when the work no longer applies
// (the node is healthy again), or the next Add of that key is refused.
// Unlike upstream, whose heap has no tie-break (A, B, C, D added at once
// come out A, D, C, B), items added at the same instant are attempted in
// the order they were added, so the order of the Adds is the order of the
// work. An informer's List (and a lister's) returns objects in map order,
// which changes from run to run: sort what you add in one pass (for
// example by node name) if you want a reproducible order. O(log n).
func (q *Queue[K]) Add(now time.Time, key K, uid types.UID) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.advance(now)
	if _, ok := q.keys[key]; ok {
		return false
	}
	q.seq++
	q.keys[key] = q.h.Push(entry[K]{key: key, uid: uid, added: n, process: n, seq: q.seq})
	return true
}

// Remove forgets key and reports whether it was known. It is the only way
// (with Clear) to make a done key addable again. Pending work is
// cancelled; a key in flight inside a Try callback is not retried nor
// remembered as done when the callback returns; a done key may be added
// again. O(log n): unlike upstream, which scans its heap linearly.
func (q *Queue[K]) Remove(key K) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.keys[key]
	if !ok {
		return false
	}
	delete(q.keys, key)
	if !q.h.Remove(e) && e.Value.process != doneMark {
		e.Value.process = cancelMark // in flight: Try drops it on return
	}
	return true
}

// Clear forgets every key: pending, in flight and done. The rate limit and
// the queue clock are kept. O(n).
func (q *Queue[K]) Clear() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range q.keys {
		if !e.InHeap() && e.Value.process != doneMark {
			e.Value.process = cancelMark
		}
	}
	q.keys = make(map[K]*elem[K])
	q.h = heap.New(less[K])
}

// Try attempts due items in order while the rate limit allows, and returns
// how many it attempted. For each attempt it checks that the head item is
// due (ProcessAt not after now), then takes one token (AllowN(now, 1)), then
// calls fn with the lock released. Unlike upstream, which takes the token
// first, a not-yet-due head never costs a token. If fn reports done, the key
// is remembered as done; otherwise the item is retried at now + retryAfter.
// Upstream retries at now + retryAfter + 1ns; here the extra nanosecond is
// added only when retryAfter <= 0, which is all it is for: one call never
// attempts the same item twice. Each attempt costs O(log n) and, in steady
// state, allocates nothing.
//
// fn may call any method of the queue, Try included. A Remove (or Clear) of
// the key being attempted cancels its retry or done marking; an Add of that
// key after such a Remove creates a new, independent item, which the
// outcome of the running attempt does not touch (unlike upstream, where a
// done outcome swallows it). An Add of any other key is an ordinary Add: if
// it is due, this Try may attempt it. A nested Try attempts other due items
// with the same token bucket, never the one in flight. If fn panics, the
// item is requeued as a retry 1ns after now and the panic propagates. A nil
// fn attempts nothing.
func (q *Queue[K]) Try(now time.Time, fn func(Item[K]) (done bool, retryAfter time.Duration)) int {
	if fn == nil {
		return 0
	}
	attempted := 0
	q.mu.Lock()
	for {
		e, n := q.take(now)
		if e == nil {
			q.mu.Unlock()
			return attempted
		}
		it := q.item(e)
		q.mu.Unlock()
		done, after := q.call(e, n, it, fn)
		attempted++
		q.mu.Lock()
		q.finish(e, n, done, after)
	}
}

// take pops the head item if it is due and a token is available. The head is
// checked first so that a not-yet-due item never costs a token.
func (q *Queue[K]) take(now time.Time) (*elem[K], int64) {
	n := q.advance(now)
	e := q.h.Peek()
	if e == nil || q.lim == nil || e.Value.process > n {
		return nil, 0
	}
	if !q.lim.AllowN(lt(n), 1) {
		return nil, 0
	}
	q.limAt = n
	q.h.Pop()
	q.flying++
	return e, n
}

// call runs fn, which the caller invokes without the lock held. If fn
// panics, the item is requeued as a retry before the panic continues, so it
// is never lost.
func (q *Queue[K]) call(e *elem[K], n int64, it Item[K], fn func(Item[K]) (bool, time.Duration)) (done bool, after time.Duration) {
	returned := false
	defer func() {
		if !returned {
			q.mu.Lock()
			q.finish(e, n, false, 0)
			q.mu.Unlock()
		}
	}()
	done, after = fn(it)
	returned = true
	return done, after
}

// finish records the outcome of an attempt started at n.
func (q *Queue[K]) finish(e *elem[K], n int64, done bool, after time.Duration) {
	q.flying--
	switch {
	case e.Value.process == cancelMark:
		// Removed or cleared meanwhile: forget it.
	case done:
		e.Value.process = doneMark
	default:
		e.Value.process = addNano(n, max(after, time.Nanosecond))
		q.h.PushElem(e)
	}
}

// SetRate changes the rate limit to qps attempts per second, as upstream's
// SwapLimiter does. A qps equal to the current one changes nothing (compared
// as float64; upstream compares float32). Otherwise a new bucket replaces
// the old one under the drain rule: the new bucket starts with as many whole
// tokens as the old one held at now (at most Burst), so a rate change never
// opens a burst the old bucket would not have allowed, and leaving a stop
// starts with an empty bucket. For Burst 1, which upstream always uses, this
// is exactly upstream's rule (take a token from the old bucket; if there was
// none, take the new bucket's initial token). qps 0 stops the queue; any
// later positive qps starts it again. Unlike upstream, stopping is explicit
// rather than a limiter that reports QPS 1, so SetRate(now, 1) after
// SetRate(now, 0) restarts the queue. An invalid qps (NaN, infinite,
// negative), or a positive qps on a queue with Burst 0, returns an error
// wrapping ErrInvalidRate or ErrInvalidBurst and changes nothing. O(1).
func (q *Queue[K]) SetRate(now time.Time, qps float64) error {
	if err := checkQPS(qps); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := checkBurst(qps, q.burst); err != nil {
		return err
	}
	n := q.advance(now)
	if qps == q.qps {
		return nil
	}
	t := lt(n)
	carried := 0
	if q.lim != nil {
		carried = int(min(math.Floor(q.lim.TokensAt(t)), float64(q.burst)))
	}
	q.lim = nil
	if qps > 0 {
		q.lim = rate.NewLimiter(rate.Limit(qps), q.burst) // starts full
		if drop := q.burst - carried; drop > 0 {
			q.lim.AllowN(t, drop)
		}
	}
	q.qps = qps
	q.limAt = n
	return nil
}

// Rate returns the current rate limit in attempts per second; 0 means
// stopped. O(1).
func (q *Queue[K]) Rate() float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.qps
}

// NextDeadline returns the earliest instant at which Try could attempt an
// item: the later of the head item's ProcessAt and the instant the bucket
// next holds a whole token. It reports false when no item is pending (items
// in flight do not count) or the queue is stopped. The instant may be
// earlier than the caller's clock, meaning Try can work now. Tokens accrue
// linearly, so no now is needed. Try at the returned instant attempts at
// least one item if nothing changed meanwhile (at a rate so low that the
// next token lies more than about 292 years after New, the instant saturates
// there). Upstream has no equivalent; its callers poll every 100ms. O(1):
// usually two or three limiter reads, never more than about 130.
func (q *Queue[K]) NextDeadline() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.h.Peek()
	if e == nil || q.lim == nil {
		return time.Time{}, false
	}
	// The limiter's state is exact from limAt on; it never saw a later time.
	base := max(e.Value.process, q.limAt)
	tokens := q.lim.TokensAt(lt(base))
	if tokens >= 1 {
		return q.at(base), true
	}
	wait := math.Ceil((1 - tokens) / q.qps * float64(time.Second))
	est := int64(maxNano)
	if wait < float64(maxNano-base) {
		est = base + max(int64(wait), 1)
	}
	return q.at(q.firstToken(base, est)), true
}

// firstToken returns the first instant after base at which the limiter
// reports a whole token (TokensAt >= 1), starting from the estimate est. The
// estimate comes from float arithmetic, so it is corrected to the limiter's
// own answer: gallop from est to bracket the instant, then bisect. The
// limiter holds no whole token at base and its tokens never decrease with
// time. (AllowN may grant a token up to about a nanosecond earlier, when the
// missing fraction is worth less than 1ns of wait; Try at the returned
// instant always succeeds.)
func (q *Queue[K]) firstToken(base, est int64) int64 {
	ok := func(n int64) bool { return q.lim.TokensAt(lt(n)) >= 1 }
	lo, hi := base, est // invariant: !ok(lo) and ok(hi)
	if ok(est) {
		for step := int64(1); est-base > step; step *= 2 {
			if c := est - step; !ok(c) {
				lo = c
				break
			} else {
				hi = c
			}
		}
	} else {
		lo, hi = est, maxNano
		for step := time.Duration(1); ; step *= 2 {
			c := addNano(est, step)
			if c == maxNano {
				break
			}
			if ok(c) {
				hi = c
				break
			}
			lo = c
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// Len returns the number of pending items (waiting or waiting for a retry;
// not those in flight or done). O(1).
func (q *Queue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.h.Len()
}

// Unfinished returns the number of items whose work is not finished: the
// pending ones (Len) plus those handed to a Try callback that has not
// returned yet (including one Removed or Cleared meanwhile), read under one
// lock. A caller that discards an idle queue checks Unfinished() == 0, not
// Len() == 0: an item in flight is in neither Len nor Items, and its retry
// lands back in the queue when the callback returns. O(1).
func (q *Queue[K]) Unfinished() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.h.Len() + q.flying
}

// Contains reports whether key is known, that is whether Add would refuse
// it: pending, in flight or done. O(1).
func (q *Queue[K]) Contains(key K) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.keys[key]
	return ok
}

// State reports what the queue knows about key. O(1).
func (q *Queue[K]) State(key K) KeyState {
	q.mu.Lock()
	defer q.mu.Unlock()
	e, ok := q.keys[key]
	switch {
	case !ok:
		return KeyAbsent
	case e.InHeap():
		return KeyPending
	case e.Value.process == doneMark:
		return KeyDone
	}
	return KeyInFlight
}

// Items returns a copy of the pending items (not those in flight) in
// processing order. O(n log n).
func (q *Queue[K]) Items() []Item[K] {
	q.mu.Lock()
	defer q.mu.Unlock()
	es := make([]*elem[K], 0, q.h.Len())
	q.h.Each(func(e *elem[K]) { es = append(es, e) })
	slices.SortFunc(es, func(a, b *elem[K]) int {
		switch {
		case less(&a.Value, &b.Value):
			return -1
		case less(&b.Value, &a.Value):
			return 1
		}
		return 0
	})
	out := make([]Item[K], len(es))
	for i, e := range es {
		out[i] = q.item(e)
	}
	return out
}
