package taints

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The DeviceEvictor against a reference model (STYLE.md: model-based
// tests): random sequences of slices, rules, claims, pods, time steps,
// worker passes (evictions reported at once, later, or after the pod's
// delete event) and restarts (Snapshot, objects deleted while down,
// Restore before or after the informers' lists), hostile input included
// (over-limit objects, unknown pools and devices, duplicate taints,
// devices and claim names, nil allocations, negative and huge
// TolerationSeconds, TimeAdded in the past and the future). The model
// keeps the objects as given and recomputes every pod's eviction from
// scratch with upstream's algorithm (claimEvictionTime, podEvictionTime)
// written as plainly as possible, and each rule's evicted count from the
// reasons it computes at Due (evictionReason); the DeviceEvictor must
// agree after every step (Explain, the counts, Snapshot), never panic,
// and keep no record the model does not explain.

type devModel struct {
	slices map[string]*resourcev1.ResourceSlice
	rules  map[string]DeviceTaintRule
	claims map[types.NamespacedName]*resourcev1.ResourceClaim
	pods   map[types.NamespacedName]*v1.Pod
	// evicted pods (name and UID).
	evicted map[string]bool
	// blast is the blast-radius breaker under test (nil: none), held and
	// released the drivers' breakers (TestDeviceModelBreaker) as the last
	// pass judged them, resumeAt when a hold whose share is calm ends
	// (ResumeAfter), calmFrom since when the share has been calm at the
	// end of every step (the start of that wait).
	blast          *DeviceBlastRadius
	held, released map[string]bool
	resumeAt       map[string]time.Time
	calmFrom       map[string]time.Time
	// handed are the evictions handed out and not reported yet (by
	// evictedKey, whether or not the pod is still there), each with the
	// rules among its reasons (name to UID) as they were at Due; counts
	// are the rules' evicted pods (by ruleKey).
	handed map[string]map[string]types.UID
	counts map[string]int64
	// A restart's Restore not settled yet (no Due since): the evicted
	// pods and the rule counts of the snapshot whose object was not set
	// since.
	restorePending bool
	restoredPods   map[string]bool
	restoredCounts map[string]int64
}

func newDevModel() *devModel {
	return &devModel{slices: map[string]*resourcev1.ResourceSlice{}, rules: map[string]DeviceTaintRule{},
		claims: map[types.NamespacedName]*resourcev1.ResourceClaim{}, pods: map[types.NamespacedName]*v1.Pod{}, evicted: map[string]bool{},
		handed: map[string]map[string]types.UID{}, counts: map[string]int64{}, restoredPods: map[string]bool{}, restoredCounts: map[string]int64{}}
}

func ruleKey(name string, uid types.UID) string { return name + "/" + string(uid) }

// device finds a published device: the highest generation of its pool,
// the first slice by name, the first device of that name.
func (m *devModel) device(driver, pool, name string) *resourcev1.Device {
	maxGen, found := int64(0), false
	var names []string
	for n, s := range m.slices {
		if s.Spec.Driver != driver || s.Spec.Pool.Name != pool {
			continue
		}
		names = append(names, n)
		if !found || s.Spec.Pool.Generation > maxGen {
			maxGen, found = s.Spec.Pool.Generation, true
		}
	}
	sort.Strings(names)
	for _, n := range names {
		s := m.slices[n]
		if s.Spec.Pool.Generation != maxGen {
			continue
		}
		for i := range s.Spec.Devices {
			if s.Spec.Devices[i].Name == name {
				return &s.Spec.Devices[i]
			}
		}
	}
	return nil
}

// claimEvictionHolds is upstream claimEvictionTime, the taints of held
// drivers' devices aside unless ignoreHolds.
func (m *devModel) claimEvictionHolds(c *resourcev1.ResourceClaim, ignoreHolds bool) (time.Time, bool) {
	var when time.Time
	has := false
	for _, r := range c.Status.Allocation.Devices.Results {
		if !ignoreHolds && m.held[r.Driver] {
			continue
		}
		if at, ok := m.resultEviction(r); ok && (!has || at.Before(when)) {
			when, has = at, true
		}
	}
	return when, has
}

// resultEviction is claimEvictionTime for one allocated device.
func (m *devModel) resultEviction(r resourcev1.DeviceRequestAllocationResult) (time.Time, bool) {
	var when time.Time
	has := false
	var taints []resourcev1.DeviceTaint
	if dev := m.device(r.Driver, r.Pool, r.Device); dev != nil {
		for _, t := range dev.Taints {
			if t.Effect == resourcev1.DeviceTaintEffectNoExecute {
				taints = append(taints, t)
			}
		}
	}
	for _, rule := range m.rules {
		if rule.Taint.Effect == resourcev1.DeviceTaintEffectNoExecute && rule.Selector.Selects(r.Driver, r.Pool, r.Device) {
			taints = append(taints, rule.Taint)
		}
	}
next:
	for _, t := range taints {
		at := t.TimeAdded.Time
		secs, have := int64(math.MaxInt64), false
		for _, tol := range r.Tolerations {
			if tol.Effect == resourcev1.DeviceTaintEffectNoExecute && DeviceToleratesTaint(tol, t) {
				if tol.TolerationSeconds == nil {
					continue next
				}
				secs, have = min(secs, max(*tol.TolerationSeconds, 0)), true
			}
		}
		if have {
			at = at.Add(time.Duration(min(secs, math.MaxInt64/int64(time.Second))) * time.Second)
		}
		if !has || at.Before(when) {
			when, has = at, true
		}
	}
	return when, has
}

// breakerCounts returns, per driver, its allocated devices and those with
// an allocated claim that does not tolerate one of their NoExecute taints
// forever (DeviceDriverLimit), recomputed from the objects.
func (m *devModel) breakerCounts() map[string][2]int {
	type dev struct{ driver, pool, device string }
	allocated, tainted := map[dev]bool{}, map[dev]bool{}
	for _, c := range m.claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			k := dev{r.Driver, r.Pool, r.Device}
			allocated[k] = true
			if _, ok := m.resultEviction(r); ok {
				tainted[k] = true
			}
		}
	}
	out := map[string][2]int{}
	for k := range allocated {
		n := out[k.driver]
		n[0]++
		if tainted[k] {
			n[1]++
		}
		out[k.driver] = n
	}
	return out
}

// track ends a step: each driver's calm run (its share at or below
// ResumeShare at the end of every step since calmFrom) goes on, starts at
// now or is broken. Inputs only count; the breaker is judged at a pass.
func (m *devModel) track(now time.Time) {
	if m.blast == nil {
		return
	}
	counts := m.breakerCounts()
	for _, drv := range []string{"d1", "d2"} {
		n := counts[drv]
		_, running := m.calmFrom[drv]
		switch calm := float64(n[1]) <= m.blast.ResumeShare*float64(n[0]); {
		case !calm:
			delete(m.calmFrom, drv)
		case !running:
			m.calmFrom[drv] = now
		}
	}
}

// judge is a pass's first step (RuleStatuses, Due): the breaker rule
// applied to every driver at now on the counts of all the inputs so far.
// An Armed driver trips to Holding when more than MaxShare (and more than
// MinDevices) of its allocated devices are tainted; a Holding or Released
// one (a hold released) is armed again once its share is at or below
// ResumeShare, at once without ResumeAfter, else ResumeAfter after its
// calm run began (a run broken and begun again between two passes moves
// it), unless the share rises above it before a pass sees the wait run
// out.
func (m *devModel) judge(now time.Time) {
	if m.blast == nil {
		return
	}
	counts := m.breakerCounts()
	for _, drv := range []string{"d1", "d2"} {
		n := counts[drv]
		over := n[1] > m.blast.MinDevices && float64(n[1]) > m.blast.MaxShare*float64(n[0])
		calm := float64(n[1]) <= m.blast.ResumeShare*float64(n[0])
		switch {
		case !m.held[drv] && !m.released[drv]:
			m.held[drv] = over
		case !calm:
			delete(m.resumeAt, drv)
		case m.blast.ResumeAfter == 0:
			m.held[drv], m.released[drv] = false, false
		default: // from the calm run's start: a flap between passes moves it
			m.resumeAt[drv] = m.calmFrom[drv].Add(m.blast.ResumeAfter)
		}
	}
	for drv, at := range m.resumeAt {
		if !now.Before(at) {
			m.held[drv], m.released[drv] = false, false
			delete(m.resumeAt, drv)
		}
	}
}

// podEviction is upstream podEvictionTime (no PodGroups), the taints of
// held drivers' devices aside.
func (m *devModel) podEviction(p *v1.Pod) (time.Time, bool) {
	return m.podEvictionHolds(p, false)
}

func (m *devModel) podEvictionHolds(p *v1.Pod, ignoreHolds bool) (time.Time, bool) {
	var at time.Time
	ok := false
	m.eachUsedClaim(p, func(c *resourcev1.ResourceClaim) {
		if w, has := m.claimEvictionHolds(c, ignoreHolds); has && (!ok || w.Before(at)) {
			at, ok = w, true
		}
	})
	return at, ok
}

// eachUsedClaim calls fn for each allocated claim a bound pod uses: its
// own (when checked) and reserved for it.
func (m *devModel) eachUsedClaim(p *v1.Pod, fn func(c *resourcev1.ResourceClaim)) {
	if p.Spec.NodeName == "" {
		return
	}
	eachPodClaim(p, func(name string, checkOwner bool) {
		c := m.claims[types.NamespacedName{Namespace: p.Namespace, Name: name}]
		if c == nil || c.Status.Allocation == nil {
			return
		}
		if checkOwner && !metav1.IsControlledBy(c, p) {
			return
		}
		for _, r := range c.Status.ReservedFor {
			if r.UID == p.UID {
				fn(c)
				return
			}
		}
	})
}

// reasonRules returns the NoExecute rules among the reasons of p's
// eviction (upstream evictionReason): those selecting a device, not of a
// held driver, of a claim p uses that has an eviction, whose taint the
// claim does not tolerate forever.
func (m *devModel) reasonRules(p *v1.Pod) map[string]types.UID {
	out := map[string]types.UID{}
	m.eachUsedClaim(p, func(c *resourcev1.ResourceClaim) {
		if _, has := m.claimEvictionHolds(c, false); !has {
			return
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if m.held[r.Driver] {
				continue
			}
		rules:
			for _, rule := range m.rules {
				if rule.Taint.Effect != resourcev1.DeviceTaintEffectNoExecute || !rule.Selector.Selects(r.Driver, r.Pool, r.Device) {
					continue
				}
				for _, tol := range r.Tolerations {
					if tol.Effect == resourcev1.DeviceTaintEffectNoExecute && tol.TolerationSeconds == nil && DeviceToleratesTaint(tol, rule.Taint) {
						continue rules
					}
				}
				out[rule.Name] = rule.UID
			}
		}
	})
	return out
}

// dropRuleCounts forgets the count of the rule name (deleted, or replaced
// by another UID).
func (m *devModel) dropRuleCounts(name string) {
	if old, ok := m.rules[name]; ok {
		delete(m.counts, ruleKey(name, old.UID))
	}
}

func evictedKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name + "/" + string(p.UID) }

// gen draws hostile objects from a small universe so that names collide.
// dense makes every pod bound and every claim reserved for both pod UIDs,
// so that evictions (and what follows them) are frequent.
type gen struct {
	r     *rand.Rand
	t0    time.Time
	dense bool
}

func (g gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g gen) timeAdded() *metav1.Time {
	return uMT(g.t0.Add(time.Duration(g.r.IntN(241)-60) * time.Second))
}

func (g gen) taint() resourcev1.DeviceTaint {
	effects := []resourcev1.DeviceTaintEffect{resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNone, resourcev1.DeviceTaintEffectNoSchedule, "unknown"}
	return resourcev1.DeviceTaint{Key: g.pick("k1", "k2"), Value: g.pick("", "v"), Effect: effects[g.r.IntN(len(effects))], TimeAdded: g.timeAdded()}
}

func (g gen) slice() *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: g.pick("s1", "s2", "s3", "s4")}}
	s.Spec.Driver, s.Spec.Pool.Name = g.pick("d1", "d2"), g.pick("p1", "p2")
	s.Spec.Pool.Generation = int64(g.r.IntN(3))
	n := g.r.IntN(4)
	if g.r.IntN(20) == 0 {
		n = resourcev1.ResourceSliceMaxDevices + 1 // over the limit
	}
	for range n {
		dev := resourcev1.Device{Name: g.pick("a", "b", "c")} // duplicates on purpose
		nt := g.r.IntN(3)
		if g.r.IntN(20) == 0 {
			nt = resourcev1.DeviceTaintsMaxLength + 1
		}
		for range nt {
			t := g.taint()
			dev.Taints = append(dev.Taints, t)
			if g.r.IntN(5) == 0 {
				dev.Taints = append(dev.Taints, t) // duplicate taint
			}
		}
		s.Spec.Devices = append(s.Spec.Devices, dev)
	}
	return s
}

func (g gen) rule() DeviceTaintRule {
	r := DeviceTaintRule{Name: g.pick("r1", "r2"), UID: types.UID(g.pick("ru1", "ru2"))}
	switch g.r.IntN(4) {
	case 0: // nil: selects nothing
	case 1:
		r.Selector = &DeviceTaintSelector{}
	default:
		r.Selector = &DeviceTaintSelector{}
		if g.r.IntN(2) == 0 {
			r.Selector.Driver = uPtr(g.pick("d1", "d2"))
		}
		if g.r.IntN(2) == 0 {
			r.Selector.Pool = uPtr(g.pick("p1", "p2", "p9"))
		}
		if g.r.IntN(2) == 0 {
			r.Selector.Device = uPtr(g.pick("a", "b", "c"))
		}
	}
	r.Taint = g.taint()
	return r
}

func (g gen) seconds() *int64 {
	switch g.r.IntN(6) {
	case 0:
		return nil
	case 1:
		return uPtr(int64(-5))
	case 2:
		return uPtr(int64(math.MaxInt64))
	default:
		return uPtr(int64(g.r.IntN(120)))
	}
}

func (g gen) claim() *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: g.pick("c1", "c2", "c3"), UID: types.UID(g.pick("cu1", "cu2"))}}
	if g.r.IntN(3) > 0 {
		c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "x", UID: types.UID(g.pick("U1", "U2")), Controller: uPtr(true)}}
	}
	for range g.r.IntN(3) {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: "x", UID: types.UID(g.pick("U1", "U2"))})
	}
	if g.dense {
		c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "x", UID: "U1"}, {Resource: "pods", Name: "x", UID: "U2"}}
	}
	if g.r.IntN(5) == 0 {
		return c // not allocated
	}
	c.Status.Allocation = &resourcev1.AllocationResult{}
	n := g.r.IntN(3)
	if g.r.IntN(20) == 0 {
		n = resourcev1.AllocationResultsMaxSize + 1
	}
	for range n {
		res := resourcev1.DeviceRequestAllocationResult{Driver: g.pick("d1", "d2"), Pool: g.pick("p1", "p2", "p9"), Device: g.pick("a", "b", "c", "zz"), Request: "r"}
		for range g.r.IntN(3) {
			res.Tolerations = append(res.Tolerations, resourcev1.DeviceToleration{
				Key: g.pick("", "k1", "k2"), Operator: resourcev1.DeviceTolerationOperator(g.pick("", "Equal", "Exists", "bogus")),
				Value: g.pick("", "v"), Effect: resourcev1.DeviceTaintEffect(g.pick("", "NoExecute", "NoExecute", "None")), TolerationSeconds: g.seconds(),
			})
		}
		if g.dense {
			res.Pool, res.Device = g.pick("p1", "p2"), g.pick("a", "b", "c")
			if g.r.IntN(2) == 0 {
				res.Tolerations = nil
			}
		}
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, res)
	}
	return c
}

func (g gen) pod() *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: g.pick("pa", "pb", "pc"), UID: types.UID(g.pick("U1", "U2"))}}
	if g.r.IntN(4) > 0 {
		p.Spec.NodeName = "n"
	}
	if g.r.IntN(8) == 0 {
		p.DeletionTimestamp = uMT(g.t0)
	}
	for i := range g.r.IntN(3) {
		name := fmt.Sprintf("rc%d", i)
		claim := g.pick("c1", "c2", "c3")
		if g.r.IntN(2) == 0 {
			p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: name, ResourceClaimName: &claim})
			continue
		}
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: name, ResourceClaimTemplateName: uPtr("t")})
		if g.r.IntN(3) > 0 {
			p.Status.ResourceClaimStatuses = append(p.Status.ResourceClaimStatuses, v1.PodResourceClaimStatus{Name: name, ResourceClaimName: &claim})
		}
	}
	if g.r.IntN(4) == 0 {
		p.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: g.pick("c1", "c2", "c3")}
	}
	if g.r.IntN(30) == 0 {
		for i := range 130 {
			p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: fmt.Sprintf("x%d", i), ResourceClaimName: uPtr("c1")})
		}
	}
	if g.dense {
		p.Spec.NodeName, p.DeletionTimestamp = "n", nil
		if countPodClaims(p) == 0 {
			p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "rc", ResourceClaimName: uPtr(g.pick("c1", "c2", "c3"))}}
		}
	}
	return p
}

func overLimit(err error) bool { return errors.Is(err, ErrDeviceLimit) }

// runDeviceModel runs steps random operations from r and checks the
// DeviceEvictor against the model after each.
func runDeviceModel(t *testing.T, r *rand.Rand, steps int) {
	t.Helper()
	runDeviceModelGen(t, r, steps, false)
}

func runDeviceModelGen(t *testing.T, r *rand.Rand, steps int, dense bool) {
	t.Helper()
	cfg := testDeviceConfig()
	d, err := NewDeviceEvictor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := newDevModel()
	if b := cfg.BlastRadius; b.MaxShare > 0 && b.MaxShare < 1 && b.MinDevices < 4 {
		m.blast, m.held, m.released, m.resumeAt, m.calmFrom = &b, map[string]bool{}, map[string]bool{}, map[string]time.Time{}, map[string]time.Time{}
	}
	g := gen{r: r, t0: uTaintTime, dense: dense}
	now := uTaintTime
	var trace []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("after %s:\n"+format, append([]any{strings.Join(trace, "\n  ")}, args...)...)
	}
	// out are the evictions handed out and not reported yet: the pod's
	// delete event, or another pod of its name, may come first.
	var out []DeviceEviction
	report := func(x DeviceEviction) {
		k := x.Pod.String() + "/" + string(x.UID)
		reasons, ok := m.handed[k]
		if !ok {
			fail("%s reported but not handed out in the model", k)
		}
		delete(m.handed, k)
		p := m.pods[x.Pod]
		there := p != nil && p.UID == x.UID
		switch r.IntN(8) {
		case 0, 1:
			trace = append(trace, "Retry "+x.Pod.Name)
			d.Retry(now, x, 0)
		case 2:
			trace = append(trace, "Done gone "+x.Pod.Name)
			d.Done(now, x, DeviceGone)
			if there {
				m.evicted[k] = true
			}
		default:
			trace = append(trace, "Done "+x.Pod.Name)
			d.Done(now, x, DeviceDeleted)
			if there {
				m.evicted[k] = true
			}
			for name, uid := range reasons {
				if rule, ok := m.rules[name]; ok && rule.UID == uid {
					m.counts[ruleKey(name, uid)]++
				}
			}
		}
	}
	defer func() {
		if e := recover(); e != nil {
			t.Fatalf("panic %v after:\n  %s", e, strings.Join(trace, "\n  "))
		}
	}()
	for range steps {
		switch op := r.IntN(16); op {
		case 0, 1:
			s := g.slice()
			trace = append(trace, fmt.Sprintf("SetSlice %s %s/%s gen %d, %d devices", s.Name, s.Spec.Driver, s.Spec.Pool.Name, s.Spec.Pool.Generation, len(s.Spec.Devices)))
			err := d.SetSlice(now, s)
			tooBig := len(s.Spec.Devices) > resourcev1.ResourceSliceMaxDevices || slices.ContainsFunc(s.Spec.Devices, func(dev resourcev1.Device) bool { return len(dev.Taints) > resourcev1.DeviceTaintsMaxLength })
			if tooBig != overLimit(err) {
				fail("SetSlice error %v, over limit %v", err, tooBig)
			}
			if !tooBig {
				m.slices[s.Name] = s // moved to another pool: deleted then added, calmer in between
			}
		case 2:
			name := g.pick("s1", "s2", "s3", "s4")
			trace = append(trace, "DeleteSlice "+name)
			d.DeleteSlice(now, name)
			delete(m.slices, name)
		case 3:
			rule := g.rule()
			trace = append(trace, fmt.Sprintf("SetRule %s %s %+v", rule.Name, rule.Taint.Effect, rule.Selector))
			d.SetRule(now, rule)
			old, known := m.rules[rule.Name]
			if known && old.UID != rule.UID {
				m.dropRuleCounts(rule.Name) // a new UID: deleted, then added
			}
			if rk := ruleKey(rule.Name, rule.UID); !known || old.UID != rule.UID {
				if n, ok := m.restoredCounts[rk]; ok {
					m.counts[rk] = n
					delete(m.restoredCounts, rk)
				}
			}
			m.rules[rule.Name] = rule
		case 4:
			name := g.pick("r1", "r2")
			trace = append(trace, "DeleteRule "+name)
			d.DeleteRule(now, name)
			m.dropRuleCounts(name)
			delete(m.rules, name)
		case 5, 6:
			c := g.claim()
			trace = append(trace, fmt.Sprintf("SetClaim %s %s allocated %v", c.Name, c.UID, c.Status.Allocation != nil))
			err := d.SetClaim(now, c)
			tooBig := c.Status.Allocation != nil && len(c.Status.Allocation.Devices.Results) > resourcev1.AllocationResultsMaxSize
			if tooBig != overLimit(err) {
				fail("SetClaim error %v, over limit %v", err, tooBig)
			}
			if !tooBig {
				m.claims[types.NamespacedName{Namespace: c.Namespace, Name: c.Name}] = c
			}
		case 7:
			k := types.NamespacedName{Namespace: "ns", Name: g.pick("c1", "c2", "c3")}
			trace = append(trace, "DeleteClaim "+k.Name)
			d.DeleteClaim(now, k)
			delete(m.claims, k)
		case 8, 9:
			p := g.pod()
			trace = append(trace, fmt.Sprintf("SetPod %s %s node %q claims %d", p.Name, p.UID, p.Spec.NodeName, countPodClaims(p)))
			err := d.SetPod(now, p)
			tooBig := countPodClaims(p) > 128
			if tooBig != overLimit(err) {
				fail("SetPod error %v, over limit %v", err, tooBig)
			}
			if !tooBig {
				k := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
				if old := m.pods[k]; old != nil && old.UID != p.UID {
					delete(m.evicted, evictedKey(old))
				}
				if countPodClaims(p) == 0 {
					if old := m.pods[k]; old != nil {
						delete(m.evicted, evictedKey(old))
					}
					delete(m.pods, k)
				} else {
					if old := m.pods[k]; (old == nil || old.UID != p.UID) && m.restoredPods[evictedKey(p)] {
						delete(m.restoredPods, evictedKey(p))
						m.evicted[evictedKey(p)] = true // evicted before the restart
					}
					m.pods[k] = p
				}
			}
		case 10:
			k := types.NamespacedName{Namespace: "ns", Name: g.pick("pa", "pb", "pc")}
			trace = append(trace, "DeletePod "+k.Name)
			d.DeletePod(k)
			if old := m.pods[k]; old != nil {
				delete(m.evicted, evictedKey(old))
			}
			delete(m.pods, k)
		case 11:
			step := time.Duration(r.IntN(90)) * time.Second
			if r.IntN(10) == 0 {
				step = -step // the clock going back counts as no time
			}
			now = now.Add(step)
			if now.Before(d.last) {
				now = d.last
			}
			trace = append(trace, fmt.Sprintf("now = t0+%v", now.Sub(uTaintTime)))
			if m.blast != nil && r.IntN(3) == 0 {
				drv := g.pick("d1", "d2")
				trace = append(trace, "ReleaseHold "+drv) // the holds as the last pass judged them
				if got := d.ReleaseHold(now, drv); got != m.held[drv] {
					fail("ReleaseHold(%s) = %v, model held %v", drv, got, m.held[drv])
				}
				if m.held[drv] {
					m.held[drv], m.released[drv] = false, true
				}
			}
		case 14:
			// A late report of an eviction handed out earlier.
			if len(out) == 0 {
				continue
			}
			i := r.IntN(len(out))
			x := out[i]
			out = slices.Delete(out, i, i+1)
			report(x)
		case 15:
			if m.blast != nil || r.IntN(4) > 0 {
				continue // restored holds: TestDeviceBreakerRestart
			}
			trace = append(trace, "restart")
			d = restartDevice(t, r, d, m, now, &trace)
			out = nil
		default:
			// A worker pass: Due, then Done, an immediate Retry, or a
			// report left for later.
			d.RuleStatuses(now) // judges the breakers, as Due would
			m.judge(now)
			if m.restorePending { // the first Due settles the Restore
				m.restorePending, m.restoredPods, m.restoredCounts = false, map[string]bool{}, map[string]int64{}
			}
			got := d.Due(now)
			var gotKeys, wantKeys []string
			for _, x := range got {
				gotKeys = append(gotKeys, x.Pod.String()+"/"+string(x.UID))
			}
			for _, p := range m.pods {
				if at, ok := m.podEviction(p); ok && !at.After(now) && !m.evicted[evictedKey(p)] && m.handed[evictedKey(p)] == nil {
					wantKeys = append(wantKeys, evictedKey(p))
				}
			}
			sort.Strings(gotKeys)
			sort.Strings(wantKeys)
			if !slices.Equal(gotKeys, wantKeys) {
				fail("Due(t0+%v) = %v, model %v", now.Sub(uTaintTime), gotKeys, wantKeys)
			}
			for _, x := range got {
				m.handed[x.Pod.String()+"/"+string(x.UID)] = m.reasonRules(m.pods[x.Pod])
			}
			for _, x := range got {
				switch r.IntN(8) {
				case 0:
					trace = append(trace, "handed out "+x.Pod.Name)
					out = append(out, x)
				case 1: // the pod's delete event comes before Delete returns
					trace = append(trace, "DeletePod "+x.Pod.Name)
					d.DeletePod(x.Pod)
					if p := m.pods[x.Pod]; p != nil {
						delete(m.evicted, evictedKey(p))
					}
					delete(m.pods, x.Pod)
					report(x)
				default:
					report(x)
				}
			}
			d.AppendCancelled(nil)
		}
		m.track(now)
		checkDeviceModel(t, d, m, now, fail)
	}
}

// sameSet reports whether a and b hold the same true keys.
func sameSet(a, b map[string]bool) bool {
	for k, v := range a {
		if v != b[k] {
			return false
		}
	}
	for k, v := range b {
		if v != a[k] {
			return false
		}
	}
	return true
}

func checkDeviceModel(t *testing.T, d *DeviceEvictor, m *devModel, now time.Time, fail func(string, ...any)) {
	t.Helper()
	for k, p := range m.pods {
		x := d.Explain(now, k)
		at, ok := m.podEviction(p)
		switch {
		case m.handed[evictedKey(p)] != nil:
			if x.State != DeviceHandedOut {
				fail("pod %s: %v, model: handed out", k, x)
			}
		case m.evicted[evictedKey(p)]:
			if x.State != DeviceDone {
				fail("pod %s: %v, model: evicted", k, x)
			}
		case !ok:
			_, held := m.podEvictionHolds(p, true)
			switch {
			case m.blast != nil && held:
				if x.State != DeviceHeld {
					fail("pod %s: %v, model: held", k, x)
				}
			case x.State != DeviceNotTainted && x.State != DeviceNotBound:
				fail("pod %s: %v, model: no eviction", k, x)
			}
		default:
			switch x.State {
			case DeviceScheduled, DeviceDue:
				if !x.At.Equal(at) {
					fail("pod %s: %v, model: eviction at t0+%v", k, x, at.Sub(uTaintTime))
				}
			case DeviceRetrying:
				if x.At.Before(at) {
					fail("pod %s: %v retries before the eviction time t0+%v", k, x, at.Sub(uTaintTime))
				}
				if x.At.After(at) && x.At.After(now) { // the model retries with no backoff
					fail("pod %s: %v retries after both the eviction time t0+%v and now", k, x, at.Sub(uTaintTime))
				}
			default:
				fail("pod %s: %v, model: eviction at t0+%v", k, x, at.Sub(uTaintTime))
			}
		}
	}
	if m.blast != nil {
		// A pass now would change a breaker: NextDeadline says so.
		next := &devModel{blast: m.blast, held: maps.Clone(m.held), released: maps.Clone(m.released), resumeAt: maps.Clone(m.resumeAt),
			calmFrom: m.calmFrom, slices: m.slices, rules: m.rules, claims: m.claims}
		next.judge(now)
		if !sameSet(next.held, m.held) || !sameSet(next.released, m.released) || !maps.Equal(next.resumeAt, m.resumeAt) {
			if at, ok := d.NextDeadline(); !ok || at.After(now) {
				fail("NextDeadline = %v, %v; the next pass changes a breaker: held %v released %v resumeAt %v, model now %v %v %v",
					at, ok, next.held, next.released, next.resumeAt, m.held, m.released, m.resumeAt)
			}
		}
		counts := m.breakerCounts()
		for drv := range m.held {
			if _, ok := counts[drv]; !ok && (m.held[drv] || m.released[drv]) {
				counts[drv] = [2]int{} // a hold outlives the driver's last claim
			}
		}
		limits := d.DriverLimits(nil)
		if len(limits) != len(counts) {
			fail("DriverLimits = %+v, model %v", limits, counts)
		}
		for _, l := range limits {
			n := counts[l.Driver]
			want := DeviceHoldArmed
			switch {
			case m.held[l.Driver]:
				want = DeviceHoldHolding
			case m.released[l.Driver]:
				want = DeviceHoldReleased
			}
			if l.AllocatedDevices != n[0] || l.TaintedDevices != n[1] || l.State != want {
				fail("DriverLimits %s = %d allocated, %d tainted, %v; model %d, %d, %v", l.Driver, l.AllocatedDevices, l.TaintedDevices, l.State, n[0], n[1], want)
			}
			if at := m.resumeAt[l.Driver]; !l.ResumeAt.Equal(at) {
				fail("DriverLimits %s resumes at %v, model %v", l.Driver, l.ResumeAt, at)
			}
		}
	}
	// The restart state: evicted pods and rule counts, and until the
	// first Due after a Restore its entries not seen yet.
	var wantSnap, gotSnap []string
	for k := range m.evicted {
		wantSnap = append(wantSnap, "pod "+k)
	}
	for k := range m.restoredPods {
		wantSnap = append(wantSnap, "pod "+k)
	}
	for k, n := range m.counts {
		wantSnap = append(wantSnap, fmt.Sprintf("rule %s %d", k, n))
	}
	for k, n := range m.restoredCounts {
		wantSnap = append(wantSnap, fmt.Sprintf("rule %s %d", k, n))
	}
	snap := d.Snapshot()
	for _, e := range snap.Evicted {
		gotSnap = append(gotSnap, "pod "+e.Pod.String()+"/"+string(e.UID))
	}
	for _, c := range snap.Rules {
		gotSnap = append(gotSnap, fmt.Sprintf("rule %s %d", ruleKey(c.Rule, c.UID), c.Evicted))
	}
	sort.Strings(wantSnap)
	sort.Strings(gotSnap)
	if !slices.Equal(gotSnap, wantSnap) {
		fail("Snapshot = %v, model %v", gotSnap, wantSnap)
	}
	// Nothing kept that the model does not explain.
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pods.len() != len(m.pods) {
		fail("%d pod records, model %d pods", d.pods.len(), len(m.pods))
	}
	gone := len(m.handed) // those whose pod is not there (deleted, or replaced)
	for _, p := range m.pods {
		if m.handed[evictedKey(p)] != nil {
			gone--
		}
	}
	if len(d.gone) != gone {
		fail("%d forgotten handed-out evictions, model %d", len(d.gone), gone)
	}
	if d.restorePending != m.restorePending || len(d.restoredPods) != len(m.restoredPods) || len(d.restoredRules) != len(m.restoredCounts) {
		fail("restore pending %v with %d pods and %d rules, model %v, %d, %d", d.restorePending, len(d.restoredPods), len(d.restoredRules),
			m.restorePending, len(m.restoredPods), len(m.restoredCounts))
	}
	if len(d.slices) != len(m.slices) || len(d.rules) != len(m.rules) {
		fail("%d slices, %d rules; model %d, %d", len(d.slices), len(d.rules), len(m.slices), len(m.rules))
	}
	for k, c := range d.claims {
		if !c.allocated && len(c.pods) == 0 {
			fail("claim record %s with neither allocation nor pods", k)
		}
		for i, p := range c.pods {
			found := false
			for j := range int(p.nlinks) {
				if l := p.linkAt(j); l.claim == c && int(l.pos) == i {
					found = true
				}
			}
			if !found {
				fail("claim %s: pod %s link broken", k, p.key)
			}
		}
	}
	d.pods.each(func(p *devPod) {
		for j := range int(p.nlinks) {
			l := p.linkAt(j)
			if int(l.pos) >= len(l.claim.pods) || l.claim.pods[l.pos] != p || d.claims[l.claim.key] != l.claim {
				fail("pod %s: link %d to claim %s (pos %d of %d) broken", p.key, j, l.claim.key, l.pos, len(l.claim.pods))
			}
		}
	})
	for k, p := range d.pools {
		if len(p.slices) == 0 && len(p.users) == 0 {
			fail("pool %v with neither slices nor users", k)
		}
	}
	if n := d.queue.len(); n > d.pods.len() {
		fail("%d queued, %d pods", n, d.pods.len())
	}
}

// restartDevice restarts the controller: d's Snapshot, objects deleted
// while no controller ran (a quarter of the pods and rules), evictions
// handed out lost, then a new DeviceEvictor fed the Snapshot (Restore)
// before or after the informers' lists (every object the model keeps).
// Evicted pods and rule counts survive with their objects; the entries
// of the others are pending until the first Due.
func restartDevice(t *testing.T, r *rand.Rand, d *DeviceEvictor, m *devModel, now time.Time, trace *[]string) *DeviceEvictor {
	t.Helper()
	snap := d.Snapshot()
	allPods, allCounts := m.restoredPods, m.restoredCounts
	for k := range m.evicted {
		allPods[k] = true
	}
	for k, n := range m.counts {
		allCounts[k] = n
	}
	for _, k := range sortedKeys(m.pods) {
		if r.IntN(4) == 0 {
			*trace = append(*trace, "  deleted while down: pod "+k.Name)
			delete(m.pods, k)
		}
	}
	for _, name := range sortedKeys(m.rules) {
		if r.IntN(4) == 0 {
			*trace = append(*trace, "  deleted while down: rule "+name)
			delete(m.rules, name)
		}
	}
	m.evicted, m.restoredPods, m.counts, m.restoredCounts = map[string]bool{}, map[string]bool{}, map[string]int64{}, map[string]int64{}
	for k := range allPods {
		m.restoredPods[k] = true
	}
	for _, p := range m.pods {
		if k := evictedKey(p); allPods[k] {
			m.evicted[k] = true
			delete(m.restoredPods, k)
		}
	}
	for k, n := range allCounts {
		m.restoredCounts[k] = n
	}
	for _, rule := range m.rules {
		if k := ruleKey(rule.Name, rule.UID); allCounts[k] > 0 {
			m.counts[k] = allCounts[k]
			delete(m.restoredCounts, k)
		}
	}
	m.handed, m.restorePending = map[string]map[string]types.UID{}, true

	d, err := NewDeviceEvictor(d.cfg)
	if err != nil {
		t.Fatal(err)
	}
	early := r.IntN(2) == 0
	restore := func() {
		*trace = append(*trace, fmt.Sprintf("  Restore: %d pods, %d rules", len(snap.Evicted), len(snap.Rules)))
		if err := d.Restore(now, snap); err != nil {
			t.Fatal(err)
		}
	}
	if early {
		restore()
	}
	for _, k := range sortedKeys(m.slices) {
		if err := d.SetSlice(now, m.slices[k]); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range sortedKeys(m.rules) {
		d.SetRule(now, m.rules[k])
	}
	for _, k := range sortedKeys(m.claims) {
		if err := d.SetClaim(now, m.claims[k]); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range sortedKeys(m.pods) {
		if err := d.SetPod(now, m.pods[k]); err != nil {
			t.Fatal(err)
		}
	}
	if !early {
		restore()
	}
	return d
}

func sortedKeys[K interface{ comparable }, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return keys
}

func TestDeviceModel(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 30
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
		runDeviceModel(t, r, 200)
	}
}

// TestDeviceModelDense: the model-based test with every pod bound and
// every claim reserved for both pod UIDs and allocated devices that are
// published, so that evictions, and what follows them (late reports,
// delete events before the report, rule counts, restarts with evicted
// pods), are frequent.
func TestDeviceModelDense(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 30
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 0xde115e))
		runDeviceModelGen(t, r, 200, true)
	}
}

// TestDeviceModelBreaker: the model-based test with the blast-radius
// breaker holding (half the allocated devices of a driver, at most one or
// two devices over MinDevices), with and without hysteresis (ResumeShare
// below MaxShare, ResumeAfter over the model's clock steps of up to 89s),
// and ReleaseHold among the operations, half the seeds dense (see
// TestDeviceModelDense): the counts, the holds, the releases, the holds'
// ends and every pod's state must match the model's recomputation after
// every step.
func TestDeviceModelBreaker(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 30
	}
	t.Cleanup(func() { deviceTestConfig = nil })
	for i, b := range []DeviceBlastRadius{{MaxShare: 0.5}, {MaxShare: 0.3, MinDevices: 1}, {MaxShare: 0.75, MinDevices: 2},
		{MaxShare: 0.5, ResumeShare: 0.5}, {MaxShare: 0.75, ResumeShare: 0.25, MinDevices: 1},
		{MaxShare: 0.5, ResumeAfter: time.Minute}, {MaxShare: 0.3, ResumeShare: 0.3, MinDevices: 2, ResumeAfter: 30 * time.Second}} {
		deviceTestConfig = func(c *DeviceEvictorConfig) { c.BlastRadius = b }
		t.Run(fmt.Sprintf("%+v", b), func(t *testing.T) {
			for seed := range seeds {
				r := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
				runDeviceModelGen(t, r, 200, seed%2 == 1) // half of them dense
			}
		})
	}
}

func FuzzDeviceModel(f *testing.F) {
	for _, s := range []uint64{1, 2, 3, 42} {
		f.Add(binary.LittleEndian.AppendUint64(nil, s))
	}
	f.Add(append(make([]byte, 16), 1)) // dense
	f.Fuzz(func(t *testing.T, seed []byte) {
		var b [17]byte // the PCG seed, then dense in the low bit
		copy(b[:], seed)
		r := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:16])))
		runDeviceModelGen(t, r, 100, b[16]&1 == 1)
	})
}
