package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestApplyGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		env     string
		set     bool
		wantErr bool
		want    int // the GC percent after; -2: unchanged (the runtime's own)
	}{
		{"", false, false, defaultGOGC},
		{"50", true, false, -2},
		{"0", true, false, -2},
		{"off", true, false, -2},
		{"fifty", true, true, -2},
		{"-5", true, true, -2},
		{"", true, false, defaultGOGC},
	} {
		debug.SetGCPercent(100)
		err := applyGOGC(func(k string) (string, bool) {
			if k != "GOGC" {
				t.Fatalf("looked up %q", k)
			}
			return tc.env, tc.set
		})
		if (err != nil) != tc.wantErr || err != nil && !strings.Contains(err.Error(), "GOGC") {
			t.Errorf("GOGC=%q (set %v): error %v, want error %v naming GOGC", tc.env, tc.set, err, tc.wantErr)
		}
		got := debug.SetGCPercent(100)
		want := tc.want
		if want == -2 {
			want = 100
		}
		if got != want {
			t.Errorf("GOGC=%q (set %v): GC percent %d, want %d", tc.env, tc.set, got, want)
		}
	}
}
