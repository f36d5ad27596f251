package audit

import (
	"io"
	"strings"
	"testing"
)

// TestImpersonatedUser: an event logged for an impersonated request names
// the impersonator in User and the identity in ImpersonatedUser;
// EffectiveUser is the identity. Without impersonation it is User.
func TestImpersonatedUser(t *testing.T) {
	imp := strings.Replace(leaseLine("a", "ResponseComplete", at(0), 1),
		`"user":{"username":"system:node:node-0001","groups":["system:nodes","system:authenticated"]}`,
		`"user":{"username":"admin","groups":["system:masters","system:authenticated"]},"impersonatedUser":{"username":"system:node:node-0001","groups":["system:nodes"]}`, 1)
	if imp == leaseLine("a", "ResponseComplete", at(0), 1) {
		t.Fatal("the test's lease line changed: no user to replace")
	}
	null := strings.Replace(leaseLine("c", "ResponseComplete", at(2e9), 3), `"user":`, `"impersonatedUser":null,"user":`, 1)
	r, err := NewReader([]string{"log"}, []io.Reader{strings.NewReader(lines(imp, leaseLine("b", "ResponseComplete", at(1e9), 2), null))}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// The groups of both users are the event's own, whatever the next
	// events' are.
	for _, want := range []struct{ user, effective, groups, effGroups string }{
		{"admin", "system:node:node-0001", "system:masters system:authenticated", "system:nodes"},
		{"system:node:node-0002", "system:node:node-0002", "system:nodes system:authenticated", "system:nodes system:authenticated"},
		{"system:node:node-0003", "system:node:node-0003", "system:nodes system:authenticated", "system:nodes system:authenticated"},
	} {
		e, err := r.Next()
		if err != nil {
			t.Fatalf("Next() = %v", err)
		}
		if e.User.Username != want.user || e.EffectiveUser().Username != want.effective {
			t.Errorf("%s: User %q, EffectiveUser() %q; want %q, %q", e.AuditID, e.User.Username, e.EffectiveUser().Username, want.user, want.effective)
		}
		if g, eg := strings.Join(e.User.Groups, " "), strings.Join(e.EffectiveUser().Groups, " "); g != want.groups || eg != want.effGroups {
			t.Errorf("%s: groups %q, effective %q; want %q, %q", e.AuditID, g, eg, want.groups, want.effGroups)
		}
	}
	if e := func() *Event { e, _ := r.Next(); return e }(); e != nil {
		t.Errorf("Next() = %+v, want the end", e)
	}
}
