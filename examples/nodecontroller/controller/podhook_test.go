package controller_test

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// podHook is a clientset whose pod Patch and Delete calls run hook first:
// a throttled or stuck client. The hook runs outside the fake clientset,
// whose reactors run under one lock that would stall every other call too;
// an error from it fails the call.
type podHook struct {
	*fake.Clientset
	hook func(ctx context.Context, verb, name string, sub []string, data []byte) error
}

func (c *podHook) CoreV1() corev1.CoreV1Interface { return hookedCore{c.Clientset.CoreV1(), c} }

type hookedCore struct {
	corev1.CoreV1Interface
	c *podHook
}

func (s hookedCore) Pods(ns string) corev1.PodInterface {
	return hookedPods{s.CoreV1Interface.Pods(ns), s.c}
}

type hookedPods struct {
	corev1.PodInterface
	c *podHook
}

func (p hookedPods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*v1.Pod, error) {
	if err := p.c.hook(ctx, "patch", name, sub, data); err != nil {
		return nil, err
	}
	return p.PodInterface.Patch(ctx, name, pt, data, opts, sub...)
}

func (p hookedPods) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	if err := p.c.hook(ctx, "delete", name, nil, nil); err != nil {
		return err
	}
	return p.PodInterface.Delete(ctx, name, opts)
}

var _ kubernetes.Interface = (*podHook)(nil)
