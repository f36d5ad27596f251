package cidrfinalizer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// modelPrefixes is a small universe of overlapping prefixes, so that random
// ServiceCIDRs nest, coincide and leave gaps.
var modelPrefixes = []string{
	"10.0.0.0/24", "10.0.0.0/25", "10.0.0.128/25", "10.0.0.0/26", "10.0.0.64/26", "10.0.0.0/28",
	"10.0.0.16/28", "10.0.0.240/28", "10.0.0.0/23", "10.0.1.0/24", "10.0.0.4/30", "10.0.0.8/31", "10.0.0.200/32",
	"2001:db8::/120", "2001:db8::/121", "2001:db8::80/121", "2001:db8::/124", "2001:db8::f0/124", "2001:db8::/119",
	"2001:db8::10/127", "::ffff:10.0.0.0/120",
}

// modelAddrs draws addresses from the same space, boundaries included.
func modelAddr(r *rand.Rand) string {
	switch r.IntN(4) {
	case 0:
		return fmt.Sprintf("10.0.%d.%d", r.IntN(2), r.IntN(256))
	case 1:
		return fmt.Sprintf("10.0.0.%d", []int{0, 1, 15, 16, 17, 63, 64, 127, 128, 239, 240, 255, 4, 7, 8, 9, 200}[r.IntN(17)])
	case 2:
		return fmt.Sprintf("2001:db8::%x", r.IntN(512))
	default:
		return fmt.Sprintf("::ffff:10.0.0.%d", r.IntN(256))
	}
}

// modelCluster is the reference: the objects as the apiserver holds them, and
// the first-observation times the Index is expected to remember.
type modelCluster struct {
	cidrs    map[string]*networkingv1.ServiceCIDR
	ips      map[string]*networkingv1.IPAddress
	observed map[string]time.Time
	uid      map[string]types.UID // the UID last set under each name
}

func (m *modelCluster) lists() ([]*networkingv1.ServiceCIDR, []*networkingv1.IPAddress) {
	var cs []*networkingv1.ServiceCIDR
	for _, c := range m.cidrs {
		cs = append(cs, c)
	}
	var is []*networkingv1.IPAddress
	for _, a := range m.ips {
		is = append(is, a)
	}
	return cs, is
}

func randomServiceCIDR(r *rand.Rand, name string, uid int) *networkingv1.ServiceCIDR {
	var cidrs []string
	for range 1 + r.IntN(2) {
		cidrs = append(cidrs, modelPrefixes[r.IntN(len(modelPrefixes))])
	}
	c := testutil.ServiceCIDR(name, cidrs...)
	c.UID = types.UID(fmt.Sprintf("uid-%s-%d", name, uid))
	if r.IntN(4) > 0 {
		c.Finalizers = []string{Finalizer}
	}
	if r.IntN(2) == 0 {
		c.DeletionTimestamp = testutil.MetaTime(testutil.At(time.Duration(r.IntN(40)-20) * time.Second))
	}
	switch r.IntN(4) {
	case 0:
		withReady(c, metav1.ConditionTrue, "", MessageReady, e0)
	case 1:
		withReady(c, metav1.ConditionFalse, ReasonTerminating, []string{MessageBlocked, MessageTerminating}[r.IntN(2)], e0)
	}
	return c
}

// TestIndexMatchesDecide drives an Index with random informer events and
// checks every decision against the pure DecideObserved over the same
// objects (seeded, deterministic).
func TestIndexMatchesDecide(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 99))
		cfg := Config{GracePeriod: time.Duration(r.IntN(3)) * 5 * time.Second, RecheckInterval: time.Duration(r.IntN(2)) * time.Minute}
		x, err := NewIndex(cfg)
		if err != nil {
			t.Fatal(err)
		}
		m := &modelCluster{cidrs: map[string]*networkingv1.ServiceCIDR{}, ips: map[string]*networkingv1.IPAddress{},
			observed: map[string]time.Time{}, uid: map[string]types.UID{}}
		uid := 0
		now, latest := e0, e0
		for step := range 400 {
			switch op := r.IntN(20); {
			case op < 4:
				name := fmt.Sprintf("c%d", r.IntN(6))
				uid++
				if old, ok := m.cidrs[name]; ok && r.IntN(2) == 0 {
					uid-- // same object, new state
					c := randomServiceCIDR(r, name, 0)
					c.UID = old.UID
					if old.DeletionTimestamp != nil { // a deletion never goes away
						c.DeletionTimestamp = old.DeletionTimestamp
					}
					m.cidrs[name] = c
				} else {
					m.cidrs[name] = randomServiceCIDR(r, name, uid)
				}
				c := m.cidrs[name]
				m.fixObserved(name, c)
				if err := x.SetServiceCIDR(c); err != nil {
					t.Fatalf("seed %d step %d: SetServiceCIDR: %v", seed, step, err)
				}
			case op < 5:
				name := fmt.Sprintf("c%d", r.IntN(6))
				delete(m.cidrs, name)
				delete(m.observed, name)
				delete(m.uid, name)
				x.DeleteServiceCIDR(name)
			case op < 12:
				a := ip(modelAddr(r))
				if r.IntN(5) == 0 {
					a = unmanaged(a.Name)
				}
				m.ips[a.Name] = a
				if err := x.SetIPAddress(a); err != nil {
					t.Fatal(err)
				}
			case op < 15:
				if len(m.ips) == 0 {
					continue
				}
				names := make([]string, 0, len(m.ips))
				for n := range m.ips {
					names = append(names, n)
				}
				slices.Sort(names)
				n := names[r.IntN(len(names))]
				delete(m.ips, n)
				x.DeleteIPAddress(n)
			default:
				now = now.Add(time.Duration(r.IntN(7)-1) * time.Second) // sometimes backwards
			}
			if now.After(latest) {
				latest = now
			}
			cs, is := m.lists()
			r.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
			for name, c := range m.cidrs {
				// The Index treats an earlier now as the latest one it saw.
				if c.DeletionTimestamp != nil && hasFinalizer(c) && m.observed[name].IsZero() {
					m.observed[name] = latest
				}
				want, werr := DecideObserved(latest, m.observed[name], c, cs, is, cfg)
				got, gerr := x.Decide(now, name)
				if (werr != nil) != (gerr != nil) || !sameShape(shape(got), shape(want)) ||
					condString(got.Condition) != condString(want.Condition) ||
					(got.Condition != nil && !got.Condition.LastTransitionTime.Equal(&want.Condition.LastTransitionTime)) {
					t.Fatalf("seed %d step %d: Index.Decide(%v, %s) = %v, %v; DecideObserved = %v, %v\ncidrs %s",
						seed, step, now.Sub(e0), name, shape(got), gerr, shape(want), werr, names(cs))
				}
			}
		}
	}
}

// fixObserved applies the Index's memory rule to the model: the first
// observation survives updates of the same deleting object only.
func (m *modelCluster) fixObserved(name string, c *networkingv1.ServiceCIDR) {
	if c.DeletionTimestamp == nil || m.uid[name] != c.UID {
		delete(m.observed, name)
	}
	m.uid[name] = c.UID
}
