package incident

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/monitor"
	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// The kube-controller-manager flags a Policy takes (Policy.Set), in the
// order reports list them.
const (
	FlagNodeMonitorPeriod         = "node-monitor-period"
	FlagNodeMonitorGracePeriod    = "node-monitor-grace-period"
	FlagNodeStartupGracePeriod    = "node-startup-grace-period"
	FlagNodeEvictionRate          = "node-eviction-rate"
	FlagSecondaryNodeEvictionRate = "secondary-node-eviction-rate"
	FlagUnhealthyZoneThreshold    = "unhealthy-zone-threshold"
	FlagLargeClusterSizeThreshold = "large-cluster-size-threshold"
	FlagFeatureGates              = "feature-gates"
)

// PolicyFlags lists the flags a Policy takes.
var PolicyFlags = []string{FlagNodeMonitorPeriod, FlagNodeMonitorGracePeriod, FlagNodeStartupGracePeriod,
	FlagNodeEvictionRate, FlagSecondaryNodeEvictionRate, FlagUnhealthyZoneThreshold, FlagLargeClusterSizeThreshold, FlagFeatureGates}

// GateLeaseCircuitBreaker is kube-controller-manager's feature gate for
// the live Lease check before a node is written Unknown (v1.37, on by
// default).
const GateLeaseCircuitBreaker = "NodeControllerLeaseCircuitBreaker"

// The sources of a policy value (PolicyValue.Source): given by the caller
// (Set), guessed from the log (Guess, PolicyGuess), or v1.37.2's default
// assumed for want of either.
const (
	SourceGiven   = "given"
	SourceGuessed = "guessed"
	SourceAssumed = "assumed"
)

// Policy is the node lifecycle controller's policy a replay runs, in
// kube-controller-manager's terms. DefaultPolicy is v1.37.2's defaults,
// every value "assumed"; Set marks a value "given", Guess "guessed" (a
// given value always wins over a guess).
type Policy struct {
	NodeMonitorPeriod         time.Duration // --node-monitor-period, 5s
	NodeMonitorGracePeriod    time.Duration // --node-monitor-grace-period, 50s
	NodeStartupGracePeriod    time.Duration // --node-startup-grace-period, 60s
	NodeEvictionRate          float64       // --node-eviction-rate, 0.1
	SecondaryNodeEvictionRate float64       // --secondary-node-eviction-rate, 0.01
	UnhealthyZoneThreshold    float64       // --unhealthy-zone-threshold, 0.55
	LargeClusterSizeThreshold int           // --large-cluster-size-threshold, 50
	// LeaseCircuitBreaker is --feature-gates=NodeControllerLeaseCircuitBreaker (true).
	LeaseCircuitBreaker bool

	given map[string]bool
	// guessed maps a guessed flag to why (Guess).
	guessed map[string]string
}

// DefaultPolicy returns kube-controller-manager v1.37.2's defaults.
func DefaultPolicy() Policy {
	cfg := monitor.DefaultConfig()
	return Policy{
		NodeMonitorPeriod:         cfg.MonitorPeriod,
		NodeMonitorGracePeriod:    cfg.Health.GracePeriod,
		NodeStartupGracePeriod:    cfg.Health.StartupGracePeriod,
		NodeEvictionRate:          cfg.Zones.EvictionQPS,
		SecondaryNodeEvictionRate: cfg.Zones.SecondaryEvictionQPS,
		UnhealthyZoneThreshold:    cfg.Zones.UnhealthyZoneThreshold,
		LargeClusterSizeThreshold: cfg.Zones.LargeClusterThreshold,
		LeaseCircuitBreaker:       true,
	}
}

// Set sets the flag name (without dashes) to value, with
// kube-controller-manager's syntax, and marks it given. The value is
// checked (durations positive, rates and thresholds finite and in range).
func (p *Policy) Set(name, value string) error {
	if err := p.set(name, value); err != nil {
		return err
	}
	// Copied on write: a Policy copied from another (a sweep's runs from
	// its base) shares the map.
	p.given = maps.Clone(p.given)
	if p.given == nil {
		p.given = map[string]bool{}
	}
	p.given[name] = true
	return nil
}

// Guess sets the flag name to value, as Set, but marks it guessed with
// reason (what in the log it rests on), unless the flag was given: then
// the given value stays and Guess does nothing. A value that cannot be
// read is an error and changes nothing.
func (p *Policy) Guess(name, value, reason string) error {
	if p.Given(name) {
		return nil
	}
	q := *p
	if err := q.set(name, value); err != nil {
		return err
	}
	*p = q
	p.guessed = maps.Clone(p.guessed)
	if p.guessed == nil {
		p.guessed = map[string]string{}
	}
	p.guessed[name] = reason
	return nil
}

// set parses value into the flag name's field.
func (p *Policy) set(name, value string) error {
	bad := func(err error) error { return fmt.Errorf("incident: --%s=%s: %w", name, value, err) }
	dur := func(dst *time.Duration) error {
		d, err := time.ParseDuration(value)
		if err != nil {
			return bad(err)
		}
		if d <= 0 {
			return bad(fmt.Errorf("must be positive"))
		}
		*dst = d
		return nil
	}
	num := func(dst *float64, lo, hi float64) error {
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return bad(err)
		}
		if math.IsNaN(f) || f < lo || f > hi {
			return bad(fmt.Errorf("must be in [%v, %v]", lo, hi))
		}
		*dst = f
		return nil
	}
	var err error
	switch name {
	case FlagNodeMonitorPeriod:
		err = dur(&p.NodeMonitorPeriod)
	case FlagNodeMonitorGracePeriod:
		err = dur(&p.NodeMonitorGracePeriod)
	case FlagNodeStartupGracePeriod:
		err = dur(&p.NodeStartupGracePeriod)
	case FlagNodeEvictionRate:
		err = num(&p.NodeEvictionRate, 0, 1e6)
	case FlagSecondaryNodeEvictionRate:
		err = num(&p.SecondaryNodeEvictionRate, 0, 1e6)
	case FlagUnhealthyZoneThreshold:
		err = num(&p.UnhealthyZoneThreshold, 0, 1)
	case FlagLargeClusterSizeThreshold:
		n, perr := strconv.Atoi(value)
		switch {
		case perr != nil:
			err = bad(perr)
		case n < 0:
			err = bad(fmt.Errorf("must be non-negative"))
		default:
			p.LargeClusterSizeThreshold = n
		}
	case FlagFeatureGates:
		err = p.setGates(value)
	default:
		return fmt.Errorf("incident: unknown policy flag --%s (known: %s)", name, strings.Join(PolicyFlags, ", "))
	}
	return err
}

func (p *Policy) setGates(value string) error {
	b := p.LeaseCircuitBreaker
	for _, kv := range strings.Split(value, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("incident: --feature-gates: missing bool value for %s", kv)
		}
		v2, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("incident: --feature-gates: invalid value of %s=%s: %w", k, v, err)
		}
		if strings.TrimSpace(k) != GateLeaseCircuitBreaker {
			return fmt.Errorf("incident: --feature-gates: unknown feature gate %s (known: %s)", k, GateLeaseCircuitBreaker)
		}
		b = v2
	}
	p.LeaseCircuitBreaker = b
	return nil
}

// Given reports whether the flag was set (Set) rather than guessed or
// assumed.
func (p Policy) Given(name string) bool { return p.given[name] }

// Guessed reports whether the flag's value is a guess (Guess) and why.
func (p Policy) Guessed(name string) (reason string, ok bool) {
	if p.Given(name) {
		return "", false
	}
	reason, ok = p.guessed[name]
	return reason, ok
}

// PolicyValue is one flag's value in a report.
type PolicyValue struct {
	Flag  string `json:"flag"`
	Value string `json:"value"`
	// Source is SourceGiven, SourceGuessed or SourceAssumed (the v1.37.2
	// default).
	Source string `json:"source"`
	// Reason is what a guess rests on ("" unless guessed).
	Reason string `json:"reason,omitempty"`
}

// Values returns every flag's value, in PolicyFlags order.
func (p Policy) Values() []PolicyValue {
	out := make([]PolicyValue, 0, len(PolicyFlags))
	for _, f := range PolicyFlags {
		v := PolicyValue{Flag: f, Value: p.value(f), Source: SourceAssumed}
		if p.Given(f) {
			v.Source = SourceGiven
		} else if r, ok := p.Guessed(f); ok {
			v.Source, v.Reason = SourceGuessed, r
		}
		out = append(out, v)
	}
	return out
}

func (p Policy) value(flag string) string {
	switch flag {
	case FlagNodeMonitorPeriod:
		return p.NodeMonitorPeriod.String()
	case FlagNodeMonitorGracePeriod:
		return p.NodeMonitorGracePeriod.String()
	case FlagNodeStartupGracePeriod:
		return p.NodeStartupGracePeriod.String()
	case FlagNodeEvictionRate:
		return ff(p.NodeEvictionRate)
	case FlagSecondaryNodeEvictionRate:
		return ff(p.SecondaryNodeEvictionRate)
	case FlagUnhealthyZoneThreshold:
		return ff(p.UnhealthyZoneThreshold)
	case FlagLargeClusterSizeThreshold:
		return strconv.Itoa(p.LargeClusterSizeThreshold)
	case FlagFeatureGates:
		return GateLeaseCircuitBreaker + "=" + strconv.FormatBool(p.LeaseCircuitBreaker)
	}
	return ""
}

// String returns the given flags as a command line would carry them
// ("defaults" when none is).
func (p Policy) String() string {
	var parts []string
	for _, v := range p.Values() {
		if v.Source == SourceGiven {
			parts = append(parts, "--"+v.Flag+"="+v.Value)
		}
	}
	if len(parts) == 0 {
		return "defaults"
	}
	return strings.Join(parts, " ")
}

// Config returns the monitor configuration of the policy: one worker (a
// deterministic pass), taint-based eviction.
func (p Policy) Config() monitor.Config {
	cfg := monitor.DefaultConfig()
	cfg.Workers = 1
	cfg.MonitorPeriod = p.NodeMonitorPeriod
	cfg.Health.GracePeriod = p.NodeMonitorGracePeriod
	cfg.Health.StartupGracePeriod = p.NodeStartupGracePeriod
	cfg.Health.Confirmation = nodehealth.ConfirmNone
	if p.LeaseCircuitBreaker {
		cfg.Health.Confirmation = nodehealth.ConfirmLeaseAndStatus
	}
	cfg.Zones.EvictionQPS = p.NodeEvictionRate
	cfg.Zones.SecondaryEvictionQPS = p.SecondaryNodeEvictionRate
	cfg.Zones.UnhealthyZoneThreshold = p.UnhealthyZoneThreshold
	cfg.Zones.LargeClusterThreshold = p.LargeClusterSizeThreshold
	return cfg
}
