package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The Events a controller recorded in a scale run, counted by reason from
// the API at the end of the outage (not from the audit log: a create whose
// Event repeats an earlier one becomes a patch of its count, and a create
// the controller never sent is not in the log either).
//
// Both controllers record through client-go's record.EventBroadcaster, whose
// sink watcher has room for 1,000 Events (tools/record/event.go
// maxQueuedEvents); k8s.io/apimachinery/pkg/watch/mux.go
// Broadcaster.distribute drops an Event without a log line when that room
// is full (DropIfChannelFull). A burst of Events faster than the sink's
// client writes them therefore loses some: kube-controller-manager's node
// lifecycle controller shares its client (and its QPS) between pod status
// updates and Events, ours has a client per duty. The expected counts are
// one RegisteredNode per node, one NodeNotReady per lost node and per pod
// marked not ready, and one TaintManagerEviction per pod deleted.

// scaleEvents counts the Events in every namespace by reason, once their
// number has stopped growing for settle (the sink may still be writing a
// backlog), or after at most a minute.
func scaleEvents(t *testing.T, cs kubernetes.Interface, settle time.Duration) map[string]int {
	t.Helper()
	counts, total := listEventReasons(t, cs)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		time.Sleep(settle)
		next, n := listEventReasons(t, cs)
		if n == total {
			break
		}
		counts, total = next, n
	}
	return counts
}

// listEventReasons counts the Events in every namespace by reason, and in
// all.
func listEventReasons(t *testing.T, cs kubernetes.Interface) (map[string]int, int) {
	t.Helper()
	counts, total := map[string]int{}, 0
	opts := metav1.ListOptions{Limit: 5000}
	for {
		l, err := cs.CoreV1().Events("").List(context.Background(), opts)
		if err != nil {
			t.Fatalf("listing Events: %v", err)
		}
		for i := range l.Items {
			counts[l.Items[i].Reason]++
		}
		total += len(l.Items)
		if l.Continue == "" {
			return counts, total
		}
		opts.Continue = l.Continue
	}
}

// scaleEventTable is a table of the Events each run recorded, against the
// count that records every decision once.
func scaleEventTable(rs []scaleResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| controller | nodes | Events in the API by reason (recorded / decisions) |\n|---|---|---|\n")
	for _, r := range rs {
		want := map[string]int{"RegisteredNode": r.Nodes, "NodeNotReady": r.Tainted + r.LostPods, "TaintManagerEviction": r.Deleted}
		var reasons []string
		for reason, n := range r.Events {
			if w, ok := want[reason]; ok {
				reasons = append(reasons, fmt.Sprintf("%s %d/%d", reason, n, w))
			} else {
				reasons = append(reasons, fmt.Sprintf("%s %d", reason, n))
			}
		}
		sort.Strings(reasons)
		fmt.Fprintf(&b, "| %s | %d | %s |\n", r.Controller, r.Nodes, strings.Join(reasons, ", "))
	}
	return b.String()
}
