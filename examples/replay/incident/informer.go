package incident

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// DefaultDeliveryThreshold is InformerOptions.Threshold's default: a
// write delivered later than this is a stall.
const DefaultDeliveryThreshold = time.Second

// InformerOptions select how InformerStalls reads a recording.
type InformerOptions struct {
	// Threshold is how late a write may be delivered before the time it
	// waited counts as a stall (0: DefaultDeliveryThreshold).
	Threshold time.Duration
	// ClockOffset is the recorder's clock minus the apiserver's: it is
	// subtracted from every Received (Recording.ClockOffset measures it
	// to within a second; 0 trusts the clocks to agree).
	ClockOffset time.Duration
}

// Stall is a watch stall derived from an input other than an explicit
// window: an informer recording (Source "from the informer recording") or
// the audit log's requests (InferredStalls: "inferred").
type Stall struct {
	Kind string // DeliveryLease or DeliveryNode
	Window
	Source string
	// Why says what the window rests on.
	Why string
}

// String is the stall as the reports print it, with offsets from origin.
func (s Stall) String(origin time.Time) string {
	k := "lease"
	if s.Kind == DeliveryNode {
		k = "node"
	}
	return fmt.Sprintf("%s: %s watch stall %s to %s (%s)", s.Source, k, Offset(origin, s.From), Offset(origin, s.To), s.Why)
}

// SourceRecording labels the stalls InformerStalls derives.
const SourceRecording = "from the informer recording"

// writeKind is which informer sees ev's write ("" : neither, or the
// write failed).
func writeKind(ev *audit.Event) string {
	r := ev.ObjectRef
	if r == nil || r.Name == "" || ev.Code() < 200 || ev.Code() > 299 {
		return ""
	}
	switch ev.Verb {
	case "create", "update", "patch", "delete":
	default:
		return ""
	}
	switch {
	case r.Resource == "leases" && r.APIGroup == "coordination.k8s.io" && r.Namespace == v1.NamespaceNodeLease:
		return DeliveryLease
	case r.Resource == "nodes" && r.APIGroup == "":
		return DeliveryNode
	}
	return ""
}

// InformerStalls derives watch stalls from an informer recording: each
// successful Lease (kube-node-lease) and Node write in src within the
// recording's span is matched with the recording's first delivery of the
// same object received at or after the write's stageTimestamp (less
// ClockOffset). A write delivered more than Threshold later, or not
// delivered by the recording's end, stalled its informer from the write
// to the delivery (or the end); the windows of one kind are merged.
//
// A write whose body identifies it (the resourceVersion of its response,
// at level RequestResponse; a Lease's spec.renewTime in its request, from
// level Request) is matched with the delivery of that version, if the
// recording has it. Otherwise the match is by name and time, which holds
// at level Metadata: a later delivery of the same object stands for an
// earlier write it overtook (an informer that relisted delivers only the
// newest state); but an informer steadily later than the objects' write
// interval is under-measured by it (a write is matched with the delivery
// of the write before).
// A write that changed nothing (no new resourceVersion) is never
// delivered and so looks late until the object's next delivery; kubelets
// do not write unchanged Leases or statuses, controllers may. A kind the
// recording has no delivery of is taken as not recorded: its writes are
// not matched.
func InformerStalls(src Source, rec *Recording, opt InformerOptions) ([]Stall, error) {
	if opt.Threshold <= 0 {
		opt.Threshold = DefaultDeliveryThreshold
	}
	type key struct{ kind, name string }
	got := map[key][]recv{}
	recorded := map[string]bool{} // the kinds with a delivery
	for _, d := range rec.Deliveries {
		k := key{d.Kind, d.Name}
		r := recv{at: d.Received.Add(-opt.ClockOffset), rv: d.ResourceVersion}
		if d.RenewTime != nil {
			r.renew = *d.RenewTime
		}
		got[k] = append(got[k], r)
		recorded[d.Kind] = true
	}
	// Each write's own delivery is looked up once: the first delivery of
	// each resourceVersion and, for Leases, of each renewTime.
	byRV, byRenew := map[deliveryKey]time.Time{}, map[deliveryKey]time.Time{}
	for k, ts := range got {
		slices.SortStableFunc(ts, func(a, b recv) int { return a.at.Compare(b.at) })
		for _, r := range ts {
			if r.rv != "" {
				if _, ok := byRV[deliveryKey{k.kind, k.name, r.rv, 0}]; !ok {
					byRV[deliveryKey{k.kind, k.name, r.rv, 0}] = r.at
				}
			}
			if !r.renew.IsZero() {
				if _, ok := byRenew[deliveryKey{k.kind, k.name, "", r.renew.UnixNano()}]; !ok {
					byRenew[deliveryKey{k.kind, k.name, "", r.renew.UnixNano()}] = r.at
				}
			}
		}
	}
	first, last := rec.First.Add(-opt.ClockOffset), rec.Last.Add(-opt.ClockOffset)
	type late struct {
		w           Window
		delay       time.Duration
		undelivered bool
	}
	lates := map[string][]late{}
	for {
		ev, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		kind := writeKind(ev)
		s := ev.StageTimestamp
		if kind == "" || !recorded[kind] || s.Before(first) || s.After(last) {
			continue
		}
		ts := got[key{kind, ev.ObjectRef.Name}]
		to, ok := exactDelivery(ev, kind, byRV, byRenew)
		undelivered := false
		if !ok {
			i := sort.Search(len(ts), func(i int) bool { return !ts[i].at.Before(s) })
			to, undelivered = last, i == len(ts)
			if i < len(ts) {
				to = ts[i].at
			}
		}
		if d := to.Sub(s); d > opt.Threshold {
			lates[kind] = append(lates[kind], late{Window{s, to}, d, undelivered})
		}
	}
	var out []Stall
	for _, kind := range []string{DeliveryLease, DeliveryNode} {
		ls := lates[kind]
		slices.SortFunc(ls, func(a, b late) int { return a.w.From.Compare(b.w.From) })
		for i := 0; i < len(ls); {
			w, n, maxd, undelivered := ls[i].w, 0, time.Duration(0), false
			for ; i < len(ls) && !ls[i].w.From.After(w.To); i++ {
				if ls[i].w.To.After(w.To) {
					w.To = ls[i].w.To
				}
				n++
				maxd = max(maxd, ls[i].delay)
				undelivered = undelivered || ls[i].undelivered
			}
			why := fmt.Sprintf("%d writes delivered over %v late, the latest %v", n, opt.Threshold, maxd)
			if n == 1 {
				why = fmt.Sprintf("a write delivered %v late", maxd)
			}
			if undelivered {
				why += "; some not delivered by the recording's end"
			}
			out = append(out, Stall{Kind: kind, Window: w, Source: SourceRecording, Why: why})
		}
	}
	return out, nil
}

// recv is one delivery of an object: when (the apiserver's clock), its
// resourceVersion and a Lease's renewTime.
type recv struct {
	at    time.Time
	rv    string
	renew time.Time
}

// deliveryKey names one delivered version of an object: by its
// resourceVersion (rv), or a Lease by its renewTime (renew, UnixNano).
type deliveryKey struct {
	kind, name, rv string
	renew          int64
}

// exactDelivery finds the delivery of ev's write itself: the one with the
// resourceVersion of ev's response body, or for a Lease the renewTime of
// its request body (ok false: ev has neither, or no delivery matches: the
// informer skipped the write).
func exactDelivery(ev *audit.Event, kind string, byRV, byRenew map[deliveryKey]time.Time) (time.Time, bool) {
	var body struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Spec struct {
			RenewTime *time.Time `json:"renewTime"`
		} `json:"spec"`
	}
	name := ev.ObjectRef.Name
	if len(ev.ResponseObject) > 0 && json.Unmarshal(ev.ResponseObject, &body) == nil && body.Metadata.ResourceVersion != "" {
		if at, ok := byRV[deliveryKey{kind, name, body.Metadata.ResourceVersion, 0}]; ok {
			return at, true
		}
	}
	body.Spec.RenewTime = nil
	if kind == DeliveryLease && len(ev.RequestObject) > 0 && json.Unmarshal(ev.RequestObject, &body) == nil && body.Spec.RenewTime != nil {
		if at, ok := byRenew[deliveryKey{kind, name, "", body.Spec.RenewTime.UnixNano()}]; ok {
			return at, true
		}
	}
	return time.Time{}, false
}

// ApplyStalls returns opt with stalls added to its Lease and Node watch
// stalls, overlapping windows of a kind merged into one (opt's slices are
// not modified).
func ApplyStalls(opt ReplayOptions, stalls []Stall) ReplayOptions {
	lease, node := slices.Clone(opt.LeaseWatchStalls), slices.Clone(opt.NodeWatchStalls)
	for _, s := range stalls {
		if s.Kind == DeliveryNode {
			node = append(node, s.Window)
		} else {
			lease = append(lease, s.Window)
		}
	}
	opt.LeaseWatchStalls, opt.NodeWatchStalls = mergeWindows(lease), mergeWindows(node)
	return opt
}

// mergeWindows sorts ws and merges the overlapping ones (in place).
func mergeWindows(ws []Window) []Window {
	if len(ws) == 0 {
		return ws
	}
	slices.SortFunc(ws, func(a, b Window) int { return a.From.Compare(b.From) })
	out := ws[:1]
	for _, w := range ws[1:] {
		last := &out[len(out)-1]
		if !w.From.After(last.To) {
			if w.To.After(last.To) {
				last.To = w.To
			}
			continue
		}
		out = append(out, w)
	}
	return out
}
