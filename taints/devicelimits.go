package taints

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// DeviceBlastRadius limits how fast and how widely device taints evict, per
// DRA driver (the driver of the tainted device). Unlike upstream, which
// deletes at once every pod a NoExecute taint reaches (a DeviceTaintRule
// with an empty selector deletes every pod that uses any device in the
// cluster: kubernetes/kubernetes#141422), a DeviceEvictor with a
// DeviceBlastRadius hands each driver's evictions out at a rate, and holds
// them all while the driver's taints reach more than a share of its
// allocated devices. The zero value limits nothing: upstream's decisions.
//
// The breaker is judged at a pass (RuleStatuses, Due), on the counts of
// every input fed so far, not at each input: informers deliver objects in
// no particular order (a DeviceTaintRule before the claims whose devices
// it taints makes 1 of 1 allocated device tainted), and a caller runs its
// passes once they have synced. DeviceDriverLimit says what counts and
// what the reports show between two passes.
//
// Per driver rather than per pool: a pool is often one node's devices, so a
// per-pool share would hold every node-wide fault (a whole pool tainted is
// 100% of it), and a per-pool rate would bound nothing cluster-wide (n pools
// evict at n times the rate). A driver's devices are one fleet of one kind,
// which one buggy driver release or one over-broad rule taints together.
type DeviceBlastRadius struct {
	// QPS is the rate, in evictions per second, at which Due hands out each
	// driver's evictions (a token bucket, golang.org/x/time/rate); an
	// eviction due while its driver has no token waits, in the order it
	// fell due, and NextDeadline reports the next token. 0: no rate, as
	// upstream. Must be finite and not negative.
	QPS float64
	// Burst is the bucket's size: how many of a driver's evictions Due
	// hands out at once. At least 1 when QPS is set; ignored otherwise.
	Burst int
	// MaxShare is the breaker: when more than MaxShare of a driver's
	// allocated devices are tainted (DeviceDriverLimit says exactly what
	// counts), the driver trips to Holding and its taints evict no pod
	// until its share falls to ResumeShare (and stays there for
	// ResumeAfter), or ReleaseHold. 0: no breaker, as upstream. Must be in
	// [0, 1]; 1 counts but never holds.
	MaxShare float64
	// MinDevices keeps the breaker from tripping until more than
	// MinDevices of the driver's allocated devices are tainted, so that one
	// failed device of a small driver still evicts (upstream's zone
	// disruption rule likewise needs more than 2 nodes not ready). It
	// gates the trip only: once Holding, only the share ends the hold.
	// 0: the share alone decides. Must not be negative.
	MinDevices int
	// ResumeShare is the breaker's resume level, its hysteresis: a Holding
	// (or Released) driver is armed again only when its share falls to
	// ResumeShare or below, not as soon as it is back under MaxShare. A
	// storm rolled back slice by slice thus keeps its hold until the
	// roll-back is done, instead of letting the pods still on its last
	// tainted devices go at once (their taints' TimeAdded is long past),
	// and a share hovering at MaxShare does not flip the hold at every
	// pass. 0 (literal): the hold lasts until none of the driver's
	// allocated devices is tainted, or ReleaseHold; a device that stays
	// tainted keeps it, so its pods need ReleaseHold or a ResumeShare
	// above the share it alone makes. MaxShare gives the breaker without
	// hysteresis. Must be in [0, MaxShare].
	ResumeShare float64
	// ResumeAfter is how long the share must stay at or below ResumeShare
	// before the hold ends: a storm that clears and comes back within it
	// (a flapping health check, a rule deleted and re-applied) is still
	// held from its first device, and a roll-back that pauses keeps it.
	// The wait counts from the input after which the share has been at or
	// below ResumeShare at every input (the pass that first sees it there
	// starts it); the hold ends at the instant ResumeAfter later, at the
	// first pass whose now reaches it (NextDeadline reports it); a pass
	// that finds the share back above ResumeShare cancels the wait. 0
	// (literal): the hold ends at the first pass that finds the share at
	// ResumeShare or below. Must not be negative; ignored without MaxShare.
	ResumeAfter time.Duration
}

func (b DeviceBlastRadius) validate() error {
	switch {
	case math.IsNaN(b.QPS) || math.IsInf(b.QPS, 0) || b.QPS < 0:
		return fmt.Errorf("%w: BlastRadius.QPS %v must be finite and not negative", ErrInvalidConfig, b.QPS)
	case b.Burst < 0:
		return fmt.Errorf("%w: BlastRadius.Burst %d must not be negative", ErrInvalidConfig, b.Burst)
	case b.QPS > 0 && b.Burst < 1:
		return fmt.Errorf("%w: BlastRadius.Burst %d must be at least 1 with QPS %v", ErrInvalidConfig, b.Burst, b.QPS)
	case math.IsNaN(b.MaxShare) || b.MaxShare < 0 || b.MaxShare > 1:
		return fmt.Errorf("%w: BlastRadius.MaxShare %v must be in [0, 1]", ErrInvalidConfig, b.MaxShare)
	case b.MinDevices < 0:
		return fmt.Errorf("%w: BlastRadius.MinDevices %d must not be negative", ErrInvalidConfig, b.MinDevices)
	case math.IsNaN(b.ResumeShare) || b.ResumeShare < 0 || b.ResumeShare > b.MaxShare:
		return fmt.Errorf("%w: BlastRadius.ResumeShare %v must be in [0, MaxShare %v]", ErrInvalidConfig, b.ResumeShare, b.MaxShare)
	case b.ResumeAfter < 0:
		return fmt.Errorf("%w: BlastRadius.ResumeAfter %v must not be negative", ErrInvalidConfig, b.ResumeAfter)
	}
	return nil
}

// DeviceHoldState is a driver's breaker state (DeviceBlastRadius.MaxShare).
type DeviceHoldState uint8

const (
	// DeviceHoldArmed: the driver's taints evict; the breaker holds them
	// when the share goes over MaxShare (and MinDevices).
	DeviceHoldArmed DeviceHoldState = 1 + iota
	// DeviceHoldHolding: more than MaxShare of the driver's allocated
	// devices were tainted, and the share has not yet fallen to
	// ResumeShare (and stayed there for ResumeAfter); its taints evict no
	// pod.
	DeviceHoldHolding
	// DeviceHoldReleased: ReleaseHold let a Holding driver's evictions
	// proceed (at its rate); the breaker is armed again when the hold
	// would have ended: the share at ResumeShare or below for ResumeAfter.
	DeviceHoldReleased
)

// String returns the state's name.
func (s DeviceHoldState) String() string {
	switch s {
	case DeviceHoldArmed:
		return "Armed"
	case DeviceHoldHolding:
		return "Holding"
	case DeviceHoldReleased:
		return "Released"
	}
	return "DeviceHoldState(" + strconv.Itoa(int(s)) + ")"
}

// Event reasons for a driver's hold changes (ours, not upstream's: the
// upstream controller has no breaker), one per DeviceHoldState reached.
const (
	// DeviceHoldEventHeld: the driver entered DeviceHoldHolding (a Warning
	// Event).
	DeviceHoldEventHeld = "DeviceTaintEvictionHeld"
	// DeviceHoldEventReleased: ReleaseHold let the driver's evictions
	// proceed (a Normal Event).
	DeviceHoldEventReleased = "DeviceTaintEvictionHoldReleased"
	// DeviceHoldEventResumed: the share fell to ResumeShare or below (and
	// stayed there for ResumeAfter); the breaker is armed (a Normal
	// Event).
	DeviceHoldEventResumed = "DeviceTaintEvictionResumed"
)

// DeviceDriverLimit is one DRA driver's blast-radius state, for Events
// (AppendHoldChanges), metrics and status (DriverLimits).
//
// The share the breaker judges is TaintedDevices / AllocatedDevices, both
// counted when an input changes; the breaker judges them at a pass
// (RuleStatuses, Due), before the pass hands out any eviction:
//
//   - AllocatedDevices: the driver's devices (pool and name) allocated to
//     at least one allocated ResourceClaim the DeviceEvictor knows,
//     published in a ResourceSlice or not;
//   - TaintedDevices: those of them with an allocated claim that does not
//     tolerate forever one of their NoExecute taints (from the pool's
//     highest-generation ResourceSlices or a DeviceTaintRule), whether the
//     taint evicts now or after TolerationSeconds, and whether or not a pod
//     uses the claim yet.
//
// Between two passes the counts are the inputs' so far, and State, Since
// and ResumeAt (and every hold a DeviceEvictor reports or acts on:
// Explain, RuleStatuses, AppendHoldChanges, Snapshot, ReleaseHold) are as
// the last pass judged them; the next pass settles them, and NextDeadline
// reports it due at once when it would change a driver's state or
// ResumeAt.
type DeviceDriverLimit struct {
	Driver string
	State  DeviceHoldState
	// Since is when State began (the now of the pass, or of the
	// ReleaseHold, that changed it; for a hold ended by ResumeAfter, the
	// instant it ended); zero for a driver Armed since it was first seen.
	Since            time.Time
	AllocatedDevices int
	TaintedDevices   int
	// MaxShare, MinDevices, ResumeShare and ResumeAfter are the
	// configured breaker.
	MaxShare    float64
	MinDevices  int
	ResumeShare float64
	ResumeAfter time.Duration
	// ResumeAt is, for a Holding or Released driver whose share the last
	// pass found at or below ResumeShare, when its hold ends unless a pass
	// finds the share above ResumeShare first (ResumeAfter after it fell
	// there); zero otherwise.
	ResumeAt time.Time
	// HeldPods are the pods whose eviction is held and that use a tainted
	// device of the driver (DriverLimits only; 0 in AppendHoldChanges).
	HeldPods int
	// Throttled are the driver's evictions due and waiting for a token of
	// its rate (DriverLimits only).
	Throttled int
}

// Share returns TaintedDevices / AllocatedDevices (0 with no allocated
// device).
func (l DeviceDriverLimit) Share() float64 {
	if l.AllocatedDevices == 0 {
		return 0
	}
	return float64(l.TaintedDevices) / float64(l.AllocatedDevices)
}

// Reason returns the Event reason for State: DeviceHoldEventHeld,
// DeviceHoldEventReleased or DeviceHoldEventResumed.
func (l DeviceDriverLimit) Reason() string {
	switch l.State {
	case DeviceHoldHolding:
		return DeviceHoldEventHeld
	case DeviceHoldReleased:
		return DeviceHoldEventReleased
	}
	return DeviceHoldEventResumed
}

// Message describes the state in one sentence, for an Event, a log line or
// a rule's status: the counts, and for a Holding or Released driver why
// the hold lasts and what ends it.
func (l DeviceDriverLimit) Message() string {
	counts := strconv.Itoa(l.TaintedDevices) + " of " + strconv.Itoa(l.AllocatedDevices) +
		" allocated devices of driver " + l.Driver + " (" + percent(l.Share()) + ") have an untolerated NoExecute taint"
	switch l.State {
	case DeviceHoldHolding:
		return "Evictions held: " + counts + l.level() + "; the hold ends " + l.resumeRule() + "."
	case DeviceHoldReleased:
		return "Hold released: " + counts + l.level() + "; evictions proceed, and the breaker is armed again " + l.resumeRule() + "."
	}
	return "Evictions not held: " + counts + "."
}

// level says where a held driver's share stands against MaxShare and
// ResumeShare.
func (l DeviceDriverLimit) level() string {
	switch {
	case l.over():
		return ", more than " + percent(l.MaxShare)
	case !l.calm():
		return ", no longer more than " + percent(l.MaxShare)
	}
	return ""
}

// over reports whether the share is over MaxShare (the trip's share test).
func (l DeviceDriverLimit) over() bool {
	return float64(l.TaintedDevices) > l.MaxShare*float64(l.AllocatedDevices)
}

// calm reports whether the share is at or below ResumeShare.
func (l DeviceDriverLimit) calm() bool {
	return float64(l.TaintedDevices) <= l.ResumeShare*float64(l.AllocatedDevices)
}

// resumeRule says when the hold ends: at ResumeAt if it is set, else
// once the share reaches the resume level (for ResumeAfter).
func (l DeviceDriverLimit) resumeRule() string {
	if !l.ResumeAt.IsZero() {
		if l.ResumeShare == 0 {
			return "at " + stamp(l.ResumeAt) + " unless a device is tainted again"
		}
		return "at " + stamp(l.ResumeAt) + " unless the share rises above " + percent(l.ResumeShare)
	}
	var s string
	if l.ResumeShare == 0 {
		s = "when none is tainted"
		if l.ResumeAfter > 0 {
			s = "when none has been tainted for " + l.ResumeAfter.String()
		}
		return s
	}
	if l.ResumeAfter > 0 {
		return "when the share has been at or below " + percent(l.ResumeShare) + " for " + l.ResumeAfter.String()
	}
	return "when the share falls to " + percent(l.ResumeShare) + " or below"
}

// percent formats a share as a percentage with at most one decimal.
func percent(x float64) string {
	s := strconv.FormatFloat(x*100, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + "%"
}

// devDriver is one driver's counters, breaker and token bucket.
type devDriver struct {
	name      string
	allocated int // allocated devices
	tainted   int // allocated devices with hits
	held      bool
	released  bool
	since     time.Time
	// resuming: Holding or Released with the share at or below
	// ResumeShare; the hold ends at resumeAt (ResumeAfter later).
	resuming   bool
	inResuming bool // in DeviceEvictor.resuming
	resumeAt   time.Time
	// restored: a hold from Restore (maybe released since), not judged
	// until the first Due.
	restored bool
	// calmRun: the share has been at or below ResumeShare at the end of
	// every input that changed the counters since calmFrom (countsChanged);
	// a ResumeAfter wait the next pass starts counts from there.
	calmRun   bool
	calmFrom  time.Time
	fresh     bool            // counters changed in the current input
	reported  DeviceHoldState // as last returned by AppendHoldChanges
	isDirty   bool            // in DeviceEvictor.dirty: judged at the next pass
	inChanged bool            // in DeviceEvictor.holdDirty
	inWaiting bool            // in DeviceEvictor.waiting
	lim       *rate.Limiter   // nil without a rate
	// wait are the evictions due and waiting for a token, in the order
	// they fell due (a devQueue list outside the heaps).
	wait devBucket
}

func (v *devDriver) state() DeviceHoldState {
	switch {
	case v.held:
		return DeviceHoldHolding
	case v.released:
		return DeviceHoldReleased
	}
	return DeviceHoldArmed
}

// driver returns name's record, made on first use.
func (d *DeviceEvictor) driver(name string) *devDriver {
	v := d.drivers[name]
	if v == nil {
		v = &devDriver{name: name, reported: DeviceHoldArmed}
		v.wait = devBucket{lane: laneThrottle, drv: v}
		if d.rateOn {
			v.lim = rate.NewLimiter(rate.Limit(d.cfg.BlastRadius.QPS), d.cfg.BlastRadius.Burst)
		}
		d.drivers[name] = v
	}
	return v
}

// markDirty notes that v's counters changed: countsChanged tracks its
// calm run at the end of the input, and the next pass judges it.
func (d *DeviceEvictor) markDirty(v *devDriver) {
	v.fresh, d.fresh = true, true
	if !v.isDirty {
		v.isDirty = true
		d.dirty = append(d.dirty, v)
	}
}

// heldDriver reports whether the driver name is Holding.
func (d *DeviceEvictor) heldDriver(name string) bool {
	if !d.breakerOn {
		return false
	}
	v := d.drivers[name]
	return v != nil && v.held
}

// over reports whether v's counts trip the breaker: more than MaxShare,
// and more than MinDevices, of its allocated devices tainted.
func (d *DeviceEvictor) over(v *devDriver) bool {
	b := &d.cfg.BlastRadius
	return d.breakerOn && v.tainted > b.MinDevices && float64(v.tainted) > b.MaxShare*float64(v.allocated)
}

// calm reports whether v's share is at or below ResumeShare, the level at
// which a hold may end (with ResumeShare 0: none tainted).
func (d *DeviceEvictor) calm(v *devDriver) bool {
	return float64(v.tainted) <= d.cfg.BlastRadius.ResumeShare*float64(v.allocated)
}

// deviceUsed counts a device of driver that gains its first allocated
// claim (delta 1) or loses its last (-1).
func (d *DeviceEvictor) deviceUsed(driver string, delta int) {
	v := d.driver(driver)
	v.allocated += delta
	d.markDirty(v)
}

// resultHit reports whether one of r's device's NoExecute taints (slice or
// rule) is not tolerated forever by r's tolerations.
func (d *DeviceEvictor) resultHit(r *devResult) bool {
	if p := d.pools[poolKey{r.driver, r.pool}]; p != nil {
		if dev := p.view[r.device]; dev != nil {
			for j := range dev.taints {
				if forever, _, _ := deviceTolerationVerdict(r.tols, dev.taints[j].key, dev.taints[j].value); !forever {
					return true
				}
			}
		}
	}
	for _, rule := range d.evicting {
		if rule.sel.Selects(r.driver, r.pool, r.device) {
			if forever, _, _ := deviceTolerationVerdict(r.tols, rule.taint.Key, rule.taint.Value); !forever {
				return true
			}
		}
	}
	return false
}

// setHit records whether r counts as a hit of its device.
func (d *DeviceEvictor) setHit(r *devResult, hit bool) {
	if r.hit == hit {
		return
	}
	r.hit = hit
	p := d.pools[poolKey{r.driver, r.pool}]
	if p.hits == nil {
		p.hits = make(map[string]int32)
	}
	n := p.hits[r.device]
	if hit {
		n++
	} else {
		n--
	}
	if n == 0 {
		delete(p.hits, r.device)
	} else {
		p.hits[r.device] = n
	}
	if hit && n == 1 || !hit && n == 0 {
		v := d.driver(r.driver)
		if hit {
			v.tainted++
		} else {
			v.tainted--
		}
		d.markDirty(v)
	}
}

// updateHits recomputes the hits of c's results.
func (d *DeviceEvictor) updateHits(c *devClaim) {
	if !c.allocated {
		return
	}
	for i := range c.results {
		r := &c.results[i]
		d.setHit(r, d.resultHit(r))
	}
}

// reclaimMany re-evaluates the claims cs (in creation order). With the
// blast-radius limit on, their hits are counted first (countsChanged);
// the breakers are not decided here but at the next pass (judge), on the
// view the inputs give by then.
func (d *DeviceEvictor) reclaimMany(now time.Time, cs []*devClaim) {
	if d.limitsOn {
		for _, c := range cs {
			d.updateHits(c)
		}
		d.countsChanged(now)
	}
	for _, c := range cs {
		d.reclaim(now, c)
	}
}

// countsChanged ends an input that changed drivers' counters: each
// changed driver's calm run (the share at or below ResumeShare since
// calmFrom, the start of a ResumeAfter wait) is kept, started at now or
// broken, and a driver with nothing left is forgotten. The counters are
// the input's final ones (an object replaced under its name, deleted then
// added, is calmer in between, under the same now: no calmFrom differs).
// O(drivers changed since the last pass) when a counter changed, else
// O(1).
func (d *DeviceEvictor) countsChanged(now time.Time) {
	if !d.fresh {
		return
	}
	d.fresh = false
	for _, v := range d.dirty {
		if !v.fresh {
			continue
		}
		v.fresh = false
		switch calm := d.calm(v); {
		case !calm:
			v.calmRun = false
		case !v.calmRun:
			v.calmRun, v.calmFrom = true, now
		}
		d.dropIdle(v)
	}
}

// judge decides the breakers at now, on the counts the inputs give: the
// pass's first step (RuleStatuses, Due). The drivers whose counters
// changed since the last pass are judged (settle), then the holds whose
// ResumeAfter has run out end (resumeDue); the claims of every driver
// whose hold changed are re-evaluated. O(1) with nothing to judge.
func (d *DeviceEvictor) judge(now time.Time) {
	if !d.limitsOn {
		return
	}
	if len(d.dirty) > 0 {
		for _, c := range d.settle(now) {
			d.reclaim(now, c)
		}
	}
	if len(d.resuming) > 0 {
		d.resumeDue(now)
	}
}

// holdVerdict is what the breaker rule makes of a driver's counts (verdictOf): an Armed driver
// trips when they are over; a Holding or Released one ends its hold when
// its share is calm (at or below ResumeShare), at once without
// ResumeAfter, else ResumeAfter after its calm run began (resumeDue), and
// a share that is no longer calm cancels that wait.
type holdVerdict uint8

const (
	verdictKeep      holdVerdict = iota // nothing changes
	verdictTrip                         // Armed to Holding
	verdictResume                       // the hold ends now
	verdictWait                         // the hold ends ResumeAfter after calmFrom
	verdictStopWait                     // the share is no longer calm: no ResumeAt
	verdictNotJudged                    // a restored hold before the first Due
)

func (d *DeviceEvictor) verdictOf(v *devDriver) holdVerdict {
	switch {
	case v.restored:
		return verdictNotJudged
	case !v.held && !v.released:
		if d.over(v) {
			return verdictTrip
		}
		return verdictKeep
	case !d.calm(v):
		if v.resuming {
			return verdictStopWait
		}
		return verdictKeep
	case d.cfg.BlastRadius.ResumeAfter == 0:
		return verdictResume
	case !v.resuming:
		return verdictWait
	case v.calmRun && !v.resumeAt.Equal(v.calmFrom.Add(d.cfg.BlastRadius.ResumeAfter)):
		// The share went above ResumeShare and back between two passes:
		// the wait counts from the input that brought it back.
		return verdictWait
	}
	return verdictKeep
}

// pendingVerdict reports whether the next pass would change a driver's
// breaker (its state or ResumeAt): NextDeadline then reports that Due has
// work now. O(drivers changed since the last pass).
func (d *DeviceEvictor) pendingVerdict() bool {
	for _, v := range d.dirty {
		if vd := d.verdictOf(v); vd != verdictKeep && vd != verdictNotJudged {
			return true
		}
	}
	return false
}

// settle judges every driver whose counters changed since the last pass
// (verdictOf) and returns the allocated claims of the drivers whose hold
// changed.
func (d *DeviceEvictor) settle(now time.Time) []*devClaim {
	var flipped []*devDriver
	for i, v := range d.dirty {
		d.dirty[i] = nil
		v.isDirty = false
		was, wasHeld := v.state(), v.held
		switch d.verdictOf(v) {
		case verdictTrip:
			v.held = true
		case verdictResume:
			v.held, v.released, v.resuming = false, false, false
		case verdictStopWait:
			v.resuming = false
		case verdictWait:
			from := now
			if v.calmRun {
				from = v.calmFrom // calm at every input since
			}
			// The run the wait counts from, so that only a flap re-dates
			// it (verdictOf).
			v.calmRun, v.calmFrom = true, from
			v.resuming, v.resumeAt = true, from.Add(d.cfg.BlastRadius.ResumeAfter)
			if !v.inResuming {
				v.inResuming = true
				d.resuming = append(d.resuming, v)
			}
		}
		if v.held != wasHeld {
			flipped = append(flipped, v)
		}
		if v.state() != was {
			v.since = now
			d.noteHold(v)
		}
		d.dropIdle(v)
	}
	d.dirty = d.dirty[:0]
	return d.flipped(now, flipped)
}

// dropIdle forgets v when nothing of it is left.
func (d *DeviceEvictor) dropIdle(v *devDriver) {
	if v.allocated == 0 && v.tainted == 0 && !v.held && !v.released && v.wait.head == nil && d.drivers[v.name] == v {
		delete(d.drivers, v.name)
	}
}

// resumeDue ends the holds whose ResumeAfter has run out by now, and
// re-evaluates the claims of the drivers that were Holding: their pods
// are scheduled at their own times (those past are due). Drivers whose
// wait was cancelled leave the list. O(drivers waiting to resume), and
// nothing allocated unless a hold ends.
func (d *DeviceEvictor) resumeDue(now time.Time) {
	var flipped []*devDriver
	k := 0
	for _, v := range d.resuming {
		switch {
		case !v.resuming || !v.held && !v.released:
			v.resuming, v.inResuming = false, false
		case now.Before(v.resumeAt):
			d.resuming[k] = v
			k++
		default:
			if v.held {
				flipped = append(flipped, v)
			}
			v.held, v.released, v.resuming, v.inResuming = false, false, false, false
			v.since = v.resumeAt
			d.noteHold(v)
			d.dropIdle(v)
		}
	}
	clear(d.resuming[k:])
	d.resuming = d.resuming[:k]
	for _, c := range d.flipped(now, flipped) {
		d.reclaim(now, c)
	}
}

// restoreHolds makes the drivers of holds Holding (the claims known of
// them held), each marked restored until the first Due (judgeRestored).
func (d *DeviceEvictor) restoreHolds(now time.Time, holds []DeviceHold) {
	var flipped []*devDriver
	for _, h := range holds {
		v := d.driver(h.Driver)
		if v.held || v.released {
			continue
		}
		v.held, v.restored, v.since = true, true, h.Since
		d.restored++
		d.noteHold(v)
		flipped = append(flipped, v)
	}
	for _, c := range d.flipped(now, flipped) {
		d.reclaim(now, c)
	}
}

// judgeRestored lets the pass's judge decide the restored holds on the
// counts the inputs now give, as if they had just changed; a calm share's
// ResumeAfter starts now (the counts before were those of caches still
// syncing).
func (d *DeviceEvictor) judgeRestored() {
	for _, v := range d.drivers {
		if v.restored {
			v.restored, v.calmRun = false, false
			d.markDirty(v)
		}
	}
	d.restored = 0
}

// nextResume returns the earliest end of a hold waiting for ResumeAfter.
func (d *DeviceEvictor) nextResume() (at time.Time, ok bool) {
	for _, v := range d.resuming {
		if v.resuming && (v.held || v.released) && (!ok || v.resumeAt.Sub(d.last) < at.Sub(d.last)) {
			at, ok = v.resumeAt, true
		}
	}
	return at, ok
}

// flipped asks for the status of every NoExecute rule that may select a
// device of the drivers vs and returns the allocated claims of their
// tainted devices (the only claims whose eviction a hold changes).
func (d *DeviceEvictor) flipped(now time.Time, vs []*devDriver) []*devClaim {
	if len(vs) == 0 {
		return nil
	}
	for _, r := range d.evicting {
		for _, v := range vs {
			if r.sel != nil && (r.sel.Driver == nil || *r.sel.Driver == v.name) {
				d.statusLater(r, now)
				break
			}
		}
	}
	var out []*devClaim
	d.mark++
	for k, p := range d.pools {
		if !slices.ContainsFunc(vs, func(v *devDriver) bool { return v.name == k.driver }) {
			continue
		}
		for dev := range p.hits {
			for _, c := range p.users[dev] {
				if c.mark != d.mark {
					c.mark = d.mark
					out = append(out, c)
				}
			}
		}
	}
	bySeq(out)
	return out
}

func (d *DeviceEvictor) noteHold(v *devDriver) {
	if !v.inChanged {
		v.inChanged = true
		d.holdDirty = append(d.holdDirty, v)
	}
}

// heldPod reports whether p uses a claim with a taint its driver's hold
// suspends.
func (d *DeviceEvictor) heldPod(p *devPod) bool {
	if !d.breakerOn || !p.bound {
		return false
	}
	for i := range int(p.nlinks) {
		if l := p.linkAt(i); l.claim.held && d.linkValid(p, l) {
			return true
		}
	}
	return false
}

// heldBy returns the Holding drivers behind p's held taints, sorted.
func (d *DeviceEvictor) heldBy(p *devPod) []string {
	var out []string
	for i := range int(p.nlinks) {
		l := p.linkAt(i)
		if !l.claim.held || !d.linkValid(p, l) {
			continue
		}
		for j := range l.claim.results {
			r := &l.claim.results[j]
			if r.hit && d.heldDriver(r.driver) && !slices.Contains(out, r.driver) {
				out = append(out, r.driver)
			}
		}
	}
	slices.Sort(out)
	return out
}

// resultEviction returns the earliest time one of r's device's
// untolerated NoExecute taints evicts, if any.
func (d *DeviceEvictor) resultEviction(r *devResult) (at time.Time, ok bool) {
	consider := func(key, value string, since time.Time) {
		forever, delayed, dur := deviceTolerationVerdict(r.tols, key, value)
		if forever {
			return
		}
		t := since
		if delayed {
			t = t.Add(dur)
		}
		if !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	if p := d.pools[poolKey{r.driver, r.pool}]; p != nil {
		if dev := p.view[r.device]; dev != nil {
			for j := range dev.taints {
				consider(dev.taints[j].key, dev.taints[j].value, dev.taints[j].since)
			}
		}
	}
	for _, rule := range d.evicting {
		if rule.sel.Selects(r.driver, r.pool, r.device) {
			consider(rule.taint.Key, rule.taint.Value, rule.since)
		}
	}
	return at, ok
}

// chargeDriver returns the driver whose token p's eviction takes: the
// driver of the device whose taint makes it due earliest (ties: the pod's
// claims in order, then their results), held drivers aside.
func (d *DeviceEvictor) chargeDriver(p *devPod) *devDriver {
	var best *devResult
	var bestAt time.Time
	for i := range int(p.nlinks) {
		l := p.linkAt(i)
		if !l.claim.has || !d.linkValid(p, l) {
			continue
		}
		for j := range l.claim.results {
			r := &l.claim.results[j]
			if d.heldDriver(r.driver) {
				continue
			}
			if at, ok := d.resultEviction(r); ok && (best == nil || at.Before(bestAt)) {
				best, bestAt = r, at
			}
		}
	}
	if best == nil {
		return nil
	}
	return d.drivers[best.driver]
}

// throttle reports whether p, due, must wait for a token of its driver,
// and if so puts it at the end of the driver's waiting list.
func (d *DeviceEvictor) throttle(now time.Time, p *devPod) bool {
	v := d.chargeDriver(p)
	if v == nil || v.lim == nil || (v.wait.head == nil && v.lim.AllowN(now, 1)) {
		return false
	}
	d.queue.park(p, &v.wait)
	if !v.inWaiting {
		v.inWaiting = true
		d.waiting = append(d.waiting, v)
	}
	return true
}

// drainThrottled hands out the waiting evictions whose driver has a token,
// each driver's in the order they fell due, the drivers in the order they
// first waited.
func (d *DeviceEvictor) drainThrottled(now time.Time, due []*devPod) []*devPod {
	k := 0
	for _, v := range d.waiting {
		for v.wait.head != nil && v.lim.AllowN(now, 1) {
			p := v.wait.head
			d.queue.remove(p)
			p.state = stHandedOut
			due = append(due, p)
		}
		if v.wait.head != nil {
			d.waiting[k] = v
			k++
		} else {
			v.inWaiting = false
		}
	}
	clear(d.waiting[k:])
	d.waiting = d.waiting[:k]
	return due
}

// nextToken returns when v's bucket next holds a whole token (d.last if it
// does now). Tokens accrue linearly from d.last, the limiter's latest
// instant; the estimate is rounded up, and a Due that still finds the
// bucket a hair short leaves NextDeadline a nanosecond or so later.
func (d *DeviceEvictor) nextToken(v *devDriver) time.Time {
	tokens := v.lim.TokensAt(d.last)
	if tokens >= 1 {
		return d.last
	}
	wait := math.Ceil((1 - tokens) / d.cfg.BlastRadius.QPS * float64(time.Second))
	if wait >= math.MaxInt64 {
		return d.last.Add(math.MaxInt64)
	}
	return d.last.Add(time.Duration(max(wait, 1)))
}

// limitOf returns v's state as a value.
func (d *DeviceEvictor) limitOf(v *devDriver) DeviceDriverLimit {
	b := &d.cfg.BlastRadius
	l := DeviceDriverLimit{
		Driver: v.name, State: v.state(), Since: v.since,
		AllocatedDevices: v.allocated, TaintedDevices: v.tainted,
		MaxShare: b.MaxShare, MinDevices: b.MinDevices, ResumeShare: b.ResumeShare, ResumeAfter: b.ResumeAfter,
	}
	if v.resuming && (v.held || v.released) {
		l.ResumeAt = v.resumeAt
	}
	return l
}

// DriverLimits appends the blast-radius state of every driver with
// allocated devices (or a hold, or evictions waiting) to dst, sorted by
// driver, and returns the extended slice: the values behind a metric (for
// example lifecycle_device_taint_eviction_held{driver} from State,
// ..._tainted_devices and ..._allocated_devices from the counts,
// ..._held_pods and ..._throttled_evictions): the counts as of the last
// input, the states as of the last pass (see DeviceDriverLimit). Nothing
// without DeviceBlastRadius. O(drivers + the claims and pods of Holding
// drivers).
func (d *DeviceEvictor) DriverLimits(dst []DeviceDriverLimit) []DeviceDriverLimit {
	d.mu.Lock()
	defer d.mu.Unlock()
	start := len(dst)
	for _, v := range d.drivers {
		l := d.limitOf(v)
		for p := v.wait.head; p != nil; p = p.ev.next {
			l.Throttled++
		}
		if v.held {
			l.HeldPods = d.heldPods(v)
		}
		dst = append(dst, l)
	}
	slices.SortFunc(dst[start:], func(a, b DeviceDriverLimit) int { return strings.Compare(a.Driver, b.Driver) })
	return dst
}

// heldPods counts the pods whose eviction is held and that use a claim
// with an untolerated taint on one of v's devices.
func (d *DeviceEvictor) heldPods(v *devDriver) int {
	n := 0
	d.mark++
	for k, pl := range d.pools {
		if k.driver != v.name {
			continue
		}
		for dev, cs := range pl.users {
			if pl.hits[dev] == 0 {
				continue
			}
			for _, c := range cs {
				if !c.held {
					continue
				}
				for _, p := range c.pods {
					if p.mark != d.mark && p.state == stIdle && p.bound && !p.terminating && d.usesClaim(p, c) {
						p.mark = d.mark
						n++
					}
				}
			}
		}
	}
	return n
}

// AppendHoldChanges appends the drivers whose DeviceHoldState changed
// since the last call (and differs from the one it reported then) to dst,
// sorted by driver, and returns the extended slice: the Events to record
// (Reason, Message; a Warning for DeviceHoldHolding). States change at a
// pass (and ReleaseHold), so call it after the pass's Due. A hold that
// started and ended between two calls reports nothing. O(changed
// drivers); with nothing changed it allocates nothing.
func (d *DeviceEvictor) AppendHoldChanges(dst []DeviceDriverLimit) []DeviceDriverLimit {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.holdDirty) == 0 {
		return dst
	}
	start := len(dst)
	for i, v := range d.holdDirty {
		d.holdDirty[i] = nil
		v.inChanged = false
		if s := v.state(); s != v.reported {
			v.reported = s
			dst = append(dst, d.limitOf(v))
		}
	}
	d.holdDirty = d.holdDirty[:0]
	slices.SortFunc(dst[start:], func(a, b DeviceDriverLimit) int { return strings.Compare(a.Driver, b.Driver) })
	return dst
}

// ReleaseHold is the operator's override of a breaker: the Holding
// driver's evictions proceed (at its rate) as if it were armed, until the
// hold would have ended (its share at ResumeShare or below for
// ResumeAfter), when the breaker is armed again. The caller wires it to
// an operator action (a command, an annotation); a release does not
// survive a restart (the breaker holds again until released again). It
// acts on the holds as the last pass judged them (a hold whose ResumeAfter
// ran out is released, and armed by the next pass), and reports false,
// changing nothing, when the driver is not Holding (a trip not judged yet
// is not a hold). O(the driver's claims).
func (d *DeviceEvictor) ReleaseHold(now time.Time, driver string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	now = d.advance(now)
	v := d.drivers[driver]
	if v == nil || !v.held {
		return false
	}
	v.held, v.released, v.since = false, true, now
	d.noteHold(v)
	for _, c := range d.flipped(now, []*devDriver{v}) {
		d.reclaim(now, c)
	}
	return true
}
