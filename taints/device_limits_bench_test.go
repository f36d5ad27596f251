package taints

import (
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// limitsOn is the blast-radius limit the benchmarks run with: a breaker
// at 50% and a rate whose burst covers one pool's 10,000 evictions.
func limitsOn() DeviceEvictorConfig {
	cfg := DefaultDeviceEvictorConfig()
	cfg.BlastRadius = DeviceBlastRadius{QPS: 1000, Burst: 10000, MaxShare: 0.5, MinDevices: 10}
	cfg.KeepWarnings = 256
	return cfg
}

func newBenchDeviceCfg(tb testing.TB, c *deviceCluster, cfg DeviceEvictorConfig) *DeviceEvictor {
	tb.Helper()
	d, err := NewDeviceEvictor(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	c.load(tb, d, testutil.Epoch)
	return d
}

// TestDeviceSteadyAllocsLimits pins the steady state at zero allocations
// with the blast-radius limit and the warnings on, in five states: no
// taint; a pool tainted and held by the breaker; a pool's evictions
// waiting for their driver's rate; and, two pools tainted and one rolled
// back, held with the share between ResumeShare and MaxShare, or at
// ResumeShare and waiting ResumeAfter to resume.
func TestDeviceSteadyAllocsLimits(t *testing.T) {
	c := newDeviceCluster(1000, 100, 5000, 10000)
	now := testutil.At(time.Minute)
	for _, state := range []struct {
		name     string
		cfg      func(*DeviceEvictorConfig)
		rollBack bool   // pool 1 tainted too, then rolled back
		want     string // Explain of pod-2 (pod-0 may take the one token)
	}{
		{"untainted", nil, false, "NotTainted"},
		{"held", func(c *DeviceEvictorConfig) { c.BlastRadius.MaxShare = 0.05 }, false, "Held"},
		{"throttled", func(c *DeviceEvictorConfig) { c.BlastRadius.QPS, c.BlastRadius.Burst = 0.001, 1 }, false, "Throttled"},
		{"held below MaxShare", func(c *DeviceEvictorConfig) { c.BlastRadius.MaxShare, c.BlastRadius.MinDevices = 0.15, 0 }, true, "Held"},
		{"waiting to resume", func(c *DeviceEvictorConfig) {
			c.BlastRadius.MaxShare, c.BlastRadius.ResumeShare, c.BlastRadius.ResumeAfter = 0.15, 0.1, time.Hour
		}, true, "Held"},
	} {
		cfg := limitsOn()
		if state.cfg != nil {
			state.cfg(&cfg)
		}
		d := newBenchDeviceCfg(t, c, cfg)
		if state.name != "untainted" {
			pools := []int{0}
			if state.rollBack {
				pools = append(pools, 1)
			}
			for _, p := range pools {
				for _, s := range c.tainted(p, now) {
					if err := d.SetSlice(now, s); err != nil {
						t.Fatal(err)
					}
				}
			}
			d.Due(now) // the pass that trips
			if state.rollBack {
				for _, s := range c.slices[1] {
					if err := d.SetSlice(now, s); err != nil {
						t.Fatal(err)
					}
				}
			}
			d.Due(now)
		}
		if got := d.Explain(now, podKey(uPod{Pod: c.pods[2]})).State.String(); got != state.want {
			t.Fatalf("%s: pod-2 is %s, want %s", state.name, got, state.want)
		}
		if state.rollBack {
			l := d.DriverLimits(nil)[0]
			if l.State != DeviceHoldHolding || l.TaintedDevices != 100 || l.ResumeAt.IsZero() != (cfg.BlastRadius.ResumeAfter == 0) {
				t.Fatalf("%s: DriverLimits = %+v, want Holding with 100 tainted, waiting to resume if ResumeAfter", state.name, l)
			}
		}
		i := 0
		var holds []DeviceDriverLimit
		var warns []DeviceWarning
		for name, f := range map[string]func(){
			"SetPod":   func() { _ = d.SetPod(now, c.pods[i%len(c.pods)]) },
			"SetClaim": func() { _ = d.SetClaim(now, c.claims[i%len(c.claims)]) },
			"SetSlice": func() { _ = d.SetSlice(now, c.slices[1+i%(len(c.slices)-1)][0]) },
			"Due":      func() { _ = d.Due(now) },
			"NextDeadline+RuleStatuses+AppendCancelled+AppendHoldChanges+AppendWarnings": func() {
				d.NextDeadline()
				d.RuleStatuses(now)
				d.AppendCancelled(nil)
				holds = d.AppendHoldChanges(holds[:0])
				warns = d.AppendWarnings(warns[:0])
			},
		} {
			if a := testing.AllocsPerRun(1000, func() { f(); i++ }); a != 0 {
				t.Errorf("%s: %s: %v allocations, want 0", state.name, name, a)
			}
		}
	}
}

// BenchmarkDeviceSteadyLimits is BenchmarkDeviceSteady with the
// blast-radius limit and the warnings on.
func BenchmarkDeviceSteadyLimits(b *testing.B) {
	c := newDeviceCluster(10000, 1000, 50000, 100000)
	d := newBenchDeviceCfg(b, c, limitsOn())
	now := testutil.At(time.Minute)
	b.Run("SetPod", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_ = d.SetPod(now, c.pods[i%len(c.pods)])
			i++
		}
	})
	b.Run("SetClaim", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			_ = d.SetClaim(now, c.claims[i%len(c.claims)])
			i++
		}
	})
	b.Run("SetSlice", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			ss := c.slices[i%len(c.slices)]
			_ = d.SetSlice(now, ss[(i/len(c.slices))%len(ss)])
			i++
		}
	})
}

// BenchmarkDeviceTaintPoolLimits is BenchmarkDeviceTaintPool with the
// blast-radius limit on, at 10,000 devices, 50,000 claims and 100,000
// pods. "counted": the pool is 10% of the driver, under the breaker's
// 50%, and the rate's burst covers its 10,000 evictions: the cost of
// counting and of a token per eviction. "held": a breaker at 5% holds the
// same taint: nothing is handed out, and every claim of the driver is
// re-evaluated when the hold starts. The reset (Retry of each eviction,
// untainting) is not timed; each round is an hour later, so the bucket is
// full again.
func BenchmarkDeviceTaintPoolLimits(b *testing.B) {
	for _, tt := range []struct {
		name     string
		maxShare float64
		want     int
	}{{"counted", 0.5, 10000}, {"held", 0.05, 0}} {
		b.Run(tt.name, func(b *testing.B) {
			c := newDeviceCluster(10000, 1000, 50000, 100000)
			cfg := limitsOn()
			cfg.BlastRadius.MaxShare = tt.maxShare
			d := newBenchDeviceCfg(b, c, cfg)
			start := testutil.At(time.Minute)
			tainted := c.tainted(0, start)
			now := start
			evicted := 0
			var cpu time.Duration
			b.ReportAllocs()
			for b.Loop() {
				c0 := cpuTime()
				for _, s := range tainted {
					if err := d.SetSlice(now, s); err != nil {
						b.Fatal(err)
					}
				}
				xs := d.Due(now)
				evicted = len(xs)
				cpu += cpuTime() - c0
				b.StopTimer()
				for _, x := range xs {
					d.Retry(now, x, time.Hour)
				}
				for _, s := range c.slices[0] {
					_ = d.SetSlice(now, s)
				}
				d.AppendCancelled(nil)
				d.AppendHoldChanges(nil)
				d.AppendWarnings(nil)
				now = now.Add(time.Hour)
				b.StartTimer()
			}
			if evicted != tt.want {
				b.Fatalf("Due handed out %d evictions, want %d", evicted, tt.want)
			}
			b.ReportMetric(float64(evicted), "evictions/op")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
