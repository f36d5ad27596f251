package evictionqueue

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidRate is returned (wrapped) by New and Queue.SetRate when a QPS is
// NaN, infinite or negative. Match it with errors.Is.
var ErrInvalidRate = errors.New("evictionqueue: invalid QPS")

// ErrInvalidBurst is returned (wrapped) by New when Burst is negative, and by
// New and Queue.SetRate when a positive QPS is asked of a queue whose Burst
// is 0 (a bucket that can never hold a token). Match it with errors.Is.
var ErrInvalidBurst = errors.New("evictionqueue: invalid burst")

// Config is the rate limit of a Queue: a token bucket that refills at QPS
// tokens per second and holds at most Burst tokens. Every attempt made by
// Queue.Try costs one token.
//
// The zero Config is a stopped queue (QPS 0) whose bucket holds no token
// (Burst 0): items can be added and removed but are never attempted, and
// SetRate can never start it (it returns ErrInvalidBurst). Use
// Config{QPS: 0, Burst: 1} for a queue that starts stopped and may be
// started later.
type Config struct {
	// QPS is the number of attempts per second. 0 means stopped: Try attempts
	// nothing and NextDeadline reports false. It must be finite and >= 0.
	QPS float64
	// Burst is the bucket size: how many attempts may happen back to back
	// after the bucket has filled up. It must be >= 0, and >= 1 when QPS > 0.
	// The bucket starts full.
	Burst int
}

// DefaultConfig returns the upstream defaults for the per-zone eviction
// queues of the node lifecycle controller: --node-eviction-rate 0.1 and
// EvictionRateLimiterBurst 1 (one attempt every 10 seconds).
func DefaultConfig() Config {
	return Config{QPS: 0.1, Burst: 1}
}

// validate reports why c cannot be used, or nil.
func (c Config) validate() error {
	if err := checkQPS(c.QPS); err != nil {
		return err
	}
	if c.Burst < 0 {
		return fmt.Errorf("%w: Burst %d is negative", ErrInvalidBurst, c.Burst)
	}
	return checkBurst(c.QPS, c.Burst)
}

// checkQPS reports whether qps is a usable rate: finite and not negative.
func checkQPS(qps float64) error {
	switch {
	case math.IsNaN(qps):
		return fmt.Errorf("%w: QPS is NaN", ErrInvalidRate)
	case math.IsInf(qps, 0):
		return fmt.Errorf("%w: QPS %v is infinite", ErrInvalidRate, qps)
	case qps < 0:
		return fmt.Errorf("%w: QPS %v is negative", ErrInvalidRate, qps)
	}
	return nil
}

// checkBurst reports whether a bucket of size burst can serve qps.
func checkBurst(qps float64, burst int) error {
	if qps > 0 && burst < 1 {
		return fmt.Errorf("%w: QPS %v needs Burst >= 1, have %d", ErrInvalidBurst, qps, burst)
	}
	return nil
}
