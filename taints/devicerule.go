package taints

import (
	"slices"
	"strconv"
	"strings"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DeviceRuleStatus is an EvictionInProgress condition to write into a
// DeviceTaintRule's status (upstream maybeUpdateRuleStatus applies it with
// server-side apply, field manager the controller's name, force, and the
// rule's UID as a precondition).
type DeviceRuleStatus struct {
	Rule      string
	UID       types.UID
	Condition metav1.Condition
}

// DeviceTaintConditionEvictionInProgress is the DeviceTaintRule condition
// type (resource/v1 DeviceTaintConditionEvictionInProgress, which k8s.io/api
// has from v0.37 on).
const DeviceTaintConditionEvictionInProgress = "EvictionInProgress"

// Reasons of the EvictionInProgress condition, as upstream sets them.
const (
	DeviceRulePodsPendingEviction = "PodsPendingEviction" // NoExecute, pods still to evict (True)
	DeviceRuleCompleted           = "Completed"           // NoExecute, pods were evicted, none pending
	DeviceRuleNotStarted          = "NotStarted"          // NoExecute, nothing evicted, none pending
	DeviceRuleNoEffect            = "NoEffect"            // None: the dry run's counts
	DeviceRuleOtherEffect         = "OtherEffect"         // any other effect
	// DeviceRuleEvictionHeld is ours (DeviceBlastRadius): NoExecute, pods
	// to evict (True), some of them held by a driver's breaker. The API
	// leaves the reason open ("not specified, may change"); without a
	// DeviceBlastRadius it never appears.
	DeviceRuleEvictionHeld = "EvictionHeld"
)

// statusNow asks for r's status check at now (a new rule or spec).
func (d *DeviceEvictor) statusNow(r *devRule, now time.Time) {
	if !r.immediate {
		r.immediate, r.immAt = true, now
	}
	d.statusFix(r)
}

// statusLater asks for r's status check at at, keeping an earlier one (a
// delaying work queue keeps the earliest time).
func (d *DeviceEvictor) statusLater(r *devRule, at time.Time) {
	if r.hasLater && !at.Before(r.later) {
		return
	}
	r.later, r.hasLater = at, true
	d.statusFix(r)
}

// statusFix repositions r in the status queue.
func (d *DeviceEvictor) statusFix(r *devRule) {
	at, ok := time.Time{}, false
	if r.immediate {
		at, ok = r.immAt, true
	}
	if r.hasLater && (!ok || r.later.Before(at)) {
		at, ok = r.later, true
	}
	d.statusDrop(r)
	if !ok {
		return
	}
	r.statusAt, r.lane = at, laneOf(at)
	r.elem.Value = r
	d.statusQ[r.lane].PushElem(&r.elem)
}

func (d *DeviceEvictor) statusDrop(r *devRule) {
	if r.elem.InHeap() {
		d.statusQ[r.lane].Remove(&r.elem)
	}
}

func (d *DeviceEvictor) peekStatus() *devRule {
	var m, w *devRule
	if e := d.statusQ[laneMono].Peek(); e != nil {
		m = e.Value
	}
	if e := d.statusQ[laneWall].Peek(); e != nil {
		w = e.Value
	}
	switch {
	case m == nil:
		return w
	case w == nil:
		return m
	case w.statusAt.Sub(d.last) < m.statusAt.Sub(d.last):
		return w
	}
	return m
}

// RuleStatuses runs every DeviceTaintRule status check due at now and
// returns the conditions to write, by rule; nil when nothing is to be
// written. A check is due at once for a new rule or spec, and one
// RuleStatusPeriod after a pod's eviction started or ended because of the
// rule; it is put off while the rule's condition, for its generation, is
// younger than RuleStatusPeriod; and it returns nothing when the condition
// would not change. The condition (upstream maybeUpdateRuleStatus):
//
//   - NoExecute: True, PodsPendingEviction, "<n> pod(s) need(s) to be
//     evicted in <m> namespace(s)." while pods using a tainted device are
//     not evicted yet; else False, Completed (pods were evicted) or
//     NotStarted. Unlike upstream, with a DeviceBlastRadius breaker the
//     reason is EvictionHeld while some of those pods are held, and the
//     message goes on "<k> of them held: " and each Holding driver's
//     DeviceDriverLimit.Message (at most 3, then "and <j> more drivers.").
//   - None: False, NoEffect, with the counts of published and allocated
//     devices the rule selects and of the pods it would evict with the
//     NoExecute effect (the dry run).
//   - any other effect: False, OtherEffect.
//
// Each message ends with "<n> pod(s) evicted since starting the controller."
// once the rule evicted pods. Unlike upstream, a pod whose eviction is
// Done no longer counts as pending even before its deletion reaches the
// caller's informer. Call RuleStatuses before Due in each pass, so that a
// new rule's first status precedes the evictions it causes (upstream's
// intent: "before evicting any pods"). With a blast-radius breaker it
// first judges the breakers, as Due does, so that the status it writes
// counts the holds of this pass. Counting costs O(claims) per check.
func (d *DeviceEvictor) RuleStatuses(now time.Time) []DeviceRuleStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	now = d.advance(now)
	d.judge(now)
	var out []DeviceRuleStatus
	for {
		r := d.peekStatus()
		if r == nil || r.statusAt.After(now) {
			return out
		}
		r.immediate = false
		if r.hasLater && !r.later.After(now) {
			r.hasLater = false
		}
		d.statusFix(r)
		if c, ok := d.ruleCondition(now, r); ok {
			out = append(out, DeviceRuleStatus{Rule: r.name, UID: r.uid, Condition: c})
		}
	}
}

// RetryRuleStatus reports that writing s failed: the rule's status is
// checked again at now + after (after < 0 counts as 0), as upstream's rate
// limited retry. A no-op when the rule is gone or has another UID.
func (d *DeviceEvictor) RetryRuleStatus(now time.Time, s DeviceRuleStatus, after time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now = d.advance(now)
	if r := d.rules[s.Rule]; r != nil && r.uid == s.UID {
		d.statusLater(r, now.Add(max(after, 0)))
	}
}

// ruleCondition is upstream maybeUpdateRuleStatus for r at now: the
// condition to write, or false.
func (d *DeviceEvictor) ruleCondition(now time.Time, r *devRule) (metav1.Condition, bool) {
	period := d.cfg.RuleStatusPeriod
	old := r.cond
	if old != nil && old.ObservedGeneration == r.gen {
		if since := now.Sub(old.LastTransitionTime.Time); since < period {
			d.statusLater(r, now.Add(period-since))
			return metav1.Condition{}, false
		}
	}
	var pods, namespaces, sliceDevices, allocatedDevices, heldPods int64
	var heldBy []string
	switch r.taint.Effect {
	case resourcev1.DeviceTaintEffectNone:
		pods, namespaces, _, _ = d.pendingPods(r, true)
		sliceDevices, allocatedDevices = d.selectedDevices(r)
	case resourcev1.DeviceTaintEffectNoExecute:
		pods, namespaces, heldPods, heldBy = d.pendingPods(r, false)
	}
	c := metav1.Condition{
		Type:               DeviceTaintConditionEvictionInProgress,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: r.gen,
	}
	switch r.taint.Effect {
	case resourcev1.DeviceTaintEffectNoExecute:
		switch {
		case pods > 0:
			c.Status, c.Reason = metav1.ConditionTrue, DeviceRulePodsPendingEviction
			c.Message = plural(pods, "1 pod needs to be evicted in ", " pods need to be evicted in ") +
				plural(namespaces, "1 namespace.", " different namespaces.")
			if heldPods > 0 {
				c.Reason = DeviceRuleEvictionHeld
				c.Message += " " + strconv.FormatInt(heldPods, 10) + " of them held: " + d.holdMessages(heldBy)
			}
		case r.evicted > 0:
			c.Reason = DeviceRuleCompleted
		default:
			c.Reason = DeviceRuleNotStarted
		}
	case resourcev1.DeviceTaintEffectNone:
		c.Reason = DeviceRuleNoEffect
		c.Message = plural(sliceDevices, "1 published device selected. ", " published devices selected. ") +
			plural(allocatedDevices, "1 allocated device selected. ", " allocated devices selected. ") +
			plural(pods, "1 pod would be evicted in ", " pods would be evicted in ") +
			plural(namespaces, "1 namespace ", " different namespaces ") +
			"if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update."
	default:
		c.Reason = DeviceRuleOtherEffect
		c.Message = "Eviction only happens for the NoExecute effect."
	}
	if r.evicted > 0 {
		if c.Message != "" {
			c.Message += " "
		}
		c.Message += plural(r.evicted, "1 pod ", " pods ") + "evicted since starting the controller."
	}
	if old != nil && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message &&
		old.ObservedGeneration == c.ObservedGeneration {
		return metav1.Condition{}, false
	}
	c.LastTransitionTime = metav1.NewTime(now)
	return c, true
}

// plural returns one for n == 1, else n followed by many.
func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return strconv.FormatInt(n, 10) + many
}

// pendingPods counts the pods, and their namespaces, that r evicts (or,
// with sim, would evict with the NoExecute effect) and that are bound, not
// terminating and not evicted yet (upstream countPendingPods); and, with
// the breaker on, those of them whose eviction is held and the Holding
// drivers whose devices r taints for them.
func (d *DeviceEvictor) pendingPods(r *devRule, sim bool) (pods, namespaces, held int64, heldBy []string) {
	d.mark++
	var ns map[string]struct{}
	for _, c := range d.claims {
		if !c.allocated {
			continue
		}
		if sim {
			if !d.claimHitBy(c, r) {
				continue
			}
		} else if !containsRule(c.rules, r) {
			continue
		}
		for _, p := range c.pods {
			if p.mark == d.mark || !p.bound || p.terminating || p.state == stEvicted {
				continue
			}
			if !d.usesClaim(p, c) {
				continue
			}
			p.mark = d.mark
			pods++
			if ns == nil {
				ns = make(map[string]struct{})
			}
			ns[p.key.Namespace] = struct{}{}
			if !sim && d.breakerOn && p.state == stIdle && d.heldPod(p) {
				held++
				heldBy = d.ruleHeldBy(heldBy, r, p)
			}
		}
	}
	slices.Sort(heldBy)
	return pods, int64(len(ns)), held, heldBy
}

// ruleHeldBy adds to out the Holding drivers of the devices r taints for
// p's held claims.
func (d *DeviceEvictor) ruleHeldBy(out []string, r *devRule, p *devPod) []string {
	for i := range int(p.nlinks) {
		l := p.linkAt(i)
		if !l.claim.held || !d.linkValid(p, l) {
			continue
		}
		for j := range l.claim.results {
			res := &l.claim.results[j]
			if r.sel.Selects(res.driver, res.pool, res.device) && d.heldDriver(res.driver) && !slices.Contains(out, res.driver) {
				out = append(out, res.driver)
			}
		}
	}
	return out
}

// holdMessages joins the Holding drivers' messages, at most 3.
func (d *DeviceEvictor) holdMessages(drivers []string) string {
	const show = 3
	var b strings.Builder
	for i, name := range drivers {
		if i == show {
			b.WriteString(" and " + plural(int64(len(drivers)-show), "1 more driver.", " more drivers."))
			break
		}
		if i > 0 {
			b.WriteString(" ")
		}
		if v := d.drivers[name]; v != nil {
			b.WriteString(d.limitOf(v).Message())
		}
	}
	return b.String()
}

func containsRule(rules []*devRule, r *devRule) bool {
	for _, x := range rules {
		if x == r {
			return true
		}
	}
	return false
}

// claimHitBy reports whether r, as a NoExecute rule, would be among c's
// reasons: it selects one of c's devices whose tolerations do not
// tolerate it forever.
func (d *DeviceEvictor) claimHitBy(c *devClaim, r *devRule) bool {
	for i := range c.results {
		res := &c.results[i]
		if !r.sel.Selects(res.driver, res.pool, res.device) {
			continue
		}
		if forever, _, _ := deviceTolerationVerdict(res.tols, r.taint.Key, r.taint.Value); !forever {
			return true
		}
	}
	return false
}

// usesClaim reports whether one of p's links to c is valid (a pod may
// name a claim twice, once by name and once through a template).
func (d *DeviceEvictor) usesClaim(p *devPod, c *devClaim) bool {
	for i := range int(p.nlinks) {
		if l := p.linkAt(i); l.claim == c && d.linkValid(p, l) {
			return true
		}
	}
	return false
}

// selectedDevices counts the published devices (highest generation of
// each pool) and the allocated devices r selects (upstream
// countTaintedDevices).
func (d *DeviceEvictor) selectedDevices(r *devRule) (published, allocated int64) {
	for _, p := range d.pools {
		for _, s := range p.slices {
			if s.gen != p.maxGen {
				continue
			}
			for i := range s.devices {
				if r.sel.Selects(p.key.driver, p.key.pool, s.devices[i].name) {
					published++
				}
			}
		}
	}
	for _, c := range d.claims {
		for i := range c.results {
			res := &c.results[i]
			if r.sel.Selects(res.driver, res.pool, res.device) {
				allocated++
			}
		}
	}
	return published, allocated
}
