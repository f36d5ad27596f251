package incident

import (
	"io"

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
