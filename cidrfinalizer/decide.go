package cidrfinalizer

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Decision is what the caller must do for one ServiceCIDR.
type Decision struct {
	// Action is what to do with the finalizer.
	Action Action
	// RequeueAfter, when positive, is when to decide again: the time left in
	// the grace period (ActionWait), or Config.RecheckInterval (ActionBlock).
	RequeueAfter time.Duration
	// Condition, when non-nil, is the Ready condition to write to the status.
	// It is nil when the stored Ready condition already has the same status,
	// reason and message (so a steady object causes no writes,
	// kubernetes/kubernetes#131330), for ActionRemoveFinalizer when the
	// stored one already says Ready=False/Terminating (the object is going
	// away: its message is not rewritten), and for a deleting object
	// without our finalizer.
	// LastTransitionTime is now when the status changes, else the stored one.
	Condition *metav1.Condition
	// Blocking lists, for ActionBlock, the managed addresses that only this
	// ServiceCIDR covers, sorted (netip.Addr.Compare) and without duplicates.
	Blocking []netip.Addr
}

// Decide is the pure, stateless form of the finalizer decision for cidr,
// given every ServiceCIDR (all; cidr itself may be in it and is recognised by
// name) and every IPAddress (ips). Nil entries are skipped, nothing is
// mutated, and the decision does not depend on the order of all or ips.
//
// The rules, in order:
//   - not deleting: ActionAddFinalizer when Finalizer is missing, else
//     ActionNone; Ready=True with MessageReady and an empty reason;
//   - deleting without our finalizer: ActionNone, no condition;
//   - deleting, and some managed IPAddress is contained (PrefixContainsAddr)
//     in one of cidr's prefixes and in no prefix of another ServiceCIDR that
//     is not itself deleting: ActionBlock, Ready=False/Terminating with
//     MessageBlocked, Blocking, RequeueAfter = cfg.RecheckInterval;
//   - deleting, nothing blocks, grace period not over: ActionWait,
//     Ready=False/Terminating with MessageTerminating, RequeueAfter = time left;
//   - otherwise ActionRemoveFinalizer.
//
// This is the upstream parent rule and IP rule together: a prefix that
// another ServiceCIDR contains (same range or larger) covers every address of
// it. Unlike upstream, a ServiceCIDR that is itself being deleted never
// covers another, so two overlapping ServiceCIDRs deleted together cannot
// both release their finalizers and orphan addresses; and, unlike upstream,
// the family of an address comes from its parsed name, not from its
// ip-family label.
//
// The grace period runs from the deletionTimestamp; a timestamp in the future
// (clock skew) counts as now, so one call never asks to wait more than
// cfg.GracePeriod. Being stateless, Decide cannot bound the total wait from
// the first time the deletion was seen; DecideObserved and Index can.
//
// Errors: a nil cidr (ErrNilObject), a malformed CIDR in cidr's spec
// (ErrInvalidCIDR; malformed CIDRs of the other objects are ignored, as
// upstream does), an invalid cfg (ErrInvalidConfig). Cost: O(len(ips) ×
// len(all)) when deleting — this is the reference that Index speeds up.
func Decide(now time.Time, cidr *networkingv1.ServiceCIDR, all []*networkingv1.ServiceCIDR,
	ips []*networkingv1.IPAddress, cfg Config) (Decision, error) {
	return DecideObserved(now, time.Time{}, cidr, all, ips, cfg)
}

// DecideObserved is Decide for a caller that remembers when it first saw
// cidr being deleted (observed; the zero time means "now"). The grace period
// then ends at the earlier of deletionTimestamp + GracePeriod and observed +
// GracePeriod, so a deletionTimestamp from the future (clock skew between
// the apiserver and the caller) never makes the caller wait more than
// GracePeriod after it first saw the deletion. Index.Decide uses the same
// rule with the time of its own first decision on the deleting object.
func DecideObserved(now, observed time.Time, cidr *networkingv1.ServiceCIDR, all []*networkingv1.ServiceCIDR,
	ips []*networkingv1.IPAddress, cfg Config) (Decision, error) {
	if err := cfg.validate(); err != nil {
		return Decision{}, err
	}
	if cidr == nil {
		return Decision{}, fmt.Errorf("%w: ServiceCIDR", ErrNilObject)
	}
	o := parseObject(cidr)
	if o.err != nil {
		return Decision{}, o.err
	}
	return decide(now, observed, &o, cfg, func() []netip.Addr { return scanBlocking(&o, all, ips) }), nil
}

// decide applies the rules to a parsed object; blocking is called only for a
// deleting object that carries our finalizer.
func decide(now, observed time.Time, o *object, cfg Config, blocking func() []netip.Addr) Decision {
	if !o.deleting {
		d := Decision{Action: ActionNone}
		if !o.hasFinalizer {
			d.Action = ActionAddFinalizer
		}
		d.Condition = readyCondition(now, o, metav1.ConditionTrue, "", MessageReady)
		return d
	}
	if !o.hasFinalizer {
		return Decision{Action: ActionNone}
	}
	if b := blocking(); len(b) > 0 {
		return Decision{
			Action:       ActionBlock,
			RequeueAfter: cfg.RecheckInterval,
			Condition:    readyCondition(now, o, metav1.ConditionFalse, ReasonTerminating, MessageBlocked),
			Blocking:     b,
		}
	}
	deadline := graceStart(now, observed, o.deletedAt).Add(cfg.GracePeriod)
	if now.Before(deadline) {
		return Decision{
			Action:       ActionWait,
			RequeueAfter: deadline.Sub(now),
			Condition:    readyCondition(now, o, metav1.ConditionFalse, ReasonTerminating, MessageTerminating),
		}
	}
	d := Decision{Action: ActionRemoveFinalizer}
	if !(o.ready.present && o.ready.status == metav1.ConditionFalse && o.ready.reason == ReasonTerminating) {
		d.Condition = readyCondition(now, o, metav1.ConditionFalse, ReasonTerminating, MessageTerminating)
	}
	return d
}

// graceStart is when the grace period starts: the deletionTimestamp, or the
// first observation when not later (it then carries the caller's monotonic
// reading, if any), and never later than now (a timestamp from the future,
// or a clock that went backwards, counts as no time elapsed).
func graceStart(now, observed, deletedAt time.Time) time.Time {
	start := deletedAt
	if !observed.IsZero() && !deletedAt.Before(observed) {
		start = observed
	}
	if now.Before(start) {
		start = now
	}
	return start
}

// readyCondition returns the Ready condition to write, or nil when the stored
// one already has this status, reason and message.
func readyCondition(now time.Time, o *object, status metav1.ConditionStatus, reason, message string) *metav1.Condition {
	r := &o.ready
	if r.present && r.status == status && r.reason == reason && r.message == message {
		return nil
	}
	since := metav1.NewTime(now)
	if r.present && r.status == status {
		since = r.since
	}
	return &metav1.Condition{
		Type:               ConditionReady,
		Status:             status,
		ObservedGeneration: o.generation,
		LastTransitionTime: since,
		Reason:             reason,
		Message:            message,
	}
}

// scanBlocking is the reference IP rule: every managed address contained in
// one of o's prefixes and in no prefix of another ServiceCIDR that is not
// being deleted.
func scanBlocking(o *object, all []*networkingv1.ServiceCIDR, ips []*networkingv1.IPAddress) []netip.Addr {
	if everyPrefixHasParent(o, all) {
		return nil // the upstream shortcut: no need to look at addresses
	}
	var out []netip.Addr
	for _, ip := range ips {
		a, ok := managedAddr(ip)
		if !ok || !ownContains(o, a) || coveredByOther(o.name, all, a) {
			continue
		}
		out = append(out, a)
	}
	return sortedUnique(out)
}

// everyPrefixHasParent is the upstream parent rule: every prefix of o is
// contained (same range or larger) in a prefix of another ServiceCIDR that is
// not being deleted. Such a parent covers every address o could hold.
func everyPrefixHasParent(o *object, all []*networkingv1.ServiceCIDR) bool {
	for _, p := range o.prefixes {
		found := false
		for _, c := range all {
			if c == nil || c.Name == o.name || c.DeletionTimestamp != nil {
				continue
			}
			eachPrefix(c, func(q netip.Prefix) bool {
				found = q.Bits() <= p.Bits() && q.Overlaps(p)
				return !found
			})
			if found {
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func ownContains(o *object, a netip.Addr) bool {
	for _, p := range o.prefixes {
		if PrefixContainsAddr(p, a) {
			return true
		}
	}
	return false
}

func coveredByOther(name string, all []*networkingv1.ServiceCIDR, a netip.Addr) bool {
	for _, c := range all {
		if c == nil || c.Name == name || c.DeletionTimestamp != nil {
			continue
		}
		covered := false
		eachPrefix(c, func(p netip.Prefix) bool {
			covered = PrefixContainsAddr(p, a)
			return !covered
		})
		if covered {
			return true
		}
	}
	return false
}

func sortedUnique(s []netip.Addr) []netip.Addr {
	if len(s) < 2 {
		return s
	}
	slices.SortFunc(s, netip.Addr.Compare)
	return slices.Compact(s)
}
