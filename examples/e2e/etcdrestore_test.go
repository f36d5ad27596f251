package e2e

// etcd restored from a snapshot while the Lease circuit breaker holds.
// Each controller under test (kube-controller-manager v1.37.2 and
// examples/nodecontroller, as processes, side by side on fresh apiservers)
// reaches its apiserver through a fault proxy; node agents play the
// kubelets (grace 10 s, monitor period 1 s, renewals every 2 s).
//
//  1. etcd's data directory is copied with etcd stopped (SIGKILL, copy,
//     start again): the snapshot, at revision S.
//  2. 3,000 writes go straight to etcd (keys outside /registry): the
//     revision moves past S + 3,000, as a busy cluster's does.
//  3. The controller's Lease watch is stalled (faultproxy): once a live
//     node's frozen Lease is past grace, its live read is newer and the
//     controller holds every node, waiting for its Lease cache to reach
//     the live version H > S + 3,000. Node n's agent is then stopped.
//  4. etcd is restored: the apiserver stopped, the controller's connections
//     cut (its stalled watch dies with its undelivered events, as a watch
//     does when its apiserver goes), etcd killed, its data directory
//     replaced by the snapshot, etcd and the apiserver started again, the
//     stall removed. The revision is back near S: every list the
//     controller's informers make from now on is below H, until 3,000 new
//     writes have passed it (minutes at this cluster's few writes a
//     second).
//  5. The informer relists: client-go re-watches from its last
//     resourceVersion after a watch that ended cleanly, and kube-apiserver
//     accepts a watch from a future resourceVersion and waits, so without
//     an error an informer never relists after such a restore (it stays
//     blind until the revision passes its own; a first run of this test
//     saw neither controller relist within 75 s). A watch that fails
//     makes it relist, and the relist then lands below H (its list from
//     its last resourceVersion is refused as too large, and client-go
//     lists afresh). The test makes the controller's first resumed Lease
//     watch fail with 410 Gone, what kube-apiserver answers a watch whose
//     resourceVersion was compacted.
//
// Why a copied data directory and not etcdutl snapshot restore: the etcd
// v3.7.0 server binary is all the suite builds, and both restore the same
// key space at the same revision, which is all the API server and its
// clients see (resourceVersions are etcd revisions). etcdutl also gives the
// member a new cluster ID and a fresh raft log, which no client of the API
// server can observe; without --bump-revision both roll the revision back.
//
// What must hold for examples/nodecontroller: the hold ends once its
// informer has relisted at the lower revision (its log shows
// health-hold-ended, "went back"), n is written Unknown once, after the
// restore, and no live node is ever written Unknown or tainted. For both:
// the Lease watch was held (the hold is logged), the revision went back
// below the hold's target, n's Lease is the snapshot's again, and the
// Lease informer relisted (a Lease list through the proxy after the 410).
// kube-controller-manager's outcome is reported, not required: its hold
// waits for H (pkg/controller/util/consistency at v1.37.2), so n is not
// written within the test's window.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/examples/e2e/faultproxy"
	"github.com/kubelifecycle/lifecycle/examples/nodeagent/agent"
)

const (
	// restoreBump is how many writes go to etcd between the snapshot and
	// the restore, beyond the cluster's own.
	restoreBump = 3000
	// restoreWait is how long after the restore n must be written
	// Unknown: the informers' reconnection backoff (client-go's
	// reflector backs off up to 30 s after the failures of the outage),
	// plus the grace the restored Lease gets, plus slack for the load.
	restoreWait = 75 * time.Second
)

// restoreOutcome is one controller's run.
type restoreOutcome struct {
	snapRev, beforeRev, afterRev int64 // revisions: snapshot, just before the restore, just after it
	holdRev                      int64 // the live version the hold waited for (from the controller's log)
	restored                     time.Time
	relisted                     time.Time   // the controller's first Lease list after the restore
	unknownN                     []time.Time // n's Unknown writes after the restore
	unknownLive, taintsLive      int
	holdEnded                    string // our controller's health-hold-ended line
	heldAfter                    int    // hold lines logged after the restore
}

func TestEtcdRestoreWhileHeld(t *testing.T) {
	bins := binariesWithKCM(t)
	ctls := []faultController{kcmController(bins), oursController("nodecontroller")}
	var mu sync.Mutex
	outcomes := make([]*restoreOutcome, len(ctls))
	t0 := time.Now()
	rows := controllerRows(t, ctls, func(t *testing.T, i int, ctl faultController) string {
		o := runEtcdRestore(t, bins, ctl)
		mu.Lock()
		outcomes[i] = o
		mu.Unlock()
		if o == nil {
			return ""
		}
		return fmt.Sprintf("| %-40s | %d | %d | %d | %d | %.1f s | %s | %d |",
			ctl.name, o.snapRev, o.holdRev, o.beforeRev, o.afterRev, o.relisted.Sub(o.restored).Seconds(), writeTimes(o.restored, o.unknownN), o.heldAfter)
	})
	t.Logf("etcd restored from a snapshot while held (%v for both; load: %s):\n"+
		"| controller                               | snapshot rev | hold waits for | rev before restore | rev after | Lease relist (from the restore) | n Unknown (from the restore) | hold log lines after the restore |\n%s",
		time.Since(t0).Round(time.Second), loadAvg(), strings.Join(rows, "\n"))
	if o := outcomes[0]; o != nil && len(o.unknownN) == 0 {
		t.Logf("%s: n never written Unknown within %v of the restore: its hold waits for %d, the revision is back at %d (reported, not a failure)",
			ctls[0].name, restoreWait, o.holdRev, o.afterRev)
	}
}

// runEtcdRestore runs the scenario under ctl and returns what happened; it
// fails t on what examples/nodecontroller must do.
func runEtcdRestore(t *testing.T, bins cluster.Binaries, ctl faultController) *restoreOutcome {
	ours := !strings.HasPrefix(ctl.name, "kube-controller-manager")
	nodes := []worldNode{{"m1", "zone-a"}, {"m2", "zone-a"}, {"m3", "zone-a"}, {"n", "zone-a"}}
	fw, px, p := startUnderTest(t, bins, ctl, nodes, nil, []string{"n"})
	ctx := context.Background()
	o := &restoreOutcome{}

	// 1. The snapshot.
	snapDir := filepath.Join(fw.dir, "etcd-snapshot")
	snapshotEtcd(t, fw.c, fw.cs, snapDir)
	o.snapRev = listRevision(t, fw.cs)

	// 2. The revision moves on.
	bumpEtcd(t, fw.c.EtcdEndpoint(), restoreBump)
	bumped := listRevision(t, fw.cs)
	t.Logf("%s: snapshot at revision %d, %d writes to etcd since: revision %d", ctl.name, o.snapRev, restoreBump, bumped)
	// Renewals past the writes, which the controller's Lease watch (not
	// stalled yet) delivers: its synced version is then above the
	// snapshot's, so the restore takes it back. Without them (agents
	// slow to renew after the snapshot's etcd restart) the cache stays at
	// the snapshot's revision and the relist after the restore lands at
	// or above it: no rewind to see. Two leases, so that the first had a
	// renewal period to be delivered.
	cluster.Eventually(t, 60*time.Second, "two Lease renewals past the writes", func(ctx context.Context) (bool, error) {
		l, err := fw.cs.CoordinationV1().Leases(v1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		past := 0
		for _, ls := range l.Items {
			if rv, err := strconv.ParseInt(ls.ResourceVersion, 10, 64); err == nil && rv > bumped {
				past++
			}
		}
		return past >= 2, nil
	})

	// 3. The stall, until the controller holds.
	logFrom := fileSize(t, p.LogPath())
	removeStall, err := px.Add(leaseWatchStall)
	if err != nil {
		t.Fatal(err)
	}
	held := waitLogLine(t, p, logFrom, "is not as new as written version", faultGrace+30*time.Second)
	o.holdRev = writtenVersion(t, held)
	t.Logf("%s holds: %s", ctl.name, held)
	if _, err := fw.w.silence(t); err != nil {
		t.Fatal(err)
	}

	// 4. The restore.
	o.beforeRev = listRevision(t, fw.cs)
	if err := fw.c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	px.Cut() // the stalled watch dies undelivered
	if err := fw.c.KillEtcd(); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(fw.c.WorkDir(), "etcd-data")
	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}
	copyDir(t, snapDir, dataDir)
	if err := fw.c.StartEtcd(ctx); err != nil {
		t.Fatalf("StartEtcd() = %v", err)
	}
	if err := fw.c.StartAPIServer(ctx); err != nil {
		t.Fatalf("StartAPIServer() = %v", err)
	}
	removeStall()
	// 5. The first resumed Lease watch fails: the informer relists.
	if _, err := px.Add(faultproxy.Rule{Name: "gone-lease-watch", Resource: "leases", Watch: faultproxy.OnlyResumeWatch, Action: faultproxy.Gone, Times: 1}); err != nil {
		t.Fatal(err)
	}
	px.Restore()
	o.restored = time.Now()
	o.afterRev = listRevision(t, fw.cs)
	restoreLog := fileSize(t, p.LogPath())
	t.Logf("%s: etcd restored: revision %d before, %d after (snapshot %d); the hold waits for %d", ctl.name, o.beforeRev, o.afterRev, o.snapRev, o.holdRev)
	// The fault took effect: the revision went back below the hold's
	// target, and n's Lease is the snapshot's again.
	if o.afterRev >= o.holdRev || o.afterRev >= o.beforeRev {
		t.Fatalf("revision after the restore %d, before %d, hold %d: the restore did not roll the revision back", o.afterRev, o.beforeRev, o.holdRev)
	}
	if l, err := fw.cs.CoordinationV1().Leases(agent.LeaseNamespace).Get(ctx, "n", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if rv, _ := strconv.ParseInt(l.ResourceVersion, 10, 64); rv > o.snapRev {
		t.Fatalf("n's Lease at resourceVersion %d after the restore, want the snapshot's (<= %d)", rv, o.snapRev)
	}

	// What the controller does next.
	deadline := o.restored.Add(restoreWait)
	for time.Now().Before(deadline) {
		if p.Exited() {
			t.Fatalf("controller exited: %v", p.Err())
		}
		n, err := fw.cs.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
		if err == nil && readyStatus(n) == v1.ConditionUnknown {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(3 * faultMonitorPeriod) // a second write would show
	stopUnderTest(t, p)
	_ = px.Close() // every request logged
	gone := 0
	for _, e := range px.Log() {
		switch {
		case e.Rule == "gone-lease-watch":
			gone++
		case e.Resource == "leases" && (!e.Watch || e.InitialEvents) && e.Name == "" && e.Method == "GET" && e.Start.After(o.restored) && o.relisted.IsZero():
			// A list, or a watch-list (client-go's WatchListClient).
			o.relisted = e.Start
		}
	}
	if gone != 1 || o.relisted.IsZero() {
		t.Fatalf("%s: %d Lease watches answered 410, first Lease list after the restore at %v: the informer did not relist", ctl.name, gone, o.relisted)
	}
	t.Logf("%s: the Lease informer relisted %v after the restore", ctl.name, o.relisted.Sub(o.restored).Round(10*time.Millisecond))

	tail := readFrom(t, p.LogPath(), restoreLog)
	o.heldAfter = strings.Count(tail, "is not as new as written version")
	if i := strings.Index(tail, "health-hold-ended"); i >= 0 {
		line := tail[strings.LastIndex(tail[:i], "\n")+1:]
		o.holdEnded, _, _ = strings.Cut(line, "\n")
	}
	out := fw.outcome(t, byController)
	for _, at := range out.unknownAt {
		if at.After(o.restored.Add(-time.Second)) {
			o.unknownN = append(o.unknownN, at)
		}
	}
	o.unknownLive = len(out.unknownNodes)
	if out.unknownNodes["n"] {
		o.unknownLive--
	}
	o.taintsLive = liveTaints(t, fw.cs, nodes, "n")
	t.Logf("%s: after the restore: %d hold log lines, hold ended: %q; n Unknown at %s (from the restore); %d Unknown writes in all (%d nodes), %d taints",
		ctl.name, o.heldAfter, o.holdEnded, writeTimes(o.restored, o.unknownN), out.unknown, len(out.unknownNodes), out.taints)

	if o.unknownLive > 0 || o.taintsLive > 0 {
		t.Errorf("%s: live nodes written Unknown %v, tainted %d: want none", ctl.name, out.unknownNodes, o.taintsLive)
	}
	if !ours {
		return o
	}
	if !strings.Contains(o.holdEnded, "went back") {
		t.Errorf("%s: no health-hold-ended with the rewind in its log after the restore (hold lines after it: %d)", ctl.name, o.heldAfter)
	}
	if len(o.unknownN) != 1 || out.unknown != 1 {
		t.Errorf("%s: n written Unknown %s after the restore (%d Unknown writes in all), want once within %v: a hold that waits for %d while the revision is back at %d",
			ctl.name, writeTimes(o.restored, o.unknownN), out.unknown, restoreWait, o.holdRev, o.afterRev)
	}
	return o
}

// snapshotEtcd copies etcd's data directory to dir: etcd is killed (its
// files are then as a crash leaves them, which etcd recovers from), the
// directory copied, etcd started again; it returns once the apiserver
// serves again.
func snapshotEtcd(t *testing.T, c *cluster.Cluster, cs kubernetes.Interface, dir string) {
	t.Helper()
	if err := c.KillEtcd(); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(c.WorkDir(), "etcd-data")
	if _, err := os.Stat(filepath.Join(src, "member")); err != nil {
		t.Fatalf("etcd data directory: %v", err)
	}
	copyDir(t, src, dir)
	if err := c.StartEtcd(context.Background()); err != nil {
		t.Fatalf("StartEtcd() = %v", err)
	}
	cluster.Eventually(t, 60*time.Second, "the apiserver serves again after the snapshot", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, err
	})
}

// copyDir copies the directory tree src to dst (which must not exist),
// keeping the permission bits.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(to, info.Mode().Perm())
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}

// bumpEtcd makes n writes to etcd itself (its JSON gateway, keys outside
// the apiserver's /registry), each moving the revision by one.
func bumpEtcd(t *testing.T, endpoint string, n int) {
	t.Helper()
	t0 := time.Now()
	const workers = 4
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			client := &http.Client{Timeout: 10 * time.Second}
			for i := w; i < n; i += workers {
				body, _ := json.Marshal(map[string]string{
					"key":   base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "/lifecycle-e2e/bump/%d", w)),
					"value": base64.StdEncoding.EncodeToString(strconv.AppendInt(nil, int64(i), 10)),
				})
				resp, err := client.Post(endpoint+"/v3/kv/put", "application/json", bytes.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("etcd put: HTTP %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatalf("writes to etcd: %v", err)
	}
	t.Logf("%d writes to etcd in %v", n, time.Since(t0).Round(10*time.Millisecond))
}

// listRevision is the revision a quorum list of nodes was served at: the
// resourceVersion of its list.
func listRevision(t *testing.T, cs kubernetes.Interface) int64 {
	t.Helper()
	var rev int64
	cluster.Eventually(t, 60*time.Second, "a quorum list of nodes", func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		rev, err = strconv.ParseInt(l.ResourceVersion, 10, 64)
		return err == nil, err
	})
	return rev
}

var writtenVersionRE = regexp.MustCompile(`is not as new as written version: (\d+)`)

// writtenVersion is the live resourceVersion a hold log line waits for.
func writtenVersion(t *testing.T, line string) int64 {
	t.Helper()
	m := writtenVersionRE.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no written version in %q", line)
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// readFrom returns the file's content from offset on.
func readFrom(t *testing.T, path string, offset int64) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[min(offset, int64(len(b))):])
}

// waitLogLine waits until p's log, from offset on, has a line containing
// substr, and returns it.
func waitLogLine(t *testing.T, p *cluster.Process, offset int64, substr string, timeout time.Duration) string {
	t.Helper()
	var line string
	cluster.Eventually(t, timeout, fmt.Sprintf("%q in the controller's log", substr), func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("controller exited: %v", p.Err())
		}
		sc := bufio.NewScanner(strings.NewReader(readFrom(t, p.LogPath(), offset)))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), substr) {
				line = sc.Text()
				return true, nil
			}
		}
		return false, nil
	})
	return line
}

// liveTaints counts the health taints on the nodes other than dead.
func liveTaints(t *testing.T, cs kubernetes.Interface, nodes []worldNode, dead string) int {
	t.Helper()
	count := 0
	for _, wn := range nodes {
		if wn.name == dead {
			continue
		}
		n, err := cs.CoreV1().Nodes().Get(context.Background(), wn.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range n.Spec.Taints {
			if healthTaint(tk) {
				count++
			}
		}
	}
	return count
}

// loadAvg is the 1-minute load average, for the log.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}
