package incident

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// recordLeases is a synthetic informer recording of evs' Lease writes:
// each delivered 10ms after its stageTimestamp, except those written in
// [stallFrom, stallTo), delivered at stallTo (the watch resumed and the
// informer caught up).
func recordLeases(evs []audit.Event, stallFrom, stallTo time.Duration) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, ev := range evs {
		if writeKind(&ev) != DeliveryLease {
			continue
		}
		at := ev.StageTimestamp.Add(10 * time.Millisecond)
		if off := ev.StageTimestamp.Sub(epoch); off >= stallFrom && off < stallTo {
			at = epoch.Add(stallTo)
		}
		if err := enc.Encode(Delivery{Received: at, Kind: DeliveryLease, Event: "update", Name: ev.ObjectRef.Name, Namespace: ev.ObjectRef.Namespace}); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}

func TestInformerStallsFromRecording(t *testing.T) {
	// Three healthy nodes renewing every 10s for 4m, at level Metadata.
	// The recording shows the Lease informer received nothing from +60s
	// to +125s: a 65s delivery gap.
	evs := (&gen{nodes: 3, podsPerNode: 1, duration: 4 * time.Minute, level: "Metadata"}).build()
	rec, err := ReadRecording(bytes.NewReader(recordLeases(evs, 60*time.Second, 125*time.Second)), DefaultRecordingLimits())
	if err != nil {
		t.Fatal(err)
	}
	stalls, err := InformerStalls(SliceSource(evs), rec, InformerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(stalls) != 1 {
		t.Fatalf("InformerStalls() = %v, want one lease stall", stalls)
	}
	s := stalls[0]
	// The first write not delivered in time: n0's renewal at +60s.
	wantFrom, wantTo := epoch.Add(60*time.Second+time.Millisecond), epoch.Add(125*time.Second)
	if s.Kind != DeliveryLease || !s.From.Equal(wantFrom) || !s.To.Equal(wantTo) || s.Source != SourceRecording {
		t.Fatalf("InformerStalls() = %+v, want a lease stall %v to %v from the recording", s, wantFrom, wantTo)
	}
	if got := s.String(epoch); !strings.Contains(got, "from the informer recording: lease watch stall") {
		t.Errorf("String() = %q", got)
	}
	// Breaker off: the frozen Lease cache makes every node Unknown; with
	// no recording (no stall) none is.
	for _, tt := range []struct {
		stalls      []Stall
		wantUnknown int
	}{{nil, 0}, {stalls, 3}} {
		opt := ApplyStalls(ReplayOptions{Policy: policy(t, "--feature-gates=NodeControllerLeaseCircuitBreaker=false")}, tt.stalls)
		_, run, _ := replayLog(t, evs, opt)
		unknown := map[string]bool{}
		for _, d := range run.Replayed {
			if d.Kind == KindNodeUnknown {
				unknown[d.Node] = true
			}
		}
		if len(unknown) != tt.wantUnknown {
			t.Errorf("stalls %v: nodes written Unknown %v, want %d of them", tt.stalls, unknown, tt.wantUnknown)
		}
	}
}

func TestInformerStallsThresholdAndOffset(t *testing.T) {
	evs := (&gen{nodes: 2, duration: 2 * time.Minute, level: "Metadata"}).build()
	// Every write delivered 10ms late: no stall at the default threshold.
	rec, err := ReadRecording(bytes.NewReader(recordLeases(evs, 0, 0)), DefaultRecordingLimits())
	if err != nil {
		t.Fatal(err)
	}
	if s, err := InformerStalls(SliceSource(evs), rec, InformerOptions{}); err != nil || len(s) != 0 {
		t.Errorf("InformerStalls(on time) = %v, %v, want none", s, err)
	}
	// A recorder clock 5s ahead makes every write 5s late, unless the
	// offset is given.
	for i := range rec.Deliveries {
		rec.Deliveries[i].Received = rec.Deliveries[i].Received.Add(5 * time.Second)
	}
	rec.First, rec.Last = rec.First.Add(5*time.Second), rec.Last.Add(5*time.Second)
	if s, _ := InformerStalls(SliceSource(evs), rec, InformerOptions{}); len(s) == 0 {
		t.Errorf("InformerStalls(clock 5s ahead, no offset) = none, want the skew seen as a stall")
	}
	if s, _ := InformerStalls(SliceSource(evs), rec, InformerOptions{ClockOffset: 5 * time.Second}); len(s) != 0 {
		t.Errorf("InformerStalls(clock 5s ahead, ClockOffset 5s) = %v, want none", s)
	}
}

func TestApplyStallsMerges(t *testing.T) {
	at := func(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }
	explicit := []Window{{at(10), at(30)}}
	opt := ApplyStalls(ReplayOptions{LeaseWatchStalls: explicit}, []Stall{
		{Kind: DeliveryLease, Window: Window{at(20), at(40)}}, {Kind: DeliveryLease, Window: Window{at(50), at(60)}}, {Kind: DeliveryNode, Window: Window{at(1), at(2)}}})
	want := []Window{{at(10), at(40)}, {at(50), at(60)}}
	if len(opt.LeaseWatchStalls) != 2 || opt.LeaseWatchStalls[0] != want[0] || opt.LeaseWatchStalls[1] != want[1] {
		t.Errorf("ApplyStalls lease windows = %v, want %v", opt.LeaseWatchStalls, want)
	}
	if len(opt.NodeWatchStalls) != 1 || explicit[0] != (Window{at(10), at(30)}) {
		t.Errorf("node windows %v, explicit %v: want one node window and the caller's slice unchanged", opt.NodeWatchStalls, explicit)
	}
}

func TestReadRecordingLimits(t *testing.T) {
	line := `{"received":"2026-01-01T00:00:01Z","kind":"Lease","name":"n0"}` + "\n"
	for _, tt := range []struct {
		in   string
		lim  RecordingLimits
		want string
	}{
		{strings.Repeat(line, 3), RecordingLimits{MaxLines: 2, MaxLineBytes: 1000}, "MaxLines=2"},
		{line, RecordingLimits{MaxLines: 2, MaxLineBytes: 20}, "MaxLineBytes=20"},
		{`{"received":"2026-01-01T00:00:01Z","kind":"Pod","name":"p"}`, RecordingLimits{}, `unknown kind "Pod"`},
		{`{"kind":"Lease","name":"n0"}`, RecordingLimits{}, "no received time"},
		{`{"received":"2026-01-01T00:00:01Z","kind":"Node"}`, RecordingLimits{}, "Node with no name"},
		{"\n" + `{`, RecordingLimits{}, "line 2"},
	} {
		_, err := ReadRecording(strings.NewReader(tt.in), tt.lim)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadRecording(%q, %+v) = %v, want an error containing %q", tt.in, tt.lim, err, tt.want)
		}
		if strings.Contains(tt.want, "Max") && !errors.Is(err, ErrRecordingLimit) {
			t.Errorf("ReadRecording(%q) = %v, want ErrRecordingLimit", tt.in, err)
		}
	}
}

func TestInformerStallsExactMatch(t *testing.T) {
	// Every Lease renewal delivered 15s late, steadily. By time alone a
	// write is matched with the previous renewal's delivery, 5s after it;
	// with the renewTime in the request bodies each is matched with its
	// own delivery, 15s after it.
	evs := (&gen{nodes: 1, duration: 2 * time.Minute, level: "Metadata"}).build()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	if err := enc.Encode(Delivery{Received: epoch, Kind: DeliveryClock}); err != nil {
		t.Fatal(err)
	}
	var withBodies []audit.Event
	for _, ev := range evs {
		if writeKind(&ev) == DeliveryLease {
			renew := ev.RequestReceivedTimestamp
			if err := enc.Encode(Delivery{Received: ev.StageTimestamp.Add(15 * time.Second), Kind: DeliveryLease, Name: ev.ObjectRef.Name, RenewTime: &renew}); err != nil {
				t.Fatal(err)
			}
			ev.Level = "Request"
			ev.RequestObject = mustJSON(map[string]any{"spec": map[string]any{"renewTime": renew}})
		}
		withBodies = append(withBodies, ev)
	}
	rec, err := ReadRecording(&b, DefaultRecordingLimits())
	if err != nil {
		t.Fatal(err)
	}
	opt := InformerOptions{Threshold: 8 * time.Second}
	if s, err := InformerStalls(SliceSource(evs), rec, opt); err != nil || len(s) != 1 || !s[0].From.Equal(epoch.Add(10*time.Second+time.Millisecond)) {
		// Only the first renewal (no earlier delivery) is seen late.
		t.Errorf("InformerStalls(Metadata) = %v, %v, want only the first renewal late", s, err)
	}
	s, err := InformerStalls(SliceSource(withBodies), rec, opt)
	if err != nil || len(s) != 1 || !s[0].To.After(epoch.Add(2*time.Minute)) || !strings.Contains(s[0].Why, "12 writes") || strings.Contains(s[0].Why, "not delivered") {
		t.Errorf("InformerStalls(Request) = %v, %v, want one stall over every renewal, each delivered", s, err)
	}
	// The same by resourceVersion, at level RequestResponse.
	b.Reset()
	if err := enc.Encode(Delivery{Received: epoch, Kind: DeliveryClock}); err != nil {
		t.Fatal(err)
	}
	var withRVs []audit.Event
	for i, ev := range evs {
		if writeKind(&ev) == DeliveryLease {
			rv := strconv.Itoa(i + 1)
			if err := enc.Encode(Delivery{Received: ev.StageTimestamp.Add(15 * time.Second), Kind: DeliveryLease, Name: ev.ObjectRef.Name, ResourceVersion: rv}); err != nil {
				t.Fatal(err)
			}
			ev.Level = "RequestResponse"
			ev.ResponseObject = mustJSON(map[string]any{"metadata": map[string]any{"resourceVersion": rv}})
		}
		withRVs = append(withRVs, ev)
	}
	if rec, err = ReadRecording(&b, DefaultRecordingLimits()); err != nil {
		t.Fatal(err)
	}
	s, err = InformerStalls(SliceSource(withRVs), rec, opt)
	if err != nil || len(s) != 1 || !s[0].To.After(epoch.Add(2*time.Minute)) || !strings.Contains(s[0].Why, "12 writes") || strings.Contains(s[0].Why, "not delivered") {
		t.Errorf("InformerStalls(RequestResponse) = %v, %v, want one stall over every renewal, each delivered", s, err)
	}
}

func TestInformerStallsUndelivered(t *testing.T) {
	// The recorder ran to +4m, but received no Lease after +3m20s.
	evs := (&gen{nodes: 2, duration: 4 * time.Minute, level: "Metadata"}).build()
	rec, err := ReadRecording(bytes.NewReader(recordLeases(evs, 0, 0)), DefaultRecordingLimits())
	if err != nil {
		t.Fatal(err)
	}
	cut := slices.IndexFunc(rec.Deliveries, func(d Delivery) bool { return d.Received.After(epoch.Add(200 * time.Second)) })
	rec.Deliveries = rec.Deliveries[:cut]
	rec.Last = epoch.Add(4*time.Minute + time.Second)
	s, err := InformerStalls(SliceSource(evs), rec, InformerOptions{})
	if err != nil || len(s) != 1 || !s[0].To.Equal(rec.Last) || !strings.Contains(s[0].Why, "not delivered by the recording's end") {
		t.Fatalf("InformerStalls() = %v, %v, want one stall to the recording's end", s, err)
	}
	if want := epoch.Add(200*time.Second + time.Millisecond); !s[0].From.Equal(want) {
		t.Errorf("stall from %v, want %v (the first renewal not delivered)", s[0].From, want)
	}
}
