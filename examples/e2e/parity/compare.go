package parity

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// Options tune [Compare].
type Options struct {
	// Tolerance is how far apart the two controllers' times may be: when a
	// write was received and the time values it wrote. One monitor period
	// (the two controllers' passes are not in phase), plus what the
	// machine's noise needs.
	Tolerance time.Duration
	// FieldTolerance is added to Tolerance for time values stored in whole
	// seconds (conditions' times, taints' timeAdded, deletionTimestamp).
	FieldTolerance time.Duration
	// OrderFree compares the times of equivalent writes (same [Write.Class])
	// by rank instead of by object: for rate-limited queues whose order
	// among equal nodes is unspecified.
	OrderFree bool
}

// Difference is one way the two traces differ.
type Difference struct {
	// ID names the difference stably (no times, no values), for allow-lists:
	// "write patch nodes//n1 #1 request", "event Node /n1 RegisteredNode missing", ...
	ID string
	// Detail says what each side did.
	Detail string
}

func (d Difference) String() string { return d.ID + ": " + d.Detail }

// Compare lists the differences between the writes and Events of the
// upstream controller (want) and ours (got). Writes to the same object
// with the same verb are paired in order; their changes must be equal
// (time values within the tolerance), and so must their request shapes.
// Concurrent writes (within the tolerance of each other) may pair out of
// order: each controller has several workers, and two of them writing one
// node at the same moment (a NoSchedule and a NoExecute taint) land in
// either order, upstream as here.
func Compare(want, got Trace, opts Options) []Difference {
	var out []Difference
	add := func(id, format string, args ...any) {
		out = append(out, Difference{ID: id, Detail: fmt.Sprintf(format, args...)})
	}
	group := func(ws []Write) (map[string][]Write, []string) {
		m := map[string][]Write{}
		for _, w := range ws {
			k := w.Verb + " " + w.Object
			m[k] = append(m[k], w)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		return m, keys
	}
	wm, wk := group(want.Writes)
	gm, gk := group(got.Writes)
	keys := union(wk, gk)
	for _, k := range keys {
		ws, gs := mergeReordered(wm[k], alignConcurrent(wm[k], gm[k], opts.Tolerance), opts.Tolerance)
		for i := range max(len(ws), len(gs)) {
			id := fmt.Sprintf("write %s #%d", k, i+1)
			switch {
			case i >= len(gs):
				add(id+" missing", "upstream at %s: %s; ours: none", dur(ws[i].At), changeList(&ws[i]))
				continue
			case i >= len(ws):
				add(id+" extra", "ours at %s: %s; upstream: none", dur(gs[i].At), changeList(&gs[i]))
				continue
			}
			w, g := &ws[i], &gs[i]
			timed := !opts.OrderFree && !w.Setup && !g.Setup
			if timed && absDur(w.At-g.At) > opts.Tolerance {
				add(id+" time", "upstream at %s, ours at %s (tolerance %v)", dur(w.At), dur(g.At), opts.Tolerance)
			}
			for _, p := range union(keysOf(w.Changes), keysOf(g.Changes)) {
				wv, wok := w.Changes[p]
				gv, gok := g.Changes[p]
				pid := id + " field " + p
				switch {
				case !gok:
					add(pid+" missing", "upstream sets %s; ours leaves it", wv)
				case !wok:
					add(pid+" extra", "ours sets %s; upstream leaves it", gv)
				case wv != gv:
					add(pid+" value", "upstream %s, ours %s", wv, gv)
				case wv == TimeValue && timed:
					if d := absDur(w.Times[p] - g.Times[p]); d > opts.Tolerance+opts.FieldTolerance {
						add(pid+" time", "upstream %s, ours %s (tolerance %v)", dur(w.Times[p]), dur(g.Times[p]), opts.Tolerance+opts.FieldTolerance)
					}
				}
			}
			if !slices.Equal(w.Request, g.Request) {
				add(id+" request", "upstream sends %v, ours %v", w.Request, g.Request)
			}
		}
	}
	if opts.OrderFree {
		out = append(out, compareByRank(want.Writes, got.Writes, opts)...)
	}

	we, ge := eventMap(want.Events), eventMap(got.Events)
	for _, k := range union(keysOf(we), keysOf(ge)) {
		w, g := we[k], ge[k]
		id := "event " + k
		switch {
		case g == nil:
			add(id+" missing", "upstream %s %q ×%d from %s at %s; ours: none", w.Type, w.Messages, w.Count, w.Source, dur(w.First))
			continue
		case w == nil:
			add(id+" extra", "ours %s %q ×%d from %s at %s; upstream: none", g.Type, g.Messages, g.Count, g.Source, dur(g.First))
			continue
		}
		if w.Type != g.Type {
			add(id+" type", "upstream %s, ours %s", w.Type, g.Type)
		}
		if w.Source != g.Source {
			add(id+" source", "upstream %s, ours %s", w.Source, g.Source)
		}
		if !slices.Equal(w.Messages, g.Messages) {
			add(id+" message", "upstream %q, ours %q", w.Messages, g.Messages)
		}
		if w.Count != g.Count {
			add(id+" count", "upstream %d, ours %d", w.Count, g.Count)
		}
		if !opts.OrderFree && !w.Setup && !g.Setup && absDur(w.First-g.First) > opts.Tolerance {
			add(id+" time", "upstream first at %s, ours at %s (tolerance %v)", dur(w.First), dur(g.First), opts.Tolerance)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// alignConcurrent returns got reordered so that where got's i-th write
// differs from want's, a later write of got within tolerance of it (a
// concurrent one) that is the same as want's i-th takes its place.
func alignConcurrent(want, got []Write, tolerance time.Duration) []Write {
	got = slices.Clone(got)
	for i := range min(len(want), len(got)) {
		if sameWrite(&want[i], &got[i]) {
			continue
		}
		for j := i + 1; j < len(got) && got[j].At-got[i].At <= tolerance; j++ {
			if sameWrite(&want[i], &got[j]) {
				g := got[j]
				copy(got[i+1:j+1], got[i:j])
				got[i] = g
				break
			}
		}
	}
	return got
}

// mergeReordered handles what alignConcurrent cannot: concurrent writes
// that landed in the other order, each sending what was not yet there.
// Two workers patching one node's atomic taint list at the same moment (a
// NoSchedule and a NoExecute taint) do that: the first patch sends its own
// taint, the second sends both, so neither write of one side equals a
// write of the other. Where want's and got's i-th writes differ and the
// next n ≥ 2 writes on each side are concurrent (all within tolerance of
// the run's first write) and add up to the same thing (the same changes,
// later writes overriding earlier ones, and the same fields sent), each
// run is replaced by one write at its first write's time, so the two
// compare equal and every other difference is still reported.
func mergeReordered(want, got []Write, tolerance time.Duration) ([]Write, []Write) {
	for i := 0; i < min(len(want), len(got)); i++ {
		if sameWrite(&want[i], &got[i]) {
			continue
		}
		for n := 2; i+n <= len(want) && i+n <= len(got); n++ {
			if !concurrent(want[i:i+n], tolerance) || !concurrent(got[i:i+n], tolerance) {
				break
			}
			w, g := merged(want[i:i+n]), merged(got[i:i+n])
			if sameWrite(&w, &g) {
				want = slices.Replace(slices.Clone(want), i, i+n, w)
				got = slices.Replace(slices.Clone(got), i, i+n, g)
				break
			}
		}
	}
	return want, got
}

// concurrent reports whether every write of ws is within tolerance of the
// first.
func concurrent(ws []Write, tolerance time.Duration) bool {
	for _, w := range ws[1:] {
		if absDur(w.At-ws[0].At) > tolerance {
			return false
		}
	}
	return true
}

// merged is the writes ws as one: the first's verb, object, time and code;
// the changes and their times of all, later ones overriding earlier ones;
// the union of the fields they sent. It is Setup when any of them is.
func merged(ws []Write) Write {
	out := ws[0]
	out.Changes, out.Times, out.Request = map[string]string{}, map[string]time.Duration{}, nil
	for _, w := range ws {
		maps.Copy(out.Changes, w.Changes)
		maps.Copy(out.Times, w.Times)
		out.Request = append(out.Request, w.Request...)
		out.Setup = out.Setup || w.Setup
	}
	slices.Sort(out.Request)
	out.Request = slices.Compact(out.Request)
	return out
}

// sameWrite reports whether two writes changed the same fields to the same
// values with the same request shape (times aside).
func sameWrite(a, b *Write) bool {
	return maps.Equal(a.Changes, b.Changes) && slices.Equal(a.Request, b.Request)
}

// compareByRank compares, per class of equivalent writes, the k-th
// upstream write's time with the k-th of ours.
func compareByRank(want, got []Write, opts Options) []Difference {
	wt, gt := timesBy(want, (*Write).Class), timesBy(got, (*Write).Class)
	var out []Difference
	for _, c := range union(keysOf(wt), keysOf(gt)) {
		w, g := wt[c], gt[c]
		for i := range min(len(w), len(g)) {
			if absDur(w[i]-g[i]) > opts.Tolerance {
				out = append(out, Difference{
					ID:     fmt.Sprintf("rank %s #%d time", c, i+1),
					Detail: fmt.Sprintf("upstream at %s, ours at %s (tolerance %v)", dur(w[i]), dur(g[i]), opts.Tolerance),
				})
			}
		}
	}
	return out
}

// Known is one documented difference: every [Difference] whose ID matches
// Pattern is expected, for Reason.
type Known struct {
	// Pattern matches the Difference's ID.
	Pattern *regexp.Regexp
	// Detail, when set, must match its Detail too (to tell apart two kinds
	// of write whose IDs look alike, such as a node's taint and label
	// patches).
	Detail *regexp.Regexp
	Reason string
}

// Split separates the differences some entry of known explains (with that
// entry's index) from the others.
func Split(diffs []Difference, known []Known) (explained map[int][]Difference, unexplained []Difference) {
	explained = map[int][]Difference{}
	for _, d := range diffs {
		hit := false
		for i, k := range known {
			if k.Pattern.MatchString(d.ID) && (k.Detail == nil || k.Detail.MatchString(d.Detail)) {
				explained[i] = append(explained[i], d)
				hit = true
				break
			}
		}
		if !hit {
			unexplained = append(unexplained, d)
		}
	}
	return explained, unexplained
}

// Summary is a readable listing of a trace: one line per write and Event.
func (t *Trace) Summary() string {
	var b strings.Builder
	ws := slices.Clone(t.Writes)
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].At < ws[j].At })
	for i := range ws {
		w := &ws[i]
		fmt.Fprintf(&b, "%9s %-6s %-40s %s", dur(w.At), w.Verb, w.Object, changeList(w))
		if len(w.Request) > 0 {
			fmt.Fprintf(&b, " request %v", w.Request)
		}
		if w.Setup {
			b.WriteString(" (setup)")
		}
		b.WriteByte('\n')
	}
	for i := range t.Failed {
		w := &t.Failed[i]
		fmt.Fprintf(&b, "%9s %-6s %-40s FAILED HTTP %d\n", dur(w.At), w.Verb, w.Object, w.Code)
	}
	for _, e := range t.Events {
		fmt.Fprintf(&b, "%9s event  %-40s %s %q ×%d from %s\n", dur(e.First), e.Key, e.Type, e.Messages, e.Count, e.Source)
	}
	return b.String()
}

func changeList(w *Write) string {
	keys := keysOf(w.Changes)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := w.Changes[k]
		if v == TimeValue {
			v = "t" + dur(w.Times[k])
		}
		parts = append(parts, k+"="+v)
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func eventMap(evs []*EventRecord) map[string]*EventRecord {
	m := make(map[string]*EventRecord, len(evs))
	for _, e := range evs {
		m[e.Key] = e
	}
	return m
}

// timesBy groups the times of the writes (setup writes left out) by key,
// each group sorted.
func timesBy(ws []Write, key func(*Write) string) map[string][]time.Duration {
	m := map[string][]time.Duration{}
	for i := range ws {
		if !ws[i].Setup {
			k := key(&ws[i])
			m[k] = append(m[k], ws[i].At)
		}
	}
	for _, ts := range m {
		slices.Sort(ts)
	}
	return m
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func union(a, b []string) []string {
	out := append(append([]string(nil), a...), b...)
	sort.Strings(out)
	return slices.Compact(out)
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// dur formats an offset from the origin as +1.234s.
func dur(d time.Duration) string {
	return fmt.Sprintf("%+.3fs", d.Seconds())
}

// MaxSkew is the largest time difference between paired writes (not
// setup) and Events of the two traces, and what it was between: how close
// the timings are, below the tolerance. Order-free comparisons pair by rank.
func MaxSkew(want, got Trace, orderFree bool) (time.Duration, string) {
	var worst time.Duration
	what := "nothing paired"
	consider := func(d time.Duration, w string) {
		if absDur(d) >= worst {
			worst, what = absDur(d), w
		}
	}
	key := func(w *Write) string { return w.Verb + " " + w.Object }
	if orderFree {
		key = (*Write).Class
	}
	wm, gm := timesBy(want.Writes, key), timesBy(got.Writes, key)
	for k, ws := range wm {
		gs := gm[k]
		for i := range min(len(ws), len(gs)) {
			consider(gs[i]-ws[i], fmt.Sprintf("write %s #%d", k, i+1))
		}
	}
	if !orderFree {
		ge := eventMap(got.Events)
		for _, w := range want.Events {
			if g := ge[w.Key]; g != nil && !w.Setup && !g.Setup {
				consider(g.First-w.First, "event "+w.Key)
			}
		}
	}
	return worst, what
}
