package controller

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/kubelifecycle/lifecycle/taints"
)

// TestParseRelease: the release annotation's value against the rule's
// selector.
func TestParseRelease(t *testing.T) {
	all := &taints.DeviceTaintSelector{}
	gpu := &taints.DeviceTaintSelector{Driver: ptr.To("gpu.example.com")}
	tests := []struct {
		value   string
		sel     *taints.DeviceTaintSelector
		want    []string
		wantErr string
	}{
		{"gpu.example.com", all, []string{"gpu.example.com"}, ""},
		{" gpu.example.com , ,nic.example.com,gpu.example.com", all, []string{"gpu.example.com", "nic.example.com"}, ""},
		{"", all, nil, ""},
		{"gpu.example.com,nic.example.com", gpu, []string{"gpu.example.com"}, "driver(s) nic.example.com ignored"},
		{"gpu.example.com", nil, nil, "driver(s) gpu.example.com ignored"},
		{strings.Repeat("a,", 100) + "b", all, []string{"a", "b"}, ""},
		{"a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p", all, strings.Split("a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p", ","), ""},
		{"a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", all, nil, "more than MaxReleaseDrivers (16)"},
		{strings.Repeat("x", MaxReleaseValueBytes+1), all, nil, "4097 bytes, more than MaxReleaseValueBytes (4096)"},
	}
	for _, tt := range tests {
		got, err := parseRelease(tt.value, tt.sel)
		if !slices.Equal(got, tt.want) || (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("parseRelease(%.40q, %+v) = %q, %v; want %q, %q", tt.value, tt.sel, got, err, tt.want, tt.wantErr)
		}
	}
}

// FuzzParseRelease: any value is read without a panic into at most
// MaxReleaseDrivers distinct, trimmed, non-empty names, each a part of the
// value, and a selector that names a driver keeps only that one.
func FuzzParseRelease(f *testing.F) {
	for _, s := range []string{"gpu.example.com", " a , b ,a,,", strings.Repeat("d,", 20), "\x00,\xff"} {
		f.Add(s, "")
		f.Add(s, "a")
	}
	f.Fuzz(func(t *testing.T, value, driver string) {
		sel := &taints.DeviceTaintSelector{}
		if driver != "" {
			sel.Driver = &driver
		}
		got, _ := parseRelease(value, sel)
		if len(got) > MaxReleaseDrivers {
			t.Fatalf("%d drivers, more than %d", len(got), MaxReleaseDrivers)
		}
		for i, d := range got {
			if d == "" || d != strings.TrimSpace(d) || slices.Contains(got[:i], d) || strings.Contains(d, ",") || !strings.Contains(value, d) {
				t.Fatalf("parseRelease(%q) = %q: bad name %q", value, got, d)
			}
			if driver != "" && d != driver {
				t.Fatalf("selector of driver %q released %q", driver, d)
			}
		}
	})
}
