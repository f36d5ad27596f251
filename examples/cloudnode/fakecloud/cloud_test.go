package fakecloud_test

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/cloudnode/fakecloud"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/nodehealth"
)

func nodeOf(pid string) *v1.Node {
	n := testutil.Node("n", testutil.Epoch)
	n.Spec.ProviderID = pid
	return n
}

// TestScaleSetDeletion steps through a set's deletion: the instance
// answers, then (instances gone, set still there) instance not found, then
// (set gone) parent not found; and through what the Provider makes of each
// answer.
func TestScaleSetDeletion(t *testing.T) {
	clk := clocktesting.NewFakeClock(testutil.Epoch)
	c := fakecloud.New(clk, fakecloud.Config{SetDeleteDelay: time.Minute, Region: "r"})
	p := &fakecloud.Provider{API: c}
	ctx := context.Background()
	in, err := c.AddInstance("A", "i1", "n", "z1")
	if err != nil {
		t.Fatal(err)
	}
	n := nodeOf(in.ProviderID())
	type answer struct {
		exists bool
		e      nodehealth.Existence
	}
	check := func(when string, want answer, wantParent bool) {
		t.Helper()
		exists, err := p.InstanceExists(ctx, n)
		if got := (answer{exists, nodehealth.ClassifyExistence(exists, err)}); got != want {
			t.Errorf("%s: InstanceExists = %v, %v (%v), want %v", when, exists, err, got.e, want)
		}
		if got := errors.Is(err, nodehealth.ErrParentNotFound); got != wantParent {
			t.Errorf("%s: InstanceExists error %v wraps ErrParentNotFound = %v, want %v", when, err, got, wantParent)
		}
	}
	check("running", answer{true, nodehealth.ExistenceExists}, false)
	md, err := p.InstanceMetadata(ctx, n)
	if err != nil || md.ProviderID != "fake://A/i1" || md.Zone != "z1" || md.Region != "r" {
		t.Errorf("InstanceMetadata = %+v, %v", md, err)
	}
	if _, err := p.InstanceMetadata(ctx, testutil.Node("n", testutil.Epoch)); err != nil {
		t.Errorf("InstanceMetadata by node name: %v", err)
	}
	c.SetPower("A", "i1", fakecloud.PowerStopped)
	if down, err := p.InstanceShutdown(ctx, n); !down || err != nil {
		t.Errorf("stopped: InstanceShutdown = %v, %v, want true, nil", down, err)
	}
	if !c.DeleteScaleSet("A") || c.DeleteScaleSet("A") {
		t.Error("DeleteScaleSet: want true once, then false")
	}
	if _, err := c.AddInstance("A", "i2", "m", "z1"); err == nil {
		t.Error("AddInstance into a deleting set: want an error")
	}
	check("instances gone", answer{false, nodehealth.ExistenceNotFound}, false)
	if _, err := p.InstanceMetadata(ctx, n); !errors.Is(err, cloudprovider.InstanceNotFound) || !errors.Is(err, nodehealth.ErrInstanceNotFound) {
		t.Errorf("InstanceMetadata of a gone instance: %v, want InstanceNotFound", err)
	}
	clk.Step(time.Minute)
	check("set gone", answer{false, nodehealth.ExistenceNotFound}, true)
	if down, err := p.InstanceShutdown(ctx, n); down || !errors.Is(err, nodehealth.ErrParentNotFound) {
		t.Errorf("set gone: InstanceShutdown = %v, %v, want false, ErrParentNotFound", down, err)
	}
	want := fakecloud.CallStats{
		{Method: fakecloud.MethodGetInstance, Result: fakecloud.ResultOK}:             4,
		{Method: fakecloud.MethodGetInstance, Result: fakecloud.ResultNotFound}:       2,
		{Method: fakecloud.MethodGetInstance, Result: fakecloud.ResultParentNotFound}: 2,
	}
	if got := c.Calls(); got.String() != want.String() || got.Total() != 8 {
		t.Errorf("Calls() = %v, want %v", got, want)
	}
}

// TestFailAndThrottle: a failing API answers 500 (Unknown) for its period,
// a throttled one 429 with the Retry-After; then it answers again.
func TestFailAndThrottle(t *testing.T) {
	clk := clocktesting.NewFakeClock(testutil.Epoch)
	c := fakecloud.New(clk, fakecloud.Config{})
	p := &fakecloud.Provider{API: c}
	ctx := context.Background()
	in, _ := c.AddInstance("A", "i1", "n", "z1")
	n := nodeOf(in.ProviderID())
	c.Fail(time.Minute)
	if ok, err := p.InstanceExists(ctx, n); nodehealth.ClassifyExistence(ok, err) != nodehealth.ExistenceUnknown {
		t.Errorf("failing: InstanceExists = %v, %v, want Unknown", ok, err)
	}
	clk.Step(time.Minute)
	c.Throttle(time.Minute, 30*time.Second)
	_, err := p.InstanceExists(ctx, n)
	var ra *fakecloud.RetryAfterError
	if !errors.As(err, &ra) || ra.RetryAfter() != 30*time.Second || nodehealth.ClassifyExistence(false, err) != nodehealth.ExistenceUnknown {
		t.Errorf("throttled: InstanceExists error = %v, want a RetryAfterError of 30s read as Unknown", err)
	}
	clk.Step(time.Minute)
	if ok, err := p.InstanceExists(ctx, n); !ok || err != nil {
		t.Errorf("recovered: InstanceExists = %v, %v, want true, nil", ok, err)
	}
	if got := c.Calls().String(); got != "GetInstance/error=1 GetInstance/ok=1 GetInstance/throttled=1" {
		t.Errorf("Calls() = %s", got)
	}
	if _, err := p.InstanceExists(ctx, nodeOf("aws:///i-1")); !errors.Is(err, fakecloud.ErrBadProviderID) {
		t.Errorf("foreign providerID: %v, want ErrBadProviderID", err)
	}
}
