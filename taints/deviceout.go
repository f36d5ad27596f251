package taints

import (
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Upstream's texts (pkg/controller/devicetainteviction at v1.37.2), so
// that dashboards, alerts and kubectl output carry over.
const (
	// DeviceEventReason is the reason of the Normal Events recorded on a
	// pod: DeviceEventEvicting before deleting it, DeviceEventCancelling
	// when a scheduled deletion is cancelled.
	DeviceEventReason = "DeviceTaintManagerEviction"
	// DeviceEventEvicting is the message of the Event recorded when the
	// pod is about to be deleted (emitPodDeletionEvent).
	DeviceEventEvicting = "Marking for deletion"
	// DeviceEventCancelling is the message of the Event recorded for a
	// Cancellation (emitCancelPodDeletionEvent).
	DeviceEventCancelling = "Cancelling deletion"
	// DeviceDisruptionTargetReason is the reason of the DisruptionTarget
	// condition set on a pod before deleting it.
	DeviceDisruptionTargetReason = "DeletionByDeviceTaintManager"
	// DeviceDisruptionTargetMessage is that condition's message.
	DeviceDisruptionTargetMessage = "Device Taint manager: deleting due to NoExecute taint"
	// DeviceControllerName is upstream's controller (and Event source)
	// name; its metrics are device_taint_eviction_controller_pod_deletions_total
	// and device_taint_eviction_controller_pod_deletion_duration_seconds.
	DeviceControllerName = "device-taint-eviction-controller"
)

// DeviceDisruptionTargetCondition returns the condition to set on a pod
// before deleting it for a device taint (upstream addConditionAndDeletePod).
func DeviceDisruptionTargetCondition(now time.Time) v1.PodCondition {
	return v1.PodCondition{
		Type:               v1.DisruptionTarget,
		Status:             v1.ConditionTrue,
		Reason:             DeviceDisruptionTargetReason,
		Message:            DeviceDisruptionTargetMessage,
		LastTransitionTime: metav1.NewTime(now),
	}
}

// DeviceTaintSource is one taint that causes an eviction: a
// DeviceTaintRule's (Rule set) or a ResourceSlice device's (Slice set).
type DeviceTaintSource struct {
	// Rule and RuleUID name a DeviceTaintRule.
	Rule    string
	RuleUID types.UID
	// Slice names the ResourceSlice of Driver/Pool/Device whose taint
	// number Index (among the device's taints) it is.
	Slice                string
	Driver, Pool, Device string
	Index                int
	// Taint is a copy of the taint.
	Taint resourcev1.DeviceTaint
}

// String describes the source as upstream's logs do ("DeviceTaintRule
// <name>" or "ResourceSlice <name> <driver>/<pool>/<device> taint #<n>").
func (s DeviceTaintSource) String() string {
	if s.Rule != "" {
		return "DeviceTaintRule " + s.Rule
	}
	return "ResourceSlice " + s.Slice + " " + s.Driver + "/" + s.Pool + "/" + s.Device + " taint #" + itoa(s.Index)
}

// compareSources orders sources as upstream trackedTaint.Compare: rules
// first by name, then slice taints by driver, pool, device and index.
func compareSources(a, b *DeviceTaintSource) int {
	switch {
	case a.Rule != "" && b.Rule == "":
		return -1
	case a.Rule == "" && b.Rule != "":
		return 1
	case a.Rule != "":
		return strings.Compare(a.Rule, b.Rule)
	}
	if c := strings.Compare(a.Driver, b.Driver); c != 0 {
		return c
	}
	if c := strings.Compare(a.Pool, b.Pool); c != 0 {
		return c
	}
	if c := strings.Compare(a.Device, b.Device); c != 0 {
		return c
	}
	return a.Index - b.Index
}

// DeviceEviction is one pod deletion handed out by DeviceEvictor.Due. The
// caller records a DeviceEventEvicting Event, sets
// DeviceDisruptionTargetCondition and deletes the pod with a UID
// precondition (UID), then reports the outcome with Done or Retry.
type DeviceEviction struct {
	Pod types.NamespacedName
	UID types.UID
	// At is when the eviction became due: the earliest TimeAdded (plus the
	// claim's TolerationSeconds) of the taints in Taints. Upstream's
	// pod_deletion_duration_seconds observes now - At on success.
	At time.Time
	// Taints are every untolerated NoExecute taint of the pod's claims'
	// devices, in upstream's order (rules by name, then slice taints);
	// those of a Holding driver's devices (DeviceBlastRadius) are not
	// reasons and are left out.
	Taints []DeviceTaintSource
	// Attempt is 1 the first time and n+1 after n calls to Retry.
	Attempt int
}

// DeviceCancellation is a scheduled eviction that was cancelled because
// the pod no longer needs evicting (its taint went, a toleration or the
// claim changed): upstream records a Normal DeviceEventReason Event
// DeviceEventCancelling on the pod.
type DeviceCancellation struct {
	Pod types.NamespacedName
	UID types.UID
	// At is the fire time the eviction was scheduled for.
	At time.Time
}

func (d *DeviceEvictor) noteCancelled(p *devPod) {
	if len(d.cancelled) >= d.cfg.KeepCancellations {
		d.dropped++
		return
	}
	d.cancelled = append(d.cancelled, DeviceCancellation{Pod: p.key, UID: d.uidOf(p), At: p.ev.at})
}

// AppendCancelled appends the cancellations since the last call to dst,
// in the order they happened, forgets them and returns the extended slice.
// A pod that was deleted, or whose eviction was handed out or done, yields
// none. With nothing pending it is O(1) and allocates nothing.
func (d *DeviceEvictor) AppendCancelled(dst []DeviceCancellation) []DeviceCancellation {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.cancelled) == 0 {
		return dst
	}
	dst = append(dst, d.cancelled...)
	clear(d.cancelled)
	d.cancelled = d.cancelled[:0]
	return dst
}

// CancelledDropped returns how many cancellations were not kept because
// KeepCancellations were pending. O(1).
func (d *DeviceEvictor) CancelledDropped() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dropped
}

// Due hands out every eviction due at now, earliest first (ties in the
// order they were scheduled), each once until Done or Retry. Report each
// with Done or Retry, even when its pod was deleted meanwhile (DeletePod):
// the DeviceEvictor keeps it until then. It returns nil when nothing is
// due, which costs O(1) and allocates nothing. k evictions from b fire
// times cost O(b log B + k) plus their Taints.
//
// The first Due after a Restore settles it (the caller runs Due once its
// informers have synced): the restored entries of pods and rules not seen
// by then are dropped, and restored breaker holds are judged.
//
// With a blast-radius breaker (DeviceBlastRadius.MaxShare), Due first
// judges the breakers on the counts of every input so far, as
// RuleStatuses does (the inputs only count): a driver trips, or its hold
// ends, before any eviction is handed out, so no eviction passes a trip
// that the inputs fed by then call for, and no trip is decided on the
// partial view of an input that came before related ones.
//
// With a blast-radius rate (DeviceBlastRadius.QPS), each eviction takes a
// token of its driver's bucket (the driver of the device whose taint makes
// it due earliest); one due while the bucket is empty waits (Explain:
// DeviceThrottled) and is handed out, in the order it fell due, once a
// token is there: the waiting ones first, then the newly due.
func (d *DeviceEvictor) Due(now time.Time) []DeviceEviction {
	d.mu.Lock()
	defer d.mu.Unlock()
	now = d.advance(now)
	if d.restorePending {
		d.dropUnseenRestored()
	}
	if d.restored > 0 {
		d.judgeRestored()
	}
	d.judge(now)
	due := d.dueScratch[:0]
	if len(d.waiting) > 0 {
		due = d.drainThrottled(now, due)
	}
	for {
		b := d.queue.peek(now)
		if b == nil || b.at.After(now) {
			break
		}
		p := b.head
		d.queue.remove(p)
		if d.rateOn && d.throttle(now, p) {
			continue
		}
		p.state = stHandedOut
		due = append(due, p)
	}
	if len(due) == 0 {
		return nil
	}
	out := make([]DeviceEviction, len(due))
	srcs := make([]DeviceTaintSource, 0, len(due)) // one array for the Taints (one each, typically)
	times := make([]metav1.Time, 0, len(due))      // and one for their TimeAdded copies
	for i, p := range due {
		start := len(srcs)
		srcs = d.appendSources(srcs, &times, p)
		out[i] = DeviceEviction{Pod: p.key, UID: d.uidOf(p), At: p.ev.due, Taints: srcs[start:len(srcs):len(srcs)], Attempt: int(p.ev.attempts) + 1}
		due[i] = nil
	}
	d.dueScratch = due[:0]
	return out
}

// sources lists the taints behind p's eviction (upstream evictionReason).
func (d *DeviceEvictor) sources(p *devPod) []DeviceTaintSource {
	var times []metav1.Time
	return d.appendSources(nil, &times, p)
}

// appendSources appends the taints behind p's eviction to dst, sorted and
// without duplicates, their TimeAdded copies in *times.
func (d *DeviceEvictor) appendSources(dst []DeviceTaintSource, times *[]metav1.Time, p *devPod) []DeviceTaintSource {
	start := len(dst)
	for i := range int(p.nlinks) {
		l := p.linkAt(i)
		if !l.claim.has || !d.linkValid(p, l) {
			continue
		}
		dst = d.claimSources(dst, times, l.claim)
	}
	mine := dst[start:]
	slices.SortFunc(mine, func(a, b DeviceTaintSource) int { return compareSources(&a, &b) })
	mine = slices.CompactFunc(mine, func(a, b DeviceTaintSource) bool { return compareSources(&a, &b) == 0 && a.Slice == b.Slice })
	return dst[:start+len(mine)]
}

// timeCopy returns a copy of t kept in *times, which grows by doubling, so
// that many copies cost a few allocations.
func timeCopy(times *[]metav1.Time, t time.Time) *metav1.Time {
	*times = append(*times, metav1.Time{Time: t})
	return &(*times)[len(*times)-1]
}

// claimSources appends the taints behind c's eviction.
func (d *DeviceEvictor) claimSources(out []DeviceTaintSource, times *[]metav1.Time, c *devClaim) []DeviceTaintSource {
	for i := range c.results {
		r := &c.results[i]
		if d.heldDriver(r.driver) {
			continue // held: not a reason of this eviction
		}
		if p := d.pools[poolKey{r.driver, r.pool}]; p != nil {
			if dev := p.view[r.device]; dev != nil {
				for j := range dev.taints {
					t := &dev.taints[j]
					if forever, _, _ := deviceTolerationVerdict(r.tols, t.key, t.value); forever {
						continue
					}
					taint := resourcev1.DeviceTaint{Key: t.key, Value: t.value, Effect: resourcev1.DeviceTaintEffectNoExecute}
					if t.hasTimeAdded {
						taint.TimeAdded = timeCopy(times, t.since)
					}
					out = append(out, DeviceTaintSource{Slice: dev.slice.name, Driver: r.driver, Pool: r.pool, Device: r.device, Index: t.index, Taint: taint})
				}
			}
		}
		for _, rule := range d.evicting {
			if !rule.sel.Selects(r.driver, r.pool, r.device) {
				continue
			}
			if forever, _, _ := deviceTolerationVerdict(r.tols, rule.taint.Key, rule.taint.Value); forever {
				continue
			}
			taint := rule.taint
			if taint.TimeAdded != nil {
				taint.TimeAdded = timeCopy(times, taint.TimeAdded.Time)
			}
			out = append(out, DeviceTaintSource{Rule: rule.name, RuleUID: rule.uid, Taint: taint})
		}
	}
	return out
}

// DeviceOutcome is how a handed-out device eviction ended.
type DeviceOutcome uint8

const (
	// DeviceDeleted: the pod was deleted, or was already terminating. It
	// counts toward the rules' evicted pods and upstream's pod deletion
	// metrics.
	DeviceDeleted DeviceOutcome = 1 + iota
	// DeviceGone: the pod was not found, or was replaced by another pod of
	// the same name (the UID precondition failed). Not counted.
	DeviceGone
)

// String returns the outcome's name.
func (o DeviceOutcome) String() string {
	switch o {
	case DeviceDeleted:
		return "Deleted"
	case DeviceGone:
		return "Gone"
	}
	return "DeviceOutcome(" + itoa(int(o)) + ")"
}

// Done reports that the handed-out eviction x ended with outcome o: the
// pod is not evicted again while it keeps its UID. DeviceDeleted counts the
// pod for each DeviceTaintRule in x.Taints (still present with that UID)
// and asks for that rule's status check one RuleStatusPeriod from now, as
// upstream does after a deletion. The pod may have been deleted (DeletePod)
// or replaced under its name since Due: the eviction is still counted
// (the pod is then forgotten). A no-op unless x is handed out and not
// reported yet: each eviction counts once. O(taints).
func (d *DeviceEvictor) Done(now time.Time, x DeviceEviction, o DeviceOutcome) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now = d.advance(now)
	p := d.handedOut(x)
	if p == nil {
		if !d.takeGone(x) {
			return
		}
	} else {
		p.state = stEvicted
	}
	if o != DeviceDeleted {
		return
	}
	for i := range x.Taints {
		s := &x.Taints[i]
		if s.Rule == "" {
			continue
		}
		if r := d.rules[s.Rule]; r != nil && r.uid == s.RuleUID {
			r.evicted++
			d.statusLater(r, now.Add(d.cfg.RuleStatusPeriod))
		}
	}
}

// Retry reports that the handed-out eviction x failed. The pod is
// re-evaluated: when it no longer needs evicting the eviction is dropped
// and reported as a cancellation; otherwise it is due again at now + after
// (after < 0 counts as 0), which an eviction time moved earlier meanwhile
// does not advance, or, when its eviction time is later than that, at its
// eviction time, which it then follows as a scheduled eviction does (when
// it moves earlier too, as upstream's AddAfter). Upstream retries with its
// work queue's rate limiter; the caller picks after (e.g. client-go's
// exponential 5ms to 1000s). A pod deleted (DeletePod) or replaced under
// its name since Due is not retried: the eviction is dropped without a
// cancellation. A no-op unless x is handed out and not reported yet.
// O(log n).
func (d *DeviceEvictor) Retry(now time.Time, x DeviceEviction, after time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now = d.advance(now)
	p := d.handedOut(x)
	if p == nil {
		d.takeGone(x)
		return
	}
	p.ev.attempts++
	at, ok := d.podEviction(p)
	if !ok {
		if !d.heldPod(p) {
			d.noteCancelled(p)
		}
		d.freeEv(p)
		p.state = stIdle
		return
	}
	retryAt, backoff := now.Add(max(after, 0)), true
	if at.After(retryAt) {
		retryAt, backoff = at, false // no backoff left then: it follows the eviction time
	}
	p.ev.at, p.ev.due, p.ev.backoff, p.state = retryAt, at, backoff, stScheduled
	d.queue.add(p)
}

// takeGone drops x's entry among the handed-out evictions of forgotten
// pods and reports whether there was one.
func (d *DeviceEvictor) takeGone(x DeviceEviction) bool {
	k := podID{x.Pod, x.UID}
	if _, ok := d.gone[k]; !ok {
		return false
	}
	delete(d.gone, k)
	return true
}

func (d *DeviceEvictor) handedOut(x DeviceEviction) *devPod {
	p := d.pods.get(x.Pod)
	if p == nil || p.state != stHandedOut || !d.hasUID(p, x.UID) {
		return nil
	}
	return p
}

// NextDeadline returns the earliest time Due or RuleStatuses has work (it
// may have passed), or false when there is none: with a blast-radius rate,
// the next token of a driver with evictions waiting counts; with a
// breaker, the latest now when inputs since the last pass would change a
// driver's state or ResumeAt, and with DeviceBlastRadius.ResumeAfter, the
// end of a hold waiting for it. Handed-out evictions do not count. O(1),
// plus O(drivers with evictions waiting, a hold waiting to end, or counts
// changed since the last pass).
func (d *DeviceEvictor) NextDeadline() (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var at time.Time
	ok := false
	if b := d.queue.peek(d.last); b != nil {
		at, ok = b.at, true
	}
	if r := d.peekStatus(); r != nil && (!ok || r.statusAt.Sub(d.last) < at.Sub(d.last)) {
		at, ok = r.statusAt, true
	}
	for _, v := range d.waiting {
		if v.wait.head == nil {
			continue
		}
		if t := d.nextToken(v); !ok || t.Sub(d.last) < at.Sub(d.last) {
			at, ok = t, true
		}
	}
	if t, has := d.nextResume(); has && (!ok || t.Sub(d.last) < at.Sub(d.last)) {
		at, ok = t, true
	}
	if len(d.dirty) > 0 && (!ok || at.Sub(d.last) > 0) && d.pendingVerdict() {
		at, ok = d.last, true // the next pass changes a breaker
	}
	return at, ok
}

// Len returns the number of scheduled evictions (retries included, handed
// out ones not). O(1).
func (d *DeviceEvictor) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.queue.len()
}

func itoa(i int) string { return strconv.Itoa(i) }
