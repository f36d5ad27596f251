package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubelifecycle/lifecycle/examples/replay/incident"
)

// Limits bound a recording.
type Limits struct {
	// MaxLines and MaxBytes bound the lines and bytes written.
	MaxLines, MaxBytes int64
}

// Recorder writes informer deliveries as JSON lines (incident.Delivery).
// Its handlers may be called from any goroutine; writes are serialized.
type Recorder struct {
	now func() time.Time

	mu           sync.Mutex
	w            io.Writer
	lim          Limits
	lines, bytes int64
	err          error
	failed       chan struct{} // closed with the first error
	// written, when set (tests), is sent a value after each line.
	written chan<- incident.Delivery
}

// NewRecorder returns a Recorder writing to w, timing deliveries with now.
func NewRecorder(w io.Writer, lim Limits, now func() time.Time) *Recorder {
	return &Recorder{now: now, w: w, lim: lim, failed: make(chan struct{})}
}

// Clock writes a Clock line from probe (the apiserver's Date and when it
// was received). A failed probe is written as a Clock line without a
// serverDate, so the recording says the offset is unknown.
func (r *Recorder) Clock(probe func() (date, received time.Time, err error)) error {
	date, received, err := probe()
	d := incident.Delivery{Kind: incident.DeliveryClock, Received: received}
	if err == nil && !date.IsZero() {
		d.ServerDate = &date
	} else {
		d.Received = r.now()
	}
	r.write(d)
	return r.Err()
}

// Err is the first write error or exceeded limit.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *Recorder) fail(err error) {
	if r.err == nil {
		r.err = err
		close(r.failed)
	}
}

func (r *Recorder) write(d incident.Delivery) {
	b, err := json.Marshal(d)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	if err != nil {
		r.fail(fmt.Errorf("recorder: %w", err))
		return
	}
	b = append(b, '\n')
	if r.lines+1 > r.lim.MaxLines {
		r.fail(fmt.Errorf("recorder: stopped at -max-lines=%d", r.lim.MaxLines))
		return
	}
	if r.bytes+int64(len(b)) > r.lim.MaxBytes {
		r.fail(fmt.Errorf("recorder: stopped at -max-bytes=%d (%d written)", r.lim.MaxBytes, r.bytes))
		return
	}
	if _, err := r.w.Write(b); err != nil {
		r.fail(fmt.Errorf("recorder: %w", err))
		return
	}
	r.lines++
	r.bytes += int64(len(b))
	if r.written != nil {
		r.written <- d
	}
}

// delivery is what the recorder writes for obj (nil: not a Lease or Node).
func (r *Recorder) delivery(event string, obj any) *incident.Delivery {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	at := r.now()
	switch o := obj.(type) {
	case *coordinationv1.Lease:
		d := &incident.Delivery{Received: at, Kind: incident.DeliveryLease, Event: event, Name: o.Name, Namespace: o.Namespace, ResourceVersion: o.ResourceVersion}
		if o.Spec.RenewTime != nil {
			t := o.Spec.RenewTime.Time
			d.RenewTime = &t
		}
		return d
	case *v1.Node:
		d := &incident.Delivery{Received: at, Kind: incident.DeliveryNode, Event: event, Name: o.Name, ResourceVersion: o.ResourceVersion}
		for _, c := range o.Status.Conditions {
			if c.Type == v1.NodeReady {
				d.Ready = string(c.Status)
				t := c.LastHeartbeatTime.Time
				d.LastHeartbeatTime = &t
			}
		}
		return d
	}
	return nil
}

func (r *Recorder) handler() cache.ResourceEventHandler {
	rec := func(event string, obj any) {
		if d := r.delivery(event, obj); d != nil {
			r.write(*d)
		}
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, _ bool) { rec("add", obj) },
		UpdateFunc: func(_, obj any) { rec("update", obj) },
		DeleteFunc: func(obj any) { rec("delete", obj) },
	}
}

// Run records the Node and kube-node-lease Lease informers' deliveries
// until ctx is done (nil) or a write fails or a limit is reached (that
// error). It waits for the informers to stop before returning.
func (r *Recorder) Run(ctx context.Context, cs kubernetes.Interface) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// No resync: a resync delivers cached objects again, which is not a
	// delivery from the apiserver.
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(v1.NamespaceNodeLease))
	for _, inf := range []cache.SharedIndexInformer{f.Coordination().V1().Leases().Informer(), f.Core().V1().Nodes().Informer()} {
		if _, err := inf.AddEventHandler(r.handler()); err != nil {
			return fmt.Errorf("recorder: %w", err)
		}
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	select {
	case <-ctx.Done():
	case <-r.failed:
	}
	cancel()
	return r.Err()
}
