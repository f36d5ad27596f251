package evictionqueue_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/evictionqueue"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// open is a rate limit that never runs out within a test.
var open = evictionqueue.Config{QPS: 1e6, Burst: 1 << 20}

// once returns a Try callback that applies inner to the first attempt of
// key and reports every other attempt done.
func once(key string, inner func(q *queue, it evictionqueue.Item[string]) (bool, time.Duration)) func(*queue, evictionqueue.Item[string]) (bool, time.Duration) {
	used := false
	return func(q *queue, it evictionqueue.Item[string]) (bool, time.Duration) {
		if it.Key == key && !used {
			used = true
			return inner(q, it)
		}
		return true, 0
	}
}

// TestReentrantRemoveCancelsRetry: upstream's Replace is a no-op for a value
// removed while fn ran; a Remove from inside fn likewise cancels the retry.
func TestReentrantRemoveCancelsRetry(t *testing.T) {
	q := newQueue(t, open)
	run(t, q, []step{
		{0, add("a"), "true"},
		{0, tryWith("remove self, retry", func(q *queue, it evictionqueue.Item[string]) (bool, time.Duration) {
			if !q.Remove(it.Key) {
				t.Errorf("Remove(%q) in fn = false, want true", it.Key)
			}
			return false, time.Second
		}), "1 [a]"},
		{0, state("a"), "absent"},
		{0, length(), "0"},
		{time.Hour, try(), "0 []"},
	})
}

// TestReentrantRemoveCancelsDone: a Remove from inside fn also cancels the
// done marking, so the key may be added again.
func TestReentrantRemoveCancelsDone(t *testing.T) {
	q := newQueue(t, open)
	run(t, q, []step{
		{0, add("a"), "true"},
		{0, tryWith("remove self, done", func(q *queue, it evictionqueue.Item[string]) (bool, time.Duration) {
			q.Remove(it.Key)
			return true, 0
		}), "1 [a]"},
		{0, state("a"), "absent"},
		{0, add("a"), "true"},
	})
}

// TestReAddDuringTryNotSwallowed: upstream's Try calls RemoveFromQueue after
// fn returns done; if fn removed and re-added its own value, that deletes the
// new heap entry while the set keeps the value, so the re-added item is
// silently treated as done (rate_limited_queue.go, RateLimitedTimedQueue.Try). Here it is a new pending item.
func TestReAddDuringTryNotSwallowed(t *testing.T) {
	for _, done := range []bool{true, false} {
		t.Run(fmt.Sprintf("done=%v", done), func(t *testing.T) {
			q := newQueue(t, evictionqueue.DefaultConfig())
			run(t, q, []step{
				{0, add("a"), "true"},
				{time.Second, tryWith("remove+add self", func(q *queue, it evictionqueue.Item[string]) (bool, time.Duration) {
					q.Remove(it.Key)
					if !q.Add(testutil.At(time.Second), it.Key, "uid-new") {
						t.Errorf("Add(%q) after Remove in fn = false, want true", it.Key)
					}
					return done, time.Minute
				}), "1 [a]"},
				{time.Second, state("a"), "pending"},
				{time.Second, items(), "[a:1s/1s]"},
				{time.Second, next(), "11s"},
				{11 * time.Second, tryWith("uid", func(_ *queue, it evictionqueue.Item[string]) (bool, time.Duration) {
					if it.UID != "uid-new" {
						t.Errorf("UID = %q, want uid-new", it.UID)
					}
					return true, 0
				}), "1 [a]"},
				{11 * time.Second, state("a"), "done"},
			})
		})
	}
}

// TestReentrantAddSelfRefused: the key being attempted is known (in flight),
// so Add refuses it, and the attempt's outcome still applies.
func TestReentrantAddSelfRefused(t *testing.T) {
	q := newQueue(t, open)
	run(t, q, []step{
		{0, add("a"), "true"},
		{0, tryWith("add self", func(q *queue, it evictionqueue.Item[string]) (bool, time.Duration) {
			if q.Add(testutil.Epoch, it.Key, "") {
				t.Errorf("Add(%q) in fn = true, want false (in flight)", it.Key)
			}
			if !q.Contains(it.Key) || q.State(it.Key) != evictionqueue.KeyInFlight {
				t.Errorf("Contains/State(%q) in fn = %v/%v, want true/in-flight", it.Key, q.Contains(it.Key), q.State(it.Key))
			}
			return false, time.Second
		}), "1 [a]"},
		{0, items(), "[a:0s/1s]"},
	})
}

// TestReentrantAddOther: items added from fn are ordinary items; one that
// is due is attempted by the same Try while tokens last.
func TestReentrantAddOther(t *testing.T) {
	q := newQueue(t, evictionqueue.Config{QPS: 1, Burst: 2})
	run(t, q, []step{
		{0, add("a"), "true"},
		{0, tryWith("add b, c", once("a", func(q *queue, it evictionqueue.Item[string]) (bool, time.Duration) {
			q.Add(testutil.Epoch, "b", "")
			q.Add(testutil.Epoch, "c", "")
			return true, 0
		})), "2 [a b]"},
		{0, items(), "[c:0s/0s]"},
	})
}

// TestReentrantTry: fn may call Try on the same queue; the nested call
// attempts the other due items with the same bucket, never the item in
// flight.
func TestReentrantTry(t *testing.T) {
	q := newQueue(t, evictionqueue.Config{QPS: 1, Burst: 3})
	var nested []string
	run(t, q, []step{
		{0, add("a"), "true"},
		{0, add("b"), "true"},
		{0, add("c"), "true"},
		{0, add("d"), "true"},
		{0, tryWith("nested Try", once("a", func(q *queue, it evictionqueue.Item[string]) (bool, time.Duration) {
			n := q.Try(testutil.Epoch, func(it evictionqueue.Item[string]) (bool, time.Duration) {
				nested = append(nested, it.Key)
				return true, 0
			})
			if n != 2 {
				t.Errorf("nested Try = %d, want 2", n)
			}
			return false, time.Second
		})), "1 [a]"},
		{0, items(), "[d:0s/0s a:0s/1s]"},
	})
	if fmt.Sprint(nested) != "[b c]" {
		t.Errorf("nested Try attempted %v, want [b c]", nested)
	}
}

// TestReentrantClear: a Clear from inside fn forgets the item in flight too:
// neither its retry nor its done marking survives.
func TestReentrantClear(t *testing.T) {
	for _, done := range []bool{true, false} {
		q := newQueue(t, open)
		run(t, q, []step{
			{0, add("a"), "true"},
			{0, add("b"), "true"},
			{0, tryWith("clear", once("a", func(q *queue, it evictionqueue.Item[string]) (bool, time.Duration) {
				q.Clear()
				return done, 0
			})), "1 [a]"},
			{0, state("a"), "absent"},
			{0, state("b"), "absent"},
			{0, length(), "0"},
			{time.Second, try(), "0 []"},
			{time.Second, add("a"), "true"},
		})
	}
}

// TestPanicInFnKeepsItem: an item whose callback panics is requeued as a
// retry, never lost, and the panic reaches the caller.
func TestPanicInFnKeepsItem(t *testing.T) {
	q := newQueue(t, open)
	q.Add(testutil.Epoch, "a", "")
	q.Add(testutil.Epoch, "b", "")
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recover() = %v, want boom", r)
			}
		}()
		q.Try(testutil.Epoch, func(evictionqueue.Item[string]) (bool, time.Duration) { panic("boom") })
	}()
	run(t, q, []step{
		{0, items(), "[b:0s/0s a:0s/1ns]"},
		{0, state("a"), "pending"},
		{time.Nanosecond, try(), "2 [b a]"},
	})
}

// TestConcurrentTryHandsOutOnce: concurrent Try callers, adders and
// removers never hand one item to two callbacks at once, and with
// everything done every key is attempted exactly once.
func TestConcurrentTryHandsOutOnce(t *testing.T) {
	const keys, workers = 2000, 4
	q := newQueue(t, open)
	var mu sync.Mutex
	inFlight := map[string]bool{}
	attempts := map[string]int{}
	fn := func(it evictionqueue.Item[string]) (bool, time.Duration) {
		mu.Lock()
		if inFlight[it.Key] {
			t.Errorf("%s handed to two callbacks at once", it.Key)
		}
		inFlight[it.Key] = true
		attempts[it.Key]++
		retry := attempts[it.Key] == 1 && len(it.Key)%2 == 0 // some keys fail once
		mu.Unlock()
		mu.Lock()
		delete(inFlight, it.Key)
		mu.Unlock()
		return !retry, 0
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < keys; i += workers {
				q.Add(testutil.Epoch, fmt.Sprintf("k%d", i), "")
				q.Try(testutil.At(time.Duration(i)), fn)
			}
		})
	}
	wg.Go(func() {
		for i := 0; i < keys; i++ {
			q.Contains(fmt.Sprintf("k%d", i))
			q.NextDeadline()
			q.Len()
		}
	})
	wg.Wait()
	q.Try(testutil.At(time.Hour), fn)
	for i := range keys {
		k := fmt.Sprintf("k%d", i)
		want := 1
		if len(k)%2 == 0 {
			want = 2
		}
		if attempts[k] != want || q.State(k) != evictionqueue.KeyDone {
			t.Fatalf("%s: %d attempts, state %v; want %d, done", k, attempts[k], q.State(k), want)
		}
	}
}

// TestUnfinishedCountsItemsInFlight: Len leaves out the item a Try callback
// holds; Unfinished counts it, on every way out of the callback (done,
// retry, Remove, Clear, panic).
func TestUnfinishedCountsItemsInFlight(t *testing.T) {
	now := testutil.Epoch
	tests := []struct {
		name  string
		fn    func(q *evictionqueue.Queue[string]) (bool, time.Duration)
		after int // Unfinished once Try returned
	}{
		{"done", func(*evictionqueue.Queue[string]) (bool, time.Duration) { return true, 0 }, 1},
		{"retry", func(*evictionqueue.Queue[string]) (bool, time.Duration) { return false, time.Second }, 2},
		{"removed", func(q *evictionqueue.Queue[string]) (bool, time.Duration) { q.Remove("a"); return false, 0 }, 1},
		{"cleared", func(q *evictionqueue.Queue[string]) (bool, time.Duration) { q.Clear(); return false, 0 }, 0},
		{"panic", func(*evictionqueue.Queue[string]) (bool, time.Duration) { panic("boom") }, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := evictionqueue.New[string](now, evictionqueue.Config{QPS: 1, Burst: 1})
			if err != nil {
				t.Fatal(err)
			}
			q.Add(now, "a", "")
			q.Add(now.Add(time.Hour), "b", "") // not due: stays pending
			func() {
				defer func() { _ = recover() }()
				q.Try(now, func(it evictionqueue.Item[string]) (bool, time.Duration) {
					if got := q.Len(); got != 1 {
						t.Errorf("Len() in the callback = %d, want 1", got)
					}
					if got := q.Unfinished(); got != 2 {
						t.Errorf("Unfinished() in the callback = %d, want 2", got)
					}
					return tt.fn(q)
				})
			}()
			if got := q.Unfinished(); got != tt.after {
				t.Errorf("Unfinished() after Try = %d, want %d", got, tt.after)
			}
		})
	}
}
