package incident

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// reactionLog is #121793 in small: every kubelet renews all along, the
// recorded controller's Lease watch stalled from +30s (breaker off, grace
// 40s: last renewal seen +20.011s), so it wrote n1 Unknown and its pods
// NotReady at +65s; n1's kubelet, alive, posted Ready in reaction at
// +73.02s and put n1-web-0's Ready back at +74s.
func reactionLog() []audit.Event {
	g := &gen{nodes: 3, podsPerNode: 2, duration: 3 * time.Minute, stop: "n1", stopAt: time.Hour,
		unknownAt: 65 * time.Second, resumeAt: 73 * time.Second}
	evs := g.build()
	g.events = nil
	p := g.pod("n1", 0, v1.ConditionTrue)
	g.add(74*time.Second, "system:node:n1", "patch", audit.ObjectRef{Resource: "pods", Namespace: "default", Name: p.Name, Subresource: "status", APIVersion: "v1"},
		map[string]any{"status": map[string]any{"conditions": []map[string]any{{"type": "Ready", "status": "True"}}}}, nil)
	evs = append(evs, g.events...)
	slices.SortStableFunc(evs, func(a, b audit.Event) int { return a.StageTimestamp.Compare(b.StageTimestamp) })
	return evs
}

func reactionOptions(t *testing.T, grace string, keep bool) ReplayOptions {
	return ReplayOptions{Policy: policy(t, "--node-monitor-grace-period="+grace, "--feature-gates=NodeControllerLeaseCircuitBreaker=false"),
		LeaseWatchStalls:      []Window{{From: epoch.Add(30 * time.Second), To: epoch.Add(90 * time.Second)}},
		KeepRecordedReactions: keep}
}

func firstUnknown(run *Run, node string) (time.Time, bool) {
	for _, d := range run.Replayed {
		if d.Kind == KindNodeUnknown && d.Node == node {
			return d.Time, true
		}
	}
	return time.Time{}, false
}

func dropped(run *Run) []Note {
	var out []Note
	for _, n := range run.Notes {
		if n.Kind == NoteReactionDropped {
			out = append(out, n)
		}
	}
	return out
}

// TestRecordedReactionDropped: replayed under grace 50s the controller has
// not written n1 Unknown when its kubelet's reaction arrives; the reaction
// is left out (listed), so the replay writes n1 Unknown at +80s (the
// renewal of +20.011s observed by the pass at +25.001s, 50s before the
// pass after +75.001s) instead of taking the post for a heartbeat that
// saves it.
func TestRecordedReactionDropped(t *testing.T) {
	evs := reactionLog()
	opt := reactionOptions(t, "50s", false)
	h, run, _ := replayLog(t, evs, opt)
	if got, want := [2]int64{h.Facts.ReactionNodePosts, h.Facts.ReactionPodPosts}, [2]int64{1, 1}; got != want {
		t.Errorf("Facts reactions (node, pod) = %v, want %v", got, want)
	}
	if at, ok := firstUnknown(run, "n1"); !ok || at.Sub(epoch) != 80*time.Second+time.Millisecond {
		t.Errorf("n1 replayed Unknown at %v (%v), want at +80.001s: the kubelet's reaction is no heartbeat", at.Sub(epoch), ok)
	}
	d := dropped(run)
	if len(d) != 2 || d[0].Node != "n1" || d[0].Pod != "" || d[0].Time.Sub(epoch) != 73*time.Second+21*time.Millisecond ||
		d[1].Pod != "default/n1-web-0" || d[1].Time.Sub(epoch) != 74*time.Second+time.Millisecond {
		t.Errorf("dropped reactions = %+v, want n1's post at +73.021s and n1-web-0's at +74.001s", d)
	}
	// The reports list them.
	var b strings.Builder
	if err := NewReport(h, opt, run).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{"recorded-reaction-dropped", "2 recorded kubelet status posts left out (1 node, 1 pod)",
		"1 node status posts and 1 pod status posts put Ready back", "this replay left out 2 of those recorded reactions"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}

	// Kept, the reaction is a heartbeat: n1 is never written Unknown.
	_, run, _ = replayLog(t, evs, reactionOptions(t, "50s", true))
	if at, ok := firstUnknown(run, "n1"); ok {
		t.Errorf("KeepRecordedReactions: n1 replayed Unknown at %v, want never", at.Sub(epoch))
	}
	if d := dropped(run); len(d) != 0 {
		t.Errorf("KeepRecordedReactions: dropped %+v, want none", d)
	}

	// Under the recorded policy the replay makes the write: nothing is
	// left out, and it matches the recording.
	_, run, c := replayLog(t, evs, reactionOptions(t, "40s", false))
	if d := dropped(run); len(d) != 0 {
		t.Errorf("self-replay: dropped %+v, want none", d)
	}
	if len(c.Missing) != 0 {
		t.Errorf("self-replay: missing %v", c.Missing)
	}
}
