package audit

import (
	"fmt"
	"time"
)

// Format is the envelope an audit event was found in, detected per line.
type Format int

// The formats. FormatUnknown is the zero value (no event line seen yet).
const (
	FormatUnknown Format = iota
	// FormatPlain is an audit.k8s.io/v1 Event per line, as written by
	// kube-apiserver --audit-log-path with --audit-log-format=json.
	FormatPlain
	// FormatAzure is an Azure diagnostic settings export of AKS (categories
	// kube-audit and kube-audit-admin): the event is the JSON string
	// properties.log.
	FormatAzure
	// FormatCloudWatchExport is an Amazon CloudWatch Logs export task to
	// S3 (EKS control plane logs): "<RFC3339 timestamp> <event JSON>".
	FormatCloudWatchExport
	// FormatCloudWatchMessage is a JSON object whose "message" or
	// "@message" field holds the event (a string or an object), as printed
	// by aws logs filter-log-events or a Logs Insights export, one per line.
	FormatCloudWatchMessage
	// FormatCloudWatchSubscription is a CloudWatch Logs subscription record
	// ({"messageType":"DATA_MESSAGE","logEvents":[{"message":...}]}), one
	// per line; each logEvent is an event.
	FormatCloudWatchSubscription
	// FormatGKE is a GKE Cloud Logging export (protoPayload holding a
	// google.cloud.audit.AuditLog). It is detected and refused with
	// ErrUnsupportedFormat.
	FormatGKE
	numFormats
)

var formatNames = [numFormats]string{"unknown", "plain", "azure-diagnostics", "cloudwatch-s3-export", "cloudwatch-message", "cloudwatch-subscription", "gke-cloud-logging"}

// String returns the format's name, as used in Stats warnings.
func (f Format) String() string {
	if f < 0 || f >= numFormats {
		return fmt.Sprintf("Format(%d)", int(f))
	}
	return formatNames[f]
}

// SkipReason is why a line (or an event in it) was not returned.
type SkipReason int

// The skip reasons. Bad reasons (see Bad) count toward Limits.MaxSkips.
const (
	_ SkipReason = iota // invalid
	// SkipLongLine: the line is longer than Limits.MaxLineBytes (bad).
	SkipLongLine
	// SkipMalformed: invalid JSON, a non-object line, a field of the wrong
	// type or a truncated last line (bad).
	SkipMalformed
	// SkipNotEvent: valid JSON that is not an audit.k8s.io/v1 Event, e.g.
	// another kind or apiVersion, or no auditID (bad).
	SkipNotEvent
	// SkipZeroTime: the event has no stageTimestamp (bad).
	SkipZeroTime
	// SkipOutOfOrder: the event is older than one already released from
	// its input, i.e. out of order by more than Limits.ReorderWindow (bad).
	SkipOutOfOrder
	// SkipOutOfSpan: the event is more than Limits.MaxSpan after the
	// stream's anchor, or more than Limits.ReorderWindow before it (bad).
	SkipOutOfSpan
	// SkipStage: the event's stage is RequestReceived or ResponseStarted.
	SkipStage
	// SkipDuplicate: an event with the same (auditID, stage) was returned
	// recently (see Limits.MaxDedup).
	SkipDuplicate
	// SkipControl: a CloudWatch subscription CONTROL_MESSAGE.
	SkipControl
	// SkipBlank: an empty or all-blank line.
	SkipBlank
	// SkipOtherLog: an export envelope whose payload is not an audit event
	// (another log stream of the same CloudWatch log group, another Azure
	// diagnostic category).
	SkipOtherLog
	numSkipReasons
)

var skipNames = [numSkipReasons]string{"invalid", "line too long", "malformed", "not an audit event", "zero stageTimestamp", "out of order", "out of span", "stage", "duplicate", "control message", "blank", "other log"}

// String returns the reason as used in Skip.String.
func (s SkipReason) String() string {
	if s <= 0 || s >= numSkipReasons {
		return fmt.Sprintf("SkipReason(%d)", int(s))
	}
	return skipNames[s]
}

// Bad reports whether the reason counts toward Limits.MaxSkips: the line is
// damaged or wrong, rather than filtered on purpose.
func (s SkipReason) Bad() bool { return s >= SkipLongLine && s <= SkipOutOfSpan }

// MaxSkipSamples is how many skips of each reason Stats keeps with their
// position and detail.
const MaxSkipSamples = 8

// Skip is one skipped line or event.
type Skip struct {
	Pos    Position
	Reason SkipReason
	Detail string
}

// String returns "file:line: reason: detail".
func (s Skip) String() string { return fmt.Sprintf("%s: %s: %s", s.Pos, s.Reason, s.Detail) }

// SkipStats counts the skips of one reason.
type SkipStats struct {
	Reason SkipReason
	Count  int64
	First  []Skip // the first MaxSkipSamples skips of this reason
}

// FileStats describes one input.
type FileStats struct {
	Name   string
	Format Format // the envelope of the first event line
	Mixed  bool   // a later line had another envelope (also a warning)
	Lines  int64  // lines read
	Read   int64  // events accepted into the merge (before dedup)
	Events int64  // events returned by Next
	// Skipped counts this input's skipped lines and events, BadSkips
	// those whose reason is Bad (Stats.Skipped has the reasons).
	Skipped, BadSkips int64
	// First and Last are the earliest and latest stageTimestamp of the
	// events accepted from this input (zero when none).
	First, Last time.Time
	// Err is the read error that ended this input early (e.g. wrapping
	// ErrTruncated), or nil.
	Err error
}

// ResourceKey names a resource in Stats.Resources.
type ResourceKey struct {
	APIGroup, Resource, Subresource string
}

// maxResourceKeys bounds Stats.Resources; further resources are counted
// under ResourceKey{Resource: "(other)"}.
const maxResourceKeys = 1024

// Stats describes what a Reader has read so far.
type Stats struct {
	Events int64       // events returned by Next
	Files  []FileStats // one per input, in input order
	// Skipped has one entry per reason that occurred, in reason order.
	Skipped []SkipStats
	// BadSkips is the number of skips whose reason is Bad.
	BadSkips int64
	// Resources counts returned events by objectRef (events without one are
	// not counted), bounded to 1024 keys.
	Resources map[ResourceKey]int64
	// Warnings are problems that did not stop the stream: an input whose
	// time range does not touch any other input's (computed once all
	// inputs are read), an input mixing envelopes, an input that ended with
	// a read error.
	Warnings []string
}

// Skips returns the number of skips of the reason.
func (s Stats) Skips(reason SkipReason) int64 {
	for _, k := range s.Skipped {
		if k.Reason == reason {
			return k.Count
		}
	}
	return 0
}
