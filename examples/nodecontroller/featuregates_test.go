package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubelifecycle/lifecycle/nodehealth"
)

func TestFeatureGates(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    nodehealth.Confirmation
		wantErr string
	}{
		{nil, nodehealth.ConfirmLeaseAndStatus, ""},
		{[]string{"--feature-gates=NodeControllerLeaseCircuitBreaker=false"}, nodehealth.ConfirmNone, ""},
		{[]string{"-feature-gates", "NodeControllerLeaseCircuitBreaker=true"}, nodehealth.ConfirmLeaseAndStatus, ""},
		{[]string{"--feature-gates=NodeControllerLeaseCircuitBreaker=false", "--feature-gates= NodeControllerLeaseCircuitBreaker = True ,"}, nodehealth.ConfirmLeaseAndStatus, ""},
		{[]string{"--feature-gates=NodeControllerLeaseCircuitBreaker=off"}, 0, `invalid value "NodeControllerLeaseCircuitBreaker=off" for flag -feature-gates: invalid value of NodeControllerLeaseCircuitBreaker=off, err: strconv.ParseBool: parsing "off": invalid syntax`},
		{[]string{"--feature-gates=NodeControllerLeaseCircuitBreaker"}, 0, `invalid value "NodeControllerLeaseCircuitBreaker" for flag -feature-gates: missing bool value for NodeControllerLeaseCircuitBreaker`},
		{[]string{"--feature-gates=SeparateTaintEvictionController=true"}, 0, `invalid value "SeparateTaintEvictionController=true" for flag -feature-gates: unrecognized feature gate: SeparateTaintEvictionController (this controller knows only NodeControllerLeaseCircuitBreaker, DRADeviceTaints, DRADeviceTaintRules, DynamicResourceAllocation)`},
		{[]string{"--feature-gates=DynamicResourceAllocation=false"}, 0, `invalid value "DynamicResourceAllocation=false" for flag -feature-gates: cannot set feature gate DynamicResourceAllocation to false, feature is locked to true`},
	} {
		fs, o := newFlagSet(io.Discard)
		err := fs.Parse(tc.args)
		if tc.wantErr != "" {
			assert.EqualError(t, err, tc.wantErr, "Parse(%q)", tc.args)
			continue
		}
		require.NoError(t, err, "Parse(%q)", tc.args)
		assert.Equal(t, tc.want, o.cfg.Monitor.Health.Confirmation, "Parse(%q)", tc.args)
	}
	assert.Equal(t, "NodeControllerLeaseCircuitBreaker=true", (&featureGates{health: &nodehealth.Config{}}).String())
	err := (&featureGates{health: &nodehealth.Config{}}).Set("DRADeviceTaints=true")
	assert.EqualError(t, err, "unrecognized feature gate: DRADeviceTaints (this controller knows only NodeControllerLeaseCircuitBreaker)")
	assert.Equal(t, "", (*featureGates)(nil).String())
}

// TestDeviceFeatureGates: DRADeviceTaints and DRADeviceTaintRules, on by
// default as in kube-controller-manager v1.37.2, decide whether the device
// duty runs and whether it watches DeviceTaintRules; DynamicResourceAllocation
// is locked on.
func TestDeviceFeatureGates(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		devices, rules bool
		wantErr        string
	}{
		{nil, true, true, ""},
		{[]string{"--feature-gates=DRADeviceTaintRules=false"}, true, false, ""},
		{[]string{"--feature-gates=DRADeviceTaints=false"}, false, false, ""},
		{[]string{"--feature-gates=DynamicResourceAllocation=true,DRADeviceTaints=false", "--feature-gates=DRADeviceTaints=true"}, true, true, ""},
		{[]string{"--feature-gates=DRADeviceTaints=false", "--controllers=device-taint-eviction-controller"}, false, false, "no controller to run"},
	} {
		fs, o := newFlagSet(io.Discard)
		require.NoError(t, fs.Parse(tc.args), "Parse(%q)", tc.args)
		o.complete(fs)
		cfg, err := o.settings()
		if tc.wantErr != "" {
			assert.ErrorContains(t, err, tc.wantErr, "settings(%q)", tc.args)
			continue
		}
		require.NoError(t, err, "settings(%q)", tc.args)
		assert.Equal(t, tc.devices, cfg.Devices.Enabled, "Devices.Enabled with %q", tc.args)
		if tc.devices {
			assert.Equal(t, !tc.rules, cfg.Devices.NoRules, "Devices.NoRules with %q", tc.args)
		}
	}
}
