package taints

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
)

// deviceCluster is the benchmark cluster: pools of poolSize devices (in
// slices of 64, the API's limit for devices with taints), claims each
// allocated one device (devices shared by claims/devices claims), and
// pods/claims pods per claim, all reserved, all bound.
type deviceCluster struct {
	slices [][]*resourcev1.ResourceSlice // by pool
	claims []*resourcev1.ResourceClaim
	pods   []*v1.Pod
}

const devicesPerSlice = 64

func benchUID(kind byte, i int) types.UID {
	return types.UID(fmt.Sprintf("6f1c2a34-8b9d-4e5f-a6b%c-%012d", kind, i))
}

func newDeviceCluster(devices, poolSize, claims, pods int) *deviceCluster {
	c := &deviceCluster{}
	for p := 0; p*poolSize < devices; p++ {
		var ss []*resourcev1.ResourceSlice
		for s := 0; s*devicesPerSlice < poolSize; s++ {
			sl := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pool-%d-slice-%d", p, s)}}
			sl.Spec.Driver, sl.Spec.Pool.Name = "gpu.example.com", fmt.Sprintf("pool-%d", p)
			for d := s * devicesPerSlice; d < min((s+1)*devicesPerSlice, poolSize); d++ {
				sl.Spec.Devices = append(sl.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("dev-%d", d)})
			}
			ss = append(ss, sl)
		}
		c.slices = append(c.slices, ss)
	}
	perClaim := pods / claims
	for i := range claims {
		dev := i % devices
		cl := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%10), Name: fmt.Sprintf("claim-%d", i), UID: benchUID('c', i)}}
		cl.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
			Driver: "gpu.example.com", Pool: fmt.Sprintf("pool-%d", dev/poolSize), Device: fmt.Sprintf("dev-%d", dev%poolSize), Request: "gpu",
		}}}}
		for j := range perClaim {
			k := i*perClaim + j
			name := cl.Name
			p := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: cl.Namespace, Name: fmt.Sprintf("pod-%d", k), UID: benchUID('a', k)},
				Spec:       v1.PodSpec{NodeName: fmt.Sprintf("node-%d", k%1000), ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &name}}},
			}
			cl.Status.ReservedFor = append(cl.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
			c.pods = append(c.pods, p)
		}
		c.claims = append(c.claims, cl)
	}
	return c
}

// tainted returns pool p's slices with a NoExecute taint on every device.
func (c *deviceCluster) tainted(p int, at time.Time) []*resourcev1.ResourceSlice {
	var out []*resourcev1.ResourceSlice
	for _, s := range c.slices[p] {
		s = s.DeepCopy()
		for i := range s.Spec.Devices {
			s.Spec.Devices[i].Taints = []resourcev1.DeviceTaint{{Key: "gpu.example.com/unhealthy", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &metav1.Time{Time: at}}}
		}
		out = append(out, s)
	}
	return out
}

func (c *deviceCluster) load(tb testing.TB, d *DeviceEvictor, now time.Time) {
	tb.Helper()
	for _, ss := range c.slices {
		for _, s := range ss {
			if err := d.SetSlice(now, s); err != nil {
				tb.Fatal(err)
			}
		}
	}
	for _, cl := range c.claims {
		if err := d.SetClaim(now, cl); err != nil {
			tb.Fatal(err)
		}
	}
	for _, p := range c.pods {
		if err := d.SetPod(now, p); err != nil {
			tb.Fatal(err)
		}
	}
}

func newBenchDevice(tb testing.TB, c *deviceCluster) *DeviceEvictor {
	tb.Helper()
	d, err := NewDeviceEvictor(DefaultDeviceEvictorConfig())
	if err != nil {
		tb.Fatal(err)
	}
	c.load(tb, d, testutil.Epoch)
	return d
}

// BenchmarkDeviceSteady: the informers' resyncs and the worker's idle
// passes at 10,000 devices, 50,000 claims, 100,000 pods: unchanged slices,
// claims and pods, Due with nothing due, NextDeadline. Each op is one call.
func BenchmarkDeviceSteady(b *testing.B) {
	c := newDeviceCluster(10000, 1000, 50000, 100000)
	d := newBenchDevice(b, c)
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
	b.Run("Due+NextDeadline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d.Due(now) != nil {
				b.Fatal("due")
			}
			d.NextDeadline()
			d.RuleStatuses(now)
			d.AppendCancelled(nil)
		}
	})
}

// BenchmarkDeviceTaintPool: a pool of 1,000 devices gets a NoExecute taint
// (16 slice updates), and Due collects every eviction (5,000 claims,
// 10,000 pods), at 10,000 devices, 50,000 claims, 100,000 pods. The reset
// (a Retry of each and the untainting, which cancels them) is not timed.
func BenchmarkDeviceTaintPool(b *testing.B) {
	c := newDeviceCluster(10000, 1000, 50000, 100000)
	d := newBenchDevice(b, c)
	now := testutil.At(time.Minute)
	tainted := c.tainted(0, now)
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
		b.StartTimer()
	}
	if evicted != 10000 {
		b.Fatalf("Due handed out %d evictions, want 10000", evicted)
	}
	b.ReportMetric(float64(evicted), "evictions/op")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// cpuTime is the process's user and system CPU time: on a loaded machine
// it shows the work a benchmark did, whatever the wall clock says.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDeviceTaintRule: the same pool tainted by a DeviceTaintRule
// (upstream re-evaluates every allocated claim on a rule change, and so
// does the DeviceEvictor).
func BenchmarkDeviceTaintRule(b *testing.B) {
	c := newDeviceCluster(10000, 1000, 50000, 100000)
	d := newBenchDevice(b, c)
	now := testutil.At(time.Minute)
	pool := "pool-0"
	rule := DeviceTaintRule{Name: "drain-pool-0", UID: "rule-uid", Selector: &DeviceTaintSelector{Pool: &pool},
		Taint: resourcev1.DeviceTaint{Key: "maintenance", Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &metav1.Time{Time: now}}}
	evicted := 0
	var cpu time.Duration
	b.ReportAllocs()
	for b.Loop() {
		c0 := cpuTime()
		d.SetRule(now, rule)
		xs := d.Due(now)
		evicted = len(xs)
		cpu += cpuTime() - c0
		b.StopTimer()
		for _, x := range xs {
			d.Retry(now, x, time.Hour)
		}
		d.DeleteRule(now, rule.Name)
		d.AppendCancelled(nil)
		d.RuleStatuses(now)
		b.StartTimer()
	}
	if evicted != 10000 {
		b.Fatalf("Due handed out %d evictions, want 10000", evicted)
	}
	b.ReportMetric(float64(evicted), "evictions/op")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// TestDeviceSteadyAllocs pins the steady state at zero allocations:
// unchanged slices, claims and pods, and the idle worker pass.
func TestDeviceSteadyAllocs(t *testing.T) {
	c := newDeviceCluster(1000, 100, 5000, 10000)
	d := newBenchDevice(t, c)
	now := testutil.At(time.Minute)
	i := 0
	for name, f := range map[string]func(){
		"SetPod":   func() { _ = d.SetPod(now, c.pods[i%len(c.pods)]) },
		"SetClaim": func() { _ = d.SetClaim(now, c.claims[i%len(c.claims)]) },
		"SetSlice": func() { _ = d.SetSlice(now, c.slices[i%len(c.slices)][0]) },
		"Due":      func() { _ = d.Due(now) },
		"NextDeadline+RuleStatuses+AppendCancelled": func() {
			d.NextDeadline()
			d.RuleStatuses(now)
			d.AppendCancelled(nil)
		},
	} {
		if a := testing.AllocsPerRun(1000, func() { f(); i++ }); a != 0 {
			t.Errorf("%s: %v allocations, want 0", name, a)
		}
	}
}

// TestDeviceMemoryPerPod: the DeviceEvictor keeps at most 200 bytes per
// pod (its record, its map entry and its place in its claim's pod list),
// the pods' own strings excluded (the informer's objects hold them), at
// 10,000 devices, 50,000 claims and 100,000 pods; claims and slices are
// measured apart.
func TestDeviceMemoryPerPod(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 200 MB")
	}
	c := newDeviceCluster(10000, 1000, 50000, 100000)
	d, err := NewDeviceEvictor(DefaultDeviceEvictorConfig())
	if err != nil {
		t.Fatal(err)
	}
	now := testutil.Epoch
	h0 := heapBytes()
	for _, ss := range c.slices {
		for _, s := range ss {
			_ = d.SetSlice(now, s)
		}
	}
	h1 := heapBytes()
	for _, cl := range c.claims {
		_ = d.SetClaim(now, cl)
	}
	h2 := heapBytes()
	for _, p := range c.pods {
		_ = d.SetPod(now, p)
	}
	h3 := heapBytes()
	runtime.KeepAlive(c)
	runtime.KeepAlive(d)
	perDevice := float64(int64(h1)-int64(h0)) / 10000
	perClaim := float64(int64(h2)-int64(h1)) / float64(len(c.claims))
	perPod := float64(int64(h3)-int64(h2)) / float64(len(c.pods))
	t.Logf("%.0f bytes per device, %.0f per claim, %.0f per pod", perDevice, perClaim, perPod)
	if perPod > 200 {
		t.Errorf("the DeviceEvictor keeps %.0f bytes per pod, want <= 200", perPod)
	}
}

// BenchmarkDeviceTaintUntaint is upstream's BenchmarkTaintUntaint
// (device_taint_eviction_test.go at v1.37.2) on the DeviceEvictor: add a
// slice, a claim tolerating the taint for an hour and its pod; taint the
// device (the pod is scheduled for eviction); untaint it (cancelled);
// remove everything.
func BenchmarkDeviceTaintUntaint(b *testing.B) {
	d, err := NewDeviceEvictor(DefaultDeviceEvictorConfig())
	if err != nil {
		b.Fatal(err)
	}
	now := uTaintTime
	key := podKey(uPodWithClaimName)
	claimKey := types.NamespacedName{Namespace: uInUseClaimWithTol.Namespace, Name: uInUseClaimWithTol.Name}
	var buf []DeviceCancellation
	b.ReportAllocs()
	for b.Loop() {
		_ = d.SetSlice(now, uSlice)
		_ = d.SetClaim(now, uInUseClaimWithTol)
		_ = d.SetPod(now, uPodWithClaimName.Pod)
		if d.Len() != 0 {
			b.Fatal("scheduled before the taint")
		}
		_ = d.SetSlice(now, uSliceTainted)
		if d.Len() != 1 {
			b.Fatal("not scheduled")
		}
		_ = d.SetSlice(now, uSlice)
		if d.Len() != 0 {
			b.Fatal("not cancelled")
		}
		buf = d.AppendCancelled(buf[:0])
		d.DeletePod(key)
		d.DeleteClaim(now, claimKey)
		d.DeleteSlice(now, uSlice.Name)
	}
}

// TestDeviceRecordSizes pins the per-pod records behind
// TestDeviceMemoryPerPod's figure: a 96-byte pod record (a malloc size
// class) and an 80-byte eviction while one is scheduled.
func TestDeviceRecordSizes(t *testing.T) {
	if got := unsafe.Sizeof(devPod{}); got > 96 {
		t.Errorf("devPod is %d bytes, want <= 96", got)
	}
	if got := unsafe.Sizeof(devEv{}); got > 80 {
		t.Errorf("devEv is %d bytes, want <= 80", got)
	}
}
