package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
)

// The kube-controller-manager controllers this program runs, under their
// names (cmd/kube-controller-manager/names at v1.37.2).
const (
	ctrlNodeLifecycle       = "node-lifecycle-controller"
	ctrlTaintEviction       = "taint-eviction-controller"
	ctrlDeviceTaintEviction = controller.DeviceName
)

// knownControllers are the names --controllers accepts (besides "*"), all
// on by default, as in kube-controller-manager v1.37.2 (the device one
// behind the DRADeviceTaints gate, on by default).
var knownControllers = []string{ctrlDeviceTaintEviction, ctrlNodeLifecycle, ctrlTaintEviction}

// controllerAliases are kube-controller-manager's aliases of those names.
var controllerAliases = map[string]string{"nodelifecycle": ctrlNodeLifecycle}

// controllersFlag is the --controllers flag with kube-controller-manager's
// syntax and semantics (k8s.io/controller-manager/options and app
// IsControllerEnabled): a comma-separated list, where '*' enables every
// on-by-default controller, 'foo' enables foo and '-foo' disables it; the
// first entry naming a controller decides; without '*' only the listed
// controllers run. The default is '*'. The first use replaces the default,
// later ones append (pflag's StringSlice).
type controllersFlag struct {
	list []string
	set  bool
}

func newControllersFlag() *controllersFlag { return &controllersFlag{list: []string{"*"}} }

// String returns the list as given.
func (f *controllersFlag) String() string {
	if f == nil {
		return ""
	}
	return strings.Join(f.list, ",")
}

// Set parses one --controllers value (CSV, as pflag's StringSlice).
func (f *controllersFlag) Set(value string) error {
	var names []string
	if value != "" {
		var err error
		if names, err = csv.NewReader(strings.NewReader(value)).Read(); err != nil {
			return err
		}
	}
	if !f.set {
		f.list, f.set = nil, true
	}
	f.list = append(f.list, names...)
	return nil
}

// canonical is name with kube-controller-manager's aliases resolved.
func canonical(name string) string {
	if c, ok := controllerAliases[name]; ok {
		return c
	}
	return name
}

// validate rejects a name that is not a known controller, with
// kube-controller-manager's error.
func (f *controllersFlag) validate() error {
	var errs []error
	for _, n := range f.list {
		if n == "*" {
			continue
		}
		bare := strings.TrimPrefix(n, "-")
		if !slices.Contains(knownControllers, canonical(bare)) {
			errs = append(errs, fmt.Errorf("%q is not in the list of known controllers", bare))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("--controllers (known: %s): %w", strings.Join(knownControllers, ", "), err)
	}
	return nil
}

// enabled reports whether the list enables name, as
// kube-controller-manager's IsControllerEnabled (no controller of this
// program is disabled by default).
func (f *controllersFlag) enabled(name string) bool {
	star := false
	for _, n := range f.list {
		switch {
		case canonical(n) == name:
			return true
		case strings.HasPrefix(n, "-") && canonical(n[1:]) == name:
			return false
		case n == "*":
			star = true
		}
	}
	return star
}
