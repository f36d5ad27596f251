package incident

import (
	"errors"
	"io"
	"slices"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// Source is a stream of audit events in non-decreasing StageTimestamp
// order: *audit.Reader, or SliceSource in tests. Next returns io.EOF at the
// end and a fresh *audit.Event per call.
type Source interface {
	Next() (*audit.Event, error)
}

// Opener opens the log again from its start: a replay reads it twice
// (Inventory, then Replay), so memory grows with the cluster, not the log.
type Opener func() (Source, error)

// SliceSource returns a Source over events, in their order. The events
// are copied as they are read (the slice is not modified).
func SliceSource(events []audit.Event) Source { return &sliceSource{events: events} }

type sliceSource struct {
	events []audit.Event
	i      int
}

func (s *sliceSource) Next() (*audit.Event, error) {
	if s.i >= len(s.events) {
		return nil, io.EOF
	}
	e := s.events[s.i]
	s.i++
	return &e, nil
}

// SliceOpener returns an Opener that opens SliceSource(events) each time.
func SliceOpener(events []audit.Event) Opener {
	return func() (Source, error) { return SliceSource(events), nil }
}

// ControllerSpan reads src to its end and returns when the recorded
// controller started and when the recording ended, for
// ReplayOptions.ControllerStart and End. start is the controller's first
// list of Nodes (or, with client-go's WatchListClient, the start of the
// watch that sends the initial list: a watch is logged when it ends, with
// the time it was received, so the whole log is read); zero if it never
// listed, as when it started before the log. end is the last event's time
// (the controller's watches ending when it stopped), which can be later
// than the last event a replay reads. users are the controller's (nil:
// DefaultControllerUsers).
func ControllerSpan(src Source, users []string) (start, end time.Time, err error) {
	if users == nil {
		users = DefaultControllerUsers
	}
	for {
		e, err := src.Next()
		if errors.Is(err, io.EOF) {
			return start, end, nil
		}
		if err != nil {
			return start, end, err
		}
		if e.StageTimestamp.After(end) {
			end = e.StageTimestamp
		}
		if listsNodes(e, users) && (start.IsZero() || e.RequestReceivedTimestamp.Before(start)) {
			start = e.RequestReceivedTimestamp
		}
	}
}

// listsNodes reports whether e is one of users listing Nodes: a list, or a
// watch that may send the initial list.
func listsNodes(e *audit.Event, users []string) bool {
	return (e.Verb == "list" || e.Verb == "watch") && e.ObjectRef != nil && e.ObjectRef.Resource == "nodes" && slices.Contains(users, e.EffectiveUser().Username)
}
