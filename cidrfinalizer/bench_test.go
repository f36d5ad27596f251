package cidrfinalizer

import (
	"fmt"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// benchCluster is 50 ServiceCIDRs and n managed IPAddresses:
//   - "target" 10.0.0.0/16 is being deleted and covered by two live children
//     (10.0.0.0/17, 10.0.128.0/17): nothing blocks, the grace period runs;
//   - "dup" is being deleted under a live ServiceCIDR of the same range;
//   - "orphan" is being deleted and holds addresses no one else covers;
//   - "svc-i" (i = 1..45) are live 10.i.0.0/16, dual-stack fd00:i::/112;
//   - the addresses are spread evenly over 10.0.0.0/16 .. 10.46.0.0/16.
type benchCluster struct {
	cidrs []*networkingv1.ServiceCIDR
	ips   []*networkingv1.IPAddress
	byNam map[string]*networkingv1.ServiceCIDR
}

var benchNow = e0.Add(3 * time.Second)

func newBenchCluster(n int) *benchCluster {
	terminating := func(c *networkingv1.ServiceCIDR) *networkingv1.ServiceCIDR {
		return deleting(withReady(c, metav1.ConditionFalse, ReasonTerminating, MessageTerminating, e0), e0)
	}
	bc := &benchCluster{byNam: map[string]*networkingv1.ServiceCIDR{}}
	add := func(c *networkingv1.ServiceCIDR) { bc.cidrs = append(bc.cidrs, c); bc.byNam[c.Name] = c }
	add(terminating(sc("target", "10.0.0.0/16")))
	add(ready(sc("half-a", "10.0.0.0/17")))
	add(ready(sc("half-b", "10.0.128.0/17")))
	add(terminating(sc("dup", "10.7.0.0/16")))
	add(withReady(deleting(sc("orphan", "10.46.0.0/16"), e0), metav1.ConditionFalse, ReasonTerminating, MessageBlocked, e0))
	for i := 1; i <= 45; i++ {
		add(ready(sc(fmt.Sprintf("svc-%d", i), fmt.Sprintf("10.%d.0.0/16", i), fmt.Sprintf("fd00:%x::/112", i))))
	}
	per := n / 47
	for net := 0; net <= 46; net++ {
		for j := range per {
			bc.ips = append(bc.ips, ip(fmt.Sprintf("10.%d.%d.%d", net, 1+j/250, 1+j%250)))
		}
	}
	for len(bc.ips) < n {
		bc.ips = append(bc.ips, ip(fmt.Sprintf("fd00:1::%x", len(bc.ips))))
	}
	return bc
}

var benchSizes = []int{1000, 100000}

// BenchmarkIndexDecide: one decision over 50 ServiceCIDRs and n IPAddresses.
// Target: <= 10µs and 0 allocs when nothing blocks.
func BenchmarkIndexDecide(b *testing.B) {
	for _, n := range benchSizes {
		bc := newBenchCluster(n)
		x := newIndexWith(b, DefaultConfig(), bc.cidrs, bc.ips)
		for _, sub := range []struct{ label, name string }{
			{"live", "svc-5"},
			{"deleting-covered-by-children", "target"},
			{"deleting-under-parent", "dup"},
			{"blocked", "orphan"},
		} {
			b.Run(fmt.Sprintf("ips=%d,cidrs=%d/%s", n, len(bc.cidrs), sub.label), func(b *testing.B) {
				b.ReportAllocs()
				var d Decision
				for b.Loop() {
					d, _ = x.Decide(benchNow, sub.name)
				}
				b.ReportMetric(float64(len(d.Blocking)), "blocking")
			})
		}
	}
}

// BenchmarkDecide is the pure scan over the same objects, for comparison.
func BenchmarkDecide(b *testing.B) {
	for _, n := range benchSizes {
		bc := newBenchCluster(n)
		for _, sub := range []struct{ label, name string }{
			{"live", "svc-5"},
			{"deleting-covered-by-children", "target"},
			{"deleting-under-parent", "dup"},
			{"blocked", "orphan"},
		} {
			b.Run(fmt.Sprintf("ips=%d,cidrs=%d/%s", n, len(bc.cidrs), sub.label), func(b *testing.B) {
				b.ReportAllocs()
				c := bc.byNam[sub.name]
				var d Decision
				for b.Loop() {
					d, _ = DecideObserved(benchNow, e0, c, bc.cidrs, bc.ips, DefaultConfig())
				}
				b.ReportMetric(float64(len(d.Blocking)), "blocking")
			})
		}
	}
}

// BenchmarkIndexSetIPAddress: feeding the Index from the IPAddress informer.
// Target: SetIPAddress <= 2µs.
func BenchmarkIndexSetIPAddress(b *testing.B) {
	for _, n := range benchSizes {
		bc := newBenchCluster(n)
		x := newIndexWith(b, DefaultConfig(), bc.cidrs, bc.ips)
		const poolSize = 10000
		pool := make([]*networkingv1.IPAddress, poolSize)
		for i := range pool {
			pool[i] = ip(fmt.Sprintf("10.%d.%d.%d", 100+i%50, i/250%250, 1+i%250))
		}
		b.Run(fmt.Sprintf("ips=%d/new", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = x.SetIPAddress(pool[i])
				if i++; i == poolSize {
					b.StopTimer()
					for _, a := range pool {
						x.DeleteIPAddress(a.Name)
					}
					i = 0
					b.StartTimer()
				}
			}
			b.StopTimer()
			for _, a := range pool {
				x.DeleteIPAddress(a.Name)
			}
		})
		b.Run(fmt.Sprintf("ips=%d/churn-set+delete", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = x.SetIPAddress(pool[i])
				x.DeleteIPAddress(pool[i].Name)
				i = (i + 1) % poolSize
			}
		})
		b.Run(fmt.Sprintf("ips=%d/unchanged", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = x.SetIPAddress(bc.ips[i])
				i = (i + 1) % len(bc.ips)
			}
		})
	}
}

// BenchmarkIndexSetServiceCIDR: feeding the Index from the ServiceCIDR
// informer (an update of a known object).
func BenchmarkIndexSetServiceCIDR(b *testing.B) {
	bc := newBenchCluster(1000)
	x := newIndexWith(b, DefaultConfig(), bc.cidrs, bc.ips)
	c := bc.byNam["svc-5"]
	b.ReportAllocs()
	for b.Loop() {
		_ = x.SetServiceCIDR(c)
	}
}
