package cidrfinalizer

import (
	"errors"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// decideCase is one row: decide for cidr (which is also in the cluster) at
// Epoch+at, given the other ServiceCIDRs and the IPAddresses.
type decideCase struct {
	name   string
	at     time.Duration
	cfg    *Config // nil: DefaultConfig
	cidr   *networkingv1.ServiceCIDR
	others []*networkingv1.ServiceCIDR
	ips    []*networkingv1.IPAddress
	want   want
	// pureOnly rows make no sense for an Index, which holds one object per name.
	pureOnly bool
}

// runDecide checks one row with the pure Decide and with an Index fed the
// same objects: both must give the wanted decision.
func runDecide(t *testing.T, tc decideCase) {
	t.Helper()
	cfg := DefaultConfig()
	if tc.cfg != nil {
		cfg = *tc.cfg
	}
	now := testutil.At(tc.at)
	all := append([]*networkingv1.ServiceCIDR{tc.cidr}, tc.others...)
	before := deepCopies(all)
	d, err := Decide(now, tc.cidr, all, tc.ips, cfg)
	if err != nil {
		t.Fatalf("Decide(%v, %s) error %v", tc.at, tc.cidr.Name, err)
	}
	if got := shape(d); !sameShape(got, tc.want) {
		t.Errorf("Decide(%v, %s) = %v, want %v", tc.at, tc.cidr.Name, got, tc.want)
	}
	for i := range all {
		if !equality.Semantic.DeepEqual(before[i], all[i]) {
			t.Errorf("Decide(%v, %s) mutated ServiceCIDR %s", tc.at, tc.cidr.Name, all[i].Name)
		}
	}
	if tc.pureOnly {
		return
	}
	x := newIndexWith(t, cfg, all, tc.ips)
	d, err = x.Decide(now, tc.cidr.Name)
	if err != nil {
		t.Fatalf("Index.Decide(%v, %s) error %v", tc.at, tc.cidr.Name, err)
	}
	if got := shape(d); !sameShape(got, tc.want) {
		t.Errorf("Index.Decide(%v, %s) = %v, want %v", tc.at, tc.cidr.Name, got, tc.want)
	}
}

func deepCopies(cs []*networkingv1.ServiceCIDR) []*networkingv1.ServiceCIDR {
	out := make([]*networkingv1.ServiceCIDR, len(cs))
	for i, c := range cs {
		out[i] = c.DeepCopy()
	}
	return out
}

var e0 = testutil.Epoch

// TestDecideRules has one row per rule of Decide.
func TestDecideRules(t *testing.T) {
	recheck := Config{GracePeriod: 10 * time.Second, RecheckInterval: 30 * time.Second}
	noGrace := Config{}
	tests := []decideCase{
		{name: "new object gets the finalizer and Ready=True",
			cidr: bare(sc("a", "10.0.0.0/24")),
			want: want{action: ActionAddFinalizer, cond: condReady}},
		{name: "object with finalizer and no condition gets Ready=True",
			cidr: sc("a", "10.0.0.0/24"),
			want: want{action: ActionNone, cond: condReady}},
		{name: "steady object: no action, no condition write",
			cidr: ready(sc("a", "10.0.0.0/24")),
			want: want{action: ActionNone}},
		{name: "steady object without finalizer: add it, no condition write",
			cidr: ready(bare(sc("a", "10.0.0.0/24"))),
			want: want{action: ActionAddFinalizer}},
		{name: "stale Ready message is rewritten",
			cidr: withReady(sc("a", "10.0.0.0/24"), metav1.ConditionTrue, "", "old words", e0),
			want: want{action: ActionNone, cond: condReady}},
		{name: "Ready=False on a live object becomes True",
			cidr: withReady(sc("a", "10.0.0.0/24"), metav1.ConditionFalse, ReasonTerminating, MessageBlocked, e0),
			want: want{action: ActionNone, cond: condReady}},
		{name: "deleting without our finalizer: nothing to do",
			cidr: deleting(bare(sc("a", "10.0.0.0/24")), e0),
			ips:  []*networkingv1.IPAddress{ip("10.0.0.1")},
			want: want{action: ActionNone}},
		{name: "deleting, only this object covers an address: block",
			cidr: deleting(ready(sc("a", "10.0.0.0/24")), e0),
			ips:  []*networkingv1.IPAddress{ip("10.0.0.1")},
			want: want{action: ActionBlock, cond: condBlocked, blocking: addrs("10.0.0.1")}},
		{name: "blocked long after the grace period: still blocked",
			at:   time.Hour,
			cidr: deleting(ready(sc("a", "10.0.0.0/24")), e0),
			ips:  []*networkingv1.IPAddress{ip("10.0.0.1")},
			want: want{action: ActionBlock, cond: condBlocked, blocking: addrs("10.0.0.1")}},
		{name: "blocked with the condition already written: no write",
			cidr: deleting(withReady(sc("a", "10.0.0.0/24"), metav1.ConditionFalse, ReasonTerminating, MessageBlocked, e0), e0),
			ips:  []*networkingv1.IPAddress{ip("10.0.0.1")},
			want: want{action: ActionBlock, blocking: addrs("10.0.0.1")}},
		{name: "blocked with RecheckInterval: timed requeue",
			cfg:  &recheck,
			cidr: deleting(ready(sc("a", "10.0.0.0/24")), e0),
			ips:  []*networkingv1.IPAddress{ip("10.0.0.1")},
			want: want{action: ActionBlock, requeue: 30 * time.Second, cond: condBlocked, blocking: addrs("10.0.0.1")}},
		{name: "deleting, nothing blocks, just deleted: wait the whole grace period, Ready=False at once",
			cidr: deleting(ready(sc("a", "10.0.0.0/24")), e0),
			want: want{action: ActionWait, requeue: 10 * time.Second, cond: condTerminating}},
		{name: "4s into the grace period: wait 6s",
			at:   4 * time.Second,
			cidr: deleting(ready(sc("a", "10.0.0.0/24")), e0),
			want: want{action: ActionWait, requeue: 6 * time.Second, cond: condTerminating}},
		{name: "waiting with the condition already written: no write",
			at:   4 * time.Second,
			cidr: deleting(withReady(sc("a", "10.0.0.0/24"), metav1.ConditionFalse, ReasonTerminating, MessageTerminating, e0), e0),
			want: want{action: ActionWait, requeue: 6 * time.Second}},
		{name: "exactly at the end of the grace period: remove",
			at:   10 * time.Second,
			cidr: deleting(ready(sc("a", "10.0.0.0/24")), e0),
			want: want{action: ActionRemoveFinalizer, cond: condTerminating}},
		{name: "after the grace period, stored Ready=False/Terminating: remove without a write",
			at:   11 * time.Second,
			cidr: deleting(withReady(sc("a", "10.0.0.0/24"), metav1.ConditionFalse, ReasonTerminating, MessageBlocked, e0), e0),
			want: want{action: ActionRemoveFinalizer}},
		{name: "after the grace period, no stored condition: remove and say Ready=False",
			at:   11 * time.Second,
			cidr: deleting(sc("a", "10.0.0.0/24"), e0),
			want: want{action: ActionRemoveFinalizer, cond: condTerminating}},
		{name: "no grace period: remove at once",
			cfg:  &noGrace,
			cidr: deleting(ready(sc("a", "10.0.0.0/24")), e0),
			want: want{action: ActionRemoveFinalizer, cond: condTerminating}},
		{name: "deletionTimestamp from the future: wait at most the grace period",
			cidr: deleting(ready(sc("a", "10.0.0.0/24")), e0.Add(time.Hour)),
			want: want{action: ActionWait, requeue: 10 * time.Second, cond: condTerminating}},
		{name: "RecheckInterval does not apply to waiting",
			cfg:  &recheck,
			at:   time.Second,
			cidr: deleting(ready(sc("a", "10.0.0.0/24")), e0),
			want: want{action: ActionWait, requeue: 9 * time.Second, cond: condTerminating}},
		{name: "no CIDRs at all: nothing to protect",
			cidr: deleting(ready(sc("a")), e0.Add(-time.Minute)),
			ips:  []*networkingv1.IPAddress{ip("10.0.0.1")},
			want: want{action: ActionRemoveFinalizer, cond: condTerminating}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runDecide(t, tc) })
	}
}

// upstreamDeleted is the deleting object of the upstream controller tests:
// dual-stack, deleted longer than the grace period ago.
func upstreamDeleted() *networkingv1.ServiceCIDR {
	return deleting(ready(sc("kubernetes", "192.168.0.0/24", "2001:db2::/64")), e0.Add(-11*time.Second))
}

// TestDecideUpstreamCases ports the cases of upstream's TestControllerSync
// and TestController_canDeleteCIDR (servicecidrs_controller_test.go).
func TestDecideUpstreamCases(t *testing.T) {
	removed := want{action: ActionRemoveFinalizer, cond: condTerminating}
	blocked := func(a ...string) want { return want{action: ActionBlock, cond: condBlocked, blocking: addrs(a...)} }
	tests := []decideCase{
		{name: "empty", cidr: upstreamDeleted(), want: removed},
		{name: "no IPs", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{sc("unrelated", "10.0.0.0/24")}, want: removed},
		{name: "IPv4 address in range", cidr: upstreamDeleted(),
			ips: []*networkingv1.IPAddress{ip("192.168.0.24")}, want: blocked("192.168.0.24")},
		{name: "IPv4 address out of range", cidr: upstreamDeleted(),
			ips: []*networkingv1.IPAddress{ip("192.168.1.24")}, want: removed},
		{name: "IPv4 subnet (network) address", cidr: upstreamDeleted(),
			ips: []*networkingv1.IPAddress{ip("192.168.0.0")}, want: removed},
		{name: "IPv4 broadcast address", cidr: upstreamDeleted(),
			ips: []*networkingv1.IPAddress{ip("192.168.0.255")}, want: removed},
		{name: "IPv6 all-ones address is contained", cidr: upstreamDeleted(),
			ips: []*networkingv1.IPAddress{ip("2001:0db2::ffff:ffff:ffff:ffff")}, want: blocked("2001:db2::ffff:ffff:ffff:ffff")},
		{name: "IPv6 subnet (network) address", cidr: upstreamDeleted(),
			ips: []*networkingv1.IPAddress{ip("2001:db2::")}, want: removed},
		{name: "IPv6 address in range", cidr: upstreamDeleted(),
			ips: []*networkingv1.IPAddress{ip("2001:db2::1")}, want: blocked("2001:db2::1")},
		{name: "parent: same range in both families", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{sc("overlapping", "192.168.0.0/24", "2001:db2::/64")},
			ips:    []*networkingv1.IPAddress{ip("192.168.0.1"), ip("2001:db2::1")}, want: removed},
		{name: "parent: larger in both families (IPv4 address)", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{sc("overlapping", "192.168.0.0/16", "2001:db2::/64")},
			ips:    []*networkingv1.IPAddress{ip("192.168.0.1")}, want: removed},
		{name: "parent: larger in both families (IPv6 address)", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{sc("overlapping", "192.168.0.0/16", "2001:db2::/48")},
			ips:    []*networkingv1.IPAddress{ip("2001:db2::1")}, want: removed},
		{name: "IPv6 parent only, IPv4 address not covered", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{sc("overlapping", "192.168.255.0/26", "2001:db2::/64")},
			ips:    []*networkingv1.IPAddress{ip("192.168.0.1")}, want: blocked("192.168.0.1")},
		{name: "IPv4 parent only, IPv6 address not covered", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{sc("overlapping", "192.168.255.0/26", "2001:db2:a:b::/64")},
			ips:    []*networkingv1.IPAddress{ip("2001:db2::1")}, want: blocked("2001:db2::1")},
		{name: "smaller overlapping child contains the address: rescued", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{sc("overlapping", "192.168.0.0/26", "2001:db2::/64")},
			ips:    []*networkingv1.IPAddress{ip("192.168.0.23")}, want: removed},
		{name: "smaller overlapping child does not contain the address: orphan", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{sc("overlapping", "192.168.0.0/28", "2001:db2::/64")},
			ips:    []*networkingv1.IPAddress{ip("192.168.0.23")}, want: blocked("192.168.0.23")},
		{name: "child's network address is not covered by the child", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{sc("child", "192.168.0.64/26")},
			ips:    []*networkingv1.IPAddress{ip("192.168.0.64"), ip("192.168.0.70")}, want: blocked("192.168.0.64")},
		{name: "child's IPv4 broadcast address is not covered by the child", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{sc("child", "192.168.0.0/26")},
			ips:    []*networkingv1.IPAddress{ip("192.168.0.63"), ip("192.168.0.62")}, want: blocked("192.168.0.63")},
		{name: "child's IPv6 all-ones address is covered by the child", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{sc("child", "2001:db2::/96")},
			ips:    []*networkingv1.IPAddress{ip("2001:db2::ffff:ffff")}, want: removed},
		{name: "unmanaged IPAddresses are ignored", cidr: upstreamDeleted(),
			ips: []*networkingv1.IPAddress{unmanaged("192.168.0.24"), unmanaged("2001:db2::1")}, want: removed},
		{name: "IPAddress without labels is ignored", cidr: upstreamDeleted(),
			ips: []*networkingv1.IPAddress{{ObjectMeta: metav1.ObjectMeta{Name: "192.168.0.24"}}}, want: removed},
		{name: "IPAddress whose name does not parse is ignored", cidr: upstreamDeleted(),
			ips: []*networkingv1.IPAddress{ip("192.168.0.x"), ip("not-an-ip")}, want: removed},
		{name: "non-canonical IPv6 names of one address are reported once", cidr: upstreamDeleted(),
			ips:  []*networkingv1.IPAddress{ip("2001:db2::0001"), ip("2001:db2::1"), ip("192.168.0.9"), ip("192.168.0.3")},
			want: blocked("192.168.0.3", "192.168.0.9", "2001:db2::1")},
		{name: "nil entries are skipped", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{nil},
			ips:    []*networkingv1.IPAddress{nil, ip("192.168.0.5")}, want: blocked("192.168.0.5")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runDecide(t, tc) })
	}
}

// TestDecideCoverageRules covers the parent and IP rules beyond the upstream
// cases: deleting objects never cover, dual-stack needs both families,
// address families never mix.
func TestDecideCoverageRules(t *testing.T) {
	removed := want{action: ActionRemoveFinalizer, cond: condTerminating}
	blocked := func(a ...string) want { return want{action: ActionBlock, cond: condBlocked, blocking: addrs(a...)} }
	old := e0.Add(-time.Minute)
	tests := []decideCase{
		{name: "a deleting parent does not cover", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{deleting(sc("parent", "192.168.0.0/16", "2001:db2::/48"), old)},
			ips:    []*networkingv1.IPAddress{ip("192.168.0.7")}, want: blocked("192.168.0.7")},
		{name: "a deleting child does not rescue", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{deleting(sc("child", "192.168.0.0/26"), old)},
			ips:    []*networkingv1.IPAddress{ip("192.168.0.7")}, want: blocked("192.168.0.7")},
		{name: "a deleting object without finalizer does not cover either", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{deleting(bare(sc("twin", "192.168.0.0/24")), old)},
			ips:    []*networkingv1.IPAddress{ip("192.168.0.7")}, want: blocked("192.168.0.7")},
		{name: "parents from two objects, one per family", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{sc("v4", "192.168.0.0/23"), sc("v6", "2001:db2::/60")},
			ips:    []*networkingv1.IPAddress{ip("192.168.0.7"), ip("2001:db2::7")}, want: removed},
		{name: "dual-stack: an IPv6 address needs IPv6 coverage", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{sc("v4", "192.168.0.0/23")},
			ips:    []*networkingv1.IPAddress{ip("192.168.0.7"), ip("2001:db2::7")}, want: blocked("2001:db2::7")},
		{name: "several children cover all but the gaps", cidr: deleting(ready(sc("a", "10.0.0.0/24")), old),
			others: []*networkingv1.ServiceCIDR{sc("c1", "10.0.0.0/26"), sc("c2", "10.0.0.64/26"), sc("c3", "10.0.0.192/26")},
			ips: []*networkingv1.IPAddress{ip("10.0.0.1"), ip("10.0.0.63"), ip("10.0.0.64"), ip("10.0.0.100"),
				ip("10.0.0.128"), ip("10.0.0.150"), ip("10.0.0.191"), ip("10.0.0.193"), ip("10.0.0.254")},
			want: blocked("10.0.0.63", "10.0.0.64", "10.0.0.128", "10.0.0.150", "10.0.0.191")},
		{name: "overlapping children in any order", cidr: deleting(ready(sc("a", "10.0.0.0/16")), old),
			others: []*networkingv1.ServiceCIDR{sc("c2", "10.0.0.0/20"), sc("c1", "10.0.0.0/17"), sc("c3", "10.0.4.0/24"), sc("far", "10.1.0.0/24")},
			ips:    []*networkingv1.IPAddress{ip("10.0.4.0"), ip("10.0.127.255"), ip("10.0.128.0"), ip("10.0.200.1")},
			want:   blocked("10.0.127.255", "10.0.128.0", "10.0.200.1")},
		{name: "IPv4-mapped IPv6 address is not in an IPv4 prefix", cidr: upstreamDeleted(),
			ips: []*networkingv1.IPAddress{ip("::ffff:192.168.0.5")}, want: removed},
		{name: "IPv4-mapped IPv6 address is in an IPv4-mapped IPv6 prefix",
			cidr: deleting(ready(sc("mapped", "::ffff:192.168.0.0/120")), old),
			ips:  []*networkingv1.IPAddress{ip("::ffff:192.168.0.5"), ip("192.168.0.6"), ip("::ffff:192.168.0.255")},
			want: blocked("::ffff:192.168.0.5", "::ffff:192.168.0.255")},
		{name: "an IPv4 parent does not cover an IPv4-mapped IPv6 prefix",
			cidr:   deleting(ready(sc("mapped", "::ffff:192.168.0.0/120")), old),
			others: []*networkingv1.ServiceCIDR{sc("v4", "192.168.0.0/16")},
			ips:    []*networkingv1.IPAddress{ip("::ffff:192.168.0.5")},
			want:   blocked("::ffff:192.168.0.5")},
		{name: "address with a zone is ignored", cidr: upstreamDeleted(),
			ips: []*networkingv1.IPAddress{ip("2001:db2::5%eth0")}, want: removed},
		{name: "non-canonical prefix is masked", cidr: deleting(ready(sc("a", "10.0.0.77/24")), old),
			ips: []*networkingv1.IPAddress{ip("10.0.0.0"), ip("10.0.0.5")}, want: blocked("10.0.0.5")},
		{name: "a malformed CIDR of another object is skipped, its valid one covers", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{sc("half", "garbage", "192.168.0.0/16")},
			ips:    []*networkingv1.IPAddress{ip("192.168.0.5")}, want: removed},
		{name: "the object itself in all does not cover (by name)", cidr: upstreamDeleted(),
			others: []*networkingv1.ServiceCIDR{sc("kubernetes", "192.168.0.0/16")},
			ips:    []*networkingv1.IPAddress{ip("192.168.0.5")}, want: blocked("192.168.0.5"), pureOnly: true},
		{name: "IPv4 /31 and /32 contain nothing", cidr: deleting(ready(sc("tiny", "10.0.0.0/31", "10.0.1.1/32")), old),
			ips: []*networkingv1.IPAddress{ip("10.0.0.0"), ip("10.0.0.1"), ip("10.0.1.1")}, want: removed},
		{name: "IPv6 /127 contains its all-ones address only", cidr: deleting(ready(sc("tiny", "2001:db2::/127")), old),
			ips: []*networkingv1.IPAddress{ip("2001:db2::"), ip("2001:db2::1")}, want: blocked("2001:db2::1")},
		{name: "the whole IPv4 space", cidr: deleting(ready(sc("all", "0.0.0.0/0")), old),
			ips:  []*networkingv1.IPAddress{ip("0.0.0.0"), ip("0.0.0.1"), ip("255.255.255.254"), ip("255.255.255.255")},
			want: blocked("0.0.0.1", "255.255.255.254")},
		{name: "the whole IPv6 space, with a child at the top", cidr: deleting(ready(sc("all", "::/0")), old),
			others: []*networkingv1.ServiceCIDR{sc("top", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00/120")},
			ips:    []*networkingv1.IPAddress{ip("::"), ip("::1"), ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00")},
			want:   blocked("::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runDecide(t, tc) })
	}
}

func TestDecideConditionFields(t *testing.T) {
	since := e0.Add(-time.Hour)
	c := withReady(sc("a", "10.0.0.0/24"), metav1.ConditionTrue, "", "old words", since)
	c.Generation = 7
	now := testutil.At(5 * time.Second)
	d, err := Decide(now, c, nil, nil, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	want := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 7,
		LastTransitionTime: metav1.NewTime(since), Message: MessageReady}
	if d.Condition == nil || !equality.Semantic.DeepEqual(*d.Condition, want) {
		t.Errorf("Decide(5s, a).Condition = %+v, want %+v (same status keeps its transition time)", d.Condition, want)
	}
	deleting(c, now)
	d, err = Decide(now, c, nil, nil, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	want = metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: 7,
		LastTransitionTime: metav1.NewTime(now), Reason: ReasonTerminating, Message: MessageTerminating}
	if d.Condition == nil || !equality.Semantic.DeepEqual(*d.Condition, want) {
		t.Errorf("Decide(5s, a deleting).Condition = %+v, want %+v (a new status transitions now)", d.Condition, want)
	}
}

func TestDecideErrors(t *testing.T) {
	good := sc("a", "10.0.0.0/24")
	tests := []struct {
		name string
		cidr *networkingv1.ServiceCIDR
		cfg  Config
		want error
	}{
		{"nil ServiceCIDR", nil, DefaultConfig(), ErrNilObject},
		{"garbage CIDR", sc("a", "garbage"), DefaultConfig(), ErrInvalidCIDR},
		{"prefix too long", sc("a", "10.0.0.0/33"), DefaultConfig(), ErrInvalidCIDR},
		{"one good one bad", sc("a", "10.0.0.0/24", "2001:db8::/129"), DefaultConfig(), ErrInvalidCIDR},
		{"address, not prefix", sc("a", "10.0.0.1"), DefaultConfig(), ErrInvalidCIDR},
		{"empty string", sc("a", ""), DefaultConfig(), ErrInvalidCIDR},
		{"malformed even when deleting", deleting(sc("a", "10.0.0.0/24", "x"), e0), DefaultConfig(), ErrInvalidCIDR},
		{"negative grace", good, Config{GracePeriod: -time.Second}, ErrInvalidConfig},
		{"negative recheck", good, Config{RecheckInterval: -time.Second}, ErrInvalidConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decide(e0, tc.cidr, nil, nil, tc.cfg)
			if !errors.Is(err, tc.want) {
				t.Errorf("Decide(%s) error = %v, want %v", tc.name, err, tc.want)
			}
		})
	}
}

func TestDecideObserved(t *testing.T) {
	// The deletionTimestamp says 1h in the future; the caller first saw the
	// deletion at +0s. The wait ends at +10s, not at 1h+10s.
	c := deleting(ready(sc("a", "10.0.0.0/24")), e0.Add(time.Hour))
	tests := []struct {
		at   time.Duration
		want want
	}{
		{0, want{action: ActionWait, requeue: 10 * time.Second, cond: condTerminating}},
		{3 * time.Second, want{action: ActionWait, requeue: 7 * time.Second, cond: condTerminating}},
		{10 * time.Second, want{action: ActionRemoveFinalizer, cond: condTerminating}},
		{-5 * time.Second, want{action: ActionWait, requeue: 10 * time.Second, cond: condTerminating}}, // clock went back
	}
	for _, tc := range tests {
		d, err := DecideObserved(testutil.At(tc.at), e0, c, nil, nil, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		if got := shape(d); !sameShape(got, tc.want) {
			t.Errorf("DecideObserved(%v, observed 0s) = %v, want %v", tc.at, got, tc.want)
		}
	}
	// A normal past timestamp wins over a later observation.
	c = deleting(ready(sc("a", "10.0.0.0/24")), e0)
	d, err := DecideObserved(testutil.At(8*time.Second), testutil.At(7*time.Second), c, nil, nil, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != ActionWait || d.RequeueAfter != 2*time.Second {
		t.Errorf("DecideObserved(8s, observed 7s) = %v, want wait 2s", shape(d))
	}
}

func TestActionString(t *testing.T) {
	tests := []struct {
		a    Action
		want string
	}{
		{0, "Action(0)"},
		{ActionNone, "none"},
		{ActionAddFinalizer, "add-finalizer"},
		{ActionWait, "wait"},
		{ActionBlock, "block"},
		{ActionRemoveFinalizer, "remove-finalizer"},
		{99, "Action(99)"},
	}
	for _, tc := range tests {
		if got := tc.a.String(); got != tc.want {
			t.Errorf("Action(%d).String() = %q, want %q", uint8(tc.a), got, tc.want)
		}
	}
}

func TestDefaultConfig(t *testing.T) {
	if got, want := DefaultConfig(), (Config{GracePeriod: 10 * time.Second}); got != want {
		t.Errorf("DefaultConfig() = %+v, want %+v", got, want)
	}
	if _, err := NewIndex(Config{}); err != nil {
		t.Errorf("NewIndex(zero Config) error %v, want nil", err)
	}
	if _, err := NewIndex(Config{GracePeriod: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewIndex(negative grace) error %v, want ErrInvalidConfig", err)
	}
}
