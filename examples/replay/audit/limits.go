package audit

import (
	"errors"
	"fmt"
	"time"
)

// Limits bounds what a Reader accepts and how much memory it holds. The
// zero value of each field means its documented default (DefaultLimits);
// a negative value is invalid and makes Open and NewReader fail.
type Limits struct {
	// MaxLineBytes is the longest line decoded (default 16 MiB). A longer
	// line is discarded up to its newline without being buffered and is
	// counted as a SkipLongLine.
	MaxLineBytes int

	// ReorderWindow is how far an input's lines may be out of
	// stageTimestamp order (default 5s). Events are held back until an
	// event ReorderWindow newer has been read from the same input; a line
	// older than an event already released is a SkipOutOfOrder.
	ReorderWindow time.Duration

	// MaxBuffered is the most events held in the reorder buffers of all
	// inputs together (default 100000). Exceeding it is an error wrapping
	// ErrLimit: the input has more events per ReorderWindow than allowed.
	MaxBuffered int

	// MaxBufferedBytes bounds the JSON text of the events held in the
	// reorder buffers of all inputs together (default 1 GiB; a decoded
	// event takes about as much memory as its text). Exceeding it is an
	// error wrapping ErrLimit: large events (RequestResponse level) too
	// dense for ReorderWindow.
	MaxBufferedBytes int64

	// MaxSpan is how far after the stream's anchor (the earliest of the
	// inputs' first events) an event may be (default 31 days). A later
	// event, or one more than ReorderWindow before the anchor, is a
	// SkipOutOfSpan.
	MaxSpan time.Duration

	// MaxDedup is the most (auditID, stage) keys remembered to drop
	// repeats (default 65536, at most about 8 MiB). Keys are remembered for
	// the run of events with the same stageTimestamp: copies of one event
	// have the same stageTimestamp and the merge returns them in that run.
	// A run longer than MaxDedup starts over, so a repeat is missed only if
	// more than MaxDedup events share its timestamp. A repeat with another
	// stageTimestamp is not a copy and is returned.
	MaxDedup int

	// MaxEvents is the most events Next returns (default 100 million).
	MaxEvents int64

	// MaxFiles is the most inputs (default 128).
	MaxFiles int

	// MaxSkips is the most bad lines (malformed, too long, out of order,
	// out of span, zero timestamp, not an event) skipped across all inputs
	// before Next fails with an error wrapping ErrLimit (default 1000).
	// Lines filtered by stage, duplicates, blank lines and CloudWatch
	// control messages do not count.
	MaxSkips int64

	// SniffLines is how many lines of an input are read before it must
	// have produced an audit event (default 100); otherwise Next fails
	// with an error wrapping ErrNotAuditLog and ErrLimit.
	SniffLines int64

	// OverlapSlack is how far apart two inputs' time ranges may be and
	// still be considered contiguous (default 1m), e.g. an apiserver's
	// rotated files. An input whose range neither overlaps nor comes within
	// OverlapSlack of another input's range gets a Stats warning.
	OverlapSlack time.Duration
}

// DefaultLimits returns the defaults used for zero fields of Limits.
func DefaultLimits() Limits {
	return Limits{
		MaxLineBytes:     16 << 20,
		ReorderWindow:    5 * time.Second,
		MaxBuffered:      100000,
		MaxBufferedBytes: 1 << 30,
		MaxSpan:          31 * 24 * time.Hour,
		MaxDedup:         1 << 16,
		MaxEvents:        100_000_000,
		MaxFiles:         128,
		MaxSkips:         1000,
		SniffLines:       100,
		OverlapSlack:     time.Minute,
	}
}

// withDefaults returns lim with zero fields set to their defaults, or an
// error naming a negative field.
func (lim Limits) withDefaults() (Limits, error) {
	d := DefaultLimits()
	var bad []string
	fixInt := func(name string, v *int, def int) {
		if *v < 0 {
			bad = append(bad, fmt.Sprintf("%s=%d", name, *v))
		}
		if *v <= 0 {
			*v = def
		}
	}
	fixInt64 := func(name string, v *int64, def int64) {
		if *v < 0 {
			bad = append(bad, fmt.Sprintf("%s=%d", name, *v))
		}
		if *v <= 0 {
			*v = def
		}
	}
	fixDur := func(name string, v *time.Duration, def time.Duration) {
		if *v < 0 {
			bad = append(bad, fmt.Sprintf("%s=%v", name, *v))
		}
		if *v <= 0 {
			*v = def
		}
	}
	fixInt("MaxLineBytes", &lim.MaxLineBytes, d.MaxLineBytes)
	fixDur("ReorderWindow", &lim.ReorderWindow, d.ReorderWindow)
	fixInt("MaxBuffered", &lim.MaxBuffered, d.MaxBuffered)
	fixInt64("MaxBufferedBytes", &lim.MaxBufferedBytes, d.MaxBufferedBytes)
	fixDur("MaxSpan", &lim.MaxSpan, d.MaxSpan)
	fixInt("MaxDedup", &lim.MaxDedup, d.MaxDedup)
	fixInt64("MaxEvents", &lim.MaxEvents, d.MaxEvents)
	fixInt("MaxFiles", &lim.MaxFiles, d.MaxFiles)
	fixInt64("MaxSkips", &lim.MaxSkips, d.MaxSkips)
	fixInt64("SniffLines", &lim.SniffLines, d.SniffLines)
	fixDur("OverlapSlack", &lim.OverlapSlack, d.OverlapSlack)
	if len(bad) > 0 {
		return lim, fmt.Errorf("audit: negative limit %v", bad)
	}
	return lim, nil
}

// ErrLimit is wrapped by every error caused by a Limits field; the message
// names the field and its value.
var ErrLimit = errors.New("audit: limit exceeded")

// ErrTruncated is wrapped by the InputError Next returns when a gzip input
// ends in the middle of its stream (a partial download or an export still
// being written).
var ErrTruncated = errors.New("audit: gzip stream truncated")

// ErrUnsupportedFormat is wrapped by the error Next returns when an input
// is a log export this package recognises but cannot read (GKE Cloud
// Logging, whose entries are converted to google.cloud.audit.AuditLog).
var ErrUnsupportedFormat = errors.New("audit: unsupported log export")

// ErrNotAuditLog is wrapped (with ErrLimit) by the error Next returns when
// the first Limits.SniffLines lines of an input hold no audit event.
var ErrNotAuditLog = errors.New("audit: not an audit log")

// InputError is a read error of one input (for example ErrTruncated). The
// events read from the input before the error are returned first; Next
// returns the InputError once, at the point of the merge where the input's
// next event would be needed, and treats the input as ended: calling Next
// again continues with the other inputs.
type InputError struct {
	Pos Position // the input and the last line read completely
	Err error
}

// Error returns "audit: file: after line N: cause".
func (e *InputError) Error() string {
	return fmt.Sprintf("audit: %s: after line %d: %v", e.Pos.File, e.Pos.Line, e.Err)
}

// Unwrap returns the underlying error.
func (e *InputError) Unwrap() error { return e.Err }

func limitErr(field string, value any, format string, args ...any) error {
	return fmt.Errorf("%w: Limits.%s=%v: %s", ErrLimit, field, value, fmt.Sprintf(format, args...))
}
