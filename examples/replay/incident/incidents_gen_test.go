package incident

import (
	"fmt"
	"slices"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// The reconstructed incidents of ../testdata/incidents: small audit logs
// rebuilt from the log lines and timings quoted in public threads (the
// README there names each source and every value chosen). They are not
// recordings: the recorded controller's writes in them are what the thread
// reports, at the instants its quoted lines and upstream's rules give.

// incidentNode is one node of a reconstructed incident.
type incidentNode struct {
	name string
	// offset is when in each 10s renew interval its kubelet renews its
	// Lease (from the log's first instant).
	offset time.Duration
	// resume > 0: the kubelet's renewals are not stored from the
	// incident's silenceFrom until resume, when one is; it then renews
	// every 10s from resume.
	resume time.Duration
}

// reconstruction is a reconstructed incident's timeline.
type reconstruction struct {
	file        string
	base        time.Time // the log's first instant
	zone        string
	nodes       []incidentNode
	podsPerNode int
	end         time.Duration // the log's last renewals are at or before end
	// silenceFrom: the kubelets' writes fail from then until their
	// node's resume (nodes with resume 0 are not silenced). failCode > 0:
	// the renewals attempted meanwhile are logged with that code.
	silenceFrom time.Duration
	failCode    int
	// The recorded controller: its grace period, its monitor passes (at
	// base+phase, then every interval), and the span during which its
	// Lease cache was stale (stall[1] > 0: the renewals stored in
	// [stall[0], stall[1]) reached it at stall[1]).
	grace, phase, interval time.Duration
	stall                  [2]time.Duration

	events []audit.Event
}

// podName is the name of a node's j-th pod.
func (r *reconstruction) podName(node string, j int) string { return fmt.Sprintf("%s-app-%d", node, j) }

func (r *reconstruction) add(at time.Duration, user, verb string, ref audit.ObjectRef, code int, req, resp any) {
	line := int64(len(r.events) + 1)
	e := audit.Event{Level: "Metadata", AuditID: fmt.Sprintf("%s-%d", r.file, line), Stage: "ResponseComplete", Verb: verb,
		User: audit.User{Username: user}, ObjectRef: &ref, ResponseStatus: &audit.Status{Code: code},
		RequestReceivedTimestamp: r.base.Add(at), StageTimestamp: r.base.Add(at + time.Millisecond),
		Source: audit.Position{File: r.file, Line: line}}
	if req != nil {
		e.Level, e.RequestObject = "Request", mustJSON(req)
	}
	if resp != nil {
		e.Level, e.ResponseObject = "RequestResponse", mustJSON(resp)
	}
	r.events = append(r.events, e)
}

func readyPatch(status string) map[string]any {
	return map[string]any{"status": map[string]any{"conditions": []map[string]any{{"type": "Ready", "status": status}}}}
}

// renewals returns when a node's Lease renewals are stored (ok) and when
// they are attempted and fail (failed).
func (r *reconstruction) renewals(n incidentNode) (ok, failed []time.Duration) {
	for t := n.offset; t <= r.end; t += 10 * time.Second {
		if n.resume > 0 && t >= r.silenceFrom && t < n.resume {
			failed = append(failed, t)
			continue
		}
		if n.resume > 0 && t >= n.resume {
			break
		}
		ok = append(ok, t)
	}
	if n.resume > 0 {
		for t := n.resume; t <= r.end; t += 10 * time.Second {
			ok = append(ok, t)
		}
	}
	return ok, failed
}

// recordedUnknown returns when the recorded controller wrote the node
// Unknown (0: never), by upstream's rule: a monitor pass that sees a newer
// Lease renewal than it had takes the pass's time as the node's probe
// time; the first pass more than grace after the probe writes the node
// Unknown. Renewals stored during the stall reach the cache at its end.
func (r *reconstruction) recordedUnknown(n incidentNode, ok []time.Duration) time.Duration {
	seen := func(t time.Duration) time.Duration {
		if r.stall[1] > 0 && t >= r.stall[0] && t < r.stall[1] {
			return r.stall[1]
		}
		return t
	}
	probe, last := time.Duration(-1), time.Duration(-1)
	for pass := r.phase; pass <= r.end; pass += r.interval {
		newest := last
		for _, t := range ok {
			if seen(t) <= pass && t > newest {
				newest = t
			}
		}
		if probe < 0 || newest > last {
			probe, last = pass, newest
		}
		if pass-probe > r.grace {
			return pass
		}
	}
	return 0
}

// repost returns when the kubelet posts its Ready status again after the
// controller wrote it Unknown at unknown: with its first Lease renewal
// after that write (its node status loop and Lease loop both run every
// 10s; the kubelet finds the Unknown when it next reaches the apiserver).
func repost(ok []time.Duration, unknown time.Duration) time.Duration {
	for _, t := range ok {
		if t > unknown {
			return t
		}
	}
	return unknown + 10*time.Second
}

func (r *reconstruction) build() []audit.Event {
	r.events = nil
	for i, n := range r.nodes {
		at := time.Duration(i) * 10 * time.Millisecond
		node := map[string]any{"kind": "Node", "apiVersion": "v1",
			"metadata": map[string]any{"name": n.name, "uid": "uid-" + n.name,
				"labels": map[string]string{"topology.kubernetes.io/zone": r.zone, "kubernetes.io/hostname": n.name}},
			"status": map[string]any{"conditions": []map[string]any{{"type": "Ready", "status": "True"}}}}
		r.add(at, "system:node:"+n.name, "patch", audit.ObjectRef{Resource: "nodes", Name: n.name, Subresource: "status", APIVersion: "v1"}, 200, readyPatch("True"), node)
		for j := range r.podsPerNode {
			name := r.podName(n.name, j)
			pod := map[string]any{"kind": "Pod", "apiVersion": "v1",
				"metadata": map[string]any{"namespace": "default", "name": name, "uid": "uid-" + name},
				"spec":     map[string]any{"containers": []map[string]any{{"name": "app", "image": "app"}}}}
			r.add(at+time.Millisecond, "system:serviceaccount:kube-system:replicaset-controller", "create", audit.ObjectRef{Resource: "pods", Namespace: "default", Name: name, APIVersion: "v1"}, 201, pod, nil)
			r.add(at+2*time.Millisecond, "system:kube-scheduler", "create", audit.ObjectRef{Resource: "pods", Namespace: "default", Name: name, Subresource: "binding", APIVersion: "v1"}, 201,
				map[string]any{"kind": "Binding", "apiVersion": "v1", "target": map[string]any{"kind": "Node", "name": n.name}}, nil)
		}
	}
	for _, n := range r.nodes {
		ok, failed := r.renewals(n)
		lease := audit.ObjectRef{Resource: "leases", Namespace: "kube-node-lease", Name: n.name, APIGroup: "coordination.k8s.io", APIVersion: "v1"}
		for _, t := range ok {
			r.add(t, "system:node:"+n.name, "update", lease, 200, nil, nil)
		}
		if r.failCode > 0 {
			for _, t := range failed {
				r.add(t, "system:node:"+n.name, "update", lease, r.failCode, nil, nil)
			}
		}
		unknown := r.recordedUnknown(n, ok)
		if unknown == 0 {
			continue
		}
		// The recorded controller: the node Unknown, its pods Ready=False.
		r.add(unknown, nodeController, "patch", audit.ObjectRef{Resource: "nodes", Name: n.name, Subresource: "status", APIVersion: "v1"}, 200, readyPatch("Unknown"), nil)
		for j := range r.podsPerNode {
			name := r.podName(n.name, j)
			r.add(unknown+time.Millisecond+time.Duration(j)*time.Millisecond, nodeController, "patch", audit.ObjectRef{Resource: "pods", Namespace: "default", Name: name, Subresource: "status", APIVersion: "v1"}, 200, readyPatch("False"), nil)
		}
		// The kubelet posts Ready again; its status manager puts its pods'
		// Ready back at its next sync, 10s later (a monitor pass has seen
		// the node Ready by then: no pod is marked NotReady again).
		at := repost(ok, unknown)
		r.add(at, "system:node:"+n.name, "patch", audit.ObjectRef{Resource: "nodes", Name: n.name, Subresource: "status", APIVersion: "v1"}, 200, readyPatch("True"), nil)
		for j := range r.podsPerNode {
			name := r.podName(n.name, j)
			r.add(at+10*time.Second+time.Duration(j)*time.Millisecond, "system:node:"+n.name, "patch", audit.ObjectRef{Resource: "pods", Namespace: "default", Name: name, Subresource: "status", APIVersion: "v1"}, 200, readyPatch("True"), nil)
		}
	}
	// The controller's writes complete at their pass's instant: the replay
	// applies a log's writes before its own pass at the same instant, so
	// it knows the recording wrote the node Unknown too.
	for i := range r.events {
		if r.events[i].User.Username == nodeController {
			r.events[i].StageTimestamp = r.events[i].RequestReceivedTimestamp
		}
	}
	slices.SortStableFunc(r.events, func(a, b audit.Event) int { return a.StageTimestamp.Compare(b.StageTimestamp) })
	for i := range r.events {
		r.events[i].AuditID = fmt.Sprintf("%s-%d", r.file, i+1)
		r.events[i].Source.Line = int64(i + 1)
	}
	return r.events
}

// cst is the time zone of #121793's logs (+0800 CST).
var cst = time.FixedZone("CST", 8*3600)

// recordedPassInterval is how far apart the recorded controller's monitor
// passes ran: upstream runs them with wait.Until, which starts the 5s
// period after a pass ends, so passes drift; #121793's line says a node
// probed at one pass "hasn't been updated for 40.010894415s" eight passes
// later: 40.010894415s / 8 = 5.001362s.
const recordedPassInterval = 5_001_362 * time.Microsecond

// recordedPhase121793 puts a recorded pass at 22:59:48.453 CST (the
// quoted node's probe: 23:00:28.464015 - 40.010894415s) and so the eighth
// after it at 23:00:28.464.
const recordedPhase121793 = 48_453*time.Millisecond - 9*recordedPassInterval

// ms is n milliseconds.
func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// incident121793 is kubernetes/kubernetes#121793: the controller's Lease
// watch went silent (HTTP/2 connection lost), its reflector gave up 45s
// after the last frame (HTTP2_READ_IDLE_TIMEOUT_SECONDS 30 +
// HTTP2_PING_TIMEOUT_SECONDS 15) and relisted; meanwhile, with
// --node-monitor-grace-period=40s, every node went Unknown. The log
// starts at 22:59:00 CST; the quoted node 10.0.10.240 renews at :x7.9
// (chosen), seen by the pass at 22:59:48.453 (the controller said at
// 23:00:28.464 it had not been updated for 40.011s); the watch's last frame was at 22:59:56.408 (45s before
// 23:00:41.408, when the watch ended) and the relist took 1s (chosen).
func incident121793() *reconstruction {
	return &reconstruction{
		file: "reconstructed-121793-lease-watch-http2.audit.jsonl",
		base: time.Date(2023, 11, 3, 22, 59, 0, 0, cst).UTC(), zone: "zone-a", podsPerNode: 2, end: 150 * time.Second,
		nodes: []incidentNode{
			{name: "10.0.10.236", offset: ms(6_600)},
			{name: "10.0.10.237", offset: ms(7_000)},
			{name: "10.0.10.238", offset: ms(7_400)},
			{name: "10.0.10.240", offset: ms(7_900)},
			{name: "10.0.10.241", offset: ms(8_300)},
		},
		grace: 40 * time.Second, phase: recordedPhase121793, interval: recordedPassInterval,
		stall: [2]time.Duration{ms(56_408), ms(102_408)},
	}
}

// incident127352 is kubernetes/kubernetes#127352 (continuing #121793's
// simulation): an etcd defrag of 41s on every member at once; no Lease
// renewal is stored meanwhile (the apiserver waits out etcd's 40s
// keepalive and fails over); the kubelets' renewals succeed again a
// retry later. The recorded controller ran --node-monitor-grace-period=50s
// (set after #121793) and one node flapped.
func incident127352() *reconstruction {
	from := 60 * time.Second
	back := from + 41*time.Second
	return &reconstruction{
		file: "reconstructed-127352-etcd-defrag.audit.jsonl",
		base: time.Date(2024, 9, 13, 0, 0, 0, 0, time.UTC), zone: "zone-a", podsPerNode: 2, end: 170 * time.Second,
		nodes: []incidentNode{
			{name: "worker-1", offset: ms(1_000), resume: back + ms(3_000)},
			{name: "worker-2", offset: ms(3_000), resume: back + ms(1_500)},
			{name: "worker-3", offset: ms(5_000), resume: back + ms(2_500)},
			{name: "worker-4", offset: ms(7_000), resume: back + ms(800)},
			{name: "worker-5", offset: ms(9_000), resume: back + ms(4_000)},
		},
		silenceFrom: from, failCode: 504,
		grace: 50 * time.Second, phase: ms(2_300), interval: recordedPassInterval,
	}
}

// incident127352WatchGap is #127352's defrag read as a watch gap: the
// kubelets' renewals are stored (through apiservers on healthy etcd
// members), but the controller's Lease watch is served by the apiserver
// stuck on the defragmenting member, which sees nothing until its etcd
// client fails over after the 40s keepalive (as openshift/ibm-roks-toolkit
// #1021 describes: a node "in KCM" does not see its Lease renewal until the
// kube-apiserver has recovered the etcd connection). The watch delivers
// nothing from the defrag's start to 41s later plus a 2s resync (chosen).
func incident127352WatchGap() *reconstruction {
	r := incident127352()
	r.file = "reconstructed-127352-watch-gap.audit.jsonl"
	for i := range r.nodes {
		r.nodes[i].resume = 0
	}
	r.silenceFrom, r.failCode = 0, 0
	r.stall = [2]time.Duration{60 * time.Second, 103 * time.Second}
	return r
}

// incidentGardener3947 is gardener/gardener#3947: the uplink between a
// shoot's three nodes and its seed (control plane) is down for more than
// 2 minutes (150s chosen); with --node-monitor-grace-period=120s
// (Gardener's setting then) the controller marks all three nodes
// NotReady and their pods not ready, cutting them off from services as
// the connection comes back.
func incidentGardener3947() *reconstruction {
	from := 60 * time.Second
	back := from + 150*time.Second
	return &reconstruction{
		file: "reconstructed-gardener-3947-uplink.audit.jsonl",
		base: time.Date(2021, 4, 26, 0, 0, 0, 0, time.UTC), zone: "eu-west-1a", podsPerNode: 2, end: 270 * time.Second,
		nodes: []incidentNode{
			{name: "shoot-worker-a", offset: ms(300), resume: back + ms(2_000)},
			{name: "shoot-worker-b", offset: ms(3_600), resume: back + ms(1_000)},
			{name: "shoot-worker-c", offset: ms(6_900), resume: back + ms(3_000)},
		},
		silenceFrom: from, failCode: 0,
		grace: 120 * time.Second, phase: ms(1_500), interval: recordedPassInterval,
	}
}

// reconstructions lists the incidents of ../testdata/incidents.
func reconstructions() []*reconstruction {
	return []*reconstruction{incident121793(), incident127352(), incident127352WatchGap(), incidentGardener3947()}
}
