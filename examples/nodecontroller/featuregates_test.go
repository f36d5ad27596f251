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
		{[]string{"--feature-gates=SeparateTaintEvictionController=true"}, 0, `invalid value "SeparateTaintEvictionController=true" for flag -feature-gates: unrecognized feature gate: SeparateTaintEvictionController (this controller knows only NodeControllerLeaseCircuitBreaker)`},
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
	assert.Equal(t, "NodeControllerLeaseCircuitBreaker=true", (&featureGates{&nodehealth.Config{}}).String())
	assert.Equal(t, "", (*featureGates)(nil).String())
}
