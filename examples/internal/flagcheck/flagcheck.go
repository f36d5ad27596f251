// Package flagcheck checks the command-line settings the example programs
// share (kube-controller-manager's and the kubelet's flag names), so that a
// bad value stops a program before it connects to anything, with an error
// naming the flag and the value.
package flagcheck

import (
	"context"
	"fmt"
	"math"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// APIRate checks -kube-api-qps and -kube-api-burst: a finite rate and a
// burst, neither negative (0 is client-go's default for either).
func APIRate(qps float64, burst int) error {
	if math.IsNaN(qps) || math.IsInf(qps, 0) || qps < 0 || qps > math.MaxFloat32 {
		return fmt.Errorf("-kube-api-qps %v: want a finite rate, 0 or more (0: client-go's default)", qps)
	}
	if burst < 0 {
		return fmt.Errorf("-kube-api-burst %d: want 0 or more (0: client-go's default)", burst)
	}
	return nil
}

// Port checks a port flag: 0 (no server) to 65535.
func Port(flag string, port int) error {
	if port < 0 || port > 65535 {
		return fmt.Errorf("%s %d: want 0 to 65535", flag, port)
	}
	return nil
}

// LeaderElection checks -leader-elect-lease-duration, -renew-deadline and
// -retry-period with client-go's own rules (leaderelection.NewLeaderElector,
// which a program otherwise reaches only once it runs): the lease
// duration above the renew deadline, the renew deadline above the retry
// period times leaderelection.JitterFactor, all positive.
func LeaderElection(leaseDuration, renewDeadline, retryPeriod time.Duration) error {
	_, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		// Never used: NewLeaderElector only checks it has an identity.
		Lock:          &resourcelock.LeaseLock{LockConfig: resourcelock.ResourceLockConfig{Identity: "flagcheck"}},
		LeaseDuration: leaseDuration,
		RenewDeadline: renewDeadline,
		RetryPeriod:   retryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("-leader-elect-lease-duration %v, -leader-elect-renew-deadline %v, -leader-elect-retry-period %v: %w",
			leaseDuration, renewDeadline, retryPeriod, err)
	}
	return nil
}
