package flagcheck

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestChecks(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string // "": no error
	}{
		{"defaults", APIRate(20, 30), ""},
		{"client-go defaults", APIRate(0, 0), ""},
		{"NaN qps", APIRate(math.NaN(), 1), "-kube-api-qps NaN"},
		{"infinite qps", APIRate(math.Inf(1), 1), "-kube-api-qps +Inf"},
		{"negative qps", APIRate(-1, 1), "-kube-api-qps -1"},
		{"qps beyond float32", APIRate(1e39, 1), "-kube-api-qps 1e+39"},
		{"negative burst", APIRate(1, -1), "-kube-api-burst -1"},
		{"port", Port("-port", 10258), ""},
		{"no port", Port("-port", 0), ""},
		{"port too big", Port("-port", 70000), "-port 70000"},
		{"negative port", Port("-port", -1), "-port -1"},
		{"KCM leader election", LeaderElection(15*time.Second, 10*time.Second, 2*time.Second), ""},
		{"lease not above renew", LeaderElection(10*time.Second, 10*time.Second, 2*time.Second), "-leader-elect-lease-duration 10s"},
		{"renew not above retry", LeaderElection(15*time.Second, 2*time.Second, 2*time.Second), "renewDeadline must be greater than retryPeriod"},
		{"zero retry", LeaderElection(15*time.Second, 10*time.Second, 0), "retryPeriod must be greater than zero"},
		{"negative everything", LeaderElection(-1, -2, -3), "-leader-elect-retry-period -3ns"},
	}
	for _, tt := range tests {
		switch {
		case tt.want == "" && tt.err != nil:
			t.Errorf("%s: %v, want nil", tt.name, tt.err)
		case tt.want != "" && (tt.err == nil || !strings.Contains(tt.err.Error(), tt.want)):
			t.Errorf("%s: %v, want an error with %q", tt.name, tt.err, tt.want)
		}
	}
}
