package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestControllersFlag: --controllers has kube-controller-manager v1.37.2's
// syntax and semantics (k8s.io/controller-manager IsControllerEnabled and
// the options' validation): '*' is every on-by-default controller, the
// first entry that names a controller decides, without '*' only the named
// ones run, aliases resolve, an unknown name is an error with upstream's
// text; the node-lifecycle and taint-eviction controllers run together.
func TestControllersFlag(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		node, devices bool
		wantErr       string
	}{
		{nil, true, true, ""},
		{[]string{"--controllers=*"}, true, true, ""},
		{[]string{"--controllers=*,-device-taint-eviction-controller"}, true, false, ""},
		{[]string{"--controllers=device-taint-eviction-controller"}, false, true, ""},
		{[]string{"--controllers=-node-lifecycle-controller,-taint-eviction-controller,*"}, false, true, ""},
		{[]string{"--controllers=node-lifecycle-controller,taint-eviction-controller"}, true, false, ""},
		{[]string{"--controllers=nodelifecycle,taint-eviction-controller"}, true, false, ""},
		{[]string{"--controllers=device-taint-eviction-controller,-device-taint-eviction-controller,*"}, true, true, ""},
		{[]string{"--controllers=-device-taint-eviction-controller", "--controllers=*"}, true, false, ""},
		{[]string{"--controllers=*,-nodelifecycle,-taint-eviction-controller"}, false, true, ""},
		{[]string{"--controllers=*,-taint-eviction-controller"}, false, false, "enables node-lifecycle-controller but not taint-eviction-controller"},
		{[]string{"--controllers=taint-eviction-controller"}, false, false, "enables taint-eviction-controller but not node-lifecycle-controller"},
		{[]string{"--controllers=*,-garbage-collector-controller"}, false, false, `"garbage-collector-controller" is not in the list of known controllers`},
		{[]string{"--controllers="}, false, false, "no controller to run"},
		{[]string{"--controllers=-device-taint-eviction-controller"}, false, false, "no controller to run"},
	} {
		fs, o := newFlagSet(io.Discard)
		require.NoError(t, fs.Parse(tc.args), "Parse(%q)", tc.args)
		o.complete(fs)
		cfg, err := o.settings()
		if tc.wantErr != "" {
			assert.ErrorContains(t, err, tc.wantErr, "settings(%q)", tc.args)
			continue
		}
		if !assert.NoError(t, err, "settings(%q)", tc.args) {
			continue
		}
		assert.Equal(t, tc.node, !cfg.DisableNodeLifecycle, "node lifecycle with %q", tc.args)
		assert.Equal(t, tc.devices, cfg.Devices.Enabled, "device taint eviction with %q", tc.args)
	}
	fs, o := newFlagSet(io.Discard)
	require.NoError(t, fs.Parse([]string{"--controllers=a,b", "--controllers=c"}))
	assert.Equal(t, "a,b,c", o.controllers.String())
	assert.Equal(t, "*", newControllersFlag().String())
}
