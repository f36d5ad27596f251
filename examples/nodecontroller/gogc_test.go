package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// gogcCases are the edge values of GOGC. runtime is the GC percent the Go
// runtime starts with under that value, as readGOGC in
// runtime/mgcpacer.go parses it: "off" or a negative value is off (-1), a
// base-10 int32 with an optional sign is itself, anything else is 100.
var gogcCases = []struct {
	env     string
	wantErr string // "" when accepted
	runtime int
}{
	{"off", "", -1},
	{"0", "", 0},
	{"50", "", 50},
	{"+50", "", 50},
	{"-0", "", 0},
	{"0050", "", 50},
	{"2147483647", "", 2147483647},
	{"2147483648", "fits in 32 bits", 100},
	{"4294967346", "fits in 32 bits", 100}, // 2^32 + 50: a 32-bit truncation would read 50
	{"9223372036854775807", "fits in 32 bits", 100},
	{"99999999999999999999", "fits in 32 bits", 100},
	{"-1", "negative", -1},
	{"-5", "negative", -1},
	{"-2147483648", "negative", -1},
	{"-2147483649", "fits in 32 bits", 100},
	{"fifty", "fits in 32 bits", 100},
	{"OFF", "fits in 32 bits", 100},
	{"1_000", "fits in 32 bits", 100},
	{"0x10", "fits in 32 bits", 100},
	{" 50", "fits in 32 bits", 100},
	{"50 ", "fits in 32 bits", 100},
	{"5e1", "fits in 32 bits", 100},
	{"+", "fits in 32 bits", 100},
	{"-", "fits in 32 bits", 100},
}

func TestApplyGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	type tc struct {
		env     string
		set     bool
		wantErr string
		want    int // the GC percent after; -2: unchanged (the runtime's own)
	}
	cases := []tc{
		{"", false, "", defaultGOGC},
		{"", true, "", defaultGOGC},
	}
	for _, c := range gogcCases {
		cases = append(cases, tc{c.env, true, c.wantErr, -2})
	}
	for _, tc := range cases {
		debug.SetGCPercent(100)
		err := applyGOGC(func(k string) (string, bool) {
			if k != "GOGC" {
				t.Fatalf("looked up %q", k)
			}
			return tc.env, tc.set
		})
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("GOGC=%q (set %v): error %v, want none", tc.env, tc.set, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "GOGC")):
			t.Errorf("GOGC=%q (set %v): error %v, want one naming GOGC and saying %q", tc.env, tc.set, err, tc.wantErr)
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

// TestGOGCCasesMatchRuntime runs this test binary under each GOGC of
// gogcCases and reads the GC percent the runtime started with: the table,
// and so applyGOGC's rule, is what this Go toolchain's runtime does.
func TestGOGCCasesMatchRuntime(t *testing.T) {
	if os.Getenv("GOGC_PROBE") == "1" {
		fmt.Printf("gcpercent=%d\n", debug.SetGCPercent(100))
		return
	}
	if testing.Short() {
		t.Skip("starts a process per case")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range gogcCases {
		cmd := exec.Command(exe, "-test.run=^TestGOGCCasesMatchRuntime$", "-test.count=1")
		cmd.Env = append(os.Environ(), "GOGC_PROBE=1", "GOGC="+c.env)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GOGC=%q: %v\n%s", c.env, err, out)
		}
		_, rest, ok := strings.Cut(string(out), "gcpercent=")
		if !ok {
			t.Fatalf("GOGC=%q: no gcpercent in %q", c.env, out)
		}
		got, err := strconv.Atoi(strings.Fields(rest)[0])
		if err != nil {
			t.Fatal(err)
		}
		if got != c.runtime {
			t.Errorf("GOGC=%q: the runtime started at %d, the table says %d", c.env, got, c.runtime)
		}
	}
}
