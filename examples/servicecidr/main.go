// Command servicecidr runs the ServiceCIDR finalizer controller
// (examples/servicecidr/controller, built on the cidrfinalizer package).
//
// With -kubeconfig it runs against that cluster until interrupted, on the
// real clock. Run it only where the kube-controller-manager's own
// servicecidrs controller is off (for example a bare kube-apiserver), or the
// two controllers share the same finalizer.
//
// Without -kubeconfig it runs a demo on client-go's fake clientset and a fake
// clock: a ServiceCIDR gets its finalizer, is deleted while an IPAddress
// still uses it and stays blocked, the address goes away, and the finalizer
// is released once the grace period has passed. The fake clientset removes
// deleted objects at once and knows nothing of finalizers, so the demo
// emulates a deletion by setting the deletionTimestamp itself, as the
// apiserver would for an object with finalizers.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/kubelifecycle/lifecycle/cidrfinalizer"
	"github.com/kubelifecycle/lifecycle/examples/servicecidr/controller"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster to run against; empty runs the demo on a fake clientset")
	grace := flag.Duration("grace-period", cidrfinalizer.DefaultConfig().GracePeriod, "wait after the deletion before releasing the finalizer")
	recheck := flag.Duration("recheck-interval", 0, "re-evaluate a blocked ServiceCIDR this often (0: only on events, as upstream)")
	workers := flag.Int("workers", 1, fmt.Sprintf("queue workers (1 to %d)", controller.MaxWorkers))
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "servicecidr: unexpected arguments:", flag.Args())
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := controller.Config{
		Finalizer: cidrfinalizer.Config{GracePeriod: *grace, RecheckInterval: *recheck},
		Workers:   *workers,
	}
	// Every setting is checked before anything runs (runCluster and
	// runDemo check again, for their other callers).
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "servicecidr: invalid flags:", err)
		os.Exit(2)
	}
	var err error
	if *kubeconfig != "" {
		err = runCluster(ctx, *kubeconfig, cfg)
	} else {
		err = runDemo(ctx, os.Stdout, cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "servicecidr:", err)
		os.Exit(1)
	}
}

// runCluster checks cfg, then runs the controller against a real cluster
// until ctx is done.
func runCluster(ctx context.Context, kubeconfig string, cfg controller.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	defer factory.Shutdown()
	c, err := controller.New(client, factory, clock.RealClock{}, cfg)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

// demoEpoch is the fake clock's start; the demo prints times relative to it.
var demoEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	demoName = "demo"
	demoCIDR = "10.96.0.0/28"
	demoIP   = "10.96.0.5"
)

// runDemo plays the scenario on a fake clientset and a fake clock and
// narrates it to w. The output is deterministic.
func runDemo(ctx context.Context, w io.Writer, cfg controller.Config) error {
	client := fake.NewClientset(
		&networkingv1.ServiceCIDR{
			ObjectMeta: metav1.ObjectMeta{Name: demoName, UID: types.UID("uid-" + demoName)},
			Spec:       networkingv1.ServiceCIDRSpec{CIDRs: []string{demoCIDR}},
		},
		&networkingv1.IPAddress{
			ObjectMeta: metav1.ObjectMeta{Name: demoIP, Labels: map[string]string{
				networkingv1.LabelIPAddressFamily: "IPv4",
				networkingv1.LabelManagedBy:       cidrfinalizer.AllocatorName,
			}},
			Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{
				Resource: "services", Namespace: "default", Name: "web",
			}},
		},
	)
	clk := clocktesting.NewFakeClock(demoEpoch)

	var mu sync.Mutex
	var last cidrfinalizer.Decision // the latest decision on the demo object
	cfg.OnSync = func(s controller.Sync) {
		if s.Key == demoName && s.Err == nil {
			mu.Lock()
			last = s.Decision
			mu.Unlock()
		}
	}
	lastDecision := func() cidrfinalizer.Decision { mu.Lock(); defer mu.Unlock(); return last }

	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := controller.New(client, factory, clk, cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(klog.NewContext(ctx, klog.Logger{})) // the narration is the output
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done; factory.Shutdown() }()

	api := client.NetworkingV1().ServiceCIDRs()
	get := func() (*networkingv1.ServiceCIDR, error) { return api.Get(ctx, demoName, metav1.GetOptions{}) }
	say := func(format string, args ...any) {
		fmt.Fprintf(w, "%-6s ", "+"+clk.Since(demoEpoch).String())
		fmt.Fprintf(w, format+"\n", args...)
	}
	grace := cfg.Finalizer.GracePeriod

	say("ServiceCIDR %s %s created; IPAddress %s (Service default/web) allocated from it", demoName, demoCIDR, demoIP)
	sc, err := waitFor(ctx, "the finalizer and Ready=True", get, func(sc *networkingv1.ServiceCIDR) bool {
		return hasFinalizer(sc) && ready(sc) == "True"
	})
	if err != nil {
		return err
	}
	say("controller added the finalizer; %s", describe(sc))

	sc = sc.DeepCopy()
	sc.DeletionTimestamp = &metav1.Time{Time: clk.Now()} // emulated delete (see the package doc)
	if _, err := api.Update(ctx, sc, metav1.UpdateOptions{}); err != nil {
		return err
	}
	say("ServiceCIDR %s deleted (deletionTimestamp set)", demoName)
	sc, err = waitFor(ctx, "the blocked condition", get, func(sc *networkingv1.ServiceCIDR) bool {
		return ready(sc) == "False" && message(sc) == cidrfinalizer.MessageBlocked &&
			lastDecision().Action == cidrfinalizer.ActionBlock // OnSync runs after the write
	})
	if err != nil {
		return err
	}
	say("blocked by %v; %s", lastDecision().Blocking, describe(sc))

	first := grace * 4 / 10
	clk.Step(first)
	if err := client.NetworkingV1().IPAddresses().Delete(ctx, demoIP, metav1.DeleteOptions{}); err != nil {
		return err
	}
	say("IPAddress %s deleted (the Service went away)", demoIP)
	if grace-first > 0 {
		sc, err = waitFor(ctx, "the grace period", get, func(sc *networkingv1.ServiceCIDR) bool {
			return message(sc) == cidrfinalizer.MessageTerminating && lastDecision().Action == cidrfinalizer.ActionWait
		})
		if err != nil {
			return err
		}
		say("nothing blocks; waiting %v for the grace period; %s", lastDecision().RequeueAfter, describe(sc))
		clk.Step(grace - first) // the controller's delayed requeue fires on the fake clock
	}
	sc, err = waitFor(ctx, "the finalizer to go", get, func(sc *networkingv1.ServiceCIDR) bool { return !hasFinalizer(sc) })
	if err != nil {
		return err
	}
	say("grace period over: controller removed the finalizer; %s", describe(sc))
	if err := api.Delete(ctx, demoName, metav1.DeleteOptions{}); err != nil {
		return err
	}
	say("the apiserver can now remove ServiceCIDR %s", demoName)
	return nil
}

// waitFor polls get until ok holds, for up to 10s of real time: informers
// deliver asynchronously even on the fake clientset.
func waitFor(ctx context.Context, what string, get func() (*networkingv1.ServiceCIDR, error),
	ok func(*networkingv1.ServiceCIDR) bool) (*networkingv1.ServiceCIDR, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		sc, err := get()
		if err == nil && ok(sc) {
			return sc, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, errors.Join(fmt.Errorf("timed out waiting for %s", what), err, ctx.Err())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func hasFinalizer(sc *networkingv1.ServiceCIDR) bool {
	return slices.Contains(sc.Finalizers, cidrfinalizer.Finalizer)
}

func readyCondition(sc *networkingv1.ServiceCIDR) *metav1.Condition {
	for i := range sc.Status.Conditions {
		if sc.Status.Conditions[i].Type == cidrfinalizer.ConditionReady {
			return &sc.Status.Conditions[i]
		}
	}
	return nil
}

func ready(sc *networkingv1.ServiceCIDR) string {
	if c := readyCondition(sc); c != nil {
		return string(c.Status)
	}
	return ""
}

func message(sc *networkingv1.ServiceCIDR) string {
	if c := readyCondition(sc); c != nil {
		return c.Message
	}
	return ""
}

// describe prints the finalizers and the Ready condition of sc.
func describe(sc *networkingv1.ServiceCIDR) string {
	s := fmt.Sprintf("finalizers=%v", sc.Finalizers)
	if c := readyCondition(sc); c != nil {
		s += fmt.Sprintf(" Ready=%s", c.Status)
		if c.Reason != "" {
			s += " reason=" + c.Reason
		}
		s += fmt.Sprintf(" %q", c.Message)
	}
	return s
}
