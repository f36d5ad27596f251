package sim

import (
	"context"
	"strings"
	"testing"
)

// TestSweepGridOrderFree: fields that constrain each other (the breaker's
// resume level may not exceed its max share) sweep in either order; each
// run is validated with all of its values set, never half-way.
func TestSweepGridOrderFree(t *testing.T) {
	sc := loadEmbedded(t, "xid-storm")
	for _, order := range [][]SweepField{
		{{Field: "deviceMaxShare", Values: []string{"0.05"}}, {Field: "deviceResumeShare", Values: []string{"0", "0.05"}}},
		{{Field: "deviceResumeShare", Values: []string{"0", "0.05"}}, {Field: "deviceMaxShare", Values: []string{"0.05"}}},
	} {
		if _, err := gridSize(sc, order); err != nil {
			t.Fatal(err)
		}
		names := []string{order[0].Field, order[1].Field}
		for _, v := range order[0].Values {
			for _, w := range order[1].Values {
				s, err := sc.withAll(names, []string{v, w})
				if err != nil {
					t.Fatalf("withAll(%v, [%s %s]) = %v, want a valid scenario", names, v, w, err)
				}
				if s.Policy.DeviceMaxShare != 0.05 {
					t.Errorf("withAll(%v, [%s %s]): DeviceMaxShare = %v, want 0.05", names, v, w, s.Policy.DeviceMaxShare)
				}
			}
		}
	}
	// The sweep itself, resume level first.
	runs, err := SweepGrid(context.Background(), sc, []SweepField{
		{Field: "deviceResumeShare", Values: []string{"0", "0.05"}},
		{Field: "deviceMaxShare", Values: []string{"0.05"}},
	}, Options{}, 1)
	if err != nil {
		t.Fatalf("SweepGrid(deviceResumeShare first) = %v, want 2 runs", err)
	}
	for _, r := range runs {
		if r.Err != nil {
			t.Errorf("run %s: %v", r.Value, r.Err)
		}
	}
	// One field alone is still validated at once: a resume level above the
	// max share (0 by default) is refused, naming the field.
	if _, err := sc.With("deviceResumeShare", "0.05"); err == nil || !strings.Contains(err.Error(), "deviceResumeShare") {
		t.Errorf("With(deviceResumeShare, 0.05) = %v, want an error naming deviceResumeShare", err)
	}
}
