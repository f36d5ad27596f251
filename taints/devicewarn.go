package taints

import (
	"sort"
	"strconv"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DeviceWarningKind is a hazard DeviceEvictor.AppendWarnings reports.
type DeviceWarningKind uint8

const (
	// DeviceWarningTimeAddedReset: a NoExecute taint kept its key, value
	// and effect on the same device (or rule) but its TimeAdded moved
	// later, as when a driver republishes a ResourceSlice without the old
	// TimeAdded (the API server then sets the current time): every
	// countdown of that taint restarts, and pods meant to go now stay.
	// It may be deliberate (the taint was removed and added again between
	// two observed versions).
	DeviceWarningTimeAddedReset DeviceWarningKind = 1 + iota
	// DeviceWarningEscalated: a taint's effect became NoExecute (from
	// NoSchedule, None or another) under a TimeAdded no later than the old
	// effect's: the countdown starts at the old time, so pods that do not
	// tolerate it are evicted at once, not after their TolerationSeconds.
	// The API server bumps a DeviceTaintRule's TimeAdded when its effect
	// changes unless the client also sets one; a ResourceSlice's is the
	// driver's to set.
	DeviceWarningEscalated
	// DeviceWarningSelectsAll: a DeviceTaintRule's selector is empty and
	// selects every device in the cluster; with NoExecute it evicts every
	// pod that uses a device (kubernetes/kubernetes#141422).
	DeviceWarningSelectsAll
)

// String returns the kind's name.
func (k DeviceWarningKind) String() string {
	switch k {
	case DeviceWarningTimeAddedReset:
		return "TimeAddedReset"
	case DeviceWarningEscalated:
		return "Escalated"
	case DeviceWarningSelectsAll:
		return "SelectsAll"
	}
	return "DeviceWarningKind(" + strconv.Itoa(int(k)) + ")"
}

// Reason returns the Event reason for the kind (ours, for a Warning Event):
// DeviceTaintTimeAddedReset, DeviceTaintEscalatedWithOldTimeAdded or
// DeviceTaintRuleSelectsAll.
func (k DeviceWarningKind) Reason() string {
	switch k {
	case DeviceWarningTimeAddedReset:
		return "DeviceTaintTimeAddedReset"
	case DeviceWarningEscalated:
		return "DeviceTaintEscalatedWithOldTimeAdded"
	case DeviceWarningSelectsAll:
		return "DeviceTaintRuleSelectsAll"
	}
	return k.String()
}

// DeviceWarning is one hazard found in a ResourceSlice or DeviceTaintRule
// update: a value for a Warning Event (Kind.Reason, Message) on the object
// it names, or a log line. It changes no decision. A slice update yields
// at most one warning of each kind, naming its first affected device and
// counting the others.
type DeviceWarning struct {
	Kind DeviceWarningKind
	// At is the now of the call that found it.
	At time.Time
	// Slice names a ResourceSlice, Driver, Pool and Device its first
	// affected device; Rule and RuleUID a DeviceTaintRule.
	Slice                string
	Driver, Pool, Device string
	Rule                 string
	RuleUID              types.UID
	// Taint is the taint as updated (a copy).
	Taint resourcev1.DeviceTaint
	// Before is the TimeAdded it had before (TimeAddedReset), or that the
	// earlier effect had (Escalated).
	Before time.Time
	// BeforeEffect is the earlier effect (Escalated).
	BeforeEffect resourcev1.DeviceTaintEffect
	// Count is how many taints of the update have the hazard (1 for a
	// rule).
	Count int
}

// Message describes the warning in one sentence, times in UTC RFC 3339.
func (w DeviceWarning) Message() string {
	obj := "DeviceTaintRule " + w.Rule
	if w.Rule == "" {
		obj = "ResourceSlice " + w.Slice + " device " + w.Driver + "/" + w.Pool + "/" + w.Device
	}
	taint := w.Taint.Key
	if w.Taint.Value != "" {
		taint += "=" + w.Taint.Value
	}
	taint += ":" + string(w.Taint.Effect)
	now := ""
	if w.Taint.TimeAdded != nil {
		now = stamp(w.Taint.TimeAdded.Time)
	}
	more := ""
	if w.Count > 1 {
		more = " (and " + plural(int64(w.Count-1), "1 more taint", " more taints") + " of the slice)"
	}
	switch w.Kind {
	case DeviceWarningTimeAddedReset:
		return obj + ": taint " + taint + " TimeAdded moved from " + stamp(w.Before) + " to " + now +
			more + ": its eviction countdowns restart."
	case DeviceWarningEscalated:
		return obj + ": taint " + taint + " escalated from " + string(w.BeforeEffect) + " keeping TimeAdded " + now +
			more + ": pods that do not tolerate it are evicted at once, not after their TolerationSeconds."
	case DeviceWarningSelectsAll:
		return obj + ": empty device selector selects every device in the cluster (taint " + taint + ")."
	}
	return obj + ": " + w.Kind.String()
}

// AppendWarnings appends the warnings found since the last call to dst,
// in the order found, forgets them and returns the extended slice. Only
// with DeviceEvictorConfig.KeepWarnings > 0. With nothing pending it is
// O(1) and allocates nothing.
func (d *DeviceEvictor) AppendWarnings(dst []DeviceWarning) []DeviceWarning {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.warnings) == 0 {
		return dst
	}
	dst = append(dst, d.warnings...)
	clear(d.warnings)
	d.warnings = d.warnings[:0]
	return dst
}

// WarningsDropped returns how many warnings were not kept because
// KeepWarnings were pending. O(1).
func (d *DeviceEvictor) WarningsDropped() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.warnDropped
}

func (d *DeviceEvictor) warn(w DeviceWarning) {
	if len(d.warnings) >= d.cfg.KeepWarnings {
		d.warnDropped++
		return
	}
	if t := w.Taint.TimeAdded; t != nil {
		c := *t
		w.Taint.TimeAdded = &c
	}
	d.warnings = append(d.warnings, w)
}

// sliceWarnings collects a slice update's hazards, one warning per kind.
type sliceWarnings struct {
	reset, escalated DeviceWarning
}

func (sw *sliceWarnings) add(w *DeviceWarning, kind DeviceWarningKind, s *devSlice, device string, t *resourcev1.DeviceTaint, before time.Time, beforeEffect resourcev1.DeviceTaintEffect) {
	w.Count++
	if w.Count > 1 {
		return
	}
	*w = DeviceWarning{Kind: kind, Slice: s.name, Driver: s.pool.key.driver, Pool: s.pool.key.pool, Device: device,
		Taint: *t, Before: before, BeforeEffect: beforeEffect, Count: 1}
}

// check compares the NoExecute taint t (with TimeAdded) of device with the
// device's previous entry prev (nil: none).
func (sw *sliceWarnings) check(s *devSlice, device string, t *resourcev1.DeviceTaint, prev *devDevice) {
	if prev == nil || t.TimeAdded == nil {
		return
	}
	for i := range prev.taints {
		o := &prev.taints[i]
		if o.key == t.Key && o.value == t.Value {
			if o.hasTimeAdded && t.TimeAdded.After(o.since) {
				sw.add(&sw.reset, DeviceWarningTimeAddedReset, s, device, t, o.since, resourcev1.DeviceTaintEffectNoExecute)
			}
			return
		}
	}
	ps := prev.slice
	if len(ps.other) == 0 {
		return
	}
	idx := -1
	for i := range ps.devices {
		if &ps.devices[i] == prev {
			idx = i
			break
		}
	}
	k := sort.Search(len(ps.other), func(i int) bool { return int(ps.other[i].dev) >= idx })
	for ; k < len(ps.other) && int(ps.other[k].dev) == idx; k++ {
		o := &ps.other[k]
		if o.taint.key == t.Key && o.taint.value == t.Value && o.taint.hasTimeAdded && !t.TimeAdded.After(o.taint.since) {
			sw.add(&sw.escalated, DeviceWarningEscalated, s, device, t, o.taint.since, o.effect)
			return
		}
	}
}

func (d *DeviceEvictor) flushSliceWarnings(now time.Time, sw *sliceWarnings) {
	for _, w := range []*DeviceWarning{&sw.reset, &sw.escalated} {
		if w.Count > 0 {
			w.At = now
			d.warn(*w)
		}
	}
}

// ruleWarnings reports the hazards of a rule whose spec changed: old is
// its taint before (nil for a new rule).
func (d *DeviceEvictor) ruleWarnings(now time.Time, r *devRule, old *resourcev1.DeviceTaint) {
	w := DeviceWarning{At: now, Rule: r.name, RuleUID: r.uid, Taint: r.taint, Count: 1}
	if s := r.sel; s != nil && s.Driver == nil && s.Pool == nil && s.Device == nil {
		w.Kind = DeviceWarningSelectsAll
		d.warn(w)
	}
	if old == nil || old.TimeAdded == nil || r.taint.TimeAdded == nil {
		return
	}
	nw := r.taint.TimeAdded.Time
	switch {
	case old.Effect != resourcev1.DeviceTaintEffectNoExecute && r.evicts() && !nw.After(old.TimeAdded.Time):
		w.Kind, w.Before, w.BeforeEffect = DeviceWarningEscalated, old.TimeAdded.Time, old.Effect
		d.warn(w)
	case old.Effect == resourcev1.DeviceTaintEffectNoExecute && r.evicts() && old.Key == r.taint.Key && old.Value == r.taint.Value && nw.After(old.TimeAdded.Time):
		w.Kind, w.Before = DeviceWarningTimeAddedReset, old.TimeAdded.Time
		d.warn(w)
	}
}

// sameOthers reports whether in's taints of other effects equal s.other.
// No allocation.
func sameOthers(s *devSlice, in *resourcev1.ResourceSlice) bool {
	k := 0
	for i := range in.Spec.Devices {
		for j := range in.Spec.Devices[i].Taints {
			t := &in.Spec.Devices[i].Taints[j]
			if t.Effect == resourcev1.DeviceTaintEffectNoExecute {
				continue
			}
			if k >= len(s.other) {
				return false
			}
			o := &s.other[k]
			if int(o.dev) != i || o.effect != t.Effect || !sameDevTaint(&o.taint, j, t) {
				return false
			}
			k++
		}
	}
	return k == len(s.other)
}

// otherTaints records in's taints of other effects, by device index.
func otherTaints(in *resourcev1.ResourceSlice) []devOther {
	var out []devOther
	for i := range in.Spec.Devices {
		for j := range in.Spec.Devices[i].Taints {
			t := &in.Spec.Devices[i].Taints[j]
			if t.Effect == resourcev1.DeviceTaintEffectNoExecute {
				continue
			}
			o := devOther{dev: int32(i), effect: t.Effect, taint: devTaint{index: j, key: t.Key, value: t.Value}}
			if t.TimeAdded != nil {
				o.taint.since, o.taint.hasTimeAdded = t.TimeAdded.Time, true
			}
			out = append(out, o)
		}
	}
	return out
}
