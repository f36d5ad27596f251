package taints

import (
	"fmt"
	"strings"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// warnSlice is slice "s" of driver d1, pool p1, generation gen, with
// devices a and b carrying the given taints.
func warnSlice(gen int64, a, b []resourcev1.DeviceTaint) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	s.Spec.Driver, s.Spec.Pool.Name, s.Spec.Pool.Generation = "d1", "p1", gen
	s.Spec.Devices = []resourcev1.Device{{Name: "a", Taints: a}, {Name: "b", Taints: b}}
	return s
}

func wt(key string, effect resourcev1.DeviceTaintEffect, at time.Duration) resourcev1.DeviceTaint {
	return resourcev1.DeviceTaint{Key: key, Effect: effect, TimeAdded: uMT(limT0.Add(at))}
}

func ts(t ...resourcev1.DeviceTaint) []resourcev1.DeviceTaint { return t }

func warnString(w DeviceWarning) string {
	return fmt.Sprintf("%s %s", w.Kind.Reason(), w.Message())
}

const (
	noExec   = resourcev1.DeviceTaintEffectNoExecute
	noSched  = resourcev1.DeviceTaintEffectNoSchedule
	noEffect = resourcev1.DeviceTaintEffectNone
)

func TestDeviceWarningsSlices(t *testing.T) {
	for name, tt := range map[string]struct {
		slices []*resourcev1.ResourceSlice // fed one a second from limT0
		want   []string
	}{
		"republished without the old TimeAdded": {
			slices: l(warnSlice(0, ts(wt("k", noExec, 0)), ts(wt("k", noExec, 0))), warnSlice(0, ts(wt("k", noExec, 5*time.Second)), ts(wt("k", noExec, 5*time.Second)))),
			want: l("DeviceTaintTimeAddedReset ResourceSlice s device d1/p1/a: taint k:NoExecute TimeAdded moved from 2026-01-01T00:00:00Z to 2026-01-01T00:00:05Z" +
				" (and 1 more taint of the slice): its eviction countdowns restart."),
		},
		"same TimeAdded": {
			slices: l(warnSlice(0, ts(wt("k", noExec, 0)), nil), warnSlice(0, ts(wt("k", noExec, 0), wt("k2", noExec, 0)), nil)),
		},
		"TimeAdded moved earlier": {
			slices: l(warnSlice(0, ts(wt("k", noExec, 5*time.Second)), nil), warnSlice(0, ts(wt("k", noExec, 0)), nil)),
		},
		"new generation without the old TimeAdded": {
			slices: l(warnSlice(0, ts(wt("k", noExec, 0)), nil), warnSlice(1, ts(wt("k", noExec, 9*time.Second)), nil)),
			want:   l("DeviceTaintTimeAddedReset ResourceSlice s device d1/p1/a: taint k:NoExecute TimeAdded moved from 2026-01-01T00:00:00Z to 2026-01-01T00:00:09Z: its eviction countdowns restart."),
		},
		"escalated keeping TimeAdded": {
			slices: l(warnSlice(0, nil, ts(wt("k", noSched, 0))), warnSlice(0, nil, ts(wt("k", noExec, 0)))),
			want: l("DeviceTaintEscalatedWithOldTimeAdded ResourceSlice s device d1/p1/b: taint k:NoExecute escalated from NoSchedule keeping TimeAdded 2026-01-01T00:00:00Z" +
				": pods that do not tolerate it are evicted at once, not after their TolerationSeconds."),
		},
		"escalated from None, both devices": {
			slices: l(warnSlice(0, ts(wt("k", noEffect, 0)), ts(wt("k", noEffect, 0))), warnSlice(0, ts(wt("k", noExec, 0)), ts(wt("k", noExec, -time.Second)))),
			want: l("DeviceTaintEscalatedWithOldTimeAdded ResourceSlice s device d1/p1/a: taint k:NoExecute escalated from None keeping TimeAdded 2026-01-01T00:00:00Z" +
				" (and 1 more taint of the slice): pods that do not tolerate it are evicted at once, not after their TolerationSeconds."),
		},
		"escalated with a new TimeAdded": {
			slices: l(warnSlice(0, ts(wt("k", noSched, 0)), nil), warnSlice(0, ts(wt("k", noExec, time.Second)), nil)),
		},
		"escalated: the NoSchedule taint came in an update that changed no NoExecute taint": {
			slices: l(warnSlice(0, nil, nil), warnSlice(0, ts(wt("k", noSched, 0)), nil), warnSlice(0, ts(wt("k", noExec, 0)), nil)),
			want: l("DeviceTaintEscalatedWithOldTimeAdded ResourceSlice s device d1/p1/a: taint k:NoExecute escalated from NoSchedule keeping TimeAdded 2026-01-01T00:00:00Z" +
				": pods that do not tolerate it are evicted at once, not after their TolerationSeconds."),
		},
		"another key": {
			slices: l(warnSlice(0, ts(wt("k", noSched, 0)), nil), warnSlice(0, ts(wt("other", noExec, 0)), nil)),
		},
		"both hazards in one update": {
			slices: l(warnSlice(0, ts(wt("k", noExec, 0)), ts(wt("k", noSched, 0))), warnSlice(0, ts(wt("k", noExec, time.Minute)), ts(wt("k", noExec, 0)))),
			want: l("DeviceTaintTimeAddedReset ResourceSlice s device d1/p1/a: taint k:NoExecute TimeAdded moved from 2026-01-01T00:00:00Z to 2026-01-01T00:01:00Z: its eviction countdowns restart.",
				"DeviceTaintEscalatedWithOldTimeAdded ResourceSlice s device d1/p1/b: taint k:NoExecute escalated from NoSchedule keeping TimeAdded 2026-01-01T00:00:00Z"+
					": pods that do not tolerate it are evicted at once, not after their TolerationSeconds."),
		},
		"an older generation is ignored": {
			slices: l(warnSlice(2, ts(wt("k", noExec, 0)), nil), func() *resourcev1.ResourceSlice {
				s := warnSlice(1, ts(wt("k", noExec, time.Minute)), nil)
				s.Name = "s-old"
				return s
			}()),
		},
		"first sighting": {
			slices: l(warnSlice(0, ts(wt("k", noExec, -time.Hour)), nil)),
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultDeviceEvictorConfig()
			cfg.KeepWarnings = 16
			d, err := NewDeviceEvictor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.slices {
				if err := d.SetSlice(limT0.Add(time.Duration(i)*time.Second), s); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, w := range d.AppendWarnings(nil) {
				got = append(got, warnString(w))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("AppendWarnings =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestDeviceWarningsRules(t *testing.T) {
	pool := "p1"
	rule := func(uid string, sel *DeviceTaintSelector, effect resourcev1.DeviceTaintEffect, at time.Duration) DeviceTaintRule {
		return DeviceTaintRule{Name: "r", UID: typesUID(uid), Selector: sel, Taint: wt("k", effect, at)}
	}
	all := &DeviceTaintSelector{}
	some := &DeviceTaintSelector{Pool: &pool}
	for name, tt := range map[string]struct {
		rules []DeviceTaintRule
		want  []string
	}{
		"empty selector": {
			rules: l(rule("1", all, noEffect, 0)),
			want:  l("DeviceTaintRuleSelectsAll DeviceTaintRule r: empty device selector selects every device in the cluster (taint k:None)."),
		},
		"empty selector, effect escalated with a new TimeAdded": {
			rules: l(rule("1", all, noEffect, 0), rule("1", all, noEffect, 0), rule("1", all, noExec, time.Minute)),
			want: l("DeviceTaintRuleSelectsAll DeviceTaintRule r: empty device selector selects every device in the cluster (taint k:None).",
				"DeviceTaintRuleSelectsAll DeviceTaintRule r: empty device selector selects every device in the cluster (taint k:NoExecute)."),
		},
		"nil selector selects nothing": {rules: l(rule("1", nil, noExec, 0))},
		"a pool":                       {rules: l(rule("1", some, noExec, 0))},
		"escalated keeping TimeAdded": {
			rules: l(rule("1", some, noEffect, 0), rule("1", some, noExec, 0)),
			want: l("DeviceTaintEscalatedWithOldTimeAdded DeviceTaintRule r: taint k:NoExecute escalated from None keeping TimeAdded 2026-01-01T00:00:00Z" +
				": pods that do not tolerate it are evicted at once, not after their TolerationSeconds."),
		},
		"escalated with the API server's new TimeAdded": {
			rules: l(rule("1", some, noEffect, 0), rule("1", some, noExec, time.Minute)),
		},
		"TimeAdded moved later": {
			rules: l(rule("1", some, noExec, 0), rule("1", some, noExec, time.Minute)),
			want:  l("DeviceTaintTimeAddedReset DeviceTaintRule r: taint k:NoExecute TimeAdded moved from 2026-01-01T00:00:00Z to 2026-01-01T00:01:00Z: its eviction countdowns restart."),
		},
		"recreated (new UID)": {
			rules: l(rule("1", some, noEffect, 0), rule("2", some, noExec, 0)),
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultDeviceEvictorConfig()
			cfg.KeepWarnings = 16
			d, err := NewDeviceEvictor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range tt.rules {
				r.Generation = int64(i + 1)
				d.SetRule(limT0.Add(time.Duration(i)*time.Second), r)
			}
			var got []string
			for _, w := range d.AppendWarnings(nil) {
				got = append(got, warnString(w))
				if w.Rule != "r" || w.RuleUID == "" {
					t.Errorf("warning names rule %q %q", w.Rule, w.RuleUID)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("AppendWarnings =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestDeviceWarningsBound(t *testing.T) {
	for _, tt := range []struct {
		keep, kept int
		dropped    uint64
	}{{0, 0, 0}, {1, 1, 2}, {16, 3, 0}} {
		cfg := DefaultDeviceEvictorConfig()
		cfg.KeepWarnings = tt.keep
		d, err := NewDeviceEvictor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			d.SetRule(limT0, DeviceTaintRule{Name: fmt.Sprint("r", i), UID: "u", Selector: &DeviceTaintSelector{}, Taint: wt("k", noExec, 0)})
		}
		if got := d.AppendWarnings(nil); len(got) != tt.kept || d.WarningsDropped() != tt.dropped {
			t.Errorf("KeepWarnings %d: %d warnings, %d dropped; want %d, %d", tt.keep, len(got), d.WarningsDropped(), tt.kept, tt.dropped)
		}
		if got := d.AppendWarnings(nil); len(got) != 0 {
			t.Errorf("KeepWarnings %d: AppendWarnings again = %d, want 0", tt.keep, len(got))
		}
	}
}

// TestDeviceWarningTimeAddedResetRestarts shows the hazard is real: a
// countdown restarts when the slice comes back with a later TimeAdded.
func TestDeviceWarningTimeAddedResetRestarts(t *testing.T) {
	tol := resourcev1.DeviceToleration{Operator: resourcev1.DeviceTolerationOpExists, Effect: noExec, TolerationSeconds: uPtr(int64(60))}
	cfg := DefaultDeviceEvictorConfig()
	cfg.KeepWarnings = 4
	l := newLim(t, cfg)
	l.pool("gpu", "a", 1, 1, tol)
	runLim(t, l, []limStep{
		{0, "taint", do(func(l *lim) { l.taint("a", 1, noExecute(limT0)) }), ""},
		{0, "Explain", func(l *lim) string { return l.explain("p-a-0") }, "Scheduled +1m0s"},
		{50 * time.Second, "republish with TimeAdded now", do(func(l *lim) { l.taint("a", 1, noExecute(limT0.Add(50*time.Second))) }), ""},
		{50 * time.Second, "Explain", func(l *lim) string { return l.explain("p-a-0") }, "Scheduled +1m50s"},
		{50 * time.Second, "warnings", func(l *lim) string {
			var out []string
			for _, w := range l.d.AppendWarnings(nil) {
				out = append(out, w.Kind.String()+" "+w.Slice+" "+w.Device+" "+w.At.Sub(limT0).String())
			}
			return strings.Join(out, "; ")
		}, "TimeAddedReset gpu-a dev-0 50s"},
	})
}

func typesUID(s string) types.UID { return types.UID(s) }
