package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kubelifecycle/lifecycle/taints"
)

// The blast-radius limit's decisions made visible (ours: upstream has no
// such limit). With DeviceConfig.Evictor.BlastRadius set, each pass:
//
//	release annotations ──► DeviceEvictor.ReleaseHold (rules annotated with
//	                        AnnotationReleaseEvictionHold, before the pass'
//	                        Due; and after it, for a hold the pass started,
//	                        whose evictions the next pass, at once, hands out)
//	AppendHoldChanges ────► after the pass' Due, which judged the breakers: an
//	                        Event per driver whose hold changed, on the
//	                        DeviceTaintRules and ResourceSlices behind it
//	AppendWarnings ───────► a Warning Event on the slice or rule concerned
//	                        (DeviceConfig.Evictor.KeepWarnings > 0)
//
// and the library's RuleStatuses write the rules' EvictionHeld condition.
//
// Why Events on the rules and slices, not on the held pods: a hold is the
// breaker stopping a mass eviction, so the held pods may be thousands, and
// one Event each would flood the API server at the very moment something
// is already wrong; the object the operator acts on (to fix, delete or
// confirm) is the rule or the driver's slices, and `kubectl describe
// devicetaintrule` shows the Event beside the rule's EvictionHeld
// condition. A driver is not an object, so each hold change goes to at
// most MaxHoldEventObjects of them: the NoExecute DeviceTaintRules whose
// selector may select the driver's devices, then the driver's
// ResourceSlices with a NoExecute taint, each by name. The end of a hold
// (released or resumed) goes to the objects its start went to (and to the
// releasing rule), so that each object's Events tell the whole story even
// when the rule was deleted to end the hold.

// AnnotationReleaseEvictionHold is the annotation an operator puts on a
// DeviceTaintRule to release the blast-radius hold of DRA drivers (see
// taints.DeviceEvictor.ReleaseHold): its value is a comma-separated list
// of driver names. While a rule carries it, every listed driver that the
// rule's selector may select (the selector names no driver, or that one)
// has its hold released whenever it holds: its held evictions proceed, at
// its rate, until the hold would have ended (the share at
// BlastRadius.ResumeShare or below for ResumeAfter).
// Setting it again is harmless; removing it does not hold again (the
// breaker re-arms when the hold would have ended); deleting the rule ends
// it. For a
// hold that comes from a driver's own slice taints, put it on a DeviceTaintRule
// with effect None selecting the driver (it evicts nothing itself).
// Reading it needs no permission beyond the rules' list and watch.
const AnnotationReleaseEvictionHold = "kubelifecycle.github.io/release-eviction-hold"

// Limits of the release annotation and of the Events of a pass.
const (
	// MaxReleaseDrivers bounds the drivers one release annotation names
	// (and MaxReleaseValueBytes its value): beyond, the annotation is
	// ignored, with an error log and a Warning Event naming the limit.
	MaxReleaseDrivers    = 16
	MaxReleaseValueBytes = 4096
	// MaxHoldEventObjects bounds the objects that get an Event for one
	// driver's hold change.
	MaxHoldEventObjects = 8
	// MaxWarningEvents bounds the Warning Events of one pass for
	// taints.DeviceWarning values; the rest are logged only.
	MaxWarningEvents = 64
)

// Event reasons of ours, beside the library's (taints.DeviceHoldEventHeld,
// DeviceHoldEventReleased, DeviceHoldEventResumed, and
// taints.DeviceWarningKind.Reason).
const (
	// ReasonReleaseIgnored: a DeviceTaintRule's AnnotationReleaseEvictionHold
	// cannot be used (too long, too many drivers, or a driver its selector
	// never selects): a Warning Event on the rule.
	ReasonReleaseIgnored = "DeviceTaintEvictionReleaseIgnored"
)

// ruleRelease is a rule's release annotation as read.
type ruleRelease struct {
	uid     types.UID
	value   string   // the annotation's value, to record a change once
	drivers []string // the drivers it releases (validated)
}

// parseRelease reads a release annotation's value for a rule whose
// selector is sel: the drivers it may release, and why others (or all)
// are ignored. Names are trimmed; empty and repeated ones are skipped.
func parseRelease(value string, sel *taints.DeviceTaintSelector) ([]string, error) {
	if len(value) > MaxReleaseValueBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than MaxReleaseValueBytes (%d): ignored", AnnotationReleaseEvictionHold, len(value), MaxReleaseValueBytes)
	}
	var names []string
	for f := range strings.SplitSeq(value, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(names, f) {
			if len(names) == MaxReleaseDrivers {
				return nil, fmt.Errorf("%s: more than MaxReleaseDrivers (%d) drivers: ignored", AnnotationReleaseEvictionHold, MaxReleaseDrivers)
			}
			names = append(names, f)
		}
	}
	var out, never []string
	for _, f := range names {
		if sel == nil || sel.Driver != nil && *sel.Driver != f {
			never = append(never, f)
		} else {
			out = append(out, f)
		}
	}
	if len(never) > 0 {
		return out, fmt.Errorf("%s: driver(s) %s ignored: the rule's device selector never selects their devices", AnnotationReleaseEvictionHold, strings.Join(never, ", "))
	}
	return out, nil
}

// noteRelease records r's release annotation (none: forget it), when
// the breaker is on. A new or changed value that cannot be used fully is
// logged and recorded as a Warning Event on the rule, once per value.
func (d *deviceDuty) noteRelease(r *cachedRule) {
	if d.cfg.Evictor.BlastRadius.MaxShare == 0 {
		return
	}
	d.mu.Lock()
	old, had := d.releases[r.Name]
	switch {
	case !r.hasRelease:
		delete(d.releases, r.Name)
		d.mu.Unlock()
		return
	case had && old.uid == r.UID && old.value == r.release:
		d.mu.Unlock()
		return
	}
	drivers, err := parseRelease(r.release, r.rule.Selector)
	d.releases[r.Name] = ruleRelease{uid: r.UID, value: r.release, drivers: drivers}
	d.mu.Unlock()
	if err != nil {
		klog.Background().Error(err, "DeviceTaintRule release annotation ignored (in part)", "deviceTaintRule", r.Name, "controller", DeviceName)
		if d.recorder != nil {
			d.recorder.Eventf(ruleRef(r.Name, r.UID), v1.EventTypeWarning, ReasonReleaseIgnored, "%v", err)
		}
	}
}

// forgetRelease drops a deleted rule's release annotation.
func (d *deviceDuty) forgetRelease(name string) {
	d.mu.Lock()
	delete(d.releases, name)
	d.mu.Unlock()
}

// releaseHolds calls ReleaseHold for every driver a release annotation
// names (nothing happens for a driver that does not hold), the rules by
// name; a driver released is remembered with its rule for the Event. It
// reports whether it released one.
func (d *deviceDuty) releaseHolds(ctx context.Context, now time.Time) bool {
	d.mu.Lock()
	if len(d.releases) == 0 {
		d.mu.Unlock()
		return false
	}
	type rel struct {
		rule    string
		uid     types.UID
		drivers []string
	}
	rels := make([]rel, 0, len(d.releases))
	for name, r := range d.releases {
		if len(r.drivers) > 0 {
			rels = append(rels, rel{name, r.uid, r.drivers})
		}
	}
	d.mu.Unlock()
	slices.SortFunc(rels, func(a, b rel) int { return strings.Compare(a.rule, b.rule) })
	released := false
	for _, r := range rels {
		for _, drv := range r.drivers {
			if d.ev.ReleaseHold(now, drv) {
				klog.FromContext(ctx).Info("Released the device taint eviction hold of a driver", "driver", drv, "deviceTaintRule", r.rule,
					"annotation", AnnotationReleaseEvictionHold)
				d.releasedBy[drv] = appendRef(d.releasedBy[drv], ruleRef(r.rule, r.uid))
				released = true
			}
		}
	}
	return released
}

// recordHoldChanges records an Event for each driver whose hold changed
// (taints.DeviceEvictor.AppendHoldChanges), and logs it.
func (d *deviceDuty) recordHoldChanges(ctx context.Context) {
	d.holdBuf = d.ev.AppendHoldChanges(d.holdBuf[:0])
	for _, h := range d.holdBuf {
		var refs []*v1.ObjectReference
		typ := v1.EventTypeNormal
		switch h.State {
		case taints.DeviceHoldHolding:
			typ = v1.EventTypeWarning
			refs = d.holdTargets(h.Driver)
			d.heldRefs[h.Driver] = refs
		default:
			refs = d.heldRefs[h.Driver]
			if refs == nil {
				refs = d.holdTargets(h.Driver)
			}
			for _, r := range d.releasedBy[h.Driver] {
				refs = appendRef(refs, r)
			}
			if h.State == taints.DeviceHoldArmed {
				delete(d.heldRefs, h.Driver)
			}
		}
		delete(d.releasedBy, h.Driver)
		klog.FromContext(ctx).Info("Device taint eviction hold changed", "driver", h.Driver, "state", h.State, "reason", h.Reason(),
			"message", h.Message(), "events", len(refs))
		if d.recorder == nil {
			continue
		}
		for _, ref := range refs {
			d.recorder.Event(ref, typ, h.Reason(), h.Message())
		}
	}
	clear(d.releasedBy) // releases whose change the library did not report (a hold that began and ended at once)
}

// holdTargets returns the objects a hold change of driver is recorded
// on: the NoExecute rules whose selector may select its devices, then its
// ResourceSlices with a NoExecute taint, each by name, at most
// MaxHoldEventObjects in all.
func (d *deviceDuty) holdTargets(driver string) []*v1.ObjectReference {
	var refs []*v1.ObjectReference
	if d.ruleStore != nil {
		var rules []*cachedRule
		for _, obj := range d.ruleStore.List() {
			r, ok := obj.(*cachedRule)
			if !ok || r.rule.Taint.Effect != resourcev1.DeviceTaintEffectNoExecute {
				continue
			}
			if s := r.rule.Selector; s != nil && (s.Driver == nil || *s.Driver == driver) {
				rules = append(rules, r)
			}
		}
		slices.SortFunc(rules, func(a, b *cachedRule) int { return strings.Compare(a.Name, b.Name) })
		for _, r := range rules[:min(len(rules), MaxHoldEventObjects)] {
			refs = append(refs, ruleRef(r.Name, r.UID))
		}
	}
	if len(refs) == MaxHoldEventObjects {
		return refs
	}
	var ss []*resourcev1.ResourceSlice
	for _, obj := range d.slices.GetStore().List() {
		if s, ok := obj.(*resourcev1.ResourceSlice); ok && s.Spec.Driver == driver && noExecuteTainted(s) {
			ss = append(ss, s)
		}
	}
	slices.SortFunc(ss, func(a, b *resourcev1.ResourceSlice) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range ss[:min(len(ss), MaxHoldEventObjects-len(refs))] {
		refs = append(refs, sliceRef(s.Name, s.UID))
	}
	return refs
}

// noExecuteTainted reports whether one of s's devices has a NoExecute
// taint.
func noExecuteTainted(s *resourcev1.ResourceSlice) bool {
	for i := range s.Spec.Devices {
		for j := range s.Spec.Devices[i].Taints {
			if s.Spec.Devices[i].Taints[j].Effect == resourcev1.DeviceTaintEffectNoExecute {
				return true
			}
		}
	}
	return false
}

// recordWarnings logs each TimeAdded or selector hazard found since the
// last pass (none unless DeviceConfig.Evictor.KeepWarnings), hands it to
// DeviceConfig.OnWarning and records the first MaxWarningEvents of them
// as Warning Events on the slice or rule they concern.
func (d *deviceDuty) recordWarnings(ctx context.Context) {
	logger := klog.FromContext(ctx)
	d.warnBuf = d.ev.AppendWarnings(d.warnBuf[:0])
	for i, w := range d.warnBuf {
		logger.Info("Device taint hazard", "reason", w.Kind.Reason(), "message", w.Message())
		if d.cfg.OnWarning != nil {
			d.cfg.OnWarning(w)
		}
		if d.recorder == nil || i >= MaxWarningEvents {
			continue
		}
		ref := ruleRef(w.Rule, w.RuleUID)
		if w.Rule == "" {
			ref = sliceRef(w.Slice, "")
			if obj, ok, _ := d.slices.GetStore().GetByKey(w.Slice); ok {
				if s, ok := obj.(*resourcev1.ResourceSlice); ok {
					ref.UID = s.UID
				}
			}
		}
		d.recorder.Event(ref, v1.EventTypeWarning, w.Kind.Reason(), w.Message())
	}
	if n := len(d.warnBuf) - MaxWarningEvents; n > 0 {
		logger.Info("Device taint hazards not recorded as Events (more than MaxWarningEvents in a pass)", "count", n, "max", MaxWarningEvents)
	}
	clear(d.warnBuf)
	if n := d.ev.WarningsDropped(); n != d.warnDropped {
		logger.Info("Device taint hazards not kept (more than -device-taint-warnings between two passes)", "count", n-d.warnDropped,
			"keepWarnings", d.cfg.Evictor.KeepWarnings)
		d.warnDropped = n
	}
}

// ruleRef is the involved object of an Event on a DeviceTaintRule
// (cluster-scoped: the Event goes to namespace default).
func ruleRef(name string, uid types.UID) *v1.ObjectReference {
	return &v1.ObjectReference{APIVersion: DeviceTaintRulesResource.GroupVersion().String(), Kind: "DeviceTaintRule", Name: name, UID: uid}
}

// sliceRef is the involved object of an Event on a ResourceSlice.
func sliceRef(name string, uid types.UID) *v1.ObjectReference {
	return &v1.ObjectReference{APIVersion: resourcev1.SchemeGroupVersion.String(), Kind: "ResourceSlice", Name: name, UID: uid}
}

// appendRef appends ref to refs unless an equal one is there.
func appendRef(refs []*v1.ObjectReference, ref *v1.ObjectReference) []*v1.ObjectReference {
	if slices.ContainsFunc(refs, func(r *v1.ObjectReference) bool { return *r == *ref }) {
		return refs
	}
	return append(refs, ref)
}

// releaseValue is what the trimmer keeps of a rule's annotations: the
// release annotation's value and whether it is set.
func releaseValue(annotations map[string]string) (string, bool) {
	v, ok := annotations[AnnotationReleaseEvictionHold]
	return v, ok
}
