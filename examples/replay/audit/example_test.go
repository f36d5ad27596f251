package audit_test

import (
	"fmt"
	"io"
	"log"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// Example reads a small audit log and prints each completed request in
// stageTimestamp order, then what was skipped.
func Example() {
	r, err := audit.Open([]string{"testdata/node-b-unreachable.synthetic.jsonl"}, audit.Limits{})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err) // or, for an *audit.InputError, log it and go on
		}
		resource := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			resource += "/" + e.ObjectRef.Subresource
		}
		fmt.Printf("%s %-6s %-12s %-6s %-15s %s\n", e.StageTimestamp.Format("15:04:05.0"), e.Verb,
			resource, e.ObjectRef.Name, e.Level, e.User.Username)
	}
	st := r.Stats()
	fmt.Println(st.Events, "events from", st.Files[0].Lines, "lines, format", st.Files[0].Format)
	for _, s := range st.Skipped {
		fmt.Println("skipped", s.Count, s.Reason, "first at", s.First[0].Pos)
	}
	// Output:
	// 00:00:00.2 update leases       node-a Metadata        system:node:node-a
	// 00:00:00.5 update leases       node-b Metadata        system:node:node-b
	// 00:00:10.2 update leases       node-a Metadata        system:node:node-a
	// 00:00:10.5 update leases       node-b Metadata        system:node:node-b
	// 00:00:20.2 update leases       node-a Metadata        system:node:node-a
	// 00:00:30.2 update leases       node-a Metadata        system:node:node-a
	// 00:00:40.2 update leases       node-a Metadata        system:node:node-a
	// 00:00:50.2 update leases       node-a Metadata        system:node:node-a
	// 00:01:00.2 update leases       node-a Metadata        system:node:node-a
	// 00:01:01.0 patch  nodes/status node-b RequestResponse system:serviceaccount:kube-system:node-controller
	// 00:01:01.2 patch  nodes        node-b RequestResponse system:serviceaccount:kube-system:node-controller
	// 00:01:01.5 delete pods         web-0  RequestResponse system:serviceaccount:kube-system:taint-eviction-controller
	// 12 events from 14 lines, format plain
	// skipped 1 stage first at testdata/node-b-unreachable.synthetic.jsonl:11
	// skipped 1 duplicate first at testdata/node-b-unreachable.synthetic.jsonl:14
}
