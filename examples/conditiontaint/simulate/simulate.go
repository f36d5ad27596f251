// Package simulate is an offline dry run of the conditiontaint controller:
// given a configuration and the nodes and pods (Go objects, or the YAML or
// JSON kubectl prints, see ReadObjects), it plays the controller forward on
// a virtual clock, with no cluster and no wall-clock wait, and reports what
// it would taint and evict, what the breaker would hold, and when.
//
// Run drives the controller package itself (controller.Controller in
// dry-run mode, on controller-runtime's fake client): the decisions are the
// ones the deployed controller would take on the same objects, as the
// Events it would record. The nodes' conditions are taken as they are: the
// simulation answers "what happens from this snapshot on", not "what
// happens if conditions change".
package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubelifecycle/lifecycle/examples/conditiontaint/controller"
)

// Limits on one Run.
const (
	// MaxObjects is the most nodes and pods, together, Run and ReadObjects
	// accept.
	MaxObjects = 1 << 20
	// MaxFor is the longest virtual time Run plays.
	MaxFor = 30 * 24 * time.Hour
	// MaxRounds is the most rounds (a zone pass, the queues, the due
	// evictions, then the clock jumps to the next deadline) Run plays.
	MaxRounds = 1 << 20
	// DefaultFor is the virtual time Run plays when Options.For is 0.
	DefaultFor = time.Hour
)

// ErrLimit is wrapped by the errors of a limit passed.
var ErrLimit = errors.New("simulate: limit")

// Options tunes Run.
type Options struct {
	// Start is the virtual clock's first instant. Zero: the latest instant
	// found in the objects (creation, condition heartbeat and transition,
	// taint timeAdded), so that the countdowns of a snapshot continue where
	// the cluster left them; the Unix epoch when they carry none.
	Start time.Time
	// For is how much virtual time to play; 0 means DefaultFor. Run stops
	// earlier when nothing is left to happen. At most MaxFor.
	For time.Duration
}

// Event is one decision the controller would record, as an Event on the
// node or pod concerned (see the controller package's Reason constants).
type Event struct {
	// At is the virtual instant; Offset is At - Result.Start.
	At     time.Time
	Offset time.Duration
	// Type is "Normal" or "Warning".
	Type   string
	Reason string
	// Kind is "Node" or "Pod"; Namespace is empty for a node.
	Kind, Namespace, Name string
	Message               string
}

// Object is the event's object as kubectl names it: node/a-0, pod/ns/web.
func (e Event) Object() string {
	if e.Namespace == "" {
		return strings.ToLower(e.Kind) + "/" + e.Name
	}
	return strings.ToLower(e.Kind) + "/" + e.Namespace + "/" + e.Name
}

// Result is what a Run would have done.
type Result struct {
	// Start is the virtual clock's first instant, End the last one played.
	Start, End time.Time
	// Events are the decisions in the order they were taken.
	Events []Event
	// Tainted lists, sorted, the nodes that would carry one of the
	// controller's taints at End; Held, the nodes the breaker holds.
	Tainted, Held []string
	// Evicted lists, sorted, the pods that would be evicted; Paused, those
	// whose eviction is held at End (zones.pauseEvictions).
	Evicted, Paused []types.NamespacedName
}

// Run plays cfg's controller on nodes and pods from opts.Start for
// opts.For of virtual time, in dry-run mode (cfg.DryRun is ignored): each
// round runs the zone pass and the group queues (Controller.Step), then the
// due evictions (Controller.ReconcileEvictions), and moves the clock to the
// next deadline of either. Pods without spec.nodeName, and pods already
// being deleted, are not evicted and are left out. cfg is validated as the
// program validates it; nodes and pods are not modified.
func Run(cfg controller.Config, nodes []v1.Node, pods []v1.Pod, opts Options) (*Result, error) {
	if n := len(nodes) + len(pods); n > MaxObjects {
		return nil, fmt.Errorf("%w: %d nodes and pods, more than %d (MaxObjects)", ErrLimit, n, MaxObjects)
	}
	horizon := opts.For
	if horizon == 0 {
		horizon = DefaultFor
	}
	if horizon < 0 || horizon > MaxFor {
		return nil, fmt.Errorf("%w: Options.For %v is not between 0 and %v (MaxFor)", ErrLimit, opts.For, MaxFor)
	}
	cfg.DryRun = true
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	start := opts.Start
	if start.IsZero() {
		start = latest(nodes, pods)
	}
	objs := make([]client.Object, 0, len(nodes)+len(pods))
	for i := range nodes {
		n := nodes[i].DeepCopy()
		n.ResourceVersion, n.ManagedFields = "", nil
		if n.UID == "" {
			n.UID = types.UID("simulated-node-" + n.Name)
		}
		objs = append(objs, n)
	}
	var bound []types.NamespacedName
	for i := range pods {
		p := pods[i].DeepCopy()
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		p.ResourceVersion, p.ManagedFields = "", nil
		if p.UID == "" {
			p.UID = types.UID("simulated-pod-" + p.Namespace + "-" + p.Name)
		}
		objs = append(objs, p)
		bound = append(bound, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
	}
	// Object names are checked here: the fake client's builder panics on a
	// duplicate.
	seen := make(map[string]bool, len(objs))
	for _, o := range objs {
		k := fmt.Sprintf("%T/%s/%s", o, o.GetNamespace(), o.GetName())
		if o.GetName() == "" {
			return nil, fmt.Errorf("simulate: a %s without a name", kindOf(o))
		}
		if seen[k] {
			name := o.GetName()
			if o.GetNamespace() != "" {
				name = o.GetNamespace() + "/" + name
			}
			return nil, fmt.Errorf("simulate: %s %s given twice", kindOf(o), name)
		}
		seen[k] = true
	}
	c := fake.NewClientBuilder().WithObjects(objs...).WithStatusSubresource(&v1.Node{}, &v1.Pod{}).Build()
	clock := clocktesting.NewFakeClock(start)
	rec := &recorder{clock: clock, start: start}
	m, err := controller.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		return nil, err
	}
	ctl, err := controller.New(controller.Options{Config: cfg, Client: c, Clock: clock, Recorder: rec, Metrics: m})
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	for _, p := range bound {
		if _, err := ctl.ReconcilePod(ctx, reconcile.Request{NamespacedName: p}); err != nil {
			return nil, err
		}
	}
	for i := range nodes {
		if _, err := ctl.ReconcileNode(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nodes[i].Name}}); err != nil {
			return nil, err
		}
	}
	end := start.Add(horizon)
	for round := 0; ; round++ {
		if round == MaxRounds {
			return nil, fmt.Errorf("%w: more than %d rounds (MaxRounds) before %v", ErrLimit, MaxRounds, clock.Now().Sub(start))
		}
		next, pending, err := ctl.Step(ctx)
		if err != nil {
			return nil, err
		}
		res, err := ctl.ReconcileEvictions(ctx, reconcile.Request{})
		if err != nil {
			return nil, err
		}
		now := clock.Now()
		if res.RequeueAfter > 0 && (!pending || now.Add(res.RequeueAfter).Before(next)) {
			next, pending = now.Add(res.RequeueAfter), true
		}
		if !pending || next.After(end) {
			break
		}
		clock.SetTime(later(next, now.Add(time.Millisecond)))
	}
	r := &Result{Start: start, End: clock.Now(), Events: rec.events}
	r.summarize(ctl, bound)
	return r, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func kindOf(o client.Object) string {
	if _, ok := o.(*v1.Pod); ok {
		return "pod"
	}
	return "node"
}

// latest is the latest instant the objects carry, or the Unix epoch.
func latest(nodes []v1.Node, pods []v1.Pod) time.Time {
	t := time.Unix(0, 0).UTC()
	see := func(x time.Time) {
		if x.After(t) {
			t = x.UTC()
		}
	}
	for i := range nodes {
		n := &nodes[i]
		see(n.CreationTimestamp.Time)
		for _, c := range n.Status.Conditions {
			see(c.LastHeartbeatTime.Time)
			see(c.LastTransitionTime.Time)
		}
		for _, tt := range n.Spec.Taints {
			if tt.TimeAdded != nil {
				see(tt.TimeAdded.Time)
			}
		}
	}
	for i := range pods {
		see(pods[i].CreationTimestamp.Time)
	}
	return t
}

// summarize derives the final state from the events and the controller.
func (r *Result) summarize(ctl *controller.Controller, pods []types.NamespacedName) {
	tainted, held := map[string]bool{}, map[string]bool{}
	evicted := map[types.NamespacedName]bool{}
	for _, e := range r.Events {
		switch e.Reason {
		case controller.ReasonWouldTaint:
			tainted[e.Name], held[e.Name] = true, false
		case controller.ReasonWouldUntaint, controller.ReasonBreakerUntaint:
			tainted[e.Name] = false
		case controller.ReasonHeldByBreaker:
			held[e.Name] = true
		case controller.ReasonWouldEvict:
			evicted[types.NamespacedName{Namespace: e.Namespace, Name: e.Name}] = true
		}
	}
	r.Tainted, r.Held = keys(tainted), keys(held)
	for p := range evicted {
		r.Evicted = append(r.Evicted, p)
	}
	sortNames(r.Evicted)
	for _, p := range pods {
		if _, ok := ctl.EvictionPaused(p); ok {
			r.Paused = append(r.Paused, p)
		}
	}
	sortNames(r.Paused)
}

func keys(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func sortNames(s []types.NamespacedName) {
	sort.Slice(s, func(i, j int) bool { return s[i].String() < s[j].String() })
}

// Print writes the events, one a line (offset from Start, object, reason,
// message), then a summary.
func (r *Result) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range r.Events {
		fmt.Fprintf(tw, "+%v\t%s\t%s\t%s\n", e.Offset, e.Object(), e.Reason, e.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	names := func(s []types.NamespacedName) []string {
		out := make([]string, len(s))
		for i, p := range s {
			out[i] = p.String()
		}
		return out
	}
	_, err := fmt.Fprintf(w, "after %v: tainted %s; held by the breaker %s; evicted %s; evictions paused %s\n",
		r.End.Sub(r.Start), list(r.Tainted), list(r.Held), list(names(r.Evicted)), list(names(r.Paused)))
	return err
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// recorder keeps the controller's events with the virtual instant.
type recorder struct {
	clock  *clocktesting.FakeClock
	start  time.Time
	events []Event
}

func (r *recorder) Eventf(regarding runtime.Object, _ runtime.Object, eventtype, reason, _ string, note string, args ...any) {
	e := Event{At: r.clock.Now(), Type: eventtype, Reason: reason, Message: fmt.Sprintf(note, args...)}
	e.Offset = e.At.Sub(r.start)
	switch o := regarding.(type) {
	case *v1.ObjectReference:
		e.Kind, e.Namespace, e.Name = o.Kind, o.Namespace, o.Name
	case client.Object:
		e.Kind, e.Namespace, e.Name = "Pod", o.GetNamespace(), o.GetName()
		if _, ok := o.(*v1.Node); ok {
			e.Kind = "Node"
		}
	}
	r.events = append(r.events, e)
}
