package audit_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"

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

// ExampleNewReader merges two apiservers' logs in different envelopes, one
// of them a gzip stream cut short: its events are returned, then an
// *InputError, then the rest of the other input.
func ExampleNewReader() {
	event := func(id, at string) string {
		return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"` + id +
			`","stage":"ResponseComplete","verb":"update","user":{"username":"system:node:node-a"},"stageTimestamp":"` + at + `"}`
	}
	jsonString := func(s string) string { b, _ := json.Marshal(s); return string(b) }

	// apiserver-1: an AKS diagnostic settings export.
	aks := `{"category":"kube-audit","properties":{"log":` + jsonString(event("a1", "2026-01-01T00:00:00.1Z")) + `}}` + "\n" +
		`{"category":"kube-audit","properties":{"log":` + jsonString(event("a2", "2026-01-01T00:00:10.1Z")) + `}}` + "\n" +
		`{"category":"kube-audit","properties":{"log":` + jsonString(event("a3", "2026-01-01T00:00:20.1Z")) + `}}` + "\n"
	// apiserver-2: a CloudWatch Logs export to S3, gzip without its trailer.
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	fmt.Fprintln(w, "2026-01-01T00:00:05.000Z "+event("b1", "2026-01-01T00:00:05.2Z"))
	fmt.Fprintln(w, "2026-01-01T00:00:06.000Z "+event("b2", "2026-01-01T00:00:06.2Z"))
	w.Close()
	cut := gz.Bytes()[:gz.Len()-8]

	r, err := audit.NewReader([]string{"apiserver-1", "apiserver-2.gz"},
		[]io.Reader{strings.NewReader(aks), bytes.NewReader(cut)}, audit.Limits{})
	if err != nil {
		log.Fatal(err)
	}
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		var ie *audit.InputError
		if errors.As(err, &ie) {
			fmt.Println("warning:", err, errors.Is(err, audit.ErrTruncated))
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.StageTimestamp.Format("15:04:05.0"), e.AuditID, e.Source)
	}
	for _, f := range r.Stats().Files {
		fmt.Println(f.Name, f.Format, f.Events)
	}
	// Output:
	// 00:00:00.1 a1 apiserver-1:1
	// 00:00:05.2 b1 apiserver-2.gz:1
	// 00:00:06.2 b2 apiserver-2.gz:2
	// warning: audit: apiserver-2.gz: after line 2: audit: gzip stream truncated (unexpected EOF) true
	// 00:00:10.1 a2 apiserver-1:2
	// 00:00:20.1 a3 apiserver-1:3
	// apiserver-1 azure-diagnostics 3
	// apiserver-2.gz cloudwatch-s3-export 2
}
