package taints

import (
	"math"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
)

// DeviceToleratesTaint reports whether a ResourceClaim's device toleration
// tolerates a device taint, with the rules of
// k8s.io/dynamic-resource-allocation/resourceclaim.ToleratesTaint at
// v0.37.2: an empty toleration effect matches every effect, an empty key
// matches every key, the operator Exists matches every value, Equal (or
// empty, its default) needs equal values, and any other operator matches
// nothing. The effect of the taint is not judged here: callers act only on
// the effects they know (DeviceEvictor acts on NoExecute alone).
//
// Unlike the rest of the package, this re-implements upstream's matcher:
// resourceclaim needs k8s.io/api v0.37 (it reads scheduling/v1beta1
// PodGroups), so importing it would raise the library's floor above
// k8s.io/api v0.35. The module draparity (internal/draparity) proves the two
// equal by exhaustive enumeration and a differential fuzz test.
// O(1), no allocation.
func DeviceToleratesTaint(tol resourcev1.DeviceToleration, taint resourcev1.DeviceTaint) bool {
	return toleratesDeviceTaint(&tol, taint.Key, taint.Value, taint.Effect)
}

// toleratesDeviceTaint is DeviceToleratesTaint on the taint's fields.
func toleratesDeviceTaint(tol *resourcev1.DeviceToleration, key, value string, effect resourcev1.DeviceTaintEffect) bool {
	if tol.Effect != "" && tol.Effect != effect {
		return false
	}
	if tol.Key != "" && tol.Key != key {
		return false
	}
	switch tol.Operator {
	case "", resourcev1.DeviceTolerationOpEqual:
		return tol.Value == value
	case resourcev1.DeviceTolerationOpExists:
		return true
	}
	return false
}

// DeviceTaintSelector selects devices for a DeviceTaintRule
// (resource.k8s.io DeviceTaintSelector at v1.37.2): every field that is set
// must equal the device's driver, pool or name. The empty selector selects
// every device; a rule without a selector (nil) selects none.
type DeviceTaintSelector struct {
	Driver, Pool, Device *string
}

// Selects reports whether s selects the device (driver, pool, device), as
// upstream ruleMatchesDevice (pkg/controller/devicetainteviction at
// v1.37.2) does; a nil s selects nothing. O(1), no allocation.
func (s *DeviceTaintSelector) Selects(driver, pool, device string) bool {
	if s == nil {
		return false
	}
	return (s.Driver == nil || *s.Driver == driver) &&
		(s.Pool == nil || *s.Pool == pool) &&
		(s.Device == nil || *s.Device == device)
}

// clone deep-copies s.
func (s *DeviceTaintSelector) clone() *DeviceTaintSelector {
	if s == nil {
		return nil
	}
	c := &DeviceTaintSelector{}
	if s.Driver != nil {
		v := *s.Driver
		c.Driver = &v
	}
	if s.Pool != nil {
		v := *s.Pool
		c.Pool = &v
	}
	if s.Device != nil {
		v := *s.Device
		c.Device = &v
	}
	return c
}

// equalSelector compares two selectors by value.
func equalSelector(a, b *DeviceTaintSelector) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	if a == nil {
		return true
	}
	return eqStrPtr(a.Driver, b.Driver) && eqStrPtr(a.Pool, b.Pool) && eqStrPtr(a.Device, b.Device)
}

func eqStrPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// maxTolerationSeconds is the largest TolerationSeconds a Duration holds;
// larger values saturate (upstream multiplies and overflows).
const maxTolerationSeconds = int64(math.MaxInt64 / int64(time.Second))

// deviceTolerationVerdict applies upstream claimEvictionTime's toleration
// rule to one NoExecute taint and one allocated device's tolerations: only
// tolerations whose effect is NoExecute count (an empty effect does not,
// unlike DeviceToleratesTaint's own rule); one without TolerationSeconds
// ignores the taint (forever); otherwise the smallest of the matching
// ones, negative ones counting as 0, delays the eviction (have). Huge
// values saturate at about 292 years.
func deviceTolerationVerdict(tols []resourcev1.DeviceToleration, key, value string) (forever, have bool, d time.Duration) {
	secs := int64(math.MaxInt64)
	for i := range tols {
		t := &tols[i]
		if t.Effect != resourcev1.DeviceTaintEffectNoExecute || !toleratesDeviceTaint(t, key, value, resourcev1.DeviceTaintEffectNoExecute) {
			continue
		}
		if t.TolerationSeconds == nil {
			return true, false, 0
		}
		secs = min(secs, max(*t.TolerationSeconds, 0))
		have = true
	}
	if !have {
		return false, false, 0
	}
	secs = min(secs, maxTolerationSeconds)
	return false, true, time.Duration(secs) * time.Second
}
