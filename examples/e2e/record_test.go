package e2e

// Recordings of kube-controller-manager v1.37.2 for examples/replay, and
// their self-replay: the KCM side of the parity scenarios runs on an
// apiserver whose audit policy is examples/replay/audit's shipped policy
// merged with the parity trace's (recordPolicy), with the identities a
// real cluster has (kubelets as system:node:<name> in system:nodes,
// kube-controller-manager as system:kube-controller-manager). After the
// scenario, selfReplay replays the log with examples/replay/incident under
// the flags KCM ran with and requires every Unknown write, taint, pod set
// NotReady and deletion KCM made to be reproduced: the same objects, none
// missing, none extra, each within one --node-monitor-period (at the best
// of the monitor pass phases tried: KCM's own phase is unknown; plus
// replayLoadSlack for this machine's load, counted in the log). The
// replay's controller starts when KCM did and runs to the recording's
// end (recordingSpan). With
// LIFECYCLE_E2E_RECORD_DIR=dir each log is saved as
// dir/<scenario>.audit.jsonl.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/examples/e2e/parity"
	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
	"github.com/kubelifecycle/lifecycle/examples/replay/incident"
)

// envRecordDir names the directory where the recorded KCM audit logs are
// saved (unset: not saved).
const envRecordDir = "LIFECYCLE_E2E_RECORD_DIR"

// kcmUser is kube-controller-manager's own identity (what it runs as
// without --use-service-account-credentials), one of
// incident.DefaultControllerUsers.
const kcmUser = "system:kube-controller-manager"

// recordPolicy is the audit policy of the recorded runs: first the shipped
// replay policy's Lease rule (kubelet renewals at Metadata: parity's rules
// log nothing from kube-node-lease), then parity's rules (every write to
// Nodes, Pods and Events at RequestResponse: the kubelets' node status at
// more than the Request the replay needs, and the parity trace keeps the
// bodies it diffs against), then the ServiceAccount rule of parity.Policy
// and the shipped policy's other rules: pod bindings, and the
// controller's reads of Nodes and Leases at Metadata (when it started:
// controllerStart). The parity trace leaves the reads out
// (recordedWriter).
var recordPolicy = parity.PolicyWithFirst(recordLeaseRule, `- level: Metadata
  userGroups: ["system:serviceaccounts"]
- level: Request
  verbs: ["create"]
  resources:
  - group: ""
    resources: ["pods/binding"]
- level: Metadata
  users: ["system:serviceaccount:kube-system:node-controller", "`+kcmUser+`"]
  verbs: ["get", "list", "watch"]
  resources:
  - group: ""
    resources: ["nodes"]
  - group: coordination.k8s.io
    resources: ["leases"]
`)

// recordLeaseRule is the shipped replay policy's rule for the kubelets'
// Lease renewals (examples/replay/audit/policy.yaml), in parity's YAML
// layout.
const recordLeaseRule = `- level: Metadata
  userGroups: ["system:nodes"]
  verbs: ["update", "patch"]
  namespaces: ["kube-node-lease"]
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
`

// recordUsers are the token users of a recorded cluster of nodes: the
// kubelets (in system:nodes, authorized by the system:node ClusterRole,
// see startRecordedCluster) and kube-controller-manager (in
// system:masters, as the admin it otherwise runs as here).
func recordUsers(nodes []worldNode) []cluster.TokenUser {
	users := []cluster.TokenUser{{Name: kcmUser, Groups: []string{"system:masters"}}}
	for _, n := range nodes {
		users = append(users, cluster.TokenUser{Name: "system:node:" + n.name, Groups: []string{"system:nodes"}})
	}
	return users
}

// startRecordedCluster is startAuditedClusterWith(policy) with the
// identities of recordUsers: policy is recordPolicy, or one with its rules. The apiserver authorizes with RBAC only (no
// Node authorizer, no NodeRestriction), so the group system:nodes is bound
// to the system:node ClusterRole, as clusters did before the Node
// authorizer (the binding RBAC bootstraps without subjects).
func startRecordedCluster(t *testing.T, bins cluster.Binaries, policy string, nodes []worldNode) (*cluster.Cluster, string) {
	t.Helper()
	c, auditLog := startAuditedClusterOpts(t, bins, policy, recordUsers(nodes))
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "lifecycle-e2e-nodes"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:nodes"}},
	}
	if _, err := c.Clientset(t).RbacV1().ClusterRoleBindings().Create(context.Background(), crb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding system:nodes to system:node: %v", err)
	}
	recordings.Store(c, &recording{auditLog: auditLog})
	t.Cleanup(func() { recordings.Delete(c) })
	return c, auditLog
}

// recording is the audit log of a recorded cluster, and whether it has
// been self-replayed.
type recording struct {
	auditLog string
	replayed atomic.Bool
	mu       sync.Mutex
	delay    *replayDelay // set by the test (delayRecording)
}

// replayDelay is a fault that held the controller's writes back until
// until, invisible to the audit log (a proxy refused them): a decision
// the replay makes before until matches KCM's when KCM's came after until
// and within within of it.
type replayDelay struct {
	until  time.Time
	within time.Duration
	reason string
}

// delayRecording notes d for the recorded cluster c's self-replay.
func delayRecording(c *cluster.Cluster, d replayDelay) {
	if v, ok := recordings.Load(c); ok {
		rec := v.(*recording)
		rec.mu.Lock()
		rec.delay = &d
		rec.mu.Unlock()
	}
}

// recordings maps each running recorded cluster to its recording.
var recordings sync.Map // *cluster.Cluster → *recording

// selfReplayAtEnd self-replays the recorded cluster c's log, named after
// the test, when the test ends with kube-controller-manager p stopped and
// nothing failed, unless it was self-replayed before (runParity does,
// with its scenario's known differences). flags are KCM's (without
// dashes), with the fault delayRecording noted. Nothing on a cluster that
// is not recorded.
func selfReplayAtEnd(t *testing.T, c *cluster.Cluster, p *cluster.Process, flags []string) {
	v, ok := recordings.Load(c)
	if !ok {
		return
	}
	rec := v.(*recording)
	t.Cleanup(func() {
		if t.Failed() || !p.Exited() || rec.replayed.Load() {
			return
		}
		test, _, _ := strings.Cut(t.Name(), "/")
		rec.mu.Lock()
		delay := rec.delay
		rec.mu.Unlock()
		selfReplay(t, recordingName(test), rec.auditLog, flags, replayKnownByTest[test], false, "", delay)
	})
}

// replayKnownByTest are the known differences of the recordings that
// selfReplayAtEnd replays, by test.
var replayKnownByTest = map[string][]replayKnown{
	// kube-controller-manager v1.37.2's Lease circuit breaker holds after
	// an etcd restore until etcd's revision passes the one the hold waits
	// for, thousands of writes later: n is never written Unknown (the
	// hole the library closes, nodehealth's HoldEndRewound and MaxHold; the
	// README's upstream table). An audit log does not show the restore,
	// and the replay has no such hold: it writes n Unknown and taints it.
	"TestEtcdRestoreWhileHeld": {
		{Kind: incident.KindNodeUnknown, Reason: "KCM's breaker hold outlives the etcd restore (upstream v1.37.2; the library ends it on the rewind)"},
		{Kind: incident.KindTaintAdded, Reason: "KCM's breaker hold outlives the etcd restore (upstream v1.37.2; the library ends it on the rewind)"},
	},
}

// envFlagsSuffix names the extra kube-controller-manager flags of
// $LIFECYCLE_E2E_KCM_FLAGS in a recording's name ("" without any):
// --feature-gates=NodeControllerLeaseCircuitBreaker=false gives
// "-feature-gates-nodecontrollerleasecircuitbreaker-false".
func envFlagsSuffix() string {
	var b strings.Builder
	dash := true
	for _, r := range strings.ToLower(os.Getenv(envKCMFlags)) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	return b.String()
}

// recordingName is the name of a test's recording: "TestNodeClockSkew"
// becomes "node-clock-skew", "TestFaultAPIServerOverloaded"
// "fault-api-server-overloaded".
func recordingName(test string) string {
	rs := []rune(strings.TrimPrefix(test, "Test"))
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) {
			// A word starts here: after a lower-case letter, or as the
			// last capital of an acronym ("APIServer": api-server).
			if i > 0 && (unicode.IsLower(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String() + envFlagsSuffix()
}

// markReplayed notes that auditLog has been self-replayed.
func markReplayed(auditLog string) {
	recordings.Range(func(_, v any) bool {
		if rec := v.(*recording); rec.auditLog == auditLog {
			rec.replayed.Store(true)
		}
		return true
	})
}

// kcmKubeconfig returns the --kubeconfig flag for kube-controller-manager
// as kcmUser when c has that user (a recorded cluster), else nothing.
func kcmKubeconfig(t *testing.T, c *cluster.Cluster) []string {
	t.Helper()
	if c.UserToken(kcmUser) == "" {
		return nil
	}
	p := filepath.Join(filepath.Dir(c.Kubeconfig()), "kubeconfig-kcm")
	if err := c.WriteKubeconfigFor(p, kcmUser); err != nil {
		t.Fatal(err)
	}
	return []string{"--kubeconfig=" + p} // the last --kubeconfig wins
}

// kcmProxyKubeconfig returns the kubeconfig for kube-controller-manager:
// kubeconfig (the admin's, through a fault proxy) with kcmUser's token
// when c has that user (a recorded cluster), else kubeconfig.
func kcmProxyKubeconfig(t *testing.T, c *cluster.Cluster, kubeconfig string) string {
	t.Helper()
	tok := c.UserToken(kcmUser)
	if tok == "" {
		return kubeconfig
	}
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.Token = tok
	}
	out := kubeconfig + "-kcm"
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// nodeIdentity is the node agents' transport on a recorded cluster: a
// request to a node's Lease or to the node (its status included), when
// the cluster has a token for system:node:<name>, is made with that token
// instead of the admin's, as the node's kubelet makes it. The agent serves
// many nodes with one client, so the identity is chosen by the request's
// path. Creates (the name is in the body) and pod requests stay the
// admin's.
type nodeIdentity struct {
	c  *cluster.Cluster
	rt http.RoundTripper
}

const (
	leasePathPrefix = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"
	nodePathPrefix  = "/api/v1/nodes/"
)

// nodeOfPath returns the node whose Lease or Node the path names.
func nodeOfPath(path string) string {
	if name, ok := strings.CutPrefix(path, leasePathPrefix); ok && !strings.Contains(name, "/") {
		return name
	}
	if rest, ok := strings.CutPrefix(path, nodePathPrefix); ok {
		name, sub, _ := strings.Cut(rest, "/")
		if sub == "" || sub == "status" {
			return name
		}
	}
	return ""
}

func (n *nodeIdentity) RoundTrip(req *http.Request) (*http.Response, error) {
	if name := nodeOfPath(req.URL.Path); name != "" {
		if tok := n.c.UserToken("system:node:" + name); tok != "" {
			req = req.Clone(req.Context())
			req.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	return n.rt.RoundTrip(req)
}

// recordedController selects the controller's requests in a recorded
// cluster's audit log, for the parity trace: kcmUser's, or the admin's
// other than the test's own clients' (examples/nodecontroller's).
func recordedController(e *parity.AuditEvent) bool {
	return e.User.Username == kcmUser || (e.User.Username == "admin" && e.UserAgent != testUserAgent)
}

// recordedWriter selects the controller's writes (and Events) for the
// parity trace: recordedController's requests but reads.
func recordedWriter(e *parity.AuditEvent) bool {
	return recordedController(e) && !slices.Contains([]string{"get", "list", "watch"}, e.Verb)
}

// recordingSpan is incident.ControllerSpan of the log at auditLog: the
// controller's first list of Nodes (after the test's nodes registered)
// and the last event's time.
func recordingSpan(t *testing.T, auditLog string) (start, end time.Time) {
	t.Helper()
	r, err := audit.Open([]string{auditLog}, audit.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	start, end, err = incident.ControllerSpan(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	return start, end
}

// replayKnown is a difference between the recording and its self-replay
// that is expected, with its reason: where the library deliberately
// differs from upstream (the issue number), or where upstream's choice is
// arbitrary.
type replayKnown struct {
	// Kind is the decision kind; Detail, if set, its detail (a taint).
	Kind   incident.Kind
	Detail string
	// Missing: the recording has it and the replay does not (else extra).
	Missing bool
	// Repeat: only a missing decision that repeats an earlier matched one
	// of the same object (isRepeat).
	Repeat bool
	// Nodes, if set: only decisions of these nodes.
	Nodes  []string
	Reason string
}

func (k replayKnown) matches(c *incident.Comparison, d incident.Decision, missing bool) bool {
	return k.Missing == missing && d.Kind == k.Kind && (k.Detail == "" || d.Detail == k.Detail) && (!k.Repeat || isRepeat(c, d)) &&
		(k.Nodes == nil || slices.Contains(k.Nodes, d.Node))
}

// replayLoadSlack is how much later than one --node-monitor-period KCM's
// write may land and still count as matched: KCM's own latency from its
// decision to the logged write (taint eviction's worker, the client, the
// apiserver) on the shared 2-core machine, where two apiservers, two etcds
// and two controllers run at once; parityTolerance's 1 s for the same
// noise. The log says how many matches needed it.
const replayLoadSlack = time.Second

// replayPhases is how many monitor pass phases, spread over one period,
// selfReplay tries.
const replayPhases = 10

// selfReplay replays the KCM audit log auditLog (scenario name) with
// examples/replay/incident under flags (timingFlags' and the scenario's,
// without dashes; those that are not policy flags are ignored) and fails
// the test unless the best of replayPhases monitor pass phases reproduces
// every decision KCM made: none missing, none extra (but the known ones,
// each listed with its reason), each within one --node-monitor-period
// (plus replayLoadSlack, counted). It saves the log to $LIFECYCLE_E2E_RECORD_DIR first.
//
// With orderFree, the decisions of a kind (and taint) are paired by rank
// in time rather than by object, and the objects compared as sets: KCM's
// pick among the tied nodes of a rate-limited zone queue is its map's
// order (arbitrary), so the replay cannot follow it object by object; the
// check is then that the same objects got each decision and the k-th of
// KCM's came within a monitor period of the k-th of the replay's.
//
// A non-empty gap names why the scenario is not reproduced yet: the result
// is logged with it and does not fail the test.
//
// A delay (nil: none) accepts matches the fault it names held back.
func selfReplay(t *testing.T, name, auditLog string, flags []string, known []replayKnown, orderFree bool, gap string, delay *replayDelay) {
	t.Helper()
	markReplayed(auditLog)
	t0 := time.Now()
	if dir := os.Getenv(envRecordDir); dir != "" {
		b, err := os.ReadFile(auditLog)
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name+".audit.jsonl"), b, 0o644)
		}
		if err != nil {
			t.Errorf("saving the recording: %v", err)
		}
	}
	// KCM ran with $LIFECYCLE_E2E_KCM_FLAGS after flags (the last wins).
	pol := policyOf(t, append(slices.Clone(flags), strings.Fields(os.Getenv(envKCMFlags))...))
	open := func() (incident.Source, error) { return audit.Open([]string{auditLog}, audit.Limits{}) }
	src, err := open()
	if err != nil {
		t.Fatal(err)
	}
	h, err := incident.Inventory(src, incident.Options{})
	if err != nil {
		t.Fatalf("self-replay of %s: %v", name, err)
	}
	start, end := recordingSpan(t, auditLog)
	opt := incident.ReplayOptions{Policy: pol, ControllerStart: start, End: end, PassDrift: incident.DefaultPassDrift}
	_, runs, err := incident.Phases(context.Background(), h, open, opt, incident.PhaseOffsets(pol.NodeMonitorPeriod, replayPhases))
	if err != nil {
		t.Fatalf("self-replay of %s: %v", name, err)
	}
	best := bestReplay(h, runs, known, orderFree, delay)
	opt.Phase = best.run.Phase
	t.Logf("self-replay %s: %s (phase %v, the best of %d; %v)%s", name, best, best.run.Phase, replayPhases, time.Since(t0).Round(time.Millisecond), best.explained)
	if best.delayed > 0 {
		t.Logf("self-replay %s: %d matches held back by the fault until %s, KCM's within %v after it: %s", name, best.delayed, stamp(delay.until), delay.within, delay.reason)
	}
	if len(best.cmp.Matched) == 0 {
		t.Errorf("self-replay %s: no decision of KCM's matched; want some", name)
	}
	if (best.unexplained > 0 || best.late > 0) && gap != "" {
		t.Logf("self-replay %s: NOT REPRODUCED (reported, not a failure): %d missing or extra without a known reason, %d matches more than a monitor period plus %v apart; known gap: %s", name, best.unexplained, best.late, replayLoadSlack, gap)
		return
	}
	if best.unexplained > 0 || best.late > 0 {
		var b bytes.Buffer
		_ = incident.NewReport(h, opt, best.run).WriteText(&b)
		t.Errorf("self-replay %s: %d missing or extra without a known reason, %d matches more than a monitor period plus %v apart; the report:\n%s", name, best.unexplained, best.late, replayLoadSlack, b.String())
	}
}

// policyOf returns the replay policy of kube-controller-manager's flags
// (with or without dashes; the last of a name wins, those that are not
// policy flags are ignored).
func policyOf(t *testing.T, flags []string) incident.Policy {
	t.Helper()
	pol := incident.DefaultPolicy()
	for _, f := range flags {
		k, v, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if slices.Contains(incident.PolicyFlags, k) {
			if err := pol.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	return pol
}

// replayResult is one phase's replay judged against the recording.
type replayResult struct {
	run *incident.Run
	cmp *incident.Comparison
	// unexplained: missing and extra decisions no known difference
	// explains; explained lists the others with their reasons, a line each.
	unexplained int
	explained   string
	// late: matches more than a monitor period apart; maxDelta: the
	// largest |replayed - recorded| of the matches.
	late     int
	maxDelta time.Duration
	// slack: matches more than a monitor period apart, within
	// replayLoadSlack more.
	slack int
	// delayed: matches a replayDelay accepts.
	delayed int
}

// byRank re-pairs c's decisions by rank in time within each kind and
// taint (see selfReplay's orderFree) when the recorded and replayed
// objects of that kind are the same set; other kinds keep Compare's
// pairing. A recorded decision that repeats an earlier one of the same
// object (KCM deleting a deleted pod again) stays missing (isRepeat).
func byRank(c *incident.Comparison) *incident.Comparison {
	key := func(d incident.Decision) string { return string(d.Kind) + " " + d.Detail }
	obj := func(d incident.Decision) string { return string(d.Kind) + " " + d.Node + " " + d.Pod + " " + d.Detail }
	var recAll, repAll []incident.Decision
	for _, m := range c.Matched {
		d := incident.Decision{Kind: m.Kind, Node: m.Node, Pod: m.Pod, Detail: m.Detail}
		d.Time = m.Recorded
		recAll = append(recAll, d)
		d.Time = m.Replayed
		repAll = append(repAll, d)
	}
	recAll = append(recAll, c.Missing...)
	repAll = append(repAll, c.Extra...)
	slices.SortStableFunc(recAll, func(a, b incident.Decision) int { return a.Time.Compare(b.Time) })
	slices.SortStableFunc(repAll, func(a, b incident.Decision) int { return a.Time.Compare(b.Time) })
	out := &incident.Comparison{Saved: c.Saved, NewlyLost: c.NewlyLost, First: c.First}
	seen := map[string]bool{}
	rec, rep := map[string][]incident.Decision{}, map[string][]incident.Decision{}
	var keys []string
	for _, d := range recAll {
		if seen[obj(d)] {
			out.Missing = append(out.Missing, d) // a repeat
			continue
		}
		seen[obj(d)] = true
		if rec[key(d)] == nil {
			keys = append(keys, key(d))
		}
		rec[key(d)] = append(rec[key(d)], d)
	}
	for _, d := range repAll {
		if rec[key(d)] == nil && rep[key(d)] == nil {
			keys = append(keys, key(d))
		}
		rep[key(d)] = append(rep[key(d)], d)
	}
	objects := func(ds []incident.Decision) []string {
		var o []string
		for _, d := range ds {
			o = append(o, obj(d))
		}
		slices.Sort(o)
		return o
	}
	for _, k := range keys {
		a, b := rec[k], rep[k]
		if len(a) > 0 && slices.Equal(objects(a), objects(b)) {
			for i, d := range a {
				out.Matched = append(out.Matched, incident.Match{Kind: d.Kind, Node: d.Node, Pod: d.Pod, Detail: d.Detail, Recorded: d.Time, Replayed: b[i].Time})
			}
			continue
		}
		// Not the same objects: pair by object, as Compare does.
		for _, m := range c.Matched {
			if string(m.Kind)+" "+m.Detail == k {
				out.Matched = append(out.Matched, m)
			}
		}
		for _, d := range c.Missing {
			if key(d) == k && !slices.ContainsFunc(out.Missing, func(x incident.Decision) bool { return x == d }) {
				out.Missing = append(out.Missing, d)
			}
		}
		for _, d := range c.Extra {
			if key(d) == k {
				out.Extra = append(out.Extra, d)
			}
		}
	}
	return out
}

// isRepeat reports whether the missing decision d repeats a matched one
// of the same object made earlier.
func isRepeat(c *incident.Comparison, d incident.Decision) bool {
	return slices.ContainsFunc(c.Matched, func(m incident.Match) bool {
		return m.Kind == d.Kind && m.Node == d.Node && m.Pod == d.Pod && m.Detail == d.Detail && m.Recorded.Before(d.Time)
	})
}

func (r replayResult) String() string {
	delayed := ""
	if r.delayed > 0 {
		delayed = fmt.Sprintf(" (besides %d held back by the fault)", r.delayed)
	}
	return fmt.Sprintf("%d recorded, %d matched, %d missing, %d extra (%d unexplained), max |delta| %v%s, %d over a monitor period (%d of them within the %v load slack)",
		len(r.cmp.Matched)+len(r.cmp.Missing), len(r.cmp.Matched), len(r.cmp.Missing), len(r.cmp.Extra), r.unexplained, r.maxDelta, delayed, r.late+r.slack, r.slack, replayLoadSlack)
}

// bestReplay judges each run and returns the best: fewest unexplained
// differences, then fewest late matches, then the smallest largest delta.
func bestReplay(h *incident.History, runs []*incident.Run, known []replayKnown, orderFree bool, delay *replayDelay) replayResult {
	var best replayResult
	for i, run := range runs {
		r := replayResult{run: run, cmp: incident.Compare(h, run)}
		if orderFree {
			r.cmp = byRank(r.cmp)
		}
		for _, m := range []struct {
			ds      []incident.Decision
			missing bool
		}{{r.cmp.Missing, true}, {r.cmp.Extra, false}} {
			for _, d := range m.ds {
				j := slices.IndexFunc(known, func(k replayKnown) bool { return k.matches(r.cmp, d, m.missing) })
				if j < 0 {
					r.unexplained++
					continue
				}
				what := "extra"
				if m.missing {
					what = "missing"
				}
				r.explained += fmt.Sprintf("\n  known %s %s %s%s %s: %s", what, d.Kind, d.Node, d.Pod, d.Detail, known[j].Reason)
			}
		}
		for _, m := range r.cmp.Matched {
			if delay != nil && m.Replayed.Before(delay.until) && !m.Recorded.Before(delay.until) && m.Recorded.Sub(delay.until) <= delay.within {
				r.delayed++
				continue
			}
			d := m.Delta().Abs()
			r.maxDelta = max(r.maxDelta, d)
			if d > run.Policy.NodeMonitorPeriod+replayLoadSlack {
				r.late++
			} else if d > run.Policy.NodeMonitorPeriod {
				r.slack++
			}
		}
		if i == 0 || r.unexplained < best.unexplained ||
			(r.unexplained == best.unexplained && (r.late+r.slack < best.late+best.slack || (r.late+r.slack == best.late+best.slack && r.maxDelta < best.maxDelta))) {
			best = r
		}
	}
	return best
}

func TestNodeOfPath(t *testing.T) {
	for _, tt := range []struct{ path, want string }{
		{"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", "n1"},
		{"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", ""},
		{"/apis/coordination.k8s.io/v1/namespaces/default/leases/n1", ""},
		{"/api/v1/nodes/n1", "n1"},
		{"/api/v1/nodes/n1/status", "n1"},
		{"/api/v1/nodes/n1/proxy", ""},
		{"/api/v1/nodes", ""},
		{"/api/v1/namespaces/parity/pods/p/status", ""},
	} {
		if got := nodeOfPath(tt.path); got != tt.want {
			t.Errorf("nodeOfPath(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestRecordingName(t *testing.T) {
	t.Setenv(envKCMFlags, "")
	for _, tt := range []struct{ test, want string }{
		{"TestNodeClockSkew", "node-clock-skew"},
		{"TestFaultAPIServerOverloaded", "fault-api-server-overloaded"},
		{"TestNodeControllerEtcdRestartMidCountdown", "node-controller-etcd-restart-mid-countdown"},
	} {
		if got := recordingName(tt.test); got != tt.want {
			t.Errorf("recordingName(%q) = %q, want %q", tt.test, got, tt.want)
		}
	}
	t.Setenv(envKCMFlags, "--feature-gates=NodeControllerLeaseCircuitBreaker=false")
	if got, want := recordingName("TestNodeClockSkew"), "node-clock-skew-feature-gates-nodecontrollerleasecircuitbreaker-false"; got != want {
		t.Errorf("recordingName with %s set = %q, want %q", envKCMFlags, got, want)
	}
}
