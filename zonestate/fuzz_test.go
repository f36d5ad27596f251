package zonestate

import (
	"math"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// FuzzKey checks Key against the label rules of upstream GetZoneKey (k8s.io/component-helpers/node/topology) for any label
// values and any subset of the four labels present.
func FuzzKey(f *testing.F) {
	f.Add("z-beta", "z-ga", "r-beta", "r-ga", uint8(0xf))
	f.Add("", "z-ga", "", "r-ga", uint8(0xf))
	f.Add("", "z", "", "r", uint8(0xa))
	f.Add("a:b", "", "c", "", uint8(0x5))
	f.Add("", "", "", "", uint8(0))
	f.Fuzz(func(t *testing.T, bz, gz, br, gr string, present uint8) {
		labels := map[string]string{}
		for i, kv := range []struct{ k, v string }{{betaZone, bz}, {gaZone, gz}, {betaRegion, br}, {gaRegion, gr}} {
			if present&(1<<i) != 0 {
				labels[kv.k] = kv.v
			}
		}
		zone, region := gz, gr
		if present&1 != 0 {
			zone = bz
		} else if present&2 == 0 {
			zone = ""
		}
		if present&4 != 0 {
			region = br
		} else if present&8 == 0 {
			region = ""
		}
		want := ""
		if region != "" || zone != "" {
			want = region + ":\x00:" + zone
		}
		got := Key(labelled(labels))
		if got != want {
			t.Fatalf("Key(%q) = %q, want %q", labels, got, want)
		}
		if got != "" && !strings.Contains(got, ":\x00:") {
			t.Fatalf("Key(%q) = %q, has no separator", labels, got)
		}
	})
}

// FuzzCompute checks Compute against the reference over arbitrary status
// patterns and thresholds (any float64 bits, NaN and infinities included).
func FuzzCompute(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, 0.55)
	f.Add([]byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, 0.55)
	f.Add([]byte{}, 0.0)
	f.Add([]byte{3, 3, 3, 1}, math.NaN())
	f.Add([]byte{2, 2, 2, 1, 1, 1, 1}, -1.0)
	f.Fuzz(func(t *testing.T, pattern []byte, threshold float64) {
		pool := []*v1.NodeCondition{nil, condTrue, condFalse, condUnknown}
		zone := make([]*v1.NodeCondition, len(pattern))
		for i, b := range pattern {
			zone[i] = pool[b%4]
		}
		gotN, got := Compute(zone, threshold)
		wantN, want := referenceCompute(zone, threshold)
		if gotN != wantN || got != want {
			t.Fatalf("Compute(%v, %v) = %d, %v, want %d, %v", pattern, threshold, gotN, got, wantN, want)
		}
		if got == StateInitial || gotN < 0 || gotN > len(zone) {
			t.Fatalf("Compute(%v, %v) = %d, %v: out of range", pattern, threshold, gotN, got)
		}
	})
}

// FuzzUpdateSequence decodes a byte string into a sequence of Updates and
// compares the Tracker with the reference model at every step. Per step: one
// byte says which of four zones are present (low 4 bits) and whether the
// policy's FullDisruptionQPS is used (bit 4) or HoldFullyDisruptedZones
// (bit 5, which wins), both read from the first byte only;
// then, per present zone, a size byte and a health byte.
func FuzzUpdateSequence(f *testing.F) {
	f.Add([]byte{0x01, 4, 0})                                // bootstrap-like: one zone, all nil
	f.Add([]byte{0x01, 4, 0, 0x01, 4, 0xc1})                 // then some Ready
	f.Add([]byte{0x13, 3, 0, 3, 0xff, 0x03, 3, 0, 3, 0})     // two zones, one dies
	f.Add([]byte{0x0f, 60, 0x80, 5, 0, 1, 0xff, 2, 3, 0x00}) // large partial zone, removal next
	f.Add([]byte{0x03, 2, 0, 2, 0, 0x00, 0x02, 2, 0xff})     // empty pass during full disruption
	f.Add([]byte{0x23, 3, 0, 3, 0xff, 0x03, 3, 0, 3, 0})     // two zones, one dies, held
	f.Fuzz(func(t *testing.T, data []byte) {
		p := DefaultPolicy()
		if len(data) > 0 && data[0]&0x10 != 0 {
			p.FullDisruptionQPS = ptr(0.02)
		}
		if len(data) > 0 && data[0]&0x20 != 0 {
			p.FullDisruptionQPS, p.HoldFullyDisruptedZones = nil, true
		}
		tr, err := NewTracker(p)
		if err != nil {
			t.Fatal(err)
		}
		m := newModel(p)
		pool := []*v1.NodeCondition{nil, condFalse, condUnknown}
		for step := 0; len(data) > 0 && step < 64; step++ {
			mask := data[0]
			data = data[1:]
			zones := map[string][]*v1.NodeCondition{}
			for i, k := range modelKeys {
				if mask&(1<<i) == 0 {
					continue
				}
				if len(data) < 2 {
					data = nil
					break
				}
				size, health := int(data[0]%70), data[1]
				data = data[2:]
				c := make([]*v1.NodeCondition, size)
				for j := range c {
					// health/255 of the nodes are Ready, spread over the zone.
					if (j*255)/max(size, 1) < int(health) {
						c[j] = condTrue
					} else {
						c[j] = pool[j%3]
					}
				}
				zones[k] = c
			}
			got, want := tr.Update(zones), m.update(zones)
			if !decisionEqual(got, want) || got.UndecidedQPS != want.UndecidedQPS {
				t.Fatalf("step %d: Update(%s) =\n\t%s\nwant (model)\n\t%s", step, fmtZones(zones), fmtDecision(got), fmtDecision(want))
			}
			if err := checkInvariants(got); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	})
}
