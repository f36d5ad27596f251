// Package cidrfinalizer decides when a ServiceCIDR may lose its protection
// finalizer: the ServiceCIDR deletion logic of the kube-controller-manager's
// servicecidrs controller
// (pkg/controller/servicecidrs/servicecidrs_controller.go, sync and
// canDeleteCIDR; KEP-1880, networking.k8s.io/v1, Kubernetes v1.31–v1.37.2,
// including kubernetes/kubernetes#131330), rebuilt as a caller-driven
// machine with no goroutines, timers or I/O of its own.
//
// A ServiceCIDR carries [Finalizer] so that it is not removed while Services
// still hold ClusterIPs (IPAddress objects) that only it covers. When the
// object is deleted, the finalizer goes once no managed address depends on it
// alone and a grace period has passed, so that every apiserver's allocator
// has seen the deletion and stopped allocating from the range.
//
// # Decisions
//
// [Decide] (pure, over lists) and [Index.Decide] (incremental, fed from
// informers) return a [Decision]: an [Action], an optional Ready condition to
// write, the blocking addresses and when to decide again.
//
//	state of the object                                   Action                 Ready condition              RequeueAfter
//	----------------------------------------------------  ---------------------  ---------------------------  ---------------
//	not deleting, no Finalizer                            ActionAddFinalizer     True, MessageReady           0
//	not deleting, Finalizer present                       ActionNone             True, MessageReady           0
//	deleting, no Finalizer (not ours to hold)             ActionNone             (none)                       0
//	deleting, an address only it covers                   ActionBlock            False/Terminating, Blocked   RecheckInterval
//	deleting, nothing blocks, in the grace period         ActionWait             False/Terminating            time left
//	deleting, nothing blocks, grace period over           ActionRemoveFinalizer  False/Terminating (*)        0
//
// The condition is nil whenever the stored Ready condition already has the
// same status, reason and message, so a steady object causes no writes.
// (*) Not rewritten when the stored one already says False/Terminating.
//
// An address blocks when it is managed by the apiserver's allocator
// (label ipaddress.kubernetes.io/managed-by = [AllocatorName]), contained
// ([PrefixContainsAddr]) in one of the object's prefixes, and contained in no
// prefix of another ServiceCIDR that is not itself being deleted. This is
// upstream's parent rule (another ServiceCIDR with the same or a larger
// prefix covers everything; a dual-stack object needs that for both
// families) and IP rule (a smaller overlapping ServiceCIDR rescues the
// addresses it contains) in one. The network address is never contained, nor
// is the IPv4 broadcast address; the IPv6 all-ones address is. IPv4-mapped
// IPv6 addresses and prefixes are IPv6, as in net/netip; nothing is
// unmapped. IPAddresses whose names do not parse are ignored, as upstream;
// malformed CIDRs of the decided object are an error ([ErrInvalidCIDR]).
//
// # The caller loop
//
// A controller feeds an [Index] from its informers and works a queue of
// ServiceCIDR names (examples/servicecidr/controller does exactly this):
//
//	x, _ := cidrfinalizer.NewIndex(cidrfinalizer.DefaultConfig())
//	// ServiceCIDR add:    x.SetServiceCIDR(c); enqueue c.Name and x.OverlappingServiceCIDRs(c)
//	// ServiceCIDR update: x.SetServiceCIDR(c); enqueue c.Name (and, when its CIDRs
//	//                     or deletion state changed, x.OverlappingServiceCIDRs(c))
//	// ServiceCIDR delete: x.DeleteServiceCIDR(name); enqueue name
//	// IPAddress update:   x.SetIPAddress(ip) (its managed-by label may change)
//	// IPAddress add:      x.SetIPAddress(ip); enqueue x.ContainingServiceCIDRs(ip)
//	// IPAddress delete:   enqueue x.ContainingServiceCIDRs(ip); x.DeleteIPAddress(ip.Name)
//	for name := range queue {
//		d, err := x.Decide(clock.Now(), name)
//		if errors.Is(err, cidrfinalizer.ErrNotFound) { continue } // gone
//		if d.Condition != nil { patch status.conditions with *d.Condition }
//		switch d.Action {
//		case cidrfinalizer.ActionAddFinalizer:    patch the finalizer in
//		case cidrfinalizer.ActionRemoveFinalizer: patch the finalizer out
//		}
//		if d.RequeueAfter > 0 { queue.AddAfter(name, d.RequeueAfter) }
//	}
//
// # Time
//
// Time is an argument: every decision takes now (the caller's clock.Now(),
// or a fake clock's time). The grace period runs from the deletionTimestamp.
// A timestamp in the future (the apiserver's clock ahead of the caller's)
// counts as now, so one decision never asks to wait more than GracePeriod;
// and the Index remembers when it first decided on the deleting object and
// ends the wait GracePeriod after that at the latest ([DecideObserved] is
// the pure form). Time going backwards counts as no time elapsed.
//
// The deletionTimestamp is a server wall time. The Index reads it against
// now once, at its first decision on the deleting object, and keeps the
// result on now's clock (now.Add, monotonic reading included); the
// deadline is derived from it with Add and compared with Before, so the
// rest of the wait is measured on the monotonic clock when now carries one
// and a wall-clock step (NTP, a resumed VM) does not end it early (fake
// clocks compare by wall time). The stateless Decide and DecideObserved
// compare the timestamp with each now's wall clock, as upstream's
// time.Since does, so there a forward step can end the grace period early;
// the finalizer still goes only when no address depends on the object
// alone.
//
// # Concurrency
//
// [Decide], [DecideObserved], [PrefixContainsAddr], [AllocatorReady] and
// [AllocatorReadiness] are pure functions. An [Index] is safe for concurrent
// use (one mutex; it calls no user code). Inputs are never mutated or
// retained.
//
// # Where we differ from upstream, and why
//
//   - A ServiceCIDR being deleted never covers another. Upstream
//     (canDeleteCIDR) counts it as a parent, so two overlapping ServiceCIDRs deleted together
//     both drop their finalizers and orphan the addresses. Here both stay
//     blocked while such an address exists, whatever the order of
//     evaluation (the rule is symmetric, so no tie-break is needed), and a
//     live one still covers a deleting one as upstream.
//   - Config.RecheckInterval (zero: off, as upstream) re-evaluates a blocked
//     object on a timer, so a missed IPAddress event cannot block it forever
//     (upstream sync sets the Terminating condition and waits for an event).
//   - The grace period is bounded against clock skew (see Time; upstream
//     sync measures time.Since(deletionTimestamp) on its own wall clock).
//   - Ready=False/Terminating is reported from the moment the object is being
//     deleted; upstream sync leaves Ready=True during the grace period.
//   - [AllocatorReadiness] is a helper for apiserver allocator authors: a
//     prefix whose every ServiceCIDR is deleting or not ready is not ready
//     (upstream's MetaAllocator in
//     pkg/registry/core/service/ipallocator/cidrallocator.go keeps a shared
//     prefix allocating in that case).
//   - The family of an IPAddress comes from its parsed name, not from its
//     ip-family label, so a mislabelled managed address still protects.
//   - Condition writes are skipped when unchanged, as in
//     kubernetes/kubernetes#131330; the Index re-indexes a ServiceCIDR whose
//     CIDRs grow (the default ServiceCIDR's single- to dual-stack
//     conversion, kubernetes/kubernetes#131263).
//
// # Performance
//
// The Index keeps managed addresses in one sorted tree per family (an AVL
// tree in a slice). A decision sweeps the object's prefixes against the
// ranges the other live ServiceCIDRs cover and asks the tree about each gap:
// O(m log m + k log n + b) for m ServiceCIDRs, n addresses, k gaps and b
// blocking addresses. Index.Decide allocates nothing when nothing blocks;
// Index.SetIPAddress is O(log n). The pure Decide scans every address: O(n)
// per decision.
package cidrfinalizer
