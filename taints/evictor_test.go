package taints

import (
	"errors"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/testutil"
	v1 "k8s.io/api/core/v1"
)

const s = time.Second

func TestNewEvictorValidates(t *testing.T) {
	for _, p := range []ReschedulePolicy{RescheduleNever, RescheduleEarlier, RescheduleRecompute} {
		if _, err := NewEvictor(EvictorConfig{Reschedule: p}); err != nil {
			t.Errorf("NewEvictor(Reschedule: %v) error %v", p, err)
		}
	}
	if _, err := NewEvictor(EvictorConfig{Reschedule: 3}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewEvictor(Reschedule: 3) error = %v, want ErrInvalidConfig", err)
	}
	if DefaultEvictorConfig() != (EvictorConfig{}) {
		t.Errorf("DefaultEvictorConfig() = %+v, want the zero value", DefaultEvictorConfig())
	}
}

// TestEvictorBasics covers upstream processPodOnNode: not tolerated → at once; finite → start + d
// (exactly, inclusive); forever → never; several taints → the earliest
// expiry; each eviction handed out once.
func TestEvictorBasics(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"not tolerated: due at once, handed out once", []step{
			{0, setPod{pod("a", "n1")}, ""},
			{0, explain{"a"}, "NodeNotTainted"},
			{10 * s, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{10 * s, next{}, "+10s"},
			{10 * s, explain{"a"}, "Due@+10s unreachable/untolerated"},
			{11 * s, due{}, "default/a@+10s:NotTolerated#1"},
			{11 * s, due{}, ""},
			{11 * s, next{}, "none"},
			{11 * s, explain{"a"}, "HandedOut@+10s unreachable/untolerated"},
			{12 * s, done{"a"}, ""},
			{12 * s, explain{"a"}, "Done unreachable/untolerated"},
			{99 * s, due{}, ""},
		}},
		{"tolerated 300s: evicted at exactly +300s", []step{
			{0, setPod{pod("a", "n1", tolFor(unreachable, 300))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{0, next{}, "+300s"},
			{1 * s, explain{"a"}, "Scheduled@+300s unreachable/300s from +0s"},
			{299 * s, due{}, ""},
			{300 * s, due{}, "default/a@+300s:TolerationExpired#1"},
			{300 * s, done{"a"}, ""},
		}},
		{"tolerated forever: never", []step{
			{0, setPod{pod("a", "n1", tolForever(unreachable))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{0, next{}, "none"},
			{0, explain{"a"}, "ToleratedForever unreachable/forever"},
			{time.Hour, due{}, ""},
		}},
		{"several taints: the earliest expiry binds", []step{
			{0, setPod{pod("a", "n1", tolFor(unreachable, 600), tolFor("b", 300), tolForever("c"))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("c"), ne(unreachable), ne("b")}}, ""},
			{0, explain{"a"}, "Scheduled@+300s b/300s from +0s"},
			{300 * s, due{}, "default/a@+300s:TolerationExpired#1"},
		}},
		{"one untolerated taint among tolerated ones", []step{
			{0, setPod{pod("a", "n1", tolFor(unreachable, 600))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne(unreachable), ne("b")}}, ""},
			{0, due{}, "default/a@+0s:NotTolerated#1"},
		}},
		{"zero seconds: at once even beside forever", []step{
			{0, setPod{pod("a", "n1", tolForever(unreachable), tolFor("b", 0))}, ""},
			{5 * s, setTaints{"n1", []v1.Taint{ne(unreachable), ne("b")}}, ""},
			{5 * s, due{}, "default/a@+5s:TolerationExpired#1"},
		}},
		{"only NoExecute taints count", []step{
			{0, setPod{pod("a", "n1")}, ""},
			{0, setTaints{"n1", []v1.Taint{ns(unreachable), {Key: "p", Effect: v1.TaintEffectPreferNoSchedule}}}, ""},
			{0, next{}, "none"},
			{0, explain{"a"}, "NodeNotTainted"},
		}},
		{"ties in fire time: in scheduling order, a node's pods in arrival order", []step{
			{0, setPod{pod("c", "n1")}, ""},
			{0, setPod{pod("a", "n2")}, ""},
			{0, setPod{pod("b", "n1")}, ""},
			{0, setPod{testutil.Pod("aaa", "z", "n1")}, ""},
			{0, setPod{pod("d", "n1")}, ""},
			{0, deletePod{"b"}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{0, setTaints{"n2", []v1.Taint{ne("x")}}, ""},
			{0, due{}, "default/c@+0s:NotTolerated#1 aaa/z@+0s:NotTolerated#1 default/d@+0s:NotTolerated#1 default/a@+0s:NotTolerated#1"},
		}},
		{"fire-time order across nodes", []step{
			{0, setPod{pod("late", "n1", tolFor("x", 200))}, ""},
			{0, setPod{pod("early", "n2", tolFor("x", 100))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{50 * s, setTaints{"n2", []v1.Taint{ne("x")}}, ""},
			{0, next{}, "+150s"},
			{300 * s, due{}, "default/early@+150s:TolerationExpired#1 default/late@+200s:TolerationExpired#1"},
		}},
		{"pod arriving on a tainted node counts from its arrival", []step{
			{0, setTaints{"n1", []v1.Taint{ne(unreachable)}}, ""},
			{100 * s, setPod{pod("a", "n1", tolFor(unreachable, 300))}, ""},
			{100 * s, explain{"a"}, "Scheduled@+400s unreachable/300s from +100s"},
			{400 * s, due{}, "default/a@+400s:TolerationExpired#1"},
		}},
		{"time going backwards is no time elapsed", []step{
			{0, setPod{pod("a", "n1", tolFor("x", 10))}, ""},
			{100 * s, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{50 * s, setPod{pod("b", "n1")}, ""}, // now counts as +100s
			{50 * s, due{}, "default/b@+100s:NotTolerated#1"},
			{105 * s, due{}, ""},
			{110 * s, due{}, "default/a@+110s:TolerationExpired#1"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, EvictorConfig{}, tt.steps) })
	}
}

// TestEvictorChanges covers how taint and toleration changes move, cancel
// or keep a scheduled eviction under each ReschedulePolicy.
func TestEvictorChanges(t *testing.T) {
	never, earlier, recompute := EvictorConfig{}, EvictorConfig{Reschedule: RescheduleEarlier}, EvictorConfig{Reschedule: RescheduleRecompute}
	tests := []struct {
		name  string
		cfg   EvictorConfig
		steps []step
	}{
		{"ties: a moved fire time goes last, an unchanged one keeps its place", recompute, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 300))}, ""},
			{0, setPod{pod("b", "n1", tolFor("x", 300))}, ""},
			{0, setPod{pod("c", "n1", tolFor("x", 300))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{10 * s, setPod{pod("a", "n1", tolFor("x", 300), tolForever("other"))}, ""}, // still +300s
			{10 * s, setPod{pod("b", "n1", tolFor("x", 290))}, ""},                      // +290s
			{20 * s, setPod{pod("b", "n1", tolFor("x", 300))}, ""},                      // back to +300s, last
			{300 * s, due{}, "default/a@+300s:TolerationExpired#1 default/c@+300s:TolerationExpired#1 default/b@+300s:TolerationExpired#1"},
		}},
		{"taints removed: cancelled, never evicted", never, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 300))}, ""},
			{0, setPod{pod("b", "n1")}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{10 * s, setTaints{"n1", []v1.Taint{ns("x")}}, ""},
			{10 * s, next{}, "none"},
			{10 * s, explain{"a"}, "NodeNotTainted"},
			{time.Hour, due{}, ""},
		}},
		{"taint re-added after removal: countdown restarts", never, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 300))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{100 * s, setTaints{"n1", nil}, ""},
			{200 * s, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{200 * s, next{}, "+500s"},
		}},
		{"unchanged taints: nothing moves", recompute, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 300))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x"), ns("y")}}, ""},
			{100 * s, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{100 * s, next{}, "+300s"},
		}},
		{"never: new taint with a shorter toleration ignored", never, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 600), tolFor("y", 60))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{100 * s, setTaints{"n1", []v1.Taint{ne("x"), ne("y")}}, ""},
			{100 * s, explain{"a"}, "Scheduled@+600s y/60s from +100s"},
		}},
		{"earlier: new taint with a shorter toleration brings it forward", earlier, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 600), tolFor("y", 60))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{100 * s, setTaints{"n1", []v1.Taint{ne("x"), ne("y")}}, ""},
			{100 * s, next{}, "+160s"},
			{160 * s, due{}, "default/a@+160s:TolerationExpired#1"},
		}},
		{"recompute: the binding taint removed postpones", recompute, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 600), tolFor("y", 60))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x"), ne("y")}}, ""},
			{0, next{}, "+60s"},
			{30 * s, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{30 * s, next{}, "+600s"},
		}},
		{"earlier: removing the binding taint does not postpone", earlier, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 600), tolFor("y", 60))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x"), ne("y")}}, ""},
			{30 * s, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{30 * s, next{}, "+60s"},
		}},
		{"no longer tolerated: due now (every policy)", never, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 600))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{20 * s, setPod{pod("a", "n1", tolFor("z", 600))}, ""},
			{20 * s, due{}, "default/a@+20s:NotTolerated#1"},
		}},
		{"new untolerated taint: due now", never, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 600))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{20 * s, setTaints{"n1", []v1.Taint{ne("x"), ne("w")}}, ""},
			{20 * s, explain{"a"}, "Due@+20s w/untolerated"},
		}},
		{"already due stays at its time when another taint is not tolerated", never, []step{
			{0, setPod{pod("a", "n1")}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{20 * s, setTaints{"n1", []v1.Taint{ne("x"), ne("w")}}, ""},
			{20 * s, due{}, "default/a@+0s:NotTolerated#1"},
		}},
		{"forever → finite under never restarts from the change (upstream now + d)", never, []step{
			{0, setPod{pod("a", "n1", tolForever("x"))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{1000 * s, setPod{pod("a", "n1", tolFor("x", 300))}, ""},
			{1000 * s, next{}, "+1300s"},
		}},
		{"forever → finite under recompute counts from the taint", recompute, []step{
			{0, setPod{pod("a", "n1", tolForever("x"))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{1000 * s, setPod{pod("a", "n1", tolFor("x", 300))}, ""},
			{1000 * s, next{}, "+300s"},
			{1000 * s, due{}, "default/a@+300s:TolerationExpired#1"},
		}},
		{"recompute: a pod cannot stay by re-editing its tolerations", recompute, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 300))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{250 * s, setPod{pod("a", "n1", tolFor("x", 300), tolForever("unrelated"))}, ""},
			{250 * s, next{}, "+300s"},
		}},
		{"taint value change is a new taint", recompute, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 300))}, ""},
			{0, setTaints{"n1", []v1.Taint{withValue(ne("x"), "1")}}, ""},
			{100 * s, setTaints{"n1", []v1.Taint{withValue(ne("x"), "2")}}, ""},
			{100 * s, next{}, "+400s"},
		}},
		{"taint reordered or TimeAdded changed keeps its first sighting", recompute, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 300), tolForever("y"))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x"), ne("y")}}, ""},
			{100 * s, setTaints{"n1", []v1.Taint{ne("y"), added(ne("x"), 90*s)}}, ""},
			{100 * s, next{}, "+300s"},
		}},
		{"duplicate taints count once", never, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 300))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x"), ne("x"), ns("x")}}, ""},
			{0, explain{"a"}, "Scheduled@+300s x/300s from +0s"},
			{10 * s, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{10 * s, next{}, "+300s"},
		}},
		{"same key and effect, two values: both must be tolerated", never, []step{
			{0, setPod{pod("a", "n1", v1.Toleration{Key: "x", Value: "1", Effect: v1.TaintEffectNoExecute})}, ""},
			{0, setTaints{"n1", []v1.Taint{withValue(ne("x"), "1"), withValue(ne("x"), "2")}}, ""},
			{0, explain{"a"}, "Due@+0s x=2/untolerated"},
		}},
		{"pod moved: evaluated afresh on the new node", never, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 300))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{0, setTaints{"n2", []v1.Taint{ne("x")}}, ""},
			{100 * s, setPod{pod("a", "n2", tolFor("x", 300))}, ""},
			{100 * s, explain{"a"}, "Scheduled@+400s x/300s from +100s"},
			{200 * s, setPod{pod("a", "n3", tolFor("x", 300))}, ""},
			{200 * s, explain{"a"}, "NodeNotTainted"},
			{200 * s, next{}, "none"},
		}},
		{"delete pod cancels; delete node cancels", never, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 300))}, ""},
			{0, setPod{pod("b", "n1", tolFor("x", 300))}, ""},
			{0, setPod{pod("c", "n2", tolFor("x", 300))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{0, setTaints{"n2", []v1.Taint{ne("x")}}, ""},
			{1 * s, deletePod{"a"}, ""},
			{1 * s, explain{"a"}, "NotTracked"},
			{2 * s, deleteNode{"n1"}, ""},
			{2 * s, explain{"b"}, "NodeNotTainted"},
			{2 * s, deleteNode{"nope"}, ""},
			{400 * s, due{}, "default/c@+300s:TolerationExpired#1"},
			{400 * s, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{400 * s, explain{"b"}, "Scheduled@+700s x/300s from +400s"},
		}},
		{"bad pods: nil ignored, unbound forgotten", never, []step{
			{0, setPod{nil}, ""},
			{0, setPod{pod("a", "n1")}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{1 * s, setPod{pod("a", "")}, ""},
			{1 * s, explain{"a"}, "NotTracked"},
			{1 * s, next{}, "none"},
			{1 * s, setPod{pod("never-bound", "")}, ""},
			{1 * s, explain{"never-bound"}, "NotTracked"},
		}},
		{"Lt/Gt off by default", never, []step{
			{0, setPod{pod("a", "n1", v1.Toleration{Key: "gpu", Operator: v1.TolerationOpLt, Value: "10", Effect: v1.TaintEffectNoExecute})}, ""},
			{0, setTaints{"n1", []v1.Taint{withValue(ne("gpu"), "5")}}, ""},
			{0, explain{"a"}, "Due@+0s gpu=5/untolerated"},
		}},
		{"Lt/Gt on with ComparisonOperators", EvictorConfig{ComparisonOperators: true}, []step{
			{0, setPod{pod("a", "n1", v1.Toleration{Key: "gpu", Operator: v1.TolerationOpLt, Value: "10", Effect: v1.TaintEffectNoExecute})}, ""},
			{0, setTaints{"n1", []v1.Taint{withValue(ne("gpu"), "5")}}, ""},
			{0, explain{"a"}, "ToleratedForever gpu=5/forever"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.cfg, tt.steps) })
	}
}

// TestEvictorHandOut covers Due/Done/Retry and what happens to a handed-out
// eviction when its pod or node changes meanwhile: never lost, never
// duplicated.
func TestEvictorHandOut(t *testing.T) {
	tests := []struct {
		name  string
		cfg   EvictorConfig
		steps []step
	}{
		{"retry: due again after the delay, attempts counted", EvictorConfig{}, []step{
			{0, setPod{pod("a", "n1")}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{0, due{}, "default/a@+0s:NotTolerated#1"},
			{1 * s, retry{"a", 10 * s}, ""},
			{1 * s, explain{"a"}, "Retrying@+11s x/untolerated attempts=1"},
			{1 * s, next{}, "+11s"},
			{10 * s, due{}, ""},
			{11 * s, due{}, "default/a@+11s:NotTolerated#2"},
			{11 * s, retry{"a", -5 * s}, ""},
			{11 * s, due{}, "default/a@+11s:NotTolerated#3"},
			{12 * s, done{"a"}, ""},
			{12 * s, explain{"a"}, "Done x/untolerated attempts=2"},
		}},
		{"Done and Retry are no-ops unless handed out", EvictorConfig{}, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 300))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{1 * s, done{"a"}, ""},
			{1 * s, retry{"a", s}, ""},
			{1 * s, done{"nope"}, ""},
			{1 * s, explain{"a"}, "Scheduled@+300s x/300s from +0s"},
			{300 * s, due{}, "default/a@+300s:TolerationExpired#1"},
			{300 * s, done{"a"}, ""},
			{300 * s, retry{"a", s}, ""},
			{300 * s, explain{"a"}, "Done x/300s from +0s"},
		}},
		{"done pod is not evicted again while it keeps its UID", EvictorConfig{}, []step{
			{0, setPod{pod("a", "n1")}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{0, due{}, "default/a@+0s:NotTolerated#1"},
			{0, done{"a"}, ""},
			{1 * s, setPod{pod("a", "n1", tolFor("y", 1))}, ""},
			{2 * s, setTaints{"n1", []v1.Taint{ne("x"), ne("z")}}, ""},
			{3 * s, due{}, ""},
		}},
		{"pod updated while handed out: not handed out twice; Retry uses the new data", EvictorConfig{}, []step{
			{0, setPod{pod("a", "n1")}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{0, due{}, "default/a@+0s:NotTolerated#1"},
			{1 * s, setPod{pod("a", "n1", tolFor("q", 5))}, ""},
			{1 * s, setTaints{"n1", []v1.Taint{ne("x"), ne("y")}}, ""},
			{2 * s, due{}, ""},
			{2 * s, explain{"a"}, "HandedOut@+0s x/untolerated"},
			{3 * s, setPod{pod("a", "n1", tolForever(""))}, ""},
			{4 * s, retry{"a", s}, ""},
			{4 * s, explain{"a"}, "ToleratedForever x/forever"},
			{9 * s, due{}, ""},
		}},
		{"node untainted while handed out: Retry drops it", EvictorConfig{}, []step{
			{0, setPod{pod("a", "n1")}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{0, due{}, "default/a@+0s:NotTolerated#1"},
			{1 * s, setTaints{"n1", nil}, ""},
			{1 * s, explain{"a"}, "HandedOut@+0s"},
			{2 * s, retry{"a", s}, ""},
			{2 * s, explain{"a"}, "NodeNotTainted"},
			{2 * s, next{}, "none"},
		}},
		{"node deleted while handed out: Retry drops it", EvictorConfig{}, []step{
			{0, setPod{pod("a", "n1")}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{0, due{}, "default/a@+0s:NotTolerated#1"},
			{1 * s, deleteNode{"n1"}, ""},
			{2 * s, retry{"a", s}, ""},
			{2 * s, explain{"a"}, "NodeNotTainted"},
		}},
		{"pod deleted while handed out: forgotten, late Done/Retry no-ops", EvictorConfig{}, []step{
			{0, setPod{pod("a", "n1")}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{0, due{}, "default/a@+0s:NotTolerated#1"},
			{1 * s, deletePod{"a"}, ""},
			{2 * s, retry{"a", s}, ""},
			{2 * s, done{"a"}, ""},
			{2 * s, explain{"a"}, "NotTracked"},
			{9 * s, due{}, ""},
		}},
		{"pod moved while handed out: Retry evaluates the new node", EvictorConfig{}, []step{
			{0, setPod{pod("a", "n1")}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{0, due{}, "default/a@+0s:NotTolerated#1"},
			{1 * s, setPod{pod("a", "n2")}, ""},
			{1 * s, explain{"a"}, "HandedOut@+0s"},
			{2 * s, retry{"a", s}, ""},
			{2 * s, explain{"a"}, "NodeNotTainted"},
		}},
		{"retry backoff kept when another untolerated taint appears", EvictorConfig{}, []step{
			{0, setPod{pod("a", "n1")}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{0, due{}, "default/a@+0s:NotTolerated#1"},
			{0, retry{"a", 30 * s}, ""},
			{5 * s, setTaints{"n1", []v1.Taint{ne("x"), ne("y")}}, ""},
			{5 * s, next{}, "+30s"},
		}},
		{"retrying eviction cancelled when tolerated forever", EvictorConfig{}, []step{
			{0, setPod{pod("a", "n1")}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{0, due{}, "default/a@+0s:NotTolerated#1"},
			{0, retry{"a", 30 * s}, ""},
			{5 * s, setPod{pod("a", "n1", tolForever("x"))}, ""},
			{5 * s, next{}, "none"},
			{5 * s, explain{"a"}, "ToleratedForever x/forever"},
		}},
		{"recompute: Retry waits for a lengthened toleration", EvictorConfig{Reschedule: RescheduleRecompute}, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 10))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{10 * s, due{}, "default/a@+10s:TolerationExpired#1"},
			{11 * s, setPod{pod("a", "n1", tolFor("x", 100))}, ""},
			{12 * s, retry{"a", s}, ""},
			{12 * s, next{}, "+100s"},
		}},
		{"recompute: Retry of a no-longer-untolerated pod waits, as TolerationExpired", EvictorConfig{Reschedule: RescheduleRecompute}, []step{
			{0, setPod{pod("a", "n1")}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{0, due{}, "default/a@+0s:NotTolerated#1"},
			{1 * s, setPod{pod("a", "n1", tolFor("x", 100))}, ""},
			{2 * s, retry{"a", s}, ""},
			{2 * s, explain{"a"}, "Retrying@+100s x/100s from +0s attempts=1"},
			{100 * s, due{}, "default/a@+100s:TolerationExpired#2"},
		}},
		{"never: Retry ignores a lengthened toleration", EvictorConfig{}, []step{
			{0, setPod{pod("a", "n1", tolFor("x", 10))}, ""},
			{0, setTaints{"n1", []v1.Taint{ne("x")}}, ""},
			{10 * s, due{}, "default/a@+10s:TolerationExpired#1"},
			{11 * s, setPod{pod("a", "n1", tolFor("x", 100))}, ""},
			{12 * s, retry{"a", s}, ""},
			{12 * s, next{}, "+13s"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.cfg, tt.steps) })
	}
}

func TestUseTaintTimeAdded(t *testing.T) {
	cfg := EvictorConfig{UseTaintTimeAdded: true}
	created := func(p *v1.Pod, d time.Duration) *v1.Pod {
		p.CreationTimestamp = *testutil.MetaTime(testutil.At(d))
		return p
	}
	runSteps(t, cfg, []step{
		// The taint was added at +0s, the pod created before it: +300s.
		{100 * s, setPod{created(pod("a", "n1", tolFor("x", 300)), -time.Hour)}, ""},
		// A pod created after the taint counts from its creation.
		{100 * s, setPod{created(pod("b", "n1", tolFor("x", 300)), 50*s)}, ""},
		// No creationTimestamp: from its first sighting.
		{100 * s, setPod{pod("c", "n1", tolFor("x", 300))}, ""},
		// A creationTimestamp in the future: from its first sighting.
		{100 * s, setPod{created(pod("d", "n1", tolFor("x", 300)), time.Hour)}, ""},
		{100 * s, setTaints{"n1", []v1.Taint{added(ne("x"), 0)}}, ""},
		{100 * s, explain{"a"}, "Scheduled@+300s x/300s from +0s"},
		{100 * s, explain{"b"}, "Scheduled@+350s x/300s from +50s"},
		{100 * s, explain{"c"}, "Scheduled@+400s x/300s from +100s"},
		{100 * s, explain{"d"}, "Scheduled@+400s x/300s from +100s"},
		// A TimeAdded in the future counts from the first sighting.
		{100 * s, setPod{created(pod("e", "n2", tolFor("y", 300), tolForever("z")), 0)}, ""},
		{100 * s, setTaints{"n2", []v1.Taint{added(ne("y"), time.Hour)}}, ""},
		{100 * s, explain{"e"}, "Scheduled@+400s y/300s from +100s"},
		// No TimeAdded: the first sighting.
		{200 * s, setTaints{"n2", []v1.Taint{added(ne("y"), time.Hour), ne("z")}}, ""},
		{200 * s, setPod{created(pod("f", "n2", tolFor("y", 300), tolFor("z", 150)), 0)}, ""},
		{200 * s, explain{"f"}, "Scheduled@+350s z/150s from +200s"},
		// Toleration edits do not restart the countdown.
		{250 * s, setPod{created(pod("a", "n1", tolFor("x", 301)), -time.Hour)}, ""},
		{300 * s, due{}, "default/a@+300s:TolerationExpired#1"},
	})
}

func TestExplanationString(t *testing.T) {
	e, _ := NewEvictor(EvictorConfig{})
	now := testutil.At(0)
	e.SetPod(now, pod("a", "n1", tolFor(unreachable, 300)))
	e.SetPod(now, pod("b", "n1"))
	e.SetPod(now, pod("c", "n1", tolForever("")))
	e.SetPod(now, pod("d", "n2"))
	e.SetNodeTaints(now, "n1", []v1.Taint{ne(unreachable)})
	tests := []struct {
		name string
		at   time.Duration
		do   func(now time.Time)
		want string
	}{
		{"a", 0, nil, "pod default/a on node n1: evicted at 2026-01-01T00:05:00Z (TolerationExpired); taint node.kubernetes.io/unreachable:NoExecute tolerated for 300s by Exists node.kubernetes.io/unreachable:NoExecute from 2026-01-01T00:00:00Z"},
		{"b", 0, nil, "pod default/b on node n1: due since 2026-01-01T00:00:00Z (NotTolerated); taint node.kubernetes.io/unreachable:NoExecute is not tolerated"},
		{"c", 0, nil, "pod default/c on node n1: not evicted: every NoExecute taint is tolerated forever; taint node.kubernetes.io/unreachable:NoExecute tolerated forever by Exists *:NoExecute"},
		{"d", 0, nil, "pod default/d on node n2: not evicted: the node has no NoExecute taint"},
		{"zz", 0, nil, "pod default/zz: not tracked"},
		{"b", 1, func(now time.Time) { e.Due(now) }, "pod default/b on node n1: being deleted (due 2026-01-01T00:00:00Z, NotTolerated); taint node.kubernetes.io/unreachable:NoExecute is not tolerated"},
		{"b", 2, func(now time.Time) { e.Retry(now, key("b"), time.Minute) }, "pod default/b on node n1: deletion failed 1 time(s), retry at 2026-01-01T00:01:02Z; taint node.kubernetes.io/unreachable:NoExecute is not tolerated"},
		{"b", 62, func(now time.Time) { e.Due(now); e.Done(key("b")) }, "pod default/b on node n1: evicted (NotTolerated), waiting for the pod to go away; taint node.kubernetes.io/unreachable:NoExecute is not tolerated"},
	}
	for _, tt := range tests {
		now := testutil.At(tt.at * time.Second)
		if tt.do != nil {
			tt.do(now)
		}
		if got := e.Explain(now, key(tt.name)).String(); got != tt.want {
			t.Errorf("Explain(+%ds, %s).String() =\n  %q, want\n  %q", tt.at, tt.name, got, tt.want)
		}
	}
	if got := (Explanation{State: 42, Pod: key("q")}).String(); got != "pod default/q: EvictionState(42)" {
		t.Errorf("String() of an unknown state = %q", got)
	}
}

func TestExplainCopiesAndDoesNotAdvance(t *testing.T) {
	e, _ := NewEvictor(EvictorConfig{})
	e.SetPod(testutil.At(0), pod("a", "n1", tolFor("x", 300)))
	e.SetNodeTaints(testutil.At(0), "n1", []v1.Taint{added(ne("x"), 0)})
	x := e.Explain(testutil.At(time.Hour), key("a"))
	if x.State != EvictionDue {
		t.Fatalf("Explain(+1h) state = %v, want Due", x.State)
	}
	*x.Toleration.TolerationSeconds = 1
	x.Taint.TimeAdded.Time = testutil.At(time.Hour)
	x.Taint.Key = "mutated"
	if y := e.Explain(testutil.At(0), key("a")); y.State != EvictionScheduled || y.Taint.Key != "x" ||
		*y.Toleration.TolerationSeconds != 300 || !y.Taint.TimeAdded.Time.Equal(testutil.Epoch) {
		t.Errorf("Explain after mutating a previous result = %+v (state %v)", y, y.State)
	}
}

func TestSetPodDoesNotKeepInputs(t *testing.T) {
	e, _ := NewEvictor(EvictorConfig{})
	p := pod("a", "n1", tolFor("x", 300))
	taints := []v1.Taint{ne("x")}
	e.SetPod(testutil.At(0), p)
	e.SetNodeTaints(testutil.At(0), "n1", taints)
	before := p.DeepCopy()
	*p.Spec.Tolerations[0].TolerationSeconds = 1
	p.Spec.Tolerations[0].Key = "other"
	taints[0].Key = "other"
	if at, _ := e.NextDeadline(); !at.Equal(testutil.At(300 * time.Second)) {
		t.Errorf("NextDeadline after mutating inputs = %v", rel(at))
	}
	e.SetPod(testutil.At(1), before)
	if e.Len() != 1 {
		t.Errorf("Len() = %d, want 1", e.Len())
	}
}

func TestEvictorSteadyStateAllocatesNothing(t *testing.T) {
	e, _ := NewEvictor(EvictorConfig{})
	now := testutil.At(0)
	pods := make([]*v1.Pod, 30)
	for i := range pods {
		pods[i] = testutil.WithTolerations(testutil.Pod("ns", "p"+string(rune('a'+i)), "n1"),
			WithDefaultTolerations(nil, DefaultTolerationTime, DefaultTolerationTime)...)
		e.SetPod(now, pods[i])
	}
	node := testutil.WithTaints(testutil.Node("n1", now), ns("a"), added(ne(unreachable), 0), ne("x"), ne(unreachable))
	e.SetPod(now, testutil.Pod("ns", "tolerant", "n1"))
	e.SetNodeTaints(now, "n1", node.Spec.Taints)
	e.Due(now)
	later := testutil.At(10 * time.Second)
	checks := []struct {
		name string
		fn   func()
	}{
		{"SetPod(unchanged)", func() { e.SetPod(later, pods[7]) }},
		{"SetNodeTaints(unchanged)", func() { e.SetNodeTaints(later, "n1", node.Spec.Taints) }},
		{"Due(nothing due)", func() { e.Due(later) }},
		{"NextDeadline()", func() { e.NextDeadline() }},
		{"Done/Retry(not handed out)", func() { e.Done(key("x")); e.Retry(later, key("x"), 0) }},
		{"DoneEviction/RetryEviction(not handed out)", func() {
			e.DoneEviction(Eviction{Pod: key("x")})
			e.RetryEviction(later, Eviction{Pod: key("x")}, 0)
		}},
	}
	for _, c := range checks {
		if n := testing.AllocsPerRun(100, c.fn); n != 0 {
			t.Errorf("%s allocates %v times, want 0", c.name, n)
		}
	}
}

func TestEvictorConcurrentUse(t *testing.T) {
	e, _ := NewEvictor(EvictorConfig{Reschedule: RescheduleEarlier})
	done := make(chan struct{})
	for w := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				now := testutil.At(time.Duration(i) * time.Second)
				name := string(rune('a' + (i+w)%5))
				node := "n" + string(rune('0'+w%2))
				switch i % 5 {
				case 0:
					e.SetPod(now, pod(name, node, tolFor("x", int64(i%7))))
				case 1:
					e.SetNodeTaints(now, node, []v1.Taint{ne("x"), ne(name)})
				case 2:
					for _, x := range e.Due(now) {
						switch i % 4 {
						case 0:
							e.Done(x.Pod)
						case 1:
							e.Retry(now, x.Pod, time.Second)
						case 2:
							e.DoneEviction(x)
						default:
							e.RetryEviction(now, x, time.Second)
						}
					}
				case 3:
					_ = e.Explain(now, key(name)).String()
					e.NextDeadline()
				case 4:
					e.DeletePod(key(name))
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	if msg := e.check(); msg != "" {
		t.Fatal(msg)
	}
}
