package incident

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Delivery is one line of an informer recording (the recorder program,
// examples/replay/recorder, writes them as JSON lines): an object an
// informer delivered to its handlers, and when (the recorder's clock).
//
// Kind is "Lease" or "Node", or "Clock" for a line that only measures the
// recorder's clock against the apiserver's (ServerDate: the Date header of
// a response the recorder received at Received; whole seconds).
type Delivery struct {
	Received        time.Time `json:"received"`
	Kind            string    `json:"kind"`
	Event           string    `json:"event,omitempty"` // add, update, delete
	Name            string    `json:"name,omitempty"`
	Namespace       string    `json:"namespace,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	// RenewTime is a Lease's spec.renewTime.
	RenewTime *time.Time `json:"renewTime,omitempty"`
	// Ready and LastHeartbeatTime are a Node's Ready condition.
	Ready             string     `json:"ready,omitempty"`
	LastHeartbeatTime *time.Time `json:"lastHeartbeatTime,omitempty"`
	// ServerDate is a Clock line's apiserver Date.
	ServerDate *time.Time `json:"serverDate,omitempty"`
}

// The kinds of Delivery.
const (
	DeliveryLease = "Lease"
	DeliveryNode  = "Node"
	DeliveryClock = "Clock"
)

// RecordingLimits bound ReadRecording.
type RecordingLimits struct {
	// MaxLineBytes bounds one line; MaxLines the lines read.
	MaxLineBytes int
	MaxLines     int
}

// DefaultRecordingLimits are ReadRecording's limits: 64 KiB lines, 10
// million lines (a day of 100 nodes' Lease and status deliveries).
func DefaultRecordingLimits() RecordingLimits {
	return RecordingLimits{MaxLineBytes: 64 << 10, MaxLines: 10_000_000}
}

// ErrRecordingLimit is the error (matched with errors.Is) when a recording
// exceeds a RecordingLimits bound; the message names the bound.
var ErrRecordingLimit = errors.New("incident: informer recording over a limit")

// Recording is a read informer recording.
type Recording struct {
	// Deliveries are the Lease and Node lines, in file order.
	Deliveries []Delivery
	// Clock are the Clock lines.
	Clock []Delivery
	// First and Last are the earliest and latest Received of any line.
	First, Last time.Time
}

// ClockOffset is the recorder's clock minus the apiserver's as the
// recording's first Clock line measured it (ok false: none). The Date
// header has whole seconds, so the offset is known to within a second.
func (r *Recording) ClockOffset() (time.Duration, bool) {
	for _, c := range r.Clock {
		if c.ServerDate != nil {
			return c.Received.Sub(*c.ServerDate), true
		}
	}
	return 0, false
}

// ReadRecording reads an informer recording (JSON lines of Delivery).
// Blank lines are skipped; a line that does not parse, or names an
// unknown kind or no name, is an error naming its line number.
func ReadRecording(r io.Reader, lim RecordingLimits) (*Recording, error) {
	d := DefaultRecordingLimits()
	lim.MaxLineBytes, lim.MaxLines = positiveOr(lim.MaxLineBytes, d.MaxLineBytes), positiveOr(lim.MaxLines, d.MaxLines)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), lim.MaxLineBytes+1)
	rec := &Recording{}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) > lim.MaxLineBytes {
			return nil, fmt.Errorf("%w: line %d is over MaxLineBytes=%d", ErrRecordingLimit, line, lim.MaxLineBytes)
		}
		if len(b) == 0 {
			continue
		}
		if line > lim.MaxLines {
			return nil, fmt.Errorf("%w: more than MaxLines=%d lines", ErrRecordingLimit, lim.MaxLines)
		}
		var d Delivery
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("incident: informer recording line %d: %w", line, err)
		}
		if d.Received.IsZero() {
			return nil, fmt.Errorf("incident: informer recording line %d: no received time", line)
		}
		switch d.Kind {
		case DeliveryLease, DeliveryNode:
			if d.Name == "" {
				return nil, fmt.Errorf("incident: informer recording line %d: %s with no name", line, d.Kind)
			}
			rec.Deliveries = append(rec.Deliveries, d)
		case DeliveryClock:
			rec.Clock = append(rec.Clock, d)
		default:
			return nil, fmt.Errorf("incident: informer recording line %d: unknown kind %q (want Lease, Node or Clock)", line, d.Kind)
		}
		if rec.First.IsZero() || d.Received.Before(rec.First) {
			rec.First = d.Received
		}
		if d.Received.After(rec.Last) {
			rec.Last = d.Received
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w: line %d is over MaxLineBytes=%d", ErrRecordingLimit, line+1, lim.MaxLineBytes)
		}
		return nil, fmt.Errorf("incident: informer recording: %w", err)
	}
	return rec, nil
}
