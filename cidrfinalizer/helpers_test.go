package cidrfinalizer

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// sc returns a ServiceCIDR that carries our finalizer (the usual state of a
// ServiceCIDR the controller has seen).
func sc(name string, cidrs ...string) *networkingv1.ServiceCIDR {
	c := testutil.ServiceCIDR(name, cidrs...)
	c.Finalizers = []string{"example.com/other", Finalizer}
	return c
}

// deleting marks c as deleted at t and returns it.
func deleting(c *networkingv1.ServiceCIDR, t time.Time) *networkingv1.ServiceCIDR {
	c.DeletionTimestamp = testutil.MetaTime(t)
	return c
}

// bare removes every finalizer from c and returns it.
func bare(c *networkingv1.ServiceCIDR) *networkingv1.ServiceCIDR {
	c.Finalizers = nil
	return c
}

// withReady stores a Ready condition on c and returns it.
func withReady(c *networkingv1.ServiceCIDR, s metav1.ConditionStatus, reason, msg string, since time.Time) *networkingv1.ServiceCIDR {
	c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{
		Type: ConditionReady, Status: s, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(since),
	})
	return c
}

func ready(c *networkingv1.ServiceCIDR) *networkingv1.ServiceCIDR {
	return withReady(c, metav1.ConditionTrue, "", MessageReady, testutil.Epoch.Add(-time.Hour))
}

func withUID(c *networkingv1.ServiceCIDR, uid string) *networkingv1.ServiceCIDR {
	c.UID = types.UID(uid)
	return c
}

func ip(a string) *networkingv1.IPAddress { return testutil.IPAddress(a) }

func unmanaged(a string) *networkingv1.IPAddress {
	x := testutil.IPAddress(a)
	x.Labels[networkingv1.LabelManagedBy] = "example.com/other-allocator"
	return x
}

func addrs(ss ...string) []netip.Addr {
	if len(ss) == 0 {
		return nil
	}
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// want is the expected shape of a Decision: the condition is given as
// "Status/Reason/Message" ("" for nil).
type want struct {
	action   Action
	requeue  time.Duration
	cond     string
	blocking []netip.Addr
}

func condString(c *metav1.Condition) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf("%s/%s/%s", c.Status, c.Reason, c.Message)
}

const (
	condReady       = "True//" + MessageReady
	condBlocked     = "False/" + ReasonTerminating + "/" + MessageBlocked
	condTerminating = "False/" + ReasonTerminating + "/" + MessageTerminating
)

func (w want) String() string {
	return fmt.Sprintf("{%v requeue=%v cond=%q blocking=%v}", w.action, w.requeue, w.cond, w.blocking)
}

func shape(d Decision) want {
	return want{action: d.Action, requeue: d.RequeueAfter, cond: condString(d.Condition), blocking: d.Blocking}
}

func sameShape(a, b want) bool {
	if a.action != b.action || a.requeue != b.requeue || a.cond != b.cond || len(a.blocking) != len(b.blocking) {
		return false
	}
	for i := range a.blocking {
		if a.blocking[i] != b.blocking[i] {
			return false
		}
	}
	return true
}

// newIndexWith returns an Index fed with every object.
func newIndexWith(t testing.TB, cfg Config, all []*networkingv1.ServiceCIDR, ips []*networkingv1.IPAddress) *Index {
	t.Helper()
	x, err := NewIndex(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if c != nil {
			_ = x.SetServiceCIDR(c) // malformed ones are stored and reported by Decide
		}
	}
	for _, a := range ips {
		if a != nil {
			if err := x.SetIPAddress(a); err != nil {
				t.Fatal(err)
			}
		}
	}
	return x
}

func names(cs []*networkingv1.ServiceCIDR) string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteByte(',')
		}
		if c == nil {
			b.WriteString("<nil>")
			continue
		}
		b.WriteString(c.Name)
	}
	return b.String()
}
