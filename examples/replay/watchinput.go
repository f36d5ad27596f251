package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/incident"
)

// watchFlags are the flags for the watch delivery inputs other than the
// explicit -lease-watch-stall and -node-watch-stall windows.
type watchFlags struct {
	recording     string
	threshold     time.Duration
	clockOffset   time.Duration
	applyInferred bool
	inferGap      time.Duration
}

func addWatchFlags(fs *flag.FlagSet) *watchFlags {
	w := &watchFlags{}
	fs.StringVar(&w.recording, "informer-recording", "", "derive Lease and Node watch stalls from the recorder's JSON lines in `file` (see recorder/; applied)")
	fs.DurationVar(&w.threshold, "informer-delay-threshold", incident.DefaultDeliveryThreshold, "with -informer-recording: a write delivered later than `duration` stalled its informer")
	fs.DurationVar(&w.clockOffset, "informer-clock-offset", 0, "with -informer-recording: the recorder's clock minus the apiserver's (`duration`; the recording's Clock line measures it to a second, reported by -doctor)")
	fs.BoolVar(&w.applyInferred, "apply-inferred-stalls", false, "apply the watch stall candidates inferred from the controller's lists and watches in the log (listed by -doctor)")
	fs.DurationVar(&w.inferGap, "infer-watch-gap", incident.DefaultInferGap, "infer a watch stall candidate when the controller had no watch open for longer than `duration`")
	return w
}

// fromRecording reads the recording and derives its stalls (nil without
// -informer-recording), and describes the recording.
func (w *watchFlags) fromRecording(op incident.Opener) ([]incident.Stall, []string, error) {
	if w.recording == "" {
		return nil, nil, nil
	}
	if w.threshold <= 0 {
		return nil, nil, fmt.Errorf("replay: -informer-delay-threshold must be positive, got %v", w.threshold)
	}
	f, err := os.Open(w.recording)
	if err != nil {
		return nil, nil, fmt.Errorf("replay: -informer-recording: %w", err)
	}
	rec, err := incident.ReadRecording(f, incident.DefaultRecordingLimits())
	f.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("replay: -informer-recording %s: %w", w.recording, err)
	}
	notes := []string{fmt.Sprintf("informer recording %s: %d deliveries, %s to %s (the recorder's clock)", w.recording, len(rec.Deliveries),
		rec.First.UTC().Format(time.RFC3339Nano), rec.Last.UTC().Format(time.RFC3339Nano))}
	if off, ok := rec.ClockOffset(); ok {
		notes = append(notes, fmt.Sprintf("the recorder's clock was %v ahead of the apiserver's Date header (whole seconds); -informer-clock-offset=%v is applied", off, w.clockOffset))
	} else {
		notes = append(notes, fmt.Sprintf("the recording does not measure the recorder's clock against the apiserver's; -informer-clock-offset=%v is applied", w.clockOffset))
	}
	src, err := op()
	if err != nil {
		return nil, nil, err
	}
	defer closeSource(src)
	stalls, err := incident.InformerStalls(src, rec, incident.InformerOptions{Threshold: w.threshold, ClockOffset: w.clockOffset})
	return stalls, notes, err
}

func (w *watchFlags) inferred(h *incident.History, op incident.Opener) ([]incident.Stall, error) {
	src, err := op()
	if err != nil {
		return nil, err
	}
	defer closeSource(src)
	return incident.InferredStalls(src, h.ControllerUsers(), w.inferGap)
}

// doctor lists the recording's stalls and the inferred candidates.
func (w *watchFlags) doctor(d *incident.Doctor, h *incident.History, op incident.Opener) error {
	rec, notes, err := w.fromRecording(op)
	if err != nil {
		return err
	}
	inf, err := w.inferred(h, op)
	if err != nil {
		return err
	}
	d.Watch = append(d.Watch, notes...)
	for _, s := range append(rec, inf...) {
		d.Watch = append(d.Watch, s.String(h.First))
	}
	if len(inf) == 0 {
		d.Watch = append(d.Watch, "no watch stall candidate inferred from the controller's lists and watches (a log without them shows none)")
	}
	return nil
}

// apply adds the recording's stalls, and with -apply-inferred-stalls the
// inferred ones, to ropt, and says so for the report.
func (w *watchFlags) apply(h *incident.History, op incident.Opener, ropt incident.ReplayOptions) (incident.ReplayOptions, []string, error) {
	stalls, notes, err := w.fromRecording(op)
	if err != nil {
		return ropt, nil, err
	}
	if w.applyInferred {
		inf, err := w.inferred(h, op)
		if err != nil {
			return ropt, nil, err
		}
		if len(inf) == 0 {
			notes = append(notes, "-apply-inferred-stalls: no candidate inferred")
		}
		stalls = append(stalls, inf...)
	}
	for _, s := range stalls {
		notes = append(notes, "applied "+s.String(h.First))
	}
	return incident.ApplyStalls(ropt, stalls), notes, nil
}
