package audit

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// Reader merges the audit events of several inputs into one stream in
// stageTimestamp order. It reads line by line and holds at most
// Limits.MaxBuffered events; it runs no goroutines and reads no clock.
// A Reader is not safe for concurrent use.
type Reader struct {
	lim     Limits
	inputs  []*input
	merge   []*input // min-heap of inputs by their head event
	advance []*input // inputs whose head was returned and must be refilled
	dec     *decoder
	closers []io.Closer

	primed    bool
	anchored  bool
	anchor    time.Time
	anchorPos Position

	buffered      int
	bufferedBytes int64
	returned      int64
	err           error // sticky: io.EOF, a fatal error or errClosed

	skips     [numSkipReasons]SkipStats
	bad       int64
	dedup     dedup
	resources map[ResourceKey]int64
	warnings  []string
}

// item is a buffered event; seq orders events of one input with equal
// timestamps by line (and by position within a line).
type item struct {
	ev   *Event
	seq  int64
	size int64 // the event's JSON text length, for MaxBufferedBytes
}

func (a item) less(b item) bool {
	if c := a.ev.StageTimestamp.Compare(b.ev.StageTimestamp); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

// input is one file and its reorder buffer.
type input struct {
	idx    int
	src    io.Reader
	zr     *gzip.Reader
	gz     bool
	lr     lineReader
	inited bool
	eof    bool
	err    error // the read error that ended the input
	errOut bool  // err was returned by Next

	buf         []item // min-heap
	newest      time.Time
	newestLine  int64 // the line of the newest event
	released    time.Time
	hasReleased bool
	head        item
	seq         int64
	decoded     int64 // audit events decoded, including filtered ones
	nonBlank    int64
	stats       FileStats
}

var errClosed = errors.New("audit: Next called after Close")

// Open opens files (plain or gzip, detected by their first bytes) and
// returns a Reader merging them. More than lim.MaxFiles files is an error
// wrapping ErrLimit.
func Open(files []string, lim Limits) (*Reader, error) {
	lim, err := lim.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(files) > lim.MaxFiles {
		return nil, limitErr("MaxFiles", lim.MaxFiles, "%d files given", len(files))
	}
	rs := make([]io.Reader, 0, len(files))
	closers := make([]io.Closer, 0, len(files))
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			for _, c := range closers {
				_ = c.Close()
			}
			return nil, fmt.Errorf("audit: %w", err)
		}
		rs = append(rs, f)
		closers = append(closers, f)
	}
	r, err := NewReader(files, rs, lim)
	if err != nil {
		for _, c := range closers {
			_ = c.Close()
		}
		return nil, err
	}
	r.closers = closers
	return r, nil
}

// NewReader returns a Reader merging rs; names[i] names rs[i] in
// positions, errors and Stats. Each reader may be plain or gzip. Close
// does not close rs.
func NewReader(names []string, rs []io.Reader, lim Limits) (*Reader, error) {
	lim, err := lim.withDefaults()
	if err != nil {
		return nil, err
	}
	switch {
	case len(names) != len(rs):
		return nil, fmt.Errorf("audit: %d names for %d readers", len(names), len(rs))
	case len(rs) == 0:
		return nil, errors.New("audit: no inputs")
	case len(rs) > lim.MaxFiles:
		return nil, limitErr("MaxFiles", lim.MaxFiles, "%d inputs given", len(rs))
	}
	r := &Reader{lim: lim, dec: newDecoder(), dedup: dedup{max: lim.MaxDedup}}
	for i, src := range rs {
		in := &input{idx: i, src: src}
		in.stats.Name = names[i]
		r.inputs = append(r.inputs, in)
	}
	return r, nil
}

// Next returns the next event in stageTimestamp order (ties in input
// order, then line order), or io.EOF at the end. Each event is new: the
// caller may keep it. Apart from decoding, an event costs O(log inputs)
// in the merge and O(log buffered) in its input's reorder buffer.
//
// An error wrapping ErrLimit, ErrUnsupportedFormat or ErrNotAuditLog ends
// the stream: later calls return it again. An *InputError (for example a
// truncated gzip input) is returned once, after the events read from that
// input; calling Next again continues with the other inputs.
func (r *Reader) Next() (*Event, error) {
	if r.err != nil {
		return nil, r.err
	}
	if !r.primed {
		if err := r.prime(); err != nil {
			r.err = err
			return nil, err
		}
	}
	for {
		for len(r.advance) > 0 {
			in := r.advance[0]
			if err := r.fill(in); err != nil {
				var ie *InputError
				if errors.As(err, &ie) {
					r.advance = r.advance[1:]
					return nil, err
				}
				r.err = err
				return nil, err
			}
			r.advance = r.advance[1:]
		}
		if len(r.merge) == 0 {
			r.finish()
			r.err = io.EOF
			return nil, io.EOF
		}
		in := r.popInput()
		r.advance = append(r.advance, in)
		ev := in.head.ev
		in.head = item{}
		if first, dup := r.dedup.seen(ev); dup {
			if err := r.skip(in, ev.Source, SkipDuplicate, func() string {
				return fmt.Sprintf("auditID %s stage %s already returned from %s", ev.AuditID, ev.Stage, first)
			}); err != nil {
				r.err = err
				return nil, err
			}
			continue
		}
		if r.returned >= r.lim.MaxEvents {
			r.err = limitErr("MaxEvents", r.lim.MaxEvents, "at %s", ev.Source)
			return nil, r.err
		}
		r.returned++
		in.stats.Events++
		r.countResource(ev)
		return ev, nil
	}
}

// primeEvents is how many events of each input are read to choose the
// anchor.
const primeEvents = 16

// prime reads the first events of each input and anchors the stream at
// the earliest of them, leaving out those more than MaxSpan from their
// median: a wild first line (an apiserver started before its clock was
// set) does not anchor the stream, it is skipped as out of span.
func (r *Reader) prime() error {
	target := max(1, min(primeEvents, r.lim.MaxBuffered/len(r.inputs)))
	var all []time.Time
	for _, in := range r.inputs {
		for len(in.buf) < target && !in.eof {
			if err := r.readLine(in); err != nil {
				return err
			}
		}
		for _, it := range in.buf {
			all = append(all, it.ev.StageTimestamp)
		}
	}
	r.primed = true
	if len(all) > 0 {
		slices.SortFunc(all, time.Time.Compare)
		median := all[len(all)/2]
		for _, in := range r.inputs {
			for _, it := range in.buf {
				ts := it.ev.StageTimestamp
				if d := ts.Sub(median); d > r.lim.MaxSpan || -d > r.lim.MaxSpan {
					continue
				}
				if !r.anchored || ts.Before(r.anchor) || (ts.Equal(r.anchor) && it.ev.Source.Line < r.anchorPos.Line && it.ev.Source.File == r.anchorPos.File) {
					r.anchored, r.anchor, r.anchorPos = true, ts, it.ev.Source
				}
			}
		}
	}
	for _, in := range r.inputs {
		primed := in.buf
		in.buf = nil
		for _, it := range primed {
			if reason := r.spanCheck(it.ev); reason != "" {
				r.buffered--
				r.bufferedBytes -= it.size
				in.stats.Read--
				if err := r.skip(in, it.ev.Source, SkipOutOfSpan, func() string { return reason }); err != nil {
					return err
				}
				continue
			}
			in.push(it)
		}
		in.rangeReset()
		r.advance = append(r.advance, in)
	}
	return nil
}

// rangeReset recomputes the time range and newest event of the buffered
// events (after the anchor check dropped some).
func (in *input) rangeReset() {
	in.stats.First, in.stats.Last, in.newest = time.Time{}, time.Time{}, time.Time{}
	for _, it := range in.buf {
		in.note(it.ev.StageTimestamp, it.ev.Source.Line)
	}
}

func (in *input) note(ts time.Time, line int64) {
	if in.stats.First.IsZero() || ts.Before(in.stats.First) {
		in.stats.First = ts
	}
	if ts.After(in.stats.Last) {
		in.stats.Last = ts
	}
	if ts.After(in.newest) {
		in.newest, in.newestLine = ts, line
	}
}

// spanCheck returns why ev is outside the span, or "".
func (r *Reader) spanCheck(ev *Event) string {
	ts := ev.StageTimestamp
	if d := ts.Sub(r.anchor); d > r.lim.MaxSpan {
		return fmt.Sprintf("stageTimestamp %s is %v after the first event (%s at %s), beyond Limits.MaxSpan=%v",
			ts.Format(time.RFC3339Nano), d, r.anchorPos, r.anchor.Format(time.RFC3339Nano), r.lim.MaxSpan)
	} else if -d > r.lim.ReorderWindow {
		return fmt.Sprintf("stageTimestamp %s is %v before the first event (%s at %s), beyond Limits.ReorderWindow=%v",
			ts.Format(time.RFC3339Nano), -d, r.anchorPos, r.anchor.Format(time.RFC3339Nano), r.lim.ReorderWindow)
	}
	return ""
}

// fill reads in until its earliest buffered event can be released (an
// event ReorderWindow newer was read, or the input ended) and puts it on
// the merge heap.
func (r *Reader) fill(in *input) error {
	for {
		if len(in.buf) > 0 && (in.eof || !in.buf[0].ev.StageTimestamp.After(in.newest.Add(-r.lim.ReorderWindow))) {
			it := in.pop()
			r.buffered--
			r.bufferedBytes -= it.size
			in.released, in.hasReleased = it.ev.StageTimestamp, true
			in.head = it
			r.pushInput(in)
			return nil
		}
		if in.eof {
			if in.err != nil && !in.errOut {
				in.errOut = true
				return &InputError{Pos: Position{File: in.stats.Name, Line: in.lr.line}, Err: in.err}
			}
			return nil
		}
		if err := r.readLine(in); err != nil {
			return err
		}
	}
}

// open detects gzip and sets up the line reader.
func (r *Reader) open(in *input) error {
	in.inited = true
	br := bufio.NewReaderSize(in.src, readBufSize)
	magic, err := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		in.gz = true
		zr, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		in.zr = zr
		br = bufio.NewReaderSize(zr, readBufSize)
	} else if err != nil && err != io.EOF {
		return err
	}
	in.lr = lineReader{br: br, max: r.lim.MaxLineBytes}
	return nil
}

// end marks in as ended by err (nil or io.EOF for a clean end).
func (r *Reader) end(in *input, err error) error {
	in.eof = true
	if in.zr != nil {
		_ = in.zr.Close()
	}
	if err == nil || err == io.EOF {
		if in.nonBlank > 0 && in.decoded == 0 {
			return r.notAudit(in)
		}
		return nil
	}
	if in.gz && errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("%w (%v)", ErrTruncated, err)
	}
	in.err = err
	in.stats.Err = err
	r.warnings = append(r.warnings, fmt.Sprintf("%s: ended after line %d: %v", in.stats.Name, in.lr.line, err))
	return nil
}

func (r *Reader) notAudit(in *input) error {
	first, line := "", int64(0)
	for _, s := range r.skips {
		for _, k := range s.First {
			if k.Pos.File == in.stats.Name && (first == "" || k.Pos.Line < line) {
				first, line = "; first skipped: "+k.String(), k.Pos.Line
			}
		}
	}
	return fmt.Errorf("%w: %w: Limits.SniffLines=%d: no audit event in the first %d lines of %s%s",
		ErrNotAuditLog, ErrLimit, r.lim.SniffLines, in.lr.line, in.stats.Name, first)
}

// readLine reads one line of in and buffers its events. The error is
// fatal.
func (r *Reader) readLine(in *input) error {
	if !in.inited {
		if err := r.open(in); err != nil {
			return r.end(in, err)
		}
	}
	line, long, err := in.lr.next()
	if err != nil {
		return r.end(in, err)
	}
	in.stats.Lines = in.lr.line
	pos := Position{File: in.stats.Name, Line: in.lr.line}
	switch {
	case long > 0:
		in.nonBlank++
		err = r.skip(in, pos, SkipLongLine, func() string {
			return fmt.Sprintf("line of %d bytes is longer than Limits.MaxLineBytes=%d", long, r.lim.MaxLineBytes)
		})
	case len(line) == 0:
		err = r.skip(in, pos, SkipBlank, func() string { return "blank line" })
	default:
		in.nonBlank++
		err = r.decodeLine(in, pos, line)
	}
	if err != nil {
		return err
	}
	if in.decoded == 0 && in.nonBlank >= r.lim.SniffLines {
		return r.notAudit(in)
	}
	return nil
}

func (r *Reader) decodeLine(in *input, pos Position, line []byte) error {
	format, err := r.dec.line(line)
	if err != nil {
		return fmt.Errorf("audit: %s: %w", pos, err)
	}
	if format != FormatUnknown {
		switch {
		case in.stats.Format == FormatUnknown:
			in.stats.Format = format
		case in.stats.Format != format && !in.stats.Mixed:
			in.stats.Mixed = true
			r.warnings = append(r.warnings, fmt.Sprintf("%s: mixes formats: %s, then %s at line %d", in.stats.Name, in.stats.Format, format, pos.Line))
		}
	}
	for i := range r.dec.out {
		sl := r.dec.out[i]
		if sl.ev == nil {
			if sl.reason == SkipStage || sl.reason == SkipZeroTime {
				in.decoded++
			}
			if err := r.skip(in, pos, sl.reason, sl.detail); err != nil {
				return err
			}
			continue
		}
		in.decoded++
		if err := r.accept(in, pos, sl.ev, int64(sl.size)); err != nil {
			return err
		}
	}
	return nil
}

func (sl *slot) detail() string {
	var s string
	switch {
	case sl.reason == SkipStage:
		s = "stage " + sl.stage
	case sl.reason == SkipControl:
		s = "CloudWatch CONTROL_MESSAGE"
	case sl.err != nil:
		s = sl.err.Error()
	}
	if sl.sub >= 0 {
		s = fmt.Sprintf("logEvents[%d]: %s", sl.sub, s)
	}
	return s
}

// accept applies the time checks to ev and buffers it.
func (r *Reader) accept(in *input, pos Position, ev *Event, size int64) error {
	ev.Source = pos
	ts := ev.StageTimestamp
	if r.anchored {
		if reason := r.spanCheck(ev); reason != "" {
			return r.skip(in, pos, SkipOutOfSpan, func() string { return reason })
		}
	}
	if in.hasReleased && ts.Before(in.released) {
		return r.skip(in, pos, SkipOutOfOrder, func() string {
			return fmt.Sprintf("stageTimestamp %s is out of order by %v, beyond Limits.ReorderWindow=%v (the newest event read is line %d at %s)",
				ts.Format(time.RFC3339Nano), in.newest.Sub(ts), r.lim.ReorderWindow, in.newestLine, in.newest.Format(time.RFC3339Nano))
		})
	}
	if r.buffered >= r.lim.MaxBuffered {
		return limitErr("MaxBuffered", r.lim.MaxBuffered, "%s: too many events within Limits.ReorderWindow=%v of each other", pos, r.lim.ReorderWindow)
	}
	if r.bufferedBytes+size > r.lim.MaxBufferedBytes {
		return limitErr("MaxBufferedBytes", r.lim.MaxBufferedBytes, "%s: too many bytes of events within Limits.ReorderWindow=%v of each other", pos, r.lim.ReorderWindow)
	}
	in.push(item{ev: ev, seq: in.seq, size: size})
	in.seq++
	r.buffered++
	r.bufferedBytes += size
	in.stats.Read++
	in.note(ts, pos.Line)
	return nil
}

// skip counts a skipped line; detail is called only for kept samples.
func (r *Reader) skip(in *input, pos Position, reason SkipReason, detail func() string) error {
	in.stats.Skipped++
	if reason.Bad() {
		in.stats.BadSkips++
	}
	st := &r.skips[reason]
	st.Reason = reason
	st.Count++
	if len(st.First) < MaxSkipSamples {
		st.First = append(st.First, Skip{Pos: pos, Reason: reason, Detail: detail()})
	}
	if !reason.Bad() {
		return nil
	}
	r.bad++
	if r.bad > r.lim.MaxSkips {
		return limitErr("MaxSkips", r.lim.MaxSkips, "too many bad lines; the last: %s", Skip{Pos: pos, Reason: reason, Detail: detail()})
	}
	return nil
}

func (r *Reader) countResource(ev *Event) {
	if ev.ObjectRef == nil {
		return
	}
	k := ResourceKey{APIGroup: ev.ObjectRef.APIGroup, Resource: ev.ObjectRef.Resource, Subresource: ev.ObjectRef.Subresource}
	if r.resources == nil {
		r.resources = make(map[ResourceKey]int64)
	}
	if _, ok := r.resources[k]; !ok && len(r.resources) >= maxResourceKeys-1 {
		k = ResourceKey{Resource: "(other)"}
	}
	r.resources[k]++
}

// finish adds the warnings that need every input read.
func (r *Reader) finish() {
	var with []*input
	for _, in := range r.inputs {
		if in.stats.Read > 0 {
			with = append(with, in)
		}
	}
	if len(with) < 2 {
		return
	}
	slack := r.lim.OverlapSlack
	for _, a := range with {
		touches := false
		for _, b := range with {
			if a != b && !a.stats.First.After(b.stats.Last.Add(slack)) && !b.stats.First.After(a.stats.Last.Add(slack)) {
				touches = true
				break
			}
		}
		if !touches {
			r.warnings = append(r.warnings, fmt.Sprintf("%s: its events (%s to %s) do not overlap any other input's within Limits.OverlapSlack=%v: another cluster's or another day's log?",
				a.stats.Name, a.stats.First.Format(time.RFC3339Nano), a.stats.Last.Format(time.RFC3339Nano), slack))
		}
	}
}

// Stats returns a copy of the counts so far. Warnings about inputs whose
// time ranges do not overlap are added once Next has returned io.EOF.
func (r *Reader) Stats() Stats {
	s := Stats{Events: r.returned, BadSkips: r.bad}
	for _, in := range r.inputs {
		s.Files = append(s.Files, in.stats)
	}
	for _, k := range r.skips {
		if k.Count > 0 {
			k.First = append([]Skip(nil), k.First...)
			s.Skipped = append(s.Skipped, k)
		}
	}
	if r.resources != nil {
		s.Resources = make(map[ResourceKey]int64, len(r.resources))
		for k, v := range r.resources {
			s.Resources[k] = v
		}
	}
	s.Warnings = append([]string(nil), r.warnings...)
	return s
}

// Close releases the inputs opened by Open. Later calls to Next return an
// error.
func (r *Reader) Close() error {
	var first error
	for _, in := range r.inputs {
		if in.zr != nil {
			_ = in.zr.Close()
		}
		in.buf = nil
	}
	for _, c := range r.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	r.closers = nil
	if r.err == nil || r.err == io.EOF {
		r.err = errClosed
	}
	return first
}

// The reorder buffer: a binary min-heap of items, O(log n) push and pop.

func (in *input) push(it item) {
	in.buf = append(in.buf, it)
	h := in.buf
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (in *input) pop() item {
	h := in.buf
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = item{}
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h[l].less(h[m]) {
			m = l
		}
		if l+1 < n && h[l+1].less(h[m]) {
			m = l + 1
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	in.buf = h
	return top
}

// The merge: a min-heap of inputs by (head stageTimestamp, input index),
// O(log inputs) per event.

func inputLess(a, b *input) bool {
	if c := a.head.ev.StageTimestamp.Compare(b.head.ev.StageTimestamp); c != 0 {
		return c < 0
	}
	return a.idx < b.idx
}

func (r *Reader) pushInput(in *input) {
	r.merge = append(r.merge, in)
	h := r.merge
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !inputLess(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (r *Reader) popInput() *input {
	h := r.merge
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = nil
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && inputLess(h[l], h[m]) {
			m = l
		}
		if l+1 < n && inputLess(h[l+1], h[m]) {
			m = l + 1
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	r.merge = h
	return top
}

// dedup remembers the (auditID, stage) keys returned at the current
// stageTimestamp. Copies of one event (the same file given twice,
// overlapping exports, an event in two envelopes) have the same
// stageTimestamp, and the merge returns events in stageTimestamp order, so
// every copy is returned within the run of events at that timestamp; the
// set is forgotten when the timestamp moves on. Memory is bounded by the
// longest run of equal timestamps, and at most max keys: a run longer than
// that starts over (later repeats in it are not caught).
type dedup struct {
	max  int
	ts   time.Time
	keys []dedupEntry          // the run, searched linearly while short
	m    map[dedupKey]Position // the run's index once it is long
}

type dedupKey struct{ id, stage string }

type dedupEntry struct {
	key dedupKey
	pos Position
}

// dedupScan is the run length up to which keys are searched linearly.
const dedupScan = 16

// seen reports whether ev's key was returned in the current run (and
// where), and remembers it otherwise. Events without an auditID are never
// duplicates.
func (d *dedup) seen(ev *Event) (Position, bool) {
	if !ev.StageTimestamp.Equal(d.ts) {
		d.ts = ev.StageTimestamp
		d.reset()
	}
	if ev.AuditID == "" {
		return Position{}, false
	}
	k := dedupKey{ev.AuditID, ev.Stage}
	if d.m != nil {
		if p, ok := d.m[k]; ok {
			return p, true
		}
	} else {
		for _, e := range d.keys {
			if e.key == k {
				return e.pos, true
			}
		}
	}
	if len(d.keys) >= d.max {
		d.reset()
	}
	d.keys = append(d.keys, dedupEntry{k, ev.Source})
	switch {
	case d.m != nil:
		d.m[k] = ev.Source
	case len(d.keys) > dedupScan:
		d.m = make(map[dedupKey]Position, 2*len(d.keys))
		for _, e := range d.keys {
			d.m[e.key] = e.pos
		}
	}
	return Position{}, false
}

func (d *dedup) reset() {
	clear(d.keys)
	d.keys = d.keys[:0]
	if cap(d.keys) > 4096 {
		d.keys = nil
	}
	d.m = nil
}
