package podworker

import (
	"fmt"
	"math"
	"time"
)

// Config holds the retry delays. Fields are literal: zero means no delay.
type Config struct {
	// ResyncInterval is the delay after a successful SyncWork step before
	// the machine hands out the next sync (upstream: kubelet syncFrequency,
	// default 1 min). Zero resyncs at once.
	ResyncInterval time.Duration
	// BackoffPeriod is the delay after a failed step before it is retried
	// (upstream: kubelet backOffPeriod, 10 s). Zero retries at once. A newer
	// pending update is never delayed by it.
	BackoffPeriod time.Duration
	// Jitter, when non-nil, is applied to ResyncInterval and BackoffPeriod
	// each time one is used and returns the delay to wait (negative results
	// count as 0, so a Jitter must saturate rather than overflow). It is
	// called without any lock held, possibly from several goroutines at
	// once. nil means no jitter (deterministic). UpstreamJitter reproduces
	// upstream's wait.Jitter(d, 0.5), saturated.
	Jitter func(time.Duration) time.Duration
}

// DefaultConfig returns the upstream kubelet values: a 60 s resync, a 10 s
// backoff, and no jitter (upstream jitters both by up to +50 %; set Jitter to
// UpstreamJitter(rnd) to do the same).
func DefaultConfig() Config {
	return Config{ResyncInterval: 60 * time.Second, BackoffPeriod: 10 * time.Second}
}

// UpstreamJitter returns a Config.Jitter that, like upstream's
// wait.Jitter(d, 0.5), returns a delay uniform in [d, 1.5·d). rnd must return
// values in [0, 1) and be safe for concurrent use (math/rand/v2.Float64 is).
// Unlike upstream, whose result overflows to a negative duration (read as
// "at once", a hot loop) for d above about 195 years, the result saturates
// at the largest Duration; it is never less than d for d >= 0.
func UpstreamJitter(rnd func() float64) func(time.Duration) time.Duration {
	return func(d time.Duration) time.Duration {
		extra := 0.5 * rnd() * float64(d)
		switch {
		case !(extra > 0): // d <= 0, rnd() == 0, or NaN
			return d
		case float64(d)+extra >= 1<<63: // beyond the largest Duration
			return math.MaxInt64
		}
		return d + time.Duration(extra)
	}
}

func (c Config) validate() error {
	if c.ResyncInterval < 0 {
		return fmt.Errorf("%w: negative ResyncInterval %v", ErrInvalidConfig, c.ResyncInterval)
	}
	if c.BackoffPeriod < 0 {
		return fmt.Errorf("%w: negative BackoffPeriod %v", ErrInvalidConfig, c.BackoffPeriod)
	}
	return nil
}
