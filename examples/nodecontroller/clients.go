package main

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
)

// The API clients. As kube-controller-manager, built-in types travel as
// protobuf (its --kube-api-content-type default), with JSON accepted as a
// fallback. As kube-controller-manager's node-lifecycle-controller and
// taint-eviction-controller each have a client of their own, and its
// --kube-api-qps and --kube-api-burst apply to each, every write duty here
// has a client (and a client-side token bucket) of its own, each with
// -kube-api-qps and -kube-api-burst: the informers, node status and the
// snapshot; pod marking (Ready=False); taints and labels; evictions; and
// Kubernetes Events. So a large outage's thousands of pod writes never
// queue the NoExecute taints behind them. The program as a whole may send
// up to five times -kube-api-qps (kube-controller-manager's two controllers
// up to twice --kube-api-qps, plus its other controllers').

const (
	protobuf           = "application/vnd.kubernetes.protobuf"
	protobufOrJSON     = protobuf + ",application/json"
	duties         int = 5 // clients per process, for the flags' help
)

// withProtobuf sets rc to send protobuf and accept protobuf or JSON.
func withProtobuf(rc *rest.Config) {
	rc.ContentType = protobuf
	rc.AcceptContentTypes = protobufOrJSON
}

// dutyClients returns the clients of the write duties, each built from a
// copy of rc with its own rate limiter and a user agent that names the
// duty, and the client of the Kubernetes Events.
func dutyClients(rc *rest.Config) (controller.Clients, kubernetes.Interface, error) {
	var cs controller.Clients
	var events kubernetes.Interface
	for _, d := range []struct {
		name string
		dst  *kubernetes.Interface
	}{
		{"marking", &cs.Marking}, {"taints", &cs.Taints}, {"evictions", &cs.Evictions}, {"events", &events},
	} {
		c := rest.CopyConfig(rc)
		c.RateLimiter = nil // a token bucket of its own, from QPS and Burst
		c.UserAgent = rc.UserAgent + "/" + d.name
		client, err := kubernetes.NewForConfig(c)
		if err != nil {
			return controller.Clients{}, nil, err
		}
		*d.dst = client
	}
	return cs, events, nil
}
