package incident

import (
	"strings"
	"testing"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// request is one of the controller's lists or watches, from start to end
// (offsets from epoch).
func request(user, verb, resource, uri string, start, end time.Duration, code int) audit.Event {
	ref := audit.ObjectRef{Resource: resource, APIVersion: "v1"}
	if resource == "leases" {
		ref.APIGroup = "coordination.k8s.io"
	}
	return audit.Event{Level: "Metadata", Stage: "ResponseComplete", Verb: verb, RequestURI: uri, User: audit.User{Username: user},
		ObjectRef: &ref, ResponseStatus: &audit.Status{Code: code},
		RequestReceivedTimestamp: epoch.Add(start), StageTimestamp: epoch.Add(end)}
}

func TestInferredStalls(t *testing.T) {
	const kcm = "system:kube-controller-manager"
	s := time.Second
	evs := []audit.Event{
		request(kcm, "list", "leases", "/apis/coordination.k8s.io/v1/leases?resourceVersion=0", 0, 100*time.Millisecond, 200),
		// A watch that times out after 5m and is renewed at once: no gap.
		request(kcm, "watch", "leases", "/apis/coordination.k8s.io/v1/leases?watch=true&resourceVersion=10", 100*time.Millisecond, 60*s, 200),
		request(kcm, "watch", "leases", "/apis/coordination.k8s.io/v1/leases?watch=true&resourceVersion=20", 60*s+50*time.Millisecond, 90*s, 200),
		// The watch broke at +90s; the informer relisted at +150s.
		request(kcm, "list", "leases", "/apis/coordination.k8s.io/v1/leases?limit=500&resourceVersion=0", 150*s, 151*s, 200),
		request(kcm, "watch", "leases", "/apis/coordination.k8s.io/v1/leases?watch=true&resourceVersion=30", 151*s, 400*s, 200),
		// Someone else's watch gap is not the controller's.
		request("alice", "watch", "leases", "/apis/coordination.k8s.io/v1/leases?watch=true", 0, s, 200),
		request("alice", "watch", "leases", "/apis/coordination.k8s.io/v1/leases?watch=true", 100*s, 101*s, 200),
		// Nodes: two overlapping watches, then a 3s gap (under the minimum).
		request(kcm, "watch", "nodes", "/api/v1/nodes?watch=true", 0, 50*s, 200),
		request(kcm, "watch", "nodes", "/api/v1/nodes?watch=true", 10*s, 200*s, 200),
		request(kcm, "watch", "nodes", "/api/v1/nodes?watch=true", 203*s, 400*s, 200),
	}
	got, err := InferredStalls(SliceSource(evs), DefaultControllerUsers, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("InferredStalls() = %v, want one lease candidate", got)
	}
	g := got[0]
	if g.Kind != DeliveryLease || !g.From.Equal(epoch.Add(90*s)) || !g.To.Equal(epoch.Add(150*s)) || g.Source != SourceInferred {
		t.Errorf("InferredStalls() = %+v, want a lease candidate +1m30s to +2m30s", g)
	}
	if str := g.String(epoch); !strings.HasPrefix(str, "inferred candidate: lease watch stall") || !strings.Contains(str, "relisted") {
		t.Errorf("String() = %q, want an inferred lease candidate naming the relist", str)
	}
	// A 2s minimum finds the Node gap too.
	if got, _ := InferredStalls(SliceSource(evs), DefaultControllerUsers, 2*s); len(got) != 2 || got[1].Kind != DeliveryNode {
		t.Errorf("InferredStalls(minGap 2s) = %v, want the lease and the node candidates", got)
	}
}
