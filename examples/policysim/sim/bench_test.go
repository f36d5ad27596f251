package sim

import (
	"context"
	"testing"
)

// BenchmarkRun runs embedded scenarios end to end: building the cluster,
// the initial informer sync, and every pass of the virtual hour. The
// large-cluster case is the scale target: 5,000 nodes and 150,000 pods over
// one simulated hour (README.md has the figures).
func BenchmarkRun(b *testing.B) {
	for _, bc := range []struct {
		name, scenario string
		evicted        int // the run's result, checked
	}{
		{"nodes=10/pods=110/7m", "offline-node-1.2x", 10},
		{"nodes=300/pods=3000/20m", "zone-partial", 80},
		// zone-e: 205 nodes tainted at 0.1/s until it comes back at 40m,
		// 175 of them 300s before that; zone-d: 27 nodes at 0.01/s; zone-a:
		// 3 nodes. 30 pods each.
		{"nodes=5000/pods=150000/1h", "large-cluster", (175 + 27 + 3) * 30},
		// The device taint eviction controller beside the Monitor: 400 of
		// 4,000 GPUs tainted, 500 pods evicted for it.
		{"nodes=500/gpus=4000/pods=10000/8m", "xid-storm", 500},
	} {
		b.Run(bc.name, func(b *testing.B) {
			sc, err := LoadEmbedded(bc.scenario)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var res *Result
			for b.Loop() {
				if res, err = RunOptions(context.Background(), sc, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			if res.Summary.PodsEvicted != bc.evicted {
				b.Errorf("%s: %d pods evicted, want %d", bc.scenario, res.Summary.PodsEvicted, bc.evicted)
			}
			b.ReportMetric(float64(res.Summary.PodsEvicted), "evictions/op")
			b.ReportMetric(float64(len(res.Entries)), "events/op")
			b.ReportMetric(sc.Duration.D().Seconds()*float64(b.N)/b.Elapsed().Seconds(), "simsec/s")
		})
	}
}
