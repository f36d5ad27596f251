package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// GateLeaseCircuitBreaker is kube-controller-manager's feature gate for the
// live Lease check before a node is written Unknown (KEP-5647; Beta and on
// by default since v1.37, pkg/features/kube_features.go).
const GateLeaseCircuitBreaker = "NodeControllerLeaseCircuitBreaker"

// featureGates is the -feature-gates flag, with kube-controller-manager's
// syntax (a comma-separated list of Gate=bool, repeatable) and errors. The
// only gate it knows is NodeControllerLeaseCircuitBreaker: on (the default)
// confirms stale verdicts with a live read (nodehealth.ConfirmLeaseAndStatus),
// off is the v1.36 behaviour (nodehealth.ConfirmNone). Any other gate is an
// error, so that a gate this controller does not implement is never
// silently ignored.
type featureGates struct{ health *nodehealth.Config }

// String returns the gate's current setting.
func (f *featureGates) String() string {
	if f == nil || f.health == nil {
		return ""
	}
	return fmt.Sprintf("%s=%t", GateLeaseCircuitBreaker, f.health.Confirmation != nodehealth.ConfirmNone)
}

// Set parses one -feature-gates value.
func (f *featureGates) Set(value string) error {
	for _, kv := range strings.Split(value, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok {
			return fmt.Errorf("missing bool value for %s", k)
		}
		on, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("invalid value of %s=%s, err: %v", k, v, err)
		}
		if k != GateLeaseCircuitBreaker {
			return fmt.Errorf("unrecognized feature gate: %s (this controller knows only %s)", k, GateLeaseCircuitBreaker)
		}
		f.health.Confirmation = nodehealth.ConfirmNone
		if on {
			f.health.Confirmation = nodehealth.ConfirmLeaseAndStatus
		}
	}
	return nil
}
