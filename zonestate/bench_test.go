package zonestate

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// BenchmarkCompute classifies one zone; allocs/op must be 0.
func BenchmarkCompute(b *testing.B) {
	for _, nodes := range []int{500, 5000, 50000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			zone := zoneOf(nodes*2/5, nodes-nodes*2/5) // 60% not ready: PartialDisruption
			b.ReportAllocs()
			for b.Loop() {
				Compute(zone, 0.55)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nodes), "ns/node")
		})
	}
}

// benchZones builds zones of perZone nodes; in zone i, i*10% are not ready.
func benchZones(zones, perZone int) map[string][]*v1.NodeCondition {
	m := make(map[string][]*v1.NodeCondition, zones)
	for i := range zones {
		notReady := perZone * (i % 10) / 10
		m[fmt.Sprintf("region:\x00:zone-%03d", i)] = zoneOf(perZone-notReady, notReady)
	}
	return m
}

// BenchmarkUpdate measures one monitor pass's Update. steady repeats the
// same input (no state changes); churn alternates between every zone dark
// and the original input, so every Update enters or exits full disruption
// and changes every zone's state and rate. Target: <= 100 µs for
// 3 zones x 5,000 nodes.
func BenchmarkUpdate(b *testing.B) {
	for _, sz := range []struct{ zones, perZone int }{{1, 5000}, {3, 5000}, {100, 50}} {
		healthy := benchZones(sz.zones, sz.perZone)
		dark := make(map[string][]*v1.NodeCondition, len(healthy))
		for k := range healthy {
			dark[k] = zoneOf(0, sz.perZone)
		}
		name := fmt.Sprintf("zones=%d,nodesPerZone=%d", sz.zones, sz.perZone)
		nodes := float64(sz.zones * sz.perZone)
		b.Run(name+"/steady", func(b *testing.B) {
			tr, _ := NewTracker(DefaultPolicy())
			tr.Update(healthy)
			b.ReportAllocs()
			for b.Loop() {
				tr.Update(healthy)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/nodes, "ns/node")
		})
		b.Run(name+"/churn", func(b *testing.B) {
			tr, _ := NewTracker(DefaultPolicy())
			inputs := [2]map[string][]*v1.NodeCondition{dark, healthy}
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				d := tr.Update(inputs[i&1])
				if !d.EnteredFullDisruption && !d.ExitedFullDisruption {
					b.Fatal("churn input did not change the mode")
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/nodes, "ns/node")
		})
	}
}

// BenchmarkQueues measures the per-pass cost of keeping the zone queues in
// step: Apply of a steady decision, then NextDeadline over every zone.
func BenchmarkQueues(b *testing.B) {
	for _, zones := range []int{3, 100} {
		b.Run(fmt.Sprintf("zones=%d", zones), func(b *testing.B) {
			tr, _ := NewTracker(DefaultPolicy())
			in := benchZones(zones, 50)
			d := tr.Update(in)
			s, _ := NewQueues(func(now time.Time, zone string, qps float64) (*fakeQueue, error) {
				return &fakeQueue{zone: zone, qps: qps, items: 1, due: now}, nil
			})
			if err := s.Apply(epoch, d); err != nil {
				b.Fatal(err)
			}
			d = tr.Update(in) // steady: nothing changes
			b.ReportAllocs()
			for b.Loop() {
				_ = s.Apply(epoch, d)
				s.NextDeadline()
			}
		})
	}
}
