package uid

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in types.UID
		ok bool
	}{
		{"6f1c2a34-8b9d-4e5f-a6b7-0123456789ab", true},
		{"00000000-0000-0000-0000-000000000000", true},
		{"ffffffff-ffff-ffff-ffff-ffffffffffff", true},
		{"6F1C2A34-8B9D-4E5F-A6B7-0123456789AB", false},
		{"6f1c2a34-8b9d-4e5f-a6b7-0123456789a", false},
		{"6f1c2a34-8b9d-4e5f-a6b7-0123456789abc", false},
		{"6f1c2a348b9d-4e5f-a6b7-0123456789ab-", false},
		{"6f1c2a34-8b9d-4e5f-a6b7-0123456789ag", false},
		{"", false},
		{"uid-1", false},
	} {
		r, ok := Parse(tc.in)
		if ok != tc.ok || ok && r.UID() != tc.in {
			t.Errorf("Parse(%q) = %v, %v; UID() %q", tc.in, r, ok, r.UID())
		}
	}
	if n := testing.AllocsPerRun(100, func() { Parse("6f1c2a34-8b9d-4e5f-a6b7-0123456789ab") }); n != 0 {
		t.Errorf("Parse allocates %v times, want 0", n)
	}
}

// FuzzParse: what Parse accepts formats back to itself; every Raw formats
// to something Parse reads back to it.
func FuzzParse(f *testing.F) {
	f.Add("6f1c2a34-8b9d-4e5f-a6b7-0123456789ab", []byte("0123456789abcdef"))
	f.Add("", []byte{})
	f.Fuzz(func(t *testing.T, s string, b []byte) {
		if r, ok := Parse(types.UID(s)); ok && string(r.UID()) != s {
			t.Errorf("Parse(%q).UID() = %q", s, r.UID())
		}
		var r Raw
		copy(r[:], b)
		if back, ok := Parse(r.UID()); !ok || back != r {
			t.Errorf("Parse(%q) = %v, %v; want %v", r.UID(), back, ok, r)
		}
	})
}
