package incident

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkReplay measures both passes over a synthetic log: nodes
// renewing every 10s for 30 minutes, 10 pods each, one node lost at +5m.
func BenchmarkReplay(b *testing.B) {
	for _, nodes := range []int{100, 1000} {
		g := &gen{nodes: nodes, podsPerNode: 10, duration: 30 * time.Minute, stop: "n1", stopAt: 5 * time.Minute,
			unknownAt: 6 * time.Minute, noExecAt: 6 * time.Minute, evictAt: 11 * time.Minute}
		evs := g.build()
		b.Run(fmt.Sprintf("nodes=%d/events=%d", nodes, len(evs)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h, err := Inventory(SliceSource(evs), Options{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Replay(context.Background(), h, SliceSource(evs), ReplayOptions{Policy: DefaultPolicy()}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
