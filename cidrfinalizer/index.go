package cidrfinalizer

import (
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
)

// Index is the incremental form of Decide for a controller: it is fed from
// the ServiceCIDR and IPAddress informers (SetServiceCIDR/DeleteServiceCIDR,
// SetIPAddress/DeleteIPAddress) and answers Decide(now, name) with the same
// decision the pure DecideObserved gives over the same objects.
//
// Managed addresses are kept in one sorted tree per family, so a decision
// is a handful of range queries: O(m log m + k log n + b) for m ServiceCIDRs,
// n IPAddresses, k uncovered ranges (at most 2m+1 per prefix) and b blocking
// addresses, instead of a scan of every IPAddress. SetIPAddress and
// DeleteIPAddress cost O(log n); steady-state calls do not allocate.
//
// The Index remembers, per ServiceCIDR, the time of its first Decide on the
// object while it is being deleted; the grace period never runs longer than
// GracePeriod after that (DecideObserved). The memory is kept across
// SetServiceCIDR calls for the same UID and dropped when the object is
// replaced by a different UID or deleted from the Index.
//
// The zero value is not usable; call NewIndex. An Index is safe for
// concurrent use: one mutex guards it, and it calls no user code.
type Index struct {
	mu     sync.Mutex
	cfg    Config
	cidrs  map[string]*entry
	list   []*entry // the values of cidrs, for iteration without map order
	ips    map[string]ipEntry
	trees  [2]addrTree // [0] IPv4, [1] IPv6
	spans  []span      // scratch for Decide
	prefix []netip.Prefix
	latest time.Time // latest now seen by Decide: an earlier now counts as this one
}

type entry struct {
	obj      object
	pos      int       // index in Index.list
	observed time.Time // the deletion on the caller's clock, set by the first Decide while deleting; zero otherwise
}

type ipEntry struct {
	k  key
	v6 bool
}

// NewIndex returns an empty Index using cfg (copied). It returns
// ErrInvalidConfig for a negative duration.
func NewIndex(cfg Config) (*Index, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	x := &Index{cfg: cfg, cidrs: map[string]*entry{}, ips: map[string]ipEntry{}}
	x.trees[1].v6 = true
	return x, nil
}

func family(v6 bool) int {
	if v6 {
		return 1
	}
	return 0
}

// SetServiceCIDR adds or replaces the ServiceCIDR of that name. The Index
// keeps a copy of what it needs; c is not retained or modified. A malformed
// CIDR returns an error wrapping ErrInvalidCIDR; the object is stored all the
// same (its valid prefixes still cover other objects, as upstream, and
// Decide on it returns the same error), so that no event is lost. O(1).
func (x *Index) SetServiceCIDR(c *networkingv1.ServiceCIDR) error {
	if c == nil {
		return fmt.Errorf("%w: ServiceCIDR", ErrNilObject)
	}
	o := parseObject(c)
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.cidrs[o.name]
	if !ok {
		e = &entry{pos: len(x.list)}
		x.cidrs[o.name] = e
		x.list = append(x.list, e)
	} else if !o.deleting || e.obj.uid != o.uid {
		e.observed = time.Time{}
	}
	e.obj = o
	return o.err
}

// DeleteServiceCIDR forgets the ServiceCIDR of that name, if known. O(1).
func (x *Index) DeleteServiceCIDR(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.cidrs[name]
	if !ok {
		return
	}
	last := x.list[len(x.list)-1]
	x.list[e.pos] = last
	last.pos = e.pos
	x.list[len(x.list)-1] = nil
	x.list = x.list[:len(x.list)-1]
	delete(x.cidrs, name)
}

// SetIPAddress adds or replaces the IPAddress of that name. Only addresses
// managed by the apiserver's allocator (label networkingv1.LabelManagedBy =
// AllocatorName) are kept; an IPAddress whose name does not parse as an
// address (or carries an IPv6 zone) is ignored, as upstream does, and so is
// one that is not managed (a previous managed version of it is forgotten).
// The only error is ErrNilObject. O(log n).
func (x *Index) SetIPAddress(ip *networkingv1.IPAddress) error {
	if ip == nil {
		return fmt.Errorf("%w: IPAddress", ErrNilObject)
	}
	a, managed := managedAddr(ip)
	x.mu.Lock()
	defer x.mu.Unlock()
	old, had := x.ips[ip.Name]
	if !managed {
		if had {
			x.trees[family(old.v6)].remove(old.k)
			delete(x.ips, ip.Name)
		}
		return nil
	}
	k, v6 := keyOf(a)
	if had {
		if old.k == k && old.v6 == v6 {
			return nil
		}
		x.trees[family(old.v6)].remove(old.k)
	}
	x.trees[family(v6)].insert(k)
	x.ips[ip.Name] = ipEntry{k: k, v6: v6}
	return nil
}

// DeleteIPAddress forgets the IPAddress of that name, if known. O(log n).
func (x *Index) DeleteIPAddress(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.ips[name]; ok {
		x.trees[family(old.v6)].remove(old.k)
		delete(x.ips, name)
	}
}

// Decide returns the decision for the ServiceCIDR of that name, with the
// rules of Decide (see there) over the objects the Index holds. The first
// Decide on a deleting object records its first observation (see
// DecideObserved): the deletionTimestamp read against now (now itself when
// the timestamp is in the future), kept on now's clock, so that the rest
// of the grace period is measured with now's monotonic reading and a
// wall-clock step does not end it early. A now earlier than one Decide has already seen counts as
// that latest instant: a clock going backwards never restarts a wait. Errors: ErrNotFound for a name the Index does not hold,
// ErrInvalidCIDR for an object with a malformed CIDR. When nothing blocks,
// Decide does not allocate unless a Condition must be written.
func (x *Index) Decide(now time.Time, name string) (Decision, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.cidrs[name]
	if !ok {
		return Decision{}, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	if e.obj.err != nil {
		return Decision{}, e.obj.err
	}
	if now.Before(x.latest) {
		now = x.latest
	} else {
		x.latest = now
	}
	if e.obj.deleting && e.obj.hasFinalizer && e.observed.IsZero() {
		// The deletionTimestamp (a server wall time) is read against now
		// once: from then on the grace period is measured on now's clock,
		// monotonic for a real one, so a wall-clock step cannot end it.
		e.observed = now.Add(min(e.obj.deletedAt.Sub(now), 0))
	}
	return decide(now, e.observed, &e.obj, x.cfg, func() []netip.Addr { return x.blocking(e) }), nil
}

// blocking returns the managed addresses that only e covers. For each prefix
// of e, the ranges covered by the prefixes of the other ServiceCIDRs that are
// not being deleted are sorted and swept; every gap left is one range query.
func (x *Index) blocking(e *entry) []netip.Addr {
	var out []netip.Addr
	merge := false
	for _, p := range e.obj.prefixes {
		own, v6, ok := containedSpan(p)
		if !ok {
			continue
		}
		t := &x.trees[family(v6)]
		if t.keys == 0 {
			continue
		}
		spans := x.spans[:0]
		for _, other := range x.list {
			if other == e || other.obj.deleting {
				continue
			}
			for _, q := range other.obj.prefixes {
				if q.Addr().BitLen() != p.Addr().BitLen() || !q.Overlaps(p) {
					continue
				}
				s, _, ok := containedSpan(q)
				if !ok {
					continue
				}
				if s.lo.less(own.lo) {
					s.lo = own.lo
				}
				if own.hi.less(s.hi) {
					s.hi = own.hi
				}
				if !s.hi.less(s.lo) {
					spans = append(spans, s)
				}
			}
		}
		slices.SortFunc(spans, func(a, b span) int { return a.lo.cmp(b.lo) })
		x.spans = spans
		n := len(out)
		cur, more := own.lo, true
		for _, s := range spans {
			if !more {
				break
			}
			if cur.less(s.lo) {
				out = x.gap(out, t, span{cur, s.lo.prev()})
			}
			if !s.hi.less(cur) {
				cur, more = s.hi.next()
			}
		}
		if more && !own.hi.less(cur) {
			out = x.gap(out, t, span{cur, own.hi})
		}
		if n > 0 && len(out) > n {
			merge = true // a second prefix: restore the order, drop repeats
		}
	}
	if merge {
		out = sortedUnique(out)
	}
	return out
}

func (x *Index) gap(out []netip.Addr, t *addrTree, s span) []netip.Addr {
	if !t.anyIn(s) {
		return out
	}
	return t.appendIn(out, s)
}

// ContainingServiceCIDRs returns the names, sorted, of the ServiceCIDRs the
// Index holds (deleting ones included) with a prefix that contains the
// address of ip (PrefixContainsAddr): the ones a controller requeues when ip
// is added or deleted. It returns nil for an IPAddress that is not managed by
// the allocator or whose name does not parse, as upstream. O(m).
func (x *Index) ContainingServiceCIDRs(ip *networkingv1.IPAddress) []string {
	a, ok := managedAddr(ip)
	if !ok {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []string
	for _, e := range x.list {
		for _, p := range e.obj.prefixes {
			if PrefixContainsAddr(p, a) {
				out = append(out, e.obj.name)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// OverlappingServiceCIDRs returns the names, sorted, of the ServiceCIDRs the
// Index holds (c itself included when it is held, deleting ones included)
// with a prefix that overlaps one of c's: the ones a controller requeues when
// c is added, because c may now cover addresses that blocked them. Malformed
// CIDRs of c are skipped. O(m).
func (x *Index) OverlappingServiceCIDRs(c *networkingv1.ServiceCIDR) []string {
	if c == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	mine := x.prefix[:0]
	eachPrefix(c, func(p netip.Prefix) bool { mine = append(mine, p); return true })
	x.prefix = mine
	var out []string
	for _, e := range x.list {
		if overlapsAny(e.obj.prefixes, mine) {
			out = append(out, e.obj.name)
		}
	}
	slices.Sort(out)
	return out
}

func overlapsAny(a, b []netip.Prefix) bool {
	for _, p := range a {
		for _, q := range b {
			if p.Overlaps(q) {
				return true
			}
		}
	}
	return false
}

// Len returns how many ServiceCIDRs and how many managed IPAddresses the
// Index holds.
func (x *Index) Len() (serviceCIDRs, ipAddresses int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.list), len(x.ips)
}
