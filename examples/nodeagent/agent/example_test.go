package agent_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubelifecycle/lifecycle/examples/nodeagent/agent"
	"github.com/kubelifecycle/lifecycle/podworker"
)

// A FakeRuntime that fails kills for 5 seconds: a kill inside the window
// fails, the next one after it succeeds.
func ExampleFakeRuntime_Fail() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := agent.NewFakeRuntime(clk)
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	if _, err := rt.StartPod(ctx, "node-1", pod); err != nil {
		fmt.Println(err)
	}
	rt.Fail(agent.FailKills, 5*time.Second)
	_, err := rt.KillPod(ctx, podworker.RunningPod{UID: "u1"}, time.Second)
	fmt.Println("kill at 0s:", errors.Is(err, agent.ErrRuntimeDown), "running:", rt.Running("u1"))
	clk.Step(5 * time.Second)
	stopped, err := rt.KillPod(ctx, podworker.RunningPod{UID: "u1"}, time.Second)
	fmt.Println("kill at 5s:", err, "running:", rt.Running("u1"), "exit code:", stopped.ExitCode)
	// Output:
	// kill at 0s: true running: true
	// kill at 5s: <nil> running: false exit code: 0
}
