package evictionqueue_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	xrate "golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// Step-table harness: each row calls one method at Epoch+at and compares the
// result, rendered as a string, with want.

type queue = evictionqueue.Queue[string]

type op struct {
	name string // rendered call, e.g. Add("a")
	do   func(q *queue, now time.Time) string
}

type step struct {
	at   time.Duration
	call op
	want string
}

// run executes steps in order against q.
func run(t *testing.T, q *queue, steps []step) {
	t.Helper()
	for i, s := range steps {
		got := s.call.do(q, testutil.At(s.at))
		if got != s.want {
			t.Errorf("step %d at +%v: %s = %s, want %s", i, s.at, s.call.name, got, s.want)
		}
	}
}

// newQueue returns a queue created at Epoch with cfg.
func newQueue(t *testing.T, cfg evictionqueue.Config) *queue {
	t.Helper()
	q, err := evictionqueue.New[string](testutil.Epoch, cfg)
	if err != nil {
		t.Fatalf("New(%+v) = %v", cfg, err)
	}
	return q
}

// rel renders t relative to Epoch.
func rel(t time.Time) string { return t.Sub(testutil.Epoch).String() }

func uidOf(key string) types.UID { return types.UID("uid-" + key) }

func add(key string) op {
	return op{fmt.Sprintf("Add(%q)", key), func(q *queue, now time.Time) string {
		return fmt.Sprint(q.Add(now, key, uidOf(key)))
	}}
}

func remove(key string) op {
	return op{fmt.Sprintf("Remove(%q)", key), func(q *queue, _ time.Time) string {
		return fmt.Sprint(q.Remove(key))
	}}
}

func contains(key string) op {
	return op{fmt.Sprintf("Contains(%q)", key), func(q *queue, _ time.Time) string {
		return fmt.Sprint(q.Contains(key))
	}}
}

func state(key string) op {
	return op{fmt.Sprintf("State(%q)", key), func(q *queue, _ time.Time) string {
		return q.State(key).String()
	}}
}

func length() op {
	return op{"Len()", func(q *queue, _ time.Time) string { return fmt.Sprint(q.Len()) }}
}

func clearAll() op {
	return op{"Clear()", func(q *queue, _ time.Time) string { q.Clear(); return "" }}
}

func rate() op {
	return op{"Rate()", func(q *queue, _ time.Time) string { return fmt.Sprint(q.Rate()) }}
}

func setRate(qps float64) op {
	return op{fmt.Sprintf("SetRate(%v)", qps), func(q *queue, now time.Time) string {
		if err := q.SetRate(now, qps); err != nil {
			return "error"
		}
		return "ok"
	}}
}

// next renders NextDeadline relative to Epoch, or "none".
func next() op {
	return op{"NextDeadline()", func(q *queue, _ time.Time) string {
		d, ok := q.NextDeadline()
		if !ok {
			return "none"
		}
		return rel(d)
	}}
}

// items renders Items as key:AddedAt/ProcessAt, relative to Epoch.
func items() op {
	return op{"Items()", func(q *queue, _ time.Time) string {
		var b strings.Builder
		b.WriteString("[")
		for i, it := range q.Items() {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s:%s/%s", it.Key, rel(it.AddedAt), rel(it.ProcessAt))
		}
		b.WriteString("]")
		return b.String()
	}}
}

// tryWith calls Try with fn and renders "count [keys attempted]".
func tryWith(name string, fn func(q *queue, it evictionqueue.Item[string]) (bool, time.Duration)) op {
	return op{"Try(" + name + ")", func(q *queue, now time.Time) string {
		var keys []string
		n := q.Try(now, func(it evictionqueue.Item[string]) (bool, time.Duration) {
			keys = append(keys, it.Key)
			return fn(q, it)
		})
		return fmt.Sprintf("%d %v", n, keys)
	}}
}

// try calls Try with a callback that reports every item done.
func try() op {
	return tryWith("done", func(*queue, evictionqueue.Item[string]) (bool, time.Duration) { return true, 0 })
}

// tryFail calls Try with a callback that asks every item to be retried after d.
func tryFail(d time.Duration) op {
	return tryWith(fmt.Sprintf("retry %v", d), func(*queue, evictionqueue.Item[string]) (bool, time.Duration) {
		return false, d
	})
}

// tryScript calls Try with a callback that retries the listed keys after
// their duration and reports every other key done.
func tryScript(retry map[string]time.Duration) op {
	return tryWith(fmt.Sprintf("retry %v", retry), func(_ *queue, it evictionqueue.Item[string]) (bool, time.Duration) {
		if d, ok := retry[it.Key]; ok {
			return false, d
		}
		return true, 0
	})
}

func TestDefaultConfig(t *testing.T) {
	if got, want := evictionqueue.DefaultConfig(), (evictionqueue.Config{QPS: 0.1, Burst: 1}); got != want {
		t.Errorf("DefaultConfig() = %+v, want %+v", got, want)
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		cfg  evictionqueue.Config
		want error
	}{
		{evictionqueue.DefaultConfig(), nil},
		{evictionqueue.Config{}, nil},
		{evictionqueue.Config{QPS: 0, Burst: 1}, nil},
		{evictionqueue.Config{QPS: 1e300, Burst: 1 << 40}, nil},
		{evictionqueue.Config{QPS: nan(), Burst: 1}, evictionqueue.ErrInvalidRate},
		{evictionqueue.Config{QPS: inf(1), Burst: 1}, evictionqueue.ErrInvalidRate},
		{evictionqueue.Config{QPS: inf(-1), Burst: 1}, evictionqueue.ErrInvalidRate},
		{evictionqueue.Config{QPS: -0.1, Burst: 1}, evictionqueue.ErrInvalidRate},
		{evictionqueue.Config{QPS: 0.1, Burst: -1}, evictionqueue.ErrInvalidBurst},
		{evictionqueue.Config{QPS: 0, Burst: -1}, evictionqueue.ErrInvalidBurst},
		{evictionqueue.Config{QPS: 0.1, Burst: 0}, evictionqueue.ErrInvalidBurst},
	}
	for _, tt := range tests {
		q, err := evictionqueue.New[string](testutil.Epoch, tt.cfg)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("New(%+v) error = %v, want %v", tt.cfg, err, tt.want)
		}
		if err != nil {
			if q != nil {
				t.Errorf("New(%+v) = %p with error, want nil", tt.cfg, q)
			}
			if !strings.HasPrefix(err.Error(), "evictionqueue: ") {
				t.Errorf("New(%+v) error %q lacks the package prefix", tt.cfg, err)
			}
		}
	}
}

func TestSetRateValidates(t *testing.T) {
	for _, qps := range []float64{nan(), inf(1), inf(-1), -1} {
		q := newQueue(t, evictionqueue.DefaultConfig())
		if err := q.SetRate(testutil.Epoch, qps); !errors.Is(err, evictionqueue.ErrInvalidRate) {
			t.Errorf("SetRate(%v) = %v, want ErrInvalidRate", qps, err)
		}
		if got := q.Rate(); got != 0.1 {
			t.Errorf("Rate() after SetRate(%v) = %v, want 0.1 (unchanged)", qps, got)
		}
	}
}

// TestZeroConfigIsStopped: Config{} holds items but never attempts them and
// cannot be started, since its bucket can never hold a token.
func TestZeroConfigIsStopped(t *testing.T) {
	q := newQueue(t, evictionqueue.Config{})
	run(t, q, []step{
		{0, add("a"), "true"},
		{0, try(), "0 []"},
		{0, next(), "none"},
		{0, length(), "1"},
		{0, rate(), "0"},
		{0, setRate(0.1), "error"},
		{0, rate(), "0"},
		{time.Hour, try(), "0 []"},
	})
	if err := q.SetRate(testutil.Epoch, 1); !errors.Is(err, evictionqueue.ErrInvalidBurst) {
		t.Errorf("SetRate(1) on Config{} = %v, want ErrInvalidBurst", err)
	}
}

// TestDefaultRate: upstream's 0.1 QPS, burst 1 bucket starts full, then
// allows one attempt every 10s and never two within 10s.
func TestDefaultRate(t *testing.T) {
	q := newQueue(t, evictionqueue.DefaultConfig())
	run(t, q, []step{
		{0, next(), "none"},
		{0, add("a"), "true"},
		{0, add("b"), "true"},
		{0, add("c"), "true"},
		{0, next(), "0s"},
		{0, try(), "1 [a]"},
		{0, next(), "10s"},
		{5 * time.Second, try(), "0 []"},
		{10*time.Second - time.Nanosecond, try(), "0 []"},
		{10 * time.Second, try(), "1 [b]"},
		{10 * time.Second, try(), "0 []"},
		{time.Minute, try(), "1 [c]"},
		{time.Minute, length(), "0"},
		{time.Minute, next(), "none"},
	})
}

// TestBurst: a bucket of 3 lets three attempts through back to back once it
// has filled up, then one per 1/QPS.
func TestBurst(t *testing.T) {
	q := newQueue(t, evictionqueue.Config{QPS: 1, Burst: 3})
	var steps []step
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		steps = append(steps, step{0, add(k), "true"})
	}
	run(t, q, append(steps, []step{
		{0, try(), "3 [a b c]"},
		{0, next(), "1s"},
		{1500 * time.Millisecond, try(), "1 [d]"},
		{1500 * time.Millisecond, next(), "2s"},
		{10 * time.Second, try(), "2 [e f]"},
	}...))
}

// TestFIFOOnEqualProcessAt: upstream's heap has no tie-break, so four adds at
// one instant A, B, C, D are processed A, D, C, B (rate_limited_queue.go, TimedQueue.Less). We give
// insertion order.
func TestFIFOOnEqualProcessAt(t *testing.T) {
	q := newQueue(t, evictionqueue.Config{QPS: 1000, Burst: 1})
	run(t, q, []step{
		{0, add("A"), "true"},
		{0, add("B"), "true"},
		{0, add("C"), "true"},
		{0, add("D"), "true"},
		{0, items(), "[A:0s/0s B:0s/0s C:0s/0s D:0s/0s]"},
		{0, try(), "1 [A]"},
		{time.Second, try(), "1 [B]"},
		{2 * time.Second, try(), "1 [C]"},
		{3 * time.Second, try(), "1 [D]"},
	})
}

// TestOrderProcessAtThenAddedAt: items are ordered by ProcessAt, then by
// AddedAt, then by insertion.
func TestOrderProcessAtThenAddedAt(t *testing.T) {
	q := newQueue(t, evictionqueue.Config{QPS: 1000, Burst: 1000})
	run(t, q, []step{
		{0, add("a"), "true"},
		{0, tryFail(10 * time.Second), "1 [a]"}, // a: added 0, due 10s
		{2 * time.Second, add("c"), "true"},
		{2 * time.Second, tryFail(8 * time.Second), "1 [c]"}, // c: added 2s, due 10s
		{3 * time.Second, add("d"), "true"},                  // d: added 3s, due 3s
		{10 * time.Second, add("b"), "true"},                 // b: added 10s, due 10s
		{10 * time.Second, items(), "[d:3s/3s a:0s/10s c:2s/10s b:10s/10s]"},
		{10 * time.Second, try(), "4 [d a c b]"},
	})
}

// TestNoTokenWastedOnNotDueHead: upstream takes a token before checking that
// the head is due, so a not-yet-due retry at the head burns the only token
// and delays the next due item by up to 1/QPS (rate_limited_queue.go, RateLimitedTimedQueue.Try). We
// check first.
func TestNoTokenWastedOnNotDueHead(t *testing.T) {
	q := newQueue(t, evictionqueue.DefaultConfig())
	run(t, q, []step{
		{0, add("a"), "true"},
		{0, tryFail(30 * time.Second), "1 [a]"}, // a due at 30s; next token at 10s
		{10 * time.Second, try(), "0 []"},       // head not due: upstream burns the 10s token here
		{10 * time.Second, next(), "30s"},
		{15 * time.Second, add("b"), "true"},
		{15 * time.Second, next(), "15s"},
		{15 * time.Second, try(), "1 [b]"}, // upstream: nothing until 20s
		{25 * time.Second, next(), "30s"},  // a due at 30s; token at 25s
		{30 * time.Second, try(), "1 [a]"},
	})
}

// TestRetry: a failed attempt is retried exactly retryAfter later (upstream
// adds 1ns); a retryAfter of 0 or less means 1ns later, so one Try never
// attempts the same item twice.
func TestRetry(t *testing.T) {
	q := newQueue(t, evictionqueue.Config{QPS: 1e6, Burst: 1000})
	run(t, q, []step{
		{0, add("a"), "true"},
		{0, tryFail(5 * time.Second), "1 [a]"},
		{0, items(), "[a:0s/5s]"},
		{0, state("a"), "pending"},
		{0, length(), "1"},
		{5*time.Second - 1, try(), "0 []"},
		{5 * time.Second, tryFail(0), "1 [a]"},
		{5 * time.Second, items(), "[a:0s/5.000000001s]"},
		{5 * time.Second, tryFail(-time.Hour), "0 []"},
		{5*time.Second + 1, tryFail(-time.Hour), "1 [a]"},
		{5*time.Second + 1, items(), "[a:0s/5.000000002s]"},
		{6 * time.Second, try(), "1 [a]"},
		{6 * time.Second, state("a"), "done"},
		{6 * time.Second, length(), "0"},
	})
}

// TestRetryKeepsAddedAt: a retried item keeps its AddedAt and its place among
// items due at the same instant.
func TestRetryKeepsAddedAt(t *testing.T) {
	q := newQueue(t, evictionqueue.Config{QPS: 1e6, Burst: 1000})
	run(t, q, []step{
		{0, add("a"), "true"},
		{0, add("b"), "true"},
		{0, tryScript(map[string]time.Duration{"a": 3 * time.Second, "b": time.Second}), "2 [a b]"},
		{time.Second, add("c"), "true"},
		{2 * time.Second, tryFail(time.Second), "2 [b c]"},
		{3 * time.Second, items(), "[a:0s/3s b:0s/3s c:1s/3s]"},
	})
}

// TestAddRefusesKnownKeys: a key is accepted once per Add/Remove cycle.
func TestAddRefusesKnownKeys(t *testing.T) {
	q := newQueue(t, evictionqueue.Config{QPS: 1e6, Burst: 1000})
	run(t, q, []step{
		{0, state("a"), "absent"},
		{0, contains("a"), "false"},
		{0, add("a"), "true"},
		{0, add("a"), "false"}, // pending
		{0, contains("a"), "true"},
		{0, tryFail(time.Second), "1 [a]"},
		{0, add("a"), "false"}, // waiting for a retry
		{time.Second, try(), "1 [a]"},
		{time.Second, state("a"), "done"},
		{time.Second, contains("a"), "true"},
		{time.Second, length(), "0"},
		{time.Second, add("a"), "false"}, // done
		{time.Second, remove("a"), "true"},
		{time.Second, add("a"), "true"},
		{time.Second, try(), "1 [a]"},
	})
}

// TestIdentityIsKeyOnly: upstream's identity is the value (node name); the
// UID is carried, never compared. An Add of a known key with another UID is
// refused and the item keeps the UID it was added with.
func TestIdentityIsKeyOnly(t *testing.T) {
	q := newQueue(t, open)
	if !q.Add(testutil.Epoch, "a", "uid-1") {
		t.Fatal(`Add("a", uid-1) = false, want true`)
	}
	if q.Add(testutil.At(time.Second), "a", "uid-2") {
		t.Error(`Add("a", uid-2) while pending = true, want false`)
	}
	if its := q.Items(); len(its) != 1 || its[0].UID != "uid-1" || !its[0].AddedAt.Equal(testutil.Epoch) {
		t.Errorf("Items() = %+v, want a/uid-1 added at epoch", its)
	}
}

// TestRemove: Remove cancels pending work and forgets "done".
func TestRemove(t *testing.T) {
	q := newQueue(t, evictionqueue.Config{QPS: 1e6, Burst: 1000})
	run(t, q, []step{
		{0, remove("x"), "false"},
		{0, add("a"), "true"},
		{0, add("b"), "true"},
		{0, add("c"), "true"},
		{0, remove("b"), "true"},
		{0, remove("b"), "false"},
		{0, items(), "[a:0s/0s c:0s/0s]"},
		{0, tryScript(map[string]time.Duration{"c": time.Minute}), "2 [a c]"},
		{0, remove("c"), "true"}, // cancels the retry
		{0, remove("a"), "true"}, // forgets done
		{0, state("a"), "absent"},
		{0, length(), "0"},
		{time.Hour, try(), "0 []"},
		{time.Hour, add("a"), "true"},
		{time.Hour, add("c"), "true"},
	})
}

// TestClear forgets pending, retried and done keys and keeps the rate.
func TestClear(t *testing.T) {
	q := newQueue(t, evictionqueue.Config{QPS: 1, Burst: 2})
	run(t, q, []step{
		{0, add("a"), "true"},
		{0, add("b"), "true"},
		{0, add("c"), "true"},
		{0, tryScript(map[string]time.Duration{"b": time.Second}), "2 [a b]"},
		{0, clearAll(), ""},
		{0, length(), "0"},
		{0, items(), "[]"},
		{0, state("a"), "absent"},
		{0, next(), "none"},
		{0, rate(), "1"},
		{0, add("a"), "true"},
		{0, add("b"), "true"},
		{0, next(), "1s"}, // the bucket was not refilled by Clear
		{time.Second, try(), "1 [a]"},
	})
}

// TestSetRateDrainRule: upstream SwapLimiter takes a token from the old
// bucket; if it had none, the new (full) bucket gives one up at once, so a
// rate change never opens a burst.
func TestSetRateDrainRule(t *testing.T) {
	t.Run("old bucket had a token", func(t *testing.T) {
		q := newQueue(t, evictionqueue.DefaultConfig())
		run(t, q, []step{
			{0, setRate(0.2), "ok"},
			{0, rate(), "0.2"},
			{0, add("a"), "true"},
			{0, add("b"), "true"},
			{0, try(), "1 [a]"}, // the new bucket starts full
			{0, next(), "5s"},
			{5 * time.Second, try(), "1 [b]"},
		})
	})
	t.Run("old bucket was empty", func(t *testing.T) {
		q := newQueue(t, evictionqueue.DefaultConfig())
		run(t, q, []step{
			{0, add("a"), "true"},
			{0, add("b"), "true"},
			{0, add("c"), "true"},
			{0, try(), "1 [a]"},
			{time.Second, setRate(0.2), "ok"},
			{time.Second, try(), "0 []"}, // the new bucket gave up its token
			{time.Second, next(), "6s"},
			{6 * time.Second, try(), "1 [b]"},
		})
	})
	t.Run("equal rate changes nothing", func(t *testing.T) {
		q := newQueue(t, evictionqueue.DefaultConfig())
		run(t, q, []step{
			{0, add("a"), "true"},
			{0, add("b"), "true"},
			{0, add("c"), "true"},
			{0, try(), "1 [a]"},
			{5 * time.Second, setRate(0.1), "ok"}, // a swap would move the next token to 15s
			{5 * time.Second, next(), "10s"},
			{10 * time.Second, try(), "1 [b]"},
			{10 * time.Second, setRate(0.1), "ok"},
			{15 * time.Second, setRate(0.1), "ok"},
			{20 * time.Second, try(), "1 [c]"},
		})
	})
	t.Run("burst above one", func(t *testing.T) {
		// The new bucket starts with the old one's whole tokens: the same
		// as upstream's rule for Burst 1, and no burst for larger buckets.
		q := newQueue(t, evictionqueue.Config{QPS: 1, Burst: 3})
		var steps []step
		for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"} {
			steps = append(steps, step{0, add(k), "true"})
		}
		run(t, q, append(steps, []step{
			{0, try(), "3 [a b c]"},
			{0, setRate(2), "ok"}, // old bucket empty: new bucket empty
			{0, try(), "0 []"},
			{0, next(), "500ms"},
			{100 * time.Millisecond, setRate(4), "ok"}, // 0.2 tokens are not carried
			{100 * time.Millisecond, next(), "350ms"},
			{700 * time.Millisecond, setRate(10), "ok"}, // 2.4 tokens: 2 carried
			{700 * time.Millisecond, try(), "2 [d e]"},
			{700 * time.Millisecond, next(), "800ms"},
			{10 * time.Second, try(), "3 [f g h]"},
		}...))
	})
}

// TestSetRateStopAndRestart: SetRate(0) stops the queue explicitly. Upstream
// swaps in a never-accepting limiter that reports QPS 1, so a later
// SwapLimiter(1) is taken as "unchanged" and the zone never evicts again
// (rate_limited_queue.go, SwapLimiter). Here SetRate(1) restarts it, with an empty bucket.
func TestSetRateStopAndRestart(t *testing.T) {
	q := newQueue(t, evictionqueue.Config{QPS: 1, Burst: 1})
	run(t, q, []step{
		{0, add("a"), "true"},
		{0, add("b"), "true"},
		{0, add("c"), "true"},
		{0, setRate(0), "ok"},
		{0, rate(), "0"},
		{0, next(), "none"},
		{0, try(), "0 []"},
		{time.Hour, try(), "0 []"},
		{time.Hour, length(), "3"},
		{time.Hour, setRate(0), "ok"},
		{time.Hour, setRate(1), "ok"},
		{time.Hour, rate(), "1"},
		{time.Hour, try(), "0 []"}, // the stopped queue had no token: no burst on restart
		{time.Hour, next(), "1h0m1s"},
		{time.Hour + time.Second, try(), "1 [a]"},
		{time.Hour + 2*time.Second, try(), "1 [b]"},
	})
}

// TestNextDeadline: the later of the head's ProcessAt and the next token.
func TestNextDeadline(t *testing.T) {
	q := newQueue(t, evictionqueue.DefaultConfig())
	run(t, q, []step{
		{0, next(), "none"},
		{0, add("a"), "true"},
		{0, next(), "0s"}, // due and the bucket is full
		{0, tryFail(3 * time.Second), "1 [a]"},
		{0, next(), "10s"}, // due at 3s, token at 10s
		{0, remove("a"), "true"},
		{0, next(), "none"},
		{4 * time.Second, add("b"), "true"},
		{4 * time.Second, next(), "10s"},
		{10 * time.Second, tryFail(time.Minute), "1 [b]"},
		{10 * time.Second, next(), "1m10s"}, // token at 20s, due at 1m10s
		{time.Minute, next(), "1m10s"},
		{time.Hour, next(), "1m10s"}, // overdue: an instant in the past
		{time.Hour, try(), "1 [b]"},
		{time.Hour, next(), "none"},
	})
}

// TestNextDeadlineWhileInFlight: an item in flight is not pending.
func TestNextDeadlineWhileInFlight(t *testing.T) {
	q := newQueue(t, evictionqueue.DefaultConfig())
	q.Add(testutil.Epoch, "a", "")
	q.Try(testutil.Epoch, func(evictionqueue.Item[string]) (bool, time.Duration) {
		if d, ok := q.NextDeadline(); ok {
			t.Errorf("NextDeadline() in fn = %v, true, want false", rel(d))
		}
		if got := q.Len(); got != 0 {
			t.Errorf("Len() in fn = %d, want 0", got)
		}
		if got := q.State("a"); got != evictionqueue.KeyInFlight {
			t.Errorf("State(a) in fn = %v, want in-flight", got)
		}
		return false, 0
	})
}

// TestTimeGoingBackwards: an earlier now counts as no time elapsed. A bare
// rate.Limiter credits the same interval twice when a backwards AllowN
// succeeds (its "last" moves back), so the queue clamps every now to the
// latest one seen before the limiter sees it.
func TestTimeGoingBackwards(t *testing.T) {
	q := newQueue(t, evictionqueue.Config{QPS: 1, Burst: 3})
	run(t, q, []step{
		{0, add("a"), "true"},
		{10 * time.Second, try(), "1 [a]"}, // two tokens left
		{5 * time.Second, add("b"), "true"},
		{5 * time.Second, add("c"), "true"},
		{5 * time.Second, add("d"), "true"},
		{5 * time.Second, add("e"), "true"},
		{5 * time.Second, items(), "[b:10s/10s c:10s/10s d:10s/10s e:10s/10s]"},
		{5 * time.Second, try(), "2 [b c]"},
		{5 * time.Second, next(), "11s"},
		{11 * time.Second, try(), "1 [d]"}, // a bare limiter would have credited 6s: 3 tokens
		{11 * time.Second, tryFail(time.Second), "0 []"},
		{12 * time.Second, tryFail(time.Second), "1 [e]"},
		{0, items(), "[e:10s/13s]"},
		{0, setRate(2), "ok"}, // applied at 12s, the queue clock
		{0, next(), "13s"},
	})
}

// TestBareLimiterCreditsBackwardsTwice documents why the queue clamps now
// before the limiter sees it: a bare rate.Limiter moves its reference point
// back on a successful AllowN at an earlier time and then credits the same
// interval again. If this starts failing, rate.Limiter has changed and the
// clamp is merely redundant.
func TestBareLimiterCreditsBackwardsTwice(t *testing.T) {
	l := xrate.NewLimiter(1, 3)
	l.AllowN(testutil.At(10*time.Second), 1) // 2 tokens left, reference 10s
	l.AllowN(testutil.At(5*time.Second), 2)  // backwards: 0 left, reference 5s
	if got := l.TokensAt(testutil.At(11 * time.Second)); got != 3 {
		t.Errorf("bare limiter TokensAt(11s) = %v, want 3 (6s credited, 5s of them twice)", got)
	}
}

// TestExtremeTimes: instants are kept as nanoseconds since the now given to
// New, so anything earlier counts as that instant (time going backwards) and
// anything more than about 292 years later, or a huge retry, saturates
// rather than overflowing.
func TestExtremeTimes(t *testing.T) {
	q := newQueue(t, evictionqueue.Config{QPS: 1e6, Burst: 10})
	end := testutil.Epoch.Add(time.Duration(math.MaxInt64))
	q.Add(time.Time{}, "zero", "")
	q.Add(testutil.At(time.Second), "epoch+1s", "")
	its := q.Items()
	if len(its) != 2 || its[0].Key != "zero" || !its[0].AddedAt.Equal(testutil.Epoch) || !its[1].AddedAt.Equal(testutil.At(time.Second)) {
		t.Fatalf("Items() = %v, want zero@epoch then epoch+1s@+1s", its)
	}
	n := q.Try(testutil.At(time.Second), func(it evictionqueue.Item[string]) (bool, time.Duration) {
		return false, time.Duration(math.MaxInt64)
	})
	if n != 2 {
		t.Fatalf("Try = %d, want 2", n)
	}
	if d, ok := q.NextDeadline(); !ok || !d.Equal(end) {
		t.Fatalf("NextDeadline() = %v, %v, want %v (saturated)", d, ok, end)
	}
	far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	if n := q.Try(far, func(evictionqueue.Item[string]) (bool, time.Duration) { return true, 0 }); n != 2 {
		t.Fatalf("Try(year 3000) = %d, want 2", n)
	}
	if !q.Add(far, "far", "") {
		t.Fatal(`Add(year 3000, "far") = false`)
	}
	if its := q.Items(); len(its) != 1 || !its[0].AddedAt.Equal(end) {
		t.Fatalf("Items() = %v, want far clamped to %v", its, end)
	}
}

// TestClockBeforeUnixEpoch: a clock before 1970 works like any other. The
// queue used to store Unix nanoseconds and computed maxInt64 - n, which
// overflows for n < 0: a 1s retry was scheduled in the year 2262 (the item
// was in effect lost) and NextDeadline answered 2262 too.
func TestClockBeforeUnixEpoch(t *testing.T) {
	base := time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)
	q, err := evictionqueue.New[string](base, evictionqueue.Config{QPS: 1, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	q.Add(base, "a", "")
	if n := q.Try(base, func(evictionqueue.Item[string]) (bool, time.Duration) { return false, time.Second }); n != 1 {
		t.Fatalf("Try = %d, want 1", n)
	}
	if its := q.Items(); len(its) != 1 || !its[0].ProcessAt.Equal(base.Add(time.Second)) {
		t.Fatalf("Items() = %v, want a due at %v", its, base.Add(time.Second))
	}
	if d, ok := q.NextDeadline(); !ok || !d.Equal(base.Add(time.Second)) {
		t.Fatalf("NextDeadline() = %v, %v, want %v", d, ok, base.Add(time.Second))
	}
	if n := q.Try(base.Add(time.Second), func(evictionqueue.Item[string]) (bool, time.Duration) { return true, 0 }); n != 1 {
		t.Fatalf("Try(+1s) = %d, want 1", n)
	}
}

// TestZeroBasedVirtualClock: a simulation whose clock starts at the zero
// time.Time works. Instants used to be clamped to the years 1677-2262, so
// such a clock never advanced: the bucket never refilled and nothing after
// the first attempt was ever due.
func TestZeroBasedVirtualClock(t *testing.T) {
	var zero time.Time
	at := func(d time.Duration) time.Time { return zero.Add(d) }
	q, err := evictionqueue.New[string](zero, evictionqueue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	q.Add(zero, "a", "")
	q.Add(zero, "b", "")
	done := func(evictionqueue.Item[string]) (bool, time.Duration) { return true, 0 }
	if n := q.Try(zero, done); n != 1 {
		t.Fatalf("Try(+0) = %d, want 1", n)
	}
	if d, ok := q.NextDeadline(); !ok || !d.Equal(at(10*time.Second)) {
		t.Fatalf("NextDeadline() = %v, %v, want %v", d, ok, at(10*time.Second))
	}
	if n := q.Try(at(10*time.Second), done); n != 1 {
		t.Fatalf("Try(+10s) = %d, want 1", n)
	}
}

// TestSlowRateDeadline: NextDeadline is never early, even at rates where
// float rounding matters.
func TestSlowRateDeadline(t *testing.T) {
	for _, qps := range []float64{1e-9, 3e-7, 0.1, 1.0 / 3, 7, 1e9} {
		q := newQueue(t, evictionqueue.Config{QPS: qps, Burst: 1})
		q.Add(testutil.Epoch, "a", "")
		q.Add(testutil.Epoch, "b", "")
		q.Try(testutil.Epoch, func(evictionqueue.Item[string]) (bool, time.Duration) { return true, 0 })
		d, ok := q.NextDeadline()
		if !ok {
			t.Fatalf("qps %v: NextDeadline() = false", qps)
		}
		want := time.Duration(float64(time.Second) / qps)
		if diff := (d.Sub(testutil.Epoch) - want).Abs(); diff > time.Microsecond+want/1e9 {
			t.Errorf("qps %v: NextDeadline() = +%v, want about +%v", qps, d.Sub(testutil.Epoch), want)
		}
		// rate.Limiter rounds a wait under 1ns down to none, so the token
		// may come up to 1ns before the deadline, never 2ns.
		if n := q.Try(d.Add(-2*time.Nanosecond), func(evictionqueue.Item[string]) (bool, time.Duration) { return true, 0 }); n != 0 {
			t.Errorf("qps %v: Try(NextDeadline()-2ns) = %d, want 0", qps, n)
		}
		if n := q.Try(d, func(evictionqueue.Item[string]) (bool, time.Duration) { return true, 0 }); n != 1 {
			t.Errorf("qps %v: Try(NextDeadline()) = %d, want 1", qps, n)
		}
	}
}

// TestTimesKeepLocation: reported times are in the location given to New and
// equal to the instants passed in.
func TestTimesKeepLocation(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	now := testutil.Epoch.In(loc)
	q, err := evictionqueue.New[string](now, evictionqueue.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	q.Add(testutil.Epoch.Add(time.Second), "a", "uid-a") // UTC input
	var got evictionqueue.Item[string]
	q.Try(testutil.At(2*time.Second), func(it evictionqueue.Item[string]) (bool, time.Duration) {
		got = it
		return false, time.Second
	})
	if got.Key != "a" || got.UID != "uid-a" || got.AddedAt.Location() != loc || !got.AddedAt.Equal(testutil.At(time.Second)) ||
		!got.ProcessAt.Equal(testutil.At(time.Second)) {
		t.Errorf("fn got %+v, want a/uid-a added and due at +1s in %v", got, loc)
	}
	if its := q.Items(); len(its) != 1 || its[0].ProcessAt.Location() != loc || !its[0].ProcessAt.Equal(testutil.At(3*time.Second)) {
		t.Errorf("Items() = %+v, want a due at +3s in %v", its, loc)
	}
}

func TestNilFn(t *testing.T) {
	q := newQueue(t, evictionqueue.DefaultConfig())
	q.Add(testutil.Epoch, "a", "")
	if n := q.Try(testutil.Epoch, nil); n != 0 {
		t.Errorf("Try(nil) = %d, want 0", n)
	}
	if d, ok := q.NextDeadline(); !ok || !d.Equal(testutil.Epoch) {
		t.Errorf("NextDeadline() after Try(nil) = %v, %v, want epoch (no token taken)", d, ok)
	}
}

func TestKeyStateString(t *testing.T) {
	for s, want := range map[evictionqueue.KeyState]string{
		evictionqueue.KeyAbsent: "absent", evictionqueue.KeyPending: "pending",
		evictionqueue.KeyInFlight: "in-flight", evictionqueue.KeyDone: "done", 9: "KeyState(9)",
	} {
		if got := s.String(); got != want {
			t.Errorf("KeyState(%d).String() = %q, want %q", uint8(s), got, want)
		}
	}
}

func nan() float64         { return math.NaN() }
func inf(sign int) float64 { return math.Inf(sign) }
