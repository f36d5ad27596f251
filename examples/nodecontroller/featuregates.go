package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// The kube-controller-manager feature gates this controller implements
// (pkg/features/kube_features.go at v1.37.2).
const (
	// GateLeaseCircuitBreaker is kube-controller-manager's feature gate for
	// the live Lease check before a node is written Unknown (KEP-5647; Beta
	// and on by default since v1.37).
	GateLeaseCircuitBreaker = "NodeControllerLeaseCircuitBreaker"
	// GateDeviceTaints runs the device-taint-eviction-controller (KEP-5055;
	// GA and on by default in v1.37, not yet locked): off, the controller
	// does not run even when --controllers names it, as
	// kube-controller-manager's requiredFeatureGates.
	GateDeviceTaints = "DRADeviceTaints"
	// GateDeviceTaintRules makes the device-taint-eviction-controller watch
	// DeviceTaintRules (GA and on by default in v1.37): off, rules are
	// ignored (no informer, no status), as upstream's controller does.
	GateDeviceTaintRules = "DRADeviceTaintRules"
	// GateDynamicResourceAllocation is locked on in v1.37: setting it
	// false is an error, as in kube-controller-manager.
	GateDynamicResourceAllocation = "DynamicResourceAllocation"
)

// gateSettings are the feature gates' values.
type gateSettings struct {
	deviceTaints, deviceTaintRules bool
}

// featureGates is the -feature-gates flag, with kube-controller-manager's
// syntax (a comma-separated list of Gate=bool, repeatable) and errors. It
// knows the gates this controller implements:
// NodeControllerLeaseCircuitBreaker (on, the default, confirms stale
// verdicts with a live read, nodehealth.ConfirmLeaseAndStatus; off is the
// v1.36 behaviour, nodehealth.ConfirmNone), DRADeviceTaints and
// DRADeviceTaintRules (on by default), and DynamicResourceAllocation
// (locked on). Any other gate is an error, so that a gate this controller
// does not implement is never silently ignored.
type featureGates struct {
	health *nodehealth.Config
	gates  *gateSettings // nil: only the health gate is known (tests)
}

// String returns the gates' current settings.
func (f *featureGates) String() string {
	if f == nil || f.health == nil {
		return ""
	}
	s := fmt.Sprintf("%s=%t", GateLeaseCircuitBreaker, f.health.Confirmation != nodehealth.ConfirmNone)
	if f.gates != nil {
		s += fmt.Sprintf(",%s=%t,%s=%t", GateDeviceTaints, f.gates.deviceTaints, GateDeviceTaintRules, f.gates.deviceTaintRules)
	}
	return s
}

// known lists the gates f knows, for the error of an unknown one.
func (f *featureGates) known() string {
	if f.gates == nil {
		return GateLeaseCircuitBreaker
	}
	return strings.Join([]string{GateLeaseCircuitBreaker, GateDeviceTaints, GateDeviceTaintRules, GateDynamicResourceAllocation}, ", ")
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
		switch {
		case k == GateLeaseCircuitBreaker:
			f.health.Confirmation = nodehealth.ConfirmNone
			if on {
				f.health.Confirmation = nodehealth.ConfirmLeaseAndStatus
			}
		case f.gates != nil && k == GateDeviceTaints:
			f.gates.deviceTaints = on
		case f.gates != nil && k == GateDeviceTaintRules:
			f.gates.deviceTaintRules = on
		case f.gates != nil && k == GateDynamicResourceAllocation:
			if !on {
				return fmt.Errorf("cannot set feature gate %s to %t, feature is locked to %t", k, on, true)
			}
		default:
			return fmt.Errorf("unrecognized feature gate: %s (this controller knows only %s)", k, f.known())
		}
	}
	return nil
}
