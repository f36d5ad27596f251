package main

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/taints"
)

// The device taint eviction's blast-radius and warning flags (ours).

// TestDeviceFlags: off by default (the DeviceEvictor's configuration is
// upstream's: no rate, no breaker, no warnings); each flag sets its field.
func TestDeviceFlags(t *testing.T) {
	fs, o := newFlagSet(io.Discard)
	if err := fs.Parse([]string{"-leader-elect=false"}); err != nil {
		t.Fatal(err)
	}
	o.complete(fs)
	cfg, err := o.settings()
	if err != nil {
		t.Fatal(err)
	}
	want := taints.DefaultDeviceEvictorConfig()
	want.BlastRadius.Burst = 1 // ignored without a rate
	if !reflect.DeepEqual(cfg.Devices.Evictor, want) {
		t.Errorf("default Devices.Evictor = %+v, want %+v", cfg.Devices.Evictor, want)
	}

	fs, o = newFlagSet(io.Discard)
	if err := fs.Parse([]string{"-device-taint-eviction-rate=2.5", "-device-taint-eviction-burst=5", "-device-taint-eviction-max-share=0.3",
		"-device-taint-eviction-min-devices=4", "-device-taint-eviction-resume-share=0.1", "-device-taint-eviction-resume-after=2m",
		"-device-taint-warnings=32"}); err != nil {
		t.Fatal(err)
	}
	o.complete(fs)
	if cfg, err = o.settings(); err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Devices.Evictor.BlastRadius, (taints.DeviceBlastRadius{QPS: 2.5, Burst: 5, MaxShare: 0.3, MinDevices: 4, ResumeShare: 0.1, ResumeAfter: 2 * time.Minute}); !reflect.DeepEqual(got, want) {
		t.Errorf("BlastRadius = %+v, want %+v", got, want)
	}
	if got := cfg.Devices.Evictor.KeepWarnings; got != 32 {
		t.Errorf("KeepWarnings = %d, want 32", got)
	}
}

// TestDeviceFlagErrors: a value the DeviceEvictor rejects is an error
// that names the flag and the limit: -1 for every device flag, and the
// limits that depend on the value.
func TestDeviceFlagErrors(t *testing.T) {
	fs, o := newFlagSet(io.Discard)
	var tests [][2]string
	for _, f := range o.deviceFields {
		bad := "-1"
		if _, ok := fs.Lookup(f.flag).Value.(flag.Getter).Get().(time.Duration); ok {
			bad = "-1s"
		}
		tests = append(tests, [2]string{"-" + f.flag + "=" + bad, "-" + f.flag + ": "})
	}
	tests = append(tests,
		[2]string{"-device-taint-eviction-max-share=1.5", "-device-taint-eviction-max-share: taints: invalid config: BlastRadius.MaxShare 1.5 must be in [0, 1]"},
		[2]string{"-device-taint-eviction-rate=NaN", "-device-taint-eviction-rate: taints: invalid config: BlastRadius.QPS NaN must be finite and not negative"},
		[2]string{"-device-taint-eviction-rate=2 -device-taint-eviction-burst=0", "-device-taint-eviction-burst: taints: invalid config: BlastRadius.Burst 0 must be at least 1 with QPS 2"},
		[2]string{"-device-taint-warnings=2000000", "-device-taint-warnings: taints: invalid config: KeepWarnings 2000000 must be in [0, 1048576]"},
		[2]string{"-device-taint-eviction-max-share=0.5 -device-taint-eviction-resume-share=0.7", "-device-taint-eviction-resume-share: taints: invalid config: BlastRadius.ResumeShare 0.7 must be in [0, MaxShare 0.5]"},
	)
	for _, tt := range tests {
		fs, o := newFlagSet(io.Discard)
		if err := fs.Parse(strings.Fields(tt[0])); err != nil {
			t.Fatal(err)
		}
		o.complete(fs)
		if _, err := o.settings(); err == nil || !strings.Contains(err.Error(), tt[1]) {
			t.Errorf("settings(%s) = %v, want an error with %q", tt[0], err, tt[1])
		}
	}
}

// TestDeviceFlagsCoverBlastRadius: every field of taints.DeviceBlastRadius
// has a flag (a field added to the library needs its deviceFlag line in
// newFlagSet), and every device flag names a field its errors use.
func TestDeviceFlagsCoverBlastRadius(t *testing.T) {
	_, o := newFlagSet(io.Discard)
	fields := map[string]string{}
	for _, f := range o.deviceFields {
		fields[f.field] = f.flag
	}
	typ := reflect.TypeFor[taints.DeviceBlastRadius]()
	for i := range typ.NumField() {
		if name := "BlastRadius." + typ.Field(i).Name; fields[name] == "" {
			t.Errorf("taints.DeviceBlastRadius.%s has no flag: add a deviceFlag line in newFlagSet", typ.Field(i).Name)
		}
	}
	cfg := reflect.TypeFor[taints.DeviceEvictorConfig]()
	for field := range fields {
		path := strings.Split(field, ".")
		f, ok := cfg.FieldByName(path[0])
		if ok && len(path) == 2 {
			_, ok = f.Type.FieldByName(path[1])
		}
		if !ok || len(path) > 2 {
			t.Errorf("flag -%s: %s is not a field of taints.DeviceEvictorConfig", fields[field], field)
		}
	}
}
