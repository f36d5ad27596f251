package incident

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// TestImpersonatedUsers: a log whose kubelets and controller acted through
// impersonation (User the impersonator, ImpersonatedUser the identity)
// replays as the same log written by those users directly.
func TestImpersonatedUsers(t *testing.T) {
	direct := outage().build()
	imp := make([]audit.Event, len(direct))
	n := 0
	for i, e := range direct {
		imp[i] = e
		if strings.HasPrefix(e.User.Username, kubeletPrefix) || slices.Contains(DefaultControllerUsers, e.User.Username) {
			u := e.User
			imp[i].ImpersonatedUser = &u
			imp[i].User = audit.User{Username: "admin", Groups: []string{"system:masters"}}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no event to impersonate in the outage")
	}
	hd, _, cd := replayLog(t, direct, ReplayOptions{})
	hi, _, ci := replayLog(t, imp, ReplayOptions{})
	if got, want := len(hi.Recorded), len(hd.Recorded); got != want || got == 0 {
		t.Errorf("impersonated: %d recorded decisions, want %d (as written directly)", got, want)
	}
	if len(ci.Matched) != len(cd.Matched) || len(ci.Missing) != len(cd.Missing) || len(ci.Extra) != len(cd.Extra) {
		t.Errorf("impersonated: matched %d, missing %d, extra %d; want %d, %d, %d (as written directly)",
			len(ci.Matched), len(ci.Missing), len(ci.Extra), len(cd.Matched), len(cd.Missing), len(cd.Extra))
	}
	// Without the impersonated user, the impersonator's writes are nobody's.
	for i := range imp {
		imp[i].ImpersonatedUser = nil
	}
	hn, _, _ := replayLog(t, imp, ReplayOptions{})
	if len(hn.Recorded) != 0 {
		t.Errorf("impersonator only: %d recorded decisions, want 0", len(hn.Recorded))
	}
}
