package incident_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
	"github.com/kubelifecycle/lifecycle/examples/replay/incident"
)

// An informer recording says the Lease informer received n0's renewals
// of +20s, +30s and +40s only at +45s: a Lease watch stall from +20s to
// +45s.
func ExampleInformerStalls() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var log []audit.Event
	for s := 10; s <= 50; s += 10 {
		at := t0.Add(time.Duration(s) * time.Second)
		log = append(log, audit.Event{Level: "Metadata", Stage: "ResponseComplete", Verb: "update",
			User:           audit.User{Username: "system:node:n0"},
			ObjectRef:      &audit.ObjectRef{Resource: "leases", APIGroup: "coordination.k8s.io", Namespace: "kube-node-lease", Name: "n0"},
			ResponseStatus: &audit.Status{Code: 200}, RequestReceivedTimestamp: at, StageTimestamp: at})
	}
	recording := `{"received":"2026-01-01T00:00:00Z","kind":"Clock"}
{"received":"2026-01-01T00:00:10.01Z","kind":"Lease","name":"n0"}
{"received":"2026-01-01T00:00:45Z","kind":"Lease","name":"n0"}
{"received":"2026-01-01T00:00:45.01Z","kind":"Lease","name":"n0"}
{"received":"2026-01-01T00:00:45.02Z","kind":"Lease","name":"n0"}
{"received":"2026-01-01T00:00:50.01Z","kind":"Lease","name":"n0"}
`
	rec, err := incident.ReadRecording(strings.NewReader(recording), incident.DefaultRecordingLimits())
	if err != nil {
		panic(err)
	}
	stalls, err := incident.InformerStalls(incident.SliceSource(log), rec, incident.InformerOptions{})
	if err != nil {
		panic(err)
	}
	for _, s := range stalls {
		fmt.Println(s.String(t0))
	}
	opt := incident.ApplyStalls(incident.ReplayOptions{}, stalls)
	fmt.Println(len(opt.LeaseWatchStalls), "lease watch stall to replay")
	// Output:
	// from the informer recording: lease watch stall +20s to +45s (3 writes delivered over 1s late, the latest 25s)
	// 1 lease watch stall to replay
}
