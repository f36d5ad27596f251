package main

import (
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
)

// The API clients. As kube-controller-manager, built-in types travel as
// protobuf (its --kube-api-content-type default), with JSON accepted as a
// fallback. As kube-controller-manager's node-lifecycle-controller and
// taint-eviction-controller each have a client of their own, and its
// --kube-api-qps and --kube-api-burst apply to each, every write duty here
// has a client (and a client-side token bucket) of its own, each with
// -kube-api-qps and -kube-api-burst: the informers, node status and the
// snapshot; pod marking (Ready=False); taints and labels; evictions;
// device taint evictions (pods and DeviceTaintRule status); and Kubernetes
// Events. So a large outage's thousands of pod writes never
// queue the NoExecute taints behind them. The program as a whole may send
// up to six times -kube-api-qps (kube-controller-manager's two controllers
// up to twice --kube-api-qps, plus its other controllers').

const (
	protobuf           = "application/vnd.kubernetes.protobuf"
	protobufOrJSON     = protobuf + ",application/json"
	duties         int = 6 // clients per process, for the flags' help
)

// withProtobuf sets rc to send protobuf and accept protobuf or JSON.
func withProtobuf(rc *rest.Config) {
	rc.ContentType = protobuf
	rc.AcceptContentTypes = protobufOrJSON
}

// dutyClients returns the clients of the write duties, each built from a
// copy of rc with its own rate limiter and a user agent that names the
// duty, the client of the Kubernetes Events, and the dynamic client of the
// device duty's DeviceTaintRules, which shares that duty's rate limiter
// (upstream's device-taint-eviction-controller has one client).
func dutyClients(rc *rest.Config) (controller.Clients, kubernetes.Interface, dynamic.Interface, error) {
	var cs controller.Clients
	var events kubernetes.Interface
	var dyn dynamic.Interface
	for _, d := range []struct {
		name string
		dst  *kubernetes.Interface
	}{
		{"marking", &cs.Marking}, {"taints", &cs.Taints}, {"evictions", &cs.Evictions}, {"events", &events},
		{controller.DeviceName, &cs.Devices},
	} {
		c := rest.CopyConfig(rc)
		c.RateLimiter = nil // a token bucket of its own, from QPS and Burst
		if d.dst == &cs.Devices && c.QPS > 0 {
			// One bucket for the typed and the dynamic client.
			c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
		}
		c.UserAgent = rc.UserAgent + "/" + d.name
		client, err := kubernetes.NewForConfig(c)
		if err != nil {
			return controller.Clients{}, nil, nil, err
		}
		*d.dst = client
		if d.dst == &cs.Devices {
			if dyn, err = dynamic.NewForConfig(c); err != nil { // JSON, whatever c says
				return controller.Clients{}, nil, nil, err
			}
		}
	}
	return cs, events, dyn, nil
}
