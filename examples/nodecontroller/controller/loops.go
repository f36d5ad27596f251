package controller

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
)

// Run's write duties each run on a loop of their own, so that none waits
// behind another's writes (and, with Config.Clients, none behind another's
// client-side rate limiter):
//
//   - the monitor loop writes node status and decides the zones;
//   - the tainting loop writes NoExecute taints at the zones' rates
//     (upstream doNoExecuteTaintingPass);
//   - the eviction loop deletes the pods whose tolerations ran out
//     (upstream's taint-eviction-controller, a controller of its own since
//     v1.29);
//   - the marking workers mark the pods of nodes gone not ready
//     Ready=False (upstream MarkPodsNotReady).
//
// Unlike upstream, whose monitorNodeHealth marks a node's pods in the pass
// that wrote the node Unknown (so a large outage's pass lasts as long as
// thousands of pod writes, and the next pass, the one that moves the zone
// from partial to full disruption and its rate with it, waits for them),
// the monitor pass hands the Ready=False writes to the marking workers and
// ends. A write that fails there is retried through the marking queue's
// backoff; it is decided again from the cache each time (the pod's node
// must still be not ready, the pod still Ready).

// markingKey marks the context of a monitor pass run by Run: its
// Ready=False writes go to the marking queue.
type markingKey struct{}

// deferMarking reports whether a pod status write made with ctx goes to
// the marking queue.
func deferMarking(ctx context.Context) bool {
	v, _ := ctx.Value(markingKey{}).(bool)
	return v
}

// marksNotReady reports whether status only turns the pod's Ready
// condition False (the marking; legacy mode's NodeLost reason is written
// at once).
func marksNotReady(pod *v1.Pod, status *v1.PodStatus) bool {
	return podReady(status) == v1.ConditionFalse && podReady(&pod.Status) != v1.ConditionFalse &&
		status.Reason == pod.Status.Reason && status.Message == pod.Status.Message
}

// newMarkQueue is the queue of pods to mark Ready=False.
func newMarkQueue(c *Controller) workqueue.TypedRateLimitingInterface[item] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[item](),
		workqueue.TypedRateLimitingQueueConfig[item]{Name: "nodelifecycle-marking", Clock: c.clock})
}

// passLoop runs pass every TaintPeriod (upstream's fixed 100ms), at
// deadline when that is sooner, when kicked (a monitor pass or an event
// may have queued work), and back to back while work is due and the last
// pass made progress (so an unthrottled rate is not capped at one node
// per zone per period). A pass that makes no progress on due work (a write
// failing again) waits a whole TaintPeriod, so a broken API server is not
// hammered.
func (c *Controller) passLoop(ctx context.Context, kick <-chan struct{}, progress func() uint64,
	deadline func() (time.Time, bool), pass func(context.Context, time.Time)) {
	period := c.cfg.Monitor.TaintPeriod
	for ctx.Err() == nil {
		before := progress()
		pass(ctx, c.clock.Now())
		wait := period
		if at, ok := deadline(); ok {
			d := at.Sub(c.clock.Now())
			switch {
			case d > 0 && d < wait:
				wait = d
			case d <= 0 && progress() != before:
				continue // due work and progress: go on at once
			}
		}
		if !c.sleep(ctx, wait, kick) {
			return
		}
	}
}

// taintLoop runs tainting passes (passLoop); in legacy mode they delete
// pods too.
func (c *Controller) taintLoop(ctx context.Context) {
	c.passLoop(ctx, c.kick, c.progress.Load, c.mon.TaintDeadline, c.mon.TaintPass)
}

// evictionLoop runs eviction passes (passLoop).
func (c *Controller) evictionLoop(ctx context.Context) {
	c.passLoop(ctx, c.evictKick, c.evictProgress.Load, c.mon.EvictionDeadline, c.mon.EvictionPass)
}
