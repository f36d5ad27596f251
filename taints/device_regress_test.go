package taints

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestDeviceDoneAfterDeletePod: the informer may deliver the delete event
// of a pod the caller is deleting before its Delete call returns, so
// DeletePod can come between Due and Done. Done must still count the pod
// for its DeviceTaintRules (upstream maybeDeletePod counts every pod it
// deleted, from the eviction it read before deleting), and the rule's
// EvictionInProgress condition must say Completed, not NotStarted. A
// handed-out eviction is kept until it is reported, whatever happens to
// the pod meanwhile, and reported once.
func TestDeviceDoneAfterDeletePod(t *testing.T) {
	const (
		completed  = "False Completed \"1 pod evicted since starting the controller.\""
		notStarted = "False NotStarted \"\""
	)
	replaced := uPodWithClaimOtherUID
	for _, tt := range []struct {
		name string
		// between runs after Due, before the outcome is reported.
		between func(h *harness)
		report  func(h *harness, x DeviceEviction)
		// want: the rule's condition one status period later and the
		// pod's state (Explain).
		want      string
		wantState DeviceState
	}{{
		name:      "DeletePod, then Done",
		between:   func(h *harness) { h.deletePod(uPodWithClaimName) },
		report:    func(h *harness, x DeviceEviction) { h.d.Done(h.now, x, DeviceDeleted) },
		want:      completed,
		wantState: DeviceNotTracked,
	}, {
		name:    "DeletePod, then Done twice: counted once",
		between: func(h *harness) { h.deletePod(uPodWithClaimName) },
		report: func(h *harness, x DeviceEviction) {
			h.d.Done(h.now, x, DeviceDeleted)
			h.d.Done(h.now, x, DeviceDeleted)
		},
		want:      completed,
		wantState: DeviceNotTracked,
	}, {
		name:      "replaced under its name (delete event missed), then Done",
		between:   func(h *harness) { h.setPod(replaced) },
		report:    func(h *harness, x DeviceEviction) { h.d.Done(h.now, x, DeviceDeleted) },
		want:      completed,
		wantState: DeviceNotTainted, // the new pod, evaluated afresh: the claim is not reserved for it
	}, {
		name: "DeletePod, SetPod again (same UID), then Done",
		between: func(h *harness) {
			h.deletePod(uPodWithClaimName)
			h.setPod(uPodWithClaimName)
			if x := h.d.Explain(h.now, podKey(uPodWithClaimName)); x.State != DeviceHandedOut {
				h.t.Errorf("Explain after DeletePod and SetPod = %v, want still handed out", x)
			}
			if xs := h.d.Due(h.now); len(xs) != 0 {
				h.t.Errorf("Due = %v, want nothing: the eviction is handed out", xs)
			}
		},
		report:    func(h *harness, x DeviceEviction) { h.d.Done(h.now, x, DeviceDeleted) },
		want:      completed,
		wantState: DeviceDone,
	}, {
		name:      "DeletePod, then Done(DeviceGone): not counted",
		between:   func(h *harness) { h.deletePod(uPodWithClaimName) },
		report:    func(h *harness, x DeviceEviction) { h.d.Done(h.now, x, DeviceGone) },
		want:      notStarted,
		wantState: DeviceNotTracked,
	}, {
		name:      "DeletePod, then Retry: dropped, no cancellation",
		between:   func(h *harness) { h.deletePod(uPodWithClaimName) },
		report:    func(h *harness, x DeviceEviction) { h.d.Retry(h.now, x, time.Second) },
		want:      notStarted,
		wantState: DeviceNotTracked,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, false, uTaintTime)
			h.setRule(uRuleEvict)
			h.setClaim(uInUseClaim)
			h.setPod(uPodWithClaimName)
			if sts := h.d.RuleStatuses(h.now); len(sts) != 1 {
				t.Fatalf("first RuleStatuses = %+v, want the new rule's", sts)
			}
			xs := h.d.Due(h.now)
			if len(xs) != 1 {
				t.Fatalf("Due = %v, want the pod", xs)
			}
			tt.between(h)
			tt.report(h, xs[0])
			h.now = h.now.Add(DefaultDeviceEvictorConfig().RuleStatusPeriod)
			sts := h.d.RuleStatuses(h.now)
			if len(sts) != 1 {
				t.Fatalf("RuleStatuses(+period) = %+v, want one", sts)
			}
			c := sts[0].Condition
			if got := fmt.Sprintf("%s %s %q", c.Status, c.Reason, c.Message); got != tt.want {
				t.Errorf("condition = %s, want %s", got, tt.want)
			}
			if x := h.d.Explain(h.now, podKey(uPodWithClaimName)); x.State != tt.wantState {
				t.Errorf("Explain = %v, want %v", x, tt.wantState)
			}
			if at, ok := h.d.NextDeadline(); ok {
				t.Errorf("NextDeadline = %v, want no work left", at)
			}
			if cs := h.d.AppendCancelled(nil); len(cs) != 0 {
				t.Errorf("cancellations %v, want none", cs)
			}
			h.d.mu.Lock()
			defer h.d.mu.Unlock()
			if n := len(h.d.gone); n != 0 {
				t.Errorf("%d forgotten handed-out evictions kept after the report, want 0", n)
			}
		})
	}
}

// TestDeviceRestoreDropsUnseen: Restore keeps an entry for an object it
// has not seen until the first Due after it (the caller runs Due once its
// informers have synced, which is also when restored breaker holds are
// judged); there an entry whose pod or rule never arrived is of an object
// deleted while no controller ran, and is dropped. Before, such entries
// were kept and reported by every Snapshot, so a controller saving and
// restoring its snapshot carried them forever (up to MaxDeviceSnapshot).
func TestDeviceRestoreDropsUnseen(t *testing.T) {
	// A controller evicts a pod for a rule and saves its snapshot.
	h := newHarness(t, false, uTaintTime)
	h.setRule(uRuleEvict)
	h.setClaim(uInUseClaim)
	h.setPod(uPodWithClaimName)
	h.process()
	snap := h.d.Snapshot()
	if len(snap.Evicted) != 1 || len(snap.Rules) != 1 {
		t.Fatalf("Snapshot = %+v, want the pod and the rule", snap)
	}
	late := uMakePod(uPodN("gone"), uPodUIDOpt("gone-uid"), uClaimRef(uResource, &uClaimName), uOnNode(uNode))
	gonePod := DeviceEvictedPod{Pod: podKey(late), UID: late.UID}
	goneRule := DeviceRuleCount{Rule: "gone-rule", UID: "gone-rule-uid", Evicted: 3}
	snap.Evicted = append(snap.Evicted, gonePod)
	snap.Rules = append(snap.Rules, goneRule)

	for _, tt := range []struct {
		name string
		// restart feeds a new DeviceEvictor its snapshot and inputs.
		restart func(d *DeviceEvictor, now time.Time)
	}{
		{"Restore, then the informers' objects", func(d *DeviceEvictor, now time.Time) {
			if err := d.Restore(now, snap); err != nil {
				t.Fatal(err)
			}
			d.SetRule(now, uRuleEvict)
			_ = d.SetClaim(now, uInUseClaim)
			_ = d.SetPod(now, uPodWithClaimName.Pod)
		}},
		{"the informers' objects, then Restore", func(d *DeviceEvictor, now time.Time) {
			d.SetRule(now, uRuleEvict)
			_ = d.SetClaim(now, uInUseClaim)
			_ = d.SetPod(now, uPodWithClaimName.Pod)
			if err := d.Restore(now, snap); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := h.now.Add(time.Minute)
			d, _ := NewDeviceEvictor(DefaultDeviceEvictorConfig())
			tt.restart(d, now)
			// Before the first Due the unseen entries may still arrive:
			// Snapshot keeps them.
			if got := snapString(d.Snapshot()); !strings.Contains(got, "gone-uid") || !strings.Contains(got, "gone-rule-uid") {
				t.Errorf("Snapshot before the first Due = %s, want the unseen entries kept", got)
			}
			if xs := d.Due(now); len(xs) != 0 {
				t.Errorf("Due = %v, want none (the pod was evicted before the restart)", xs)
			}
			want := fmt.Sprintf("evicted [%s] rules [%s/%s=1]", podRef(uPodWithClaimName), uRuleEvict.Name, uRuleEvict.UID)
			if got := snapString(d.Snapshot()); got != want {
				t.Errorf("Snapshot after the first Due = %s, want %s", got, want)
			}
			// An object arriving later is a new one: not marked.
			_ = d.SetPod(now, late.Pod)
			if x := d.Explain(now, gonePod.Pod); x.State == DeviceDone {
				t.Errorf("Explain(a pod arriving after the first Due) = %v, want not marked evicted", x)
			}
			if got := snapString(d.Snapshot()); got != want {
				t.Errorf("Snapshot = %s, want %s", got, want)
			}
		})
	}
}

func snapString(s DeviceSnapshot) string {
	var b strings.Builder
	b.WriteString("evicted [")
	for i, e := range s.Evicted {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s/%s", e.Pod, e.UID)
	}
	b.WriteString("] rules [")
	for i, r := range s.Rules {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s/%s=%d", r.Rule, r.UID, r.Evicted)
	}
	b.WriteString("]")
	return b.String()
}

// TestDeviceSameClaimNamedThrice: a pod may name one ResourceClaim in
// several spec.resourceClaims entries (the API requires only the entries'
// names to differ). Dropping such a pod's links moved its own, already
// dropped, link into a freed slot, and the next update of the pod indexed
// past the claim's pods: SetPod panicked. The sequence below is the
// shortest the model-based test found.
func TestDeviceSameClaimNamedThrice(t *testing.T) {
	naming := func(base uPod, n int) uPod {
		p := base
		p.Pod = base.DeepCopy()
		p.Spec.ResourceClaims = nil
		for i := range n {
			p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: fmt.Sprint("rc", i), ResourceClaimName: &uClaimName})
		}
		return p
	}
	pod, other := uPodWithClaimName, uPodWithClaimOtherUID
	other.Pod = other.DeepCopy()
	other.Name += "-other"
	h := newHarness(t, false, uTaintTime)
	h.setPod(naming(pod, 2))
	h.setPod(naming(other, 4))
	h.setPod(naming(pod, 4))
	h.deletePod(other)
	h.setPod(naming(pod, 2)) // panicked: index out of range
	h.d.mu.Lock()
	c := h.d.claims[types.NamespacedName{Namespace: uNamespace, Name: uClaimName}]
	if c == nil || len(c.pods) != 2 {
		t.Errorf("claim's pods = %v, want the pod twice", c)
	}
	h.d.mu.Unlock()
	// It is still evicted, once.
	h.setSlice(uSliceTainted)
	h.setClaim(uInUseClaim)
	if xs := h.d.Due(h.now); len(xs) != 1 || xs[0].Pod != podKey(pod) {
		t.Errorf("Due = %v, want the pod once", xs)
	}
}

// TestDeviceRetryFollowsEarlierEviction: a deletion fails while the pod's
// eviction time has moved later (its taint changed during the Delete
// call), so Retry schedules it at that later time; when the eviction time
// then moves earlier again, the retry follows it, as upstream's AddAfter
// does. It stayed at the later time, as if that were a backoff. A real
// backoff (now + after not before the eviction time) still holds.
func TestDeviceRetryFollowsEarlierEviction(t *testing.T) {
	at := func(added time.Time) DeviceTaintRule {
		return uRule("evict", "1234", DeviceTaintSelector{Driver: &uDriver}, resourcev1.DeviceTaintEffectNoExecute, added)
	}
	for _, tt := range []struct {
		name  string
		after time.Duration // the Retry's backoff
		want  int           // evictions due one second after the taint is back
	}{
		{"eviction time later than the backoff", 5 * time.Millisecond, 1},
		{"backoff later than the eviction time", 2 * time.Hour, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, false, uTaintTime)
			h.setRule(at(uTaintTime))
			h.setClaim(uInUseClaim)
			h.setPod(uPodWithClaimName)
			xs := h.d.Due(h.now)
			if len(xs) != 1 {
				t.Fatalf("Due = %v, want the pod", xs)
			}
			h.setRule(at(uTaintTime.Add(time.Hour))) // during the Delete call
			h.d.Retry(h.now, xs[0], tt.after)
			h.setRule(at(uTaintTime))
			h.now = h.now.Add(time.Second)
			if got := h.d.Due(h.now); len(got) != tt.want {
				t.Errorf("Due(+1s) = %v, want %d", got, tt.want)
			}
			if x := h.d.Explain(h.now, podKey(uPodWithClaimName)); tt.want == 0 && !x.At.Equal(uTaintTime.Add(tt.after)) {
				t.Errorf("Explain = %v, want the retry at the backoff's end", x)
			}
		})
	}
}
