package fakecloud_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/cloudnode/fakecloud"
	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// A scale set is deleted: its instance answers "not found" at once, and
// "parent not found" once the set is gone. The Provider returns the
// cloud-provider contract's (false, nil) for the first and an error wrapping
// nodehealth.ErrParentNotFound for the second; nodehealth.ClassifyExistence
// reads both as NotFound, where upstream's controller reads the error as
// "keep the node".
func Example() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cloud := fakecloud.New(clk, fakecloud.Config{SetDeleteDelay: time.Minute})
	in, _ := cloud.AddInstance("vmss-a", "0", "node-a0", "zone-1")
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a0"}, Spec: v1.NodeSpec{ProviderID: in.ProviderID()}}
	p := &fakecloud.Provider{API: cloud}

	ask := func(when string) {
		exists, err := p.InstanceExists(context.Background(), node)
		fmt.Printf("%-14s exists=%v parentGone=%v upstream keeps=%v existence=%v\n", when, exists,
			errors.Is(err, nodehealth.ErrParentNotFound), err != nil || exists, nodehealth.ClassifyExistence(exists, err))
	}
	ask("running")
	cloud.DeleteScaleSet("vmss-a")
	ask("instance gone")
	clk.Step(time.Minute)
	ask("set gone")
	fmt.Println(cloud.Calls())
	// Output:
	// running        exists=true parentGone=false upstream keeps=true existence=Exists
	// instance gone  exists=false parentGone=false upstream keeps=false existence=NotFound
	// set gone       exists=false parentGone=true upstream keeps=true existence=NotFound
	// GetInstance/not_found=1 GetInstance/ok=1 GetInstance/parent_not_found=1
}
