package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubelifecycle/lifecycle/examples/nodecontroller/controller"
)

// TestDutyClients: every duty has a client of its own (its own token
// bucket and user agent), and every client asks for protobuf with JSON as
// a fallback, as kube-controller-manager's do; the device duty's dynamic
// client (DeviceTaintRules) shares its duty's bucket and user agent and
// asks for JSON.
func TestDutyClients(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // user agent -> Accept
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.UserAgent()] = r.Header.Get("Accept")
		mu.Unlock()
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer srv.Close()
	rc := &rest.Config{Host: srv.URL, QPS: 5, Burst: 10, UserAgent: "node-lifecycle-controller"}
	withProtobuf(rc)
	base, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	cs, events, dyn, err := dutyClients(rc)
	if err != nil {
		t.Fatal(err)
	}
	clients := []kubernetes.Interface{base, cs.Marking, cs.Taints, cs.Evictions, cs.Devices, events}
	if len(clients) != duties {
		t.Fatalf("%d clients, the flags' help says %d", len(clients), duties)
	}
	limiters := map[any]bool{}
	for _, c := range clients {
		if c == nil {
			t.Fatal("a duty without a client")
		}
		limiters[c.CoreV1().RESTClient().GetRateLimiter()] = true
		_, _ = c.CoreV1().Nodes().Get(context.Background(), "n", metav1.GetOptions{})
	}
	if len(limiters) != len(clients) {
		t.Errorf("%d rate limiters for %d clients, want one each", len(limiters), len(clients))
	}
	if len(seen) != len(clients) {
		t.Errorf("user agents %v, want %d different", seen, len(clients))
	}
	for ua, accept := range seen {
		if accept != protobufOrJSON {
			t.Errorf("client %q sends Accept %q, want %q", ua, accept, protobufOrJSON)
		}
	}
	mu.Lock()
	n := len(seen)
	mu.Unlock()
	_, _ = dyn.Resource(controller.DeviceTaintRulesResource).Get(context.Background(), "r", metav1.GetOptions{})
	mu.Lock()
	if len(seen) != n || seen["node-lifecycle-controller/"+controller.DeviceName] != "application/json" {
		t.Errorf("the dynamic client: user agents %v, want %q with JSON", seen, "node-lifecycle-controller/"+controller.DeviceName)
	}
	mu.Unlock()
	if nc := cs.NodeStatus; nc != nil {
		t.Errorf("Clients.NodeStatus = %v, want nil (the main client)", nc)
	}
}
