package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubelifecycle/lifecycle/examples/replay/incident"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// syncBuffer is a bytes.Buffer safe for the recorder's writes and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// stepClock returns epoch + 1s, +2s, ... on successive calls.
func stepClock() func() time.Time {
	var mu sync.Mutex
	n := 0
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		n++
		return epoch.Add(time.Duration(n) * time.Second)
	}
}

// fakeCluster returns a fake clientset whose watches are served by its
// tracker and announced on the returned channel once established (so the
// test writes only after the informers watch: the fake tracker does not
// replay what happened between an informer's list and its watch).
func fakeCluster(objs ...runtime.Object) (*fake.Clientset, <-chan string) {
	cs := fake.NewClientset(objs...)
	watching := make(chan string, 8)
	cs.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := cs.Tracker().Watch(a.GetResource(), a.GetNamespace())
		select {
		case watching <- a.GetResource().Resource:
		default: // a rewatch, after the test stopped looking
		}
		return true, w, err
	})
	return cs, watching
}

func lease(name string, renew time.Time) *coordinationv1.Lease {
	t := metav1.NewMicroTime(renew)
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v1.NamespaceNodeLease, ResourceVersion: "1"},
		Spec: coordinationv1.LeaseSpec{RenewTime: &t}}
}

func node(name string, ready v1.ConditionStatus, beat time.Time) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: ready, LastHeartbeatTime: metav1.NewTime(beat)}}}}
}

type started struct {
	rec  *Recorder
	out  *syncBuffer
	got  chan incident.Delivery
	done chan error
	stop context.CancelFunc
}

// start runs a Recorder on cs until stop.
func start(t *testing.T, cs *fake.Clientset, lim Limits) *started {
	t.Helper()
	s := &started{out: &syncBuffer{}, got: make(chan incident.Delivery, 100), done: make(chan error, 1)}
	s.rec = NewRecorder(s.out, lim, stepClock())
	s.rec.written = s.got
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	t.Cleanup(cancel)
	go func() { s.done <- s.rec.Run(ctx, cs) }()
	return s
}

// waitWatching returns once both informers watch.
func waitWatching(watching <-chan string) {
	seen := map[string]bool{}
	for len(seen) < 2 {
		seen[<-watching] = true
	}
}

func TestRecorderWritesDeliveries(t *testing.T) {
	cs, watching := fakeCluster(lease("n0", epoch))
	s := start(t, cs, Limits{MaxLines: 100, MaxBytes: 1 << 20})
	waitWatching(watching)
	// The informers' initial lists: n0's Lease.
	if d := <-s.got; d.Kind != incident.DeliveryLease || d.Event != "add" || d.Name != "n0" || !d.RenewTime.Equal(epoch) {
		t.Fatalf("first delivery = %+v, want Lease n0 add renewTime %v", d, epoch)
	}
	ctx := context.Background()
	if _, err := cs.CoordinationV1().Leases(v1.NamespaceNodeLease).Update(ctx, lease("n0", epoch.Add(10*time.Second)), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := <-s.got; d.Event != "update" || !d.RenewTime.Equal(epoch.Add(10*time.Second)) {
		t.Fatalf("lease update delivered as %+v", d)
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node("n0", v1.ConditionUnknown, epoch.Add(5*time.Second)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := <-s.got; d.Kind != incident.DeliveryNode || d.Ready != "Unknown" || !d.LastHeartbeatTime.Equal(epoch.Add(5*time.Second)) {
		t.Fatalf("node create delivered as %+v", d)
	}
	if err := cs.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(ctx, "n0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := <-s.got; d.Event != "delete" || d.Name != "n0" {
		t.Fatalf("lease delete delivered as %+v", d)
	}
	s.stop()
	if err := <-s.done; err != nil {
		t.Fatalf("Run = %v, want nil after stop", err)
	}
	rec, err := incident.ReadRecording(strings.NewReader(s.out.String()), incident.DefaultRecordingLimits())
	if err != nil {
		t.Fatalf("ReadRecording(the recorder's output) = %v", err)
	}
	if len(rec.Deliveries) != 4 {
		t.Fatalf("read %d deliveries, want 4:\n%s", len(rec.Deliveries), s.out.String())
	}
	for i, d := range rec.Deliveries {
		if want := epoch.Add(time.Duration(i+1) * time.Second); !d.Received.Equal(want) {
			t.Errorf("delivery %d received %v, want %v (the recorder's clock)", i, d.Received, want)
		}
	}
}

func TestRecorderStopsAtLimit(t *testing.T) {
	// The recorder may stop before the Node informer watches: the test
	// waits only for Run.
	cs, _ := fakeCluster(lease("n0", epoch), lease("n1", epoch), lease("n2", epoch))
	s := start(t, cs, Limits{MaxLines: 2, MaxBytes: 1 << 20})
	err := <-s.done
	if err == nil || !strings.Contains(err.Error(), "-max-lines=2") {
		t.Fatalf("Run = %v, want an error naming -max-lines=2", err)
	}
	if n := strings.Count(s.out.String(), "\n"); n != 2 {
		t.Errorf("wrote %d lines, want 2", n)
	}
}

func TestRecorderStopsAtByteLimit(t *testing.T) {
	cs, _ := fakeCluster(lease("n0", epoch))
	s := start(t, cs, Limits{MaxLines: 10, MaxBytes: 10})
	if err := <-s.done; err == nil || !strings.Contains(err.Error(), "-max-bytes=10") {
		t.Fatalf("Run = %v, want an error naming -max-bytes=10", err)
	}
}

func TestRecorderClock(t *testing.T) {
	var out bytes.Buffer
	r := NewRecorder(&out, Limits{MaxLines: 10, MaxBytes: 1 << 20}, stepClock())
	if err := r.Clock(func() (time.Time, time.Time, error) { return epoch, epoch.Add(1500 * time.Millisecond), nil }); err != nil {
		t.Fatal(err)
	}
	rec, err := incident.ReadRecording(&out, incident.DefaultRecordingLimits())
	if err != nil {
		t.Fatal(err)
	}
	if off, ok := rec.ClockOffset(); !ok || off != 1500*time.Millisecond {
		t.Errorf("ClockOffset() = %v, %v, want 1.5s, true", off, ok)
	}
}

func TestRunFlags(t *testing.T) {
	var stderr bytes.Buffer
	if err := run(context.Background(), nil, &stderr); err == nil || !strings.Contains(err.Error(), "-kubeconfig and -out are required") {
		t.Errorf("run() = %v, want the required flags named", err)
	}
	if err := run(context.Background(), []string{"-kubeconfig", "x", "-out", "y", "-max-lines", "0"}, &stderr); err == nil || !strings.Contains(err.Error(), "must be positive") {
		t.Errorf("run(-max-lines 0) = %v, want a positivity error", err)
	}
}
