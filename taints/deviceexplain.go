package taints

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DeviceState is where a pod stands, as DeviceEvictor.Explain reports it.
type DeviceState uint8

const (
	// DeviceNotTracked: no such pod (never set, deleted, or without
	// claims).
	DeviceNotTracked DeviceState = 1 + iota
	// DeviceNotBound: the pod is not bound to a node; not evicted.
	DeviceNotBound
	// DeviceNotTainted: no claim the pod uses has an untolerated NoExecute
	// device taint (none tainted, or all tolerated forever).
	DeviceNotTainted
	// DeviceScheduled: the pod will be evicted at At.
	DeviceScheduled
	// DeviceDue: At has passed; the next Due hands the eviction out.
	DeviceDue
	// DeviceHandedOut: Due handed the eviction out; waiting for Done or
	// Retry.
	DeviceHandedOut
	// DeviceRetrying: a deletion failed; it is due again at At.
	DeviceRetrying
	// DeviceDone: evicted (Done); not evicted again while it keeps its UID.
	DeviceDone
	// DeviceHeld: the pod has untolerated NoExecute taints, but all of
	// them are on devices of drivers the blast-radius breaker holds
	// (DeviceBlastRadius.MaxShare; HeldBy names them); not evicted until
	// the hold ends.
	DeviceHeld
	// DeviceThrottled: due since At, waiting for a token of the eviction
	// rate of the driver WaitsFor (DeviceBlastRadius.QPS).
	DeviceThrottled
)

// String returns the state's name.
func (s DeviceState) String() string {
	switch s {
	case DeviceNotTracked:
		return "NotTracked"
	case DeviceNotBound:
		return "NotBound"
	case DeviceNotTainted:
		return "NotTainted"
	case DeviceScheduled:
		return "Scheduled"
	case DeviceDue:
		return "Due"
	case DeviceHandedOut:
		return "HandedOut"
	case DeviceRetrying:
		return "Retrying"
	case DeviceDone:
		return "Done"
	case DeviceHeld:
		return "Held"
	case DeviceThrottled:
		return "Throttled"
	}
	return "DeviceState(" + strconv.Itoa(int(s)) + ")"
}

// DeviceClaimUse says whether and how one of a pod's claims counts.
type DeviceClaimUse uint8

const (
	// DeviceClaimUnallocated: the claim is unknown or not allocated.
	DeviceClaimUnallocated DeviceClaimUse = 1 + iota
	// DeviceClaimNotForPod: the claim is not the pod's (owner or
	// ReservedFor does not match); ignored.
	DeviceClaimNotForPod
	// DeviceClaimUntainted: used; no untolerated NoExecute taint.
	DeviceClaimUntainted
	// DeviceClaimTainted: used; evicts at the claim's At.
	DeviceClaimTainted
	// DeviceClaimHeld: used; its untolerated NoExecute taints are all on
	// devices of drivers the blast-radius breaker holds.
	DeviceClaimHeld
)

// String returns the use's name.
func (u DeviceClaimUse) String() string {
	switch u {
	case DeviceClaimUnallocated:
		return "Unallocated"
	case DeviceClaimNotForPod:
		return "NotForPod"
	case DeviceClaimUntainted:
		return "Untainted"
	case DeviceClaimTainted:
		return "Tainted"
	case DeviceClaimHeld:
		return "Held"
	}
	return "DeviceClaimUse(" + strconv.Itoa(int(u)) + ")"
}

// DeviceClaimExplanation is one of a pod's claims in an explanation.
type DeviceClaimExplanation struct {
	Claim string
	Use   DeviceClaimUse
	// At is the claim's eviction time when Use is DeviceClaimTainted.
	At time.Time
}

// DeviceExplanation says when a pod will be evicted for a device taint and
// why, or why not.
type DeviceExplanation struct {
	State DeviceState
	Pod   types.NamespacedName
	UID   types.UID
	// At is the fire time for Scheduled, Due, HandedOut and Retrying.
	At time.Time
	// Claims are the pod's claims, in the pod's order.
	Claims []DeviceClaimExplanation
	// Taints are the taints behind the eviction (as DeviceEviction.Taints).
	Taints   []DeviceTaintSource
	Attempts int
	// HeldBy are the drivers whose breaker holds some of the pod's
	// untolerated taints, sorted (DeviceBlastRadius.MaxShare).
	HeldBy []string
	// ResumeAt is, for a pod with HeldBy, the earliest instant one of
	// those holds ends unless its driver's share rises above ResumeShare
	// first (DeviceDriverLimit.ResumeAt); zero while every one lasts until
	// its share falls further. It may have passed: the next call that
	// takes a now ends the hold.
	ResumeAt time.Time
	// WaitsFor is the driver whose eviction rate a DeviceThrottled pod
	// waits for.
	WaitsFor string
}

// Explain reports what the DeviceEvictor will do with the pod key and why,
// as of now, with the breakers' holds as the last pass judged them (a pod
// that the next pass will hold is Scheduled or Due until then). It changes
// nothing and allocates the result.
func (d *DeviceEvictor) Explain(now time.Time, key types.NamespacedName) DeviceExplanation {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now.Before(d.last) {
		now = d.last
	}
	p := d.pods.get(key)
	if p == nil {
		return DeviceExplanation{State: DeviceNotTracked, Pod: key}
	}
	x := DeviceExplanation{Pod: key, UID: d.uidOf(p)}
	for i := range int(p.nlinks) {
		l := p.linkAt(i)
		ce := DeviceClaimExplanation{Claim: l.claim.key.Name}
		switch {
		case !l.claim.allocated:
			ce.Use = DeviceClaimUnallocated
		case !d.linkValid(p, l):
			ce.Use = DeviceClaimNotForPod
		case l.claim.has:
			ce.Use, ce.At = DeviceClaimTainted, l.claim.when
		case l.claim.held && d.breakerOn:
			ce.Use = DeviceClaimHeld
		default:
			ce.Use = DeviceClaimUntainted
		}
		x.Claims = append(x.Claims, ce)
	}
	if p.ev != nil {
		x.Attempts = int(p.ev.attempts)
	}
	_, tainted := d.podEviction(p)
	if tainted || p.state != stIdle {
		x.Taints = d.sources(p)
	}
	if d.heldPod(p) {
		x.HeldBy = d.heldBy(p)
		for _, name := range x.HeldBy {
			if v := d.drivers[name]; v != nil && v.resuming && (x.ResumeAt.IsZero() || v.resumeAt.Before(x.ResumeAt)) {
				x.ResumeAt = v.resumeAt
			}
		}
	}
	switch p.state {
	case stEvicted:
		x.State = DeviceDone
	case stHandedOut:
		x.State, x.At = DeviceHandedOut, p.ev.at
	case stScheduled:
		x.At = p.ev.at
		switch {
		case p.ev.bkt != nil && p.ev.bkt.lane == laneThrottle:
			x.State, x.WaitsFor = DeviceThrottled, p.ev.bkt.drv.name
		case p.ev.attempts > 0:
			x.State = DeviceRetrying
		case !p.ev.at.After(now):
			x.State = DeviceDue
		default:
			x.State = DeviceScheduled
		}
	default:
		switch {
		case !p.bound:
			x.State = DeviceNotBound
		case x.HeldBy != nil:
			x.State = DeviceHeld
		default:
			x.State = DeviceNotTainted
		}
	}
	return x
}

// String describes the explanation in one line, times in UTC RFC 3339.
func (x DeviceExplanation) String() string {
	var b strings.Builder
	b.WriteString("pod " + x.Pod.String() + ": ")
	switch x.State {
	case DeviceNotTracked:
		b.WriteString("not tracked (no device claims)")
	case DeviceNotBound:
		b.WriteString("not evicted: not bound to a node")
	case DeviceNotTainted:
		b.WriteString("not evicted: no untolerated NoExecute device taint")
	case DeviceScheduled:
		b.WriteString("evicted at " + stamp(x.At))
	case DeviceDue:
		b.WriteString("due since " + stamp(x.At))
	case DeviceHandedOut:
		b.WriteString("being deleted (due " + stamp(x.At) + ")")
	case DeviceRetrying:
		b.WriteString("deletion failed " + strconv.Itoa(x.Attempts) + " time(s), retry at " + stamp(x.At))
	case DeviceDone:
		b.WriteString("evicted, waiting for the pod to go away")
	case DeviceHeld:
		b.WriteString("not evicted: held by the blast-radius limit of driver(s) " + strings.Join(x.HeldBy, ", "))
		if !x.ResumeAt.IsZero() {
			b.WriteString(" until " + stamp(x.ResumeAt) + " unless more devices are tainted")
		}
	case DeviceThrottled:
		b.WriteString("due since " + stamp(x.At) + ", waiting for the eviction rate of driver " + x.WaitsFor)
	default:
		b.WriteString(x.State.String())
	}
	for _, c := range x.Claims {
		b.WriteString("; claim " + c.Claim + " " + c.Use.String())
		if c.Use == DeviceClaimTainted {
			b.WriteString(" from " + stamp(c.At))
		}
	}
	if len(x.Taints) > 0 {
		parts := make([]string, len(x.Taints))
		for i, t := range x.Taints {
			parts[i] = t.String()
		}
		b.WriteString("; taints: " + strings.Join(parts, ", "))
	}
	return b.String()
}

// DeviceSnapshot is what a DeviceEvictor knows that its inputs do not
// tell again after a restart: the pods it evicted (so that a pod still
// terminating is not evicted twice), each rule's count of evicted pods
// (upstream starts both afresh: its status says "since starting the
// controller") and, with a blast-radius breaker, the drivers whose hold
// has not ended (a breaker with hysteresis holds below MaxShare, which the
// counts alone do not tell).
type DeviceSnapshot struct {
	Evicted []DeviceEvictedPod
	Rules   []DeviceRuleCount
	Holds   []DeviceHold
}

// DeviceHold is a driver's breaker hold in a DeviceSnapshot: a Holding or
// Released driver (a release does not survive a restart: it is restored
// as a hold) and when its state began.
type DeviceHold struct {
	Driver string
	Since  time.Time
}

// DeviceEvictedPod is an evicted pod in a DeviceSnapshot.
type DeviceEvictedPod struct {
	Pod types.NamespacedName
	UID types.UID
}

// DeviceRuleCount is a rule's evicted-pod count in a DeviceSnapshot.
type DeviceRuleCount struct {
	Rule    string
	UID     types.UID
	Evicted int64
}

// MaxDeviceSnapshot bounds the entries Restore accepts.
const MaxDeviceSnapshot = 1 << 20

// Snapshot returns the DeviceEvictor's restart state, sorted. Between a
// Restore and the next Due it also reports the restored entries of pods
// and rules not seen yet, which that Due drops. O(n log n).
func (d *DeviceEvictor) Snapshot() DeviceSnapshot {
	d.mu.Lock()
	defer d.mu.Unlock()
	var s DeviceSnapshot
	d.pods.each(func(p *devPod) {
		if p.state == stEvicted {
			s.Evicted = append(s.Evicted, DeviceEvictedPod{Pod: p.key, UID: d.uidOf(p)})
		}
	})
	for k := range d.restoredPods {
		s.Evicted = append(s.Evicted, DeviceEvictedPod{Pod: k.key, UID: k.uid})
	}
	for _, r := range d.rules {
		if r.evicted > 0 {
			s.Rules = append(s.Rules, DeviceRuleCount{Rule: r.name, UID: r.uid, Evicted: r.evicted})
		}
	}
	for k, n := range d.restoredRules {
		s.Rules = append(s.Rules, DeviceRuleCount{Rule: k.name, UID: k.uid, Evicted: n})
	}
	for _, v := range d.drivers {
		if v.held || v.released {
			s.Holds = append(s.Holds, DeviceHold{Driver: v.name, Since: v.since})
		}
	}
	slices.SortFunc(s.Evicted, func(a, b DeviceEvictedPod) int {
		return cmp.Or(strings.Compare(string(a.UID), string(b.UID)), strings.Compare(a.Pod.Namespace, b.Pod.Namespace), strings.Compare(a.Pod.Name, b.Pod.Name))
	})
	slices.SortFunc(s.Rules, func(a, b DeviceRuleCount) int {
		return cmp.Or(strings.Compare(string(a.UID), string(b.UID)), strings.Compare(a.Rule, b.Rule))
	})
	slices.SortFunc(s.Holds, func(a, b DeviceHold) int { return strings.Compare(a.Driver, b.Driver) })
	return s
}

// Restore applies a Snapshot to a DeviceEvictor before its first Due:
// before its inputs arrive, or once its informers have synced. A listed
// pod (by name and UID; an entry without a name by UID) is marked evicted
// when it is, or when it is first, set; a listed rule (the same) gets its
// count; with a breaker (DeviceBlastRadius.MaxShare), a listed hold makes
// its driver Holding (Since kept). The inputs are complete only once the
// informers have synced, and a caller runs Due only then, as for every
// decision, so the next Due settles the Restore: the entries of pods and
// rules not set by then are of objects deleted while no controller ran,
// and are dropped (until then Snapshot reports them again); each restored
// hold is judged on the counts, as if its inputs had just changed (a calm
// share ends it, or starts ResumeAfter then). Until that Due, RuleStatuses
// judges every other driver but not a restored hold. It returns an error wrapping
// ErrDeviceLimit, and changes nothing, when s's entries and those still
// pending from earlier Restores exceed MaxDeviceSnapshot.
func (d *DeviceEvictor) Restore(now time.Time, s DeviceSnapshot) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n := len(s.Evicted) + len(s.Rules) + len(s.Holds) + len(d.restoredPods) + len(d.restoredRules); n > MaxDeviceSnapshot {
		return fmt.Errorf("%w: %d snapshot entries with those pending from earlier Restores, more than MaxDeviceSnapshot (%d)", ErrDeviceLimit, n, MaxDeviceSnapshot)
	}
	d.advance(now)
	for _, e := range s.Evicted {
		if p := d.pods.get(e.Pod); p != nil && d.hasUID(p, e.UID) {
			if p.ev != nil {
				d.queue.remove(p)
			}
			p.state = stEvicted
			continue
		}
		if d.restoredPods == nil {
			d.restoredPods = make(map[podID]struct{})
		}
		d.restoredPods[podID{e.Pod, e.UID}] = struct{}{}
	}
	for _, c := range s.Rules {
		if r := d.rules[c.Rule]; r != nil && r.uid == c.UID {
			r.evicted = c.Evicted
			continue
		}
		if d.restoredRules == nil {
			d.restoredRules = make(map[restoredRule]int64)
		}
		d.restoredRules[restoredRule{c.Rule, c.UID}] = c.Evicted
	}
	d.restorePending = true
	if d.breakerOn {
		d.restoreHolds(now, s.Holds)
	}
	return nil
}

// takeRestoredPod reports whether the pod key with UID id is a restored
// evicted pod not seen yet, and forgets the entry.
func (d *DeviceEvictor) takeRestoredPod(key types.NamespacedName, id types.UID) bool {
	for _, k := range [2]podID{{key, id}, {uid: id}} {
		if _, ok := d.restoredPods[k]; ok {
			delete(d.restoredPods, k)
			return true
		}
	}
	return false
}

// takeRestoredRule returns the restored count of the rule name with UID
// id not seen yet, if any, and forgets the entry.
func (d *DeviceEvictor) takeRestoredRule(name string, id types.UID) int64 {
	for _, k := range [2]restoredRule{{name, id}, {uid: id}} {
		if n, ok := d.restoredRules[k]; ok {
			delete(d.restoredRules, k)
			return n
		}
	}
	return 0
}

// dropUnseenRestored drops the entries of the last Restores whose pod or
// rule was not set since: at the first Due after them, the informers have
// synced, so those objects are gone.
func (d *DeviceEvictor) dropUnseenRestored() {
	d.restoredPods, d.restoredRules, d.restorePending = nil, nil, false
}
