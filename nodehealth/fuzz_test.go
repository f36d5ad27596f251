package nodehealth

import (
	"testing"
	"time"
)

// FuzzOrphanTracker runs fuzzed answer sequences for one node and checks the
// deletion rules against a running tally kept by the test:
//   - a Ready node is never deleted;
//   - Delete only with Confirmations NotFound answers since the last reset
//     spanning MinNotFoundAge;
//   - Unknown answers back off within [0, MaxUnknownBackoff], doubling from
//     UnknownBackoff.
func FuzzOrphanTracker(f *testing.F) {
	f.Add(uint8(2), uint8(10), []byte{2, 2, 2, 0, 0, 1, 2, 2})
	f.Add(uint8(1), uint8(0), []byte{2})
	f.Add(uint8(3), uint8(5), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 0x22, 0x32, 0x42})
	f.Fuzz(func(t *testing.T, conf, age uint8, ops []byte) {
		p := OrphanPolicy{
			Confirmations:     int(conf%4) + 1,
			MinNotFoundAge:    time.Duration(age%60) * time.Second,
			UnknownBackoff:    3 * time.Second,
			MaxUnknownBackoff: 40 * time.Second,
		}
		o, err := NewOrphanTracker(p)
		if err != nil {
			t.Fatal(err)
		}
		now := sec(0)
		count, streak := 0, 0
		var first time.Time
		for _, b := range ops {
			now = now.Add(time.Duration(b>>4) * time.Second)
			e := Existence(b % 4) // 3 is out of range: Unknown
			ready := b&0x08 != 0
			n := readyNode("n", U, 0, 0)
			if ready {
				n = readyNode("n", T, 0, 0)
			}
			d := o.Observe(now, n, e)
			switch {
			case ready:
				count, streak = 0, 0
				if d.Delete || d.Reason != OrphanNodeReady {
					t.Fatalf("Observe(Ready, %v) = %s", e, orphanSummary(d))
				}
			case e == ExistenceExists:
				count, streak = 0, 0
				if d.Delete || d.Reason != OrphanExists {
					t.Fatalf("Observe(NotReady, Exists) = %s", orphanSummary(d))
				}
			case e == ExistenceNotFound:
				streak = 0
				if count == 0 {
					first = now
				}
				count++
				want := count >= p.Confirmations && now.Sub(first) >= p.MinNotFoundAge
				if d.Delete != want || d.NotFound != count {
					t.Fatalf("Observe(NotReady, NotFound) #%d since %s at %s = %s, want delete %v",
						count, rel(first), rel(now), orphanSummary(d), want)
				}
			default:
				streak++
				want := p.UnknownBackoff << (streak - 1)
				if streak > 8 || want > p.MaxUnknownBackoff {
					want = p.MaxUnknownBackoff
				}
				if d.Delete || d.Reason != OrphanCloudUnknown || d.NextCheck.Sub(now) != want || d.NotFound != count {
					t.Fatalf("Unknown #%d at %s = %s, want backoff %v", streak, rel(now), orphanSummary(d), want)
				}
			}
		}
	})
}
