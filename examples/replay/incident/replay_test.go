package incident

import (
	"context"
	"testing"
	"time"
)

func TestProbe(t *testing.T) {
	g := &gen{nodes: 3, podsPerNode: 2, duration: 8 * time.Minute, stop: "n1", stopAt: 60 * time.Second}
	evs := g.build()
	h, err := Inventory(SliceSource(evs), Options{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := Replay(context.Background(), h, SliceSource(evs), ReplayOptions{Policy: DefaultPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range run.Replayed {
		t.Logf("%v %s %s %s %s", d.Time.Sub(epoch), d.Kind, d.Node, d.Pod, d.Detail)
	}
}
