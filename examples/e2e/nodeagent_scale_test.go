//go:build linux

package e2e

// The scale test (LIFECYCLE_E2E_SCALE=1; run.sh sets it for a second run of
// this one test without -race): one agent process serves 500 nodes (10
// zones of 50) and 15,000 pods against the e2e apiserver, with the node
// controller running in the test process. The
// agent runs as a child process (this package's test binary built without
// -race, running TestNodeAgentScaleChild) so that its CPU and memory can be
// read from /proc. The test reports heartbeat lag (the age of the Leases
// as the API holds them, sampled every second), the agent's CPU and
// memory, and the time from a silent zone (its 50 nodes stop heartbeating
// on SIGUSR1; their pods keep being handled) to its last pod confirmed
// deleted by the agent.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
	"github.com/kubelifecycle/lifecycle/examples/nodeagent/agent"
	"github.com/kubelifecycle/lifecycle/internal/testutil"
	"github.com/kubelifecycle/lifecycle/nodehealth"
)

const (
	envScale      = "LIFECYCLE_E2E_SCALE"
	envChild      = "LIFECYCLE_E2E_AGENT_CHILD" // JSON scaleChildConfig
	scaleNodes    = 500
	scaleZones    = 10
	scalePods     = 15000
	scaleRenew    = 2 * time.Second
	scaleStatus   = 10 * time.Second
	scaleGrace    = 20 * time.Second
	scaleStartup  = 30 * time.Second
	scaleWait     = 10 * time.Minute
	scaleSilentZn = "zone-9"
)

// scaleChildConfig is what the parent hands the agent process.
type scaleChildConfig struct {
	Kubeconfig, Namespace, Prefix, Selector, SilentZone, StatsFile string
	Nodes                                                          int
}

func scaleNodeName(prefix string, i int) string { return fmt.Sprintf("%s-%03d", prefix, i) }
func scaleZone(i int) string                    { return fmt.Sprintf("zone-%d", i%scaleZones) }

// TestNodeAgentScaleChild is the agent process of TestNodeAgentScale; it
// skips unless started by it.
func TestNodeAgentScaleChild(t *testing.T) {
	raw := os.Getenv(envChild)
	if raw == "" {
		t.Skip("the agent process of TestNodeAgentScale")
	}
	var cc scaleChildConfig
	if err := json.Unmarshal([]byte(raw), &cc); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cc.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 1000, 2000
	rc.ContentType = "application/vnd.kubernetes.protobuf" // as the kubelet
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []agent.NodeConfig
	var silent []string
	for i := range cc.Nodes {
		name, zone := scaleNodeName(cc.Prefix, i), scaleZone(i)
		nodes = append(nodes, agent.NodeConfig{Name: name, Labels: nodeLabels(cc.Selector, zone)})
		if zone == cc.SilentZone {
			silent = append(silent, name)
		}
	}
	cfg := agent.DefaultConfig()
	cfg.Nodes, cfg.Namespace = nodes, cc.Namespace
	cfg.Runtime = agent.NewFakeRuntime(clock.RealClock{})
	cfg.LeaseRenewInterval = scaleRenew
	cfg.StatusUpdateFrequency = scaleStatus
	cfg.Parallelism = 32
	a, err := agent.New(cs, clock.RealClock{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	ctx = klog.NewContext(ctx, klog.Background().V(0))
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		<-usr1
		for _, n := range silent {
			_ = a.SetHeartbeat(n, false)
		}
	}()
	_ = a.Run(ctx)
	b, _ := json.Marshal(a.Counters())
	if err := os.WriteFile(cc.StatsFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// procStats reads a process's CPU time (user + system) and memory.
func procStats(pid int) (cpu time.Duration, rss, hwm int64, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(fields[11], 10, 64) // field 14 of the whole line
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	cpu = time.Duration(ut+st) * time.Second / 100 // USER_HZ
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
			rss = kb << 10
		}
		if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
			hwm = kb << 10
		}
	}
	return cpu, rss, hwm, nil
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func TestNodeAgentScale(t *testing.T) {
	if os.Getenv(envScale) == "" {
		t.Skip("set " + envScale + "=1 to run the 500-node, 15,000-pod agent test (about 5-10 min)")
	}
	c := env.Cluster(t)
	e := newNodeEnv(t, c)
	cs := agentClient(t, c)
	prefix := cluster.UniqueName(t, "scale")

	// Build the agent process: this package's tests, without -race.
	bin := filepath.Join(t.TempDir(), "e2e.test")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	statsFile := filepath.Join(t.TempDir(), "stats.json")
	cc, _ := json.Marshal(scaleChildConfig{Kubeconfig: c.Kubeconfig(), Namespace: e.ns, Prefix: prefix, Selector: e.selector,
		SilentZone: scaleSilentZn, StatsFile: statsFile, Nodes: scaleNodes})
	t.Cleanup(func() { // after the agent stopped: pods, nodes, Leases
		ctx := context.Background()
		zero := int64(0)
		_ = cs.CoreV1().Pods(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		for i := range scaleNodes {
			_ = cs.CoordinationV1().Leases(agent.LeaseNamespace).Delete(ctx, scaleNodeName(prefix, i), metav1.DeleteOptions{})
			_ = cs.CoreV1().Nodes().Delete(ctx, scaleNodeName(prefix, i), metav1.DeleteOptions{})
		}
	})
	child := exec.Command(bin, "-test.run", "^TestNodeAgentScaleChild$", "-test.v")
	child.Env = append(os.Environ(), envChild+"="+string(cc))
	logFile, err := os.Create(filepath.Join(t.TempDir(), "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	child.Stdout, child.Stderr = logFile, logFile
	child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no agent outlives the test
	started := time.Now()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	pid := child.Process.Pid
	var childDone sync.Once
	stopChild := func() {
		childDone.Do(func() {
			_ = child.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- child.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = child.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stopChild)

	// All nodes registered and Ready.
	selector := ncSelectorKey + "=" + e.selector
	waitNodesReady(t, cs, scaleWait, metav1.ListOptions{LabelSelector: selector}, scaleNodes)
	t.Logf("agent process up, 500 nodes registered and Ready %s after start", time.Since(started).Round(time.Millisecond))

	cfg := e.config()
	cfg.Monitor.Health = nodehealth.Config{GracePeriod: scaleGrace, StartupGracePeriod: scaleStartup}
	cfg.OnEvent = nil
	r := e.start(1, e.client(), cfg)
	r.waitNodesKnown(t, scaleNodes)

	// 15,000 pods, 30 per node, tolerating unreachable for 0 s.
	prc := c.Config()
	prc.QPS, prc.Burst = 500, 1000
	prc.ContentType = "application/vnd.kubernetes.protobuf"
	pc, err := kubernetes.NewForConfig(prc)
	if err != nil {
		t.Fatal(err)
	}
	createStart := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	var createErr atomic.Value
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= scalePods {
					return
				}
				p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: fmt.Sprintf("p-%05d", i)},
					Spec: v1.PodSpec{NodeName: scaleNodeName(prefix, i%scaleNodes),
						Containers:  []v1.Container{{Name: "c", Image: "registry.invalid/none:1"}},
						Tolerations: []v1.Toleration{unreachableToleration(testutil.Seconds(0))}}}
				if _, err := pc.CoreV1().Pods(e.ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
					createErr.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := createErr.Load().(error); err != nil {
		t.Fatalf("creating pods: %v", err)
	}
	created := time.Since(createStart)
	// Pods not Running yet (the watch cache filters by phase).
	var terminal []string
	cluster.Eventually(t, scaleWait, "15,000 pods Running", func(ctx context.Context) (bool, error) {
		l, err := pc.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{ResourceVersion: "0", FieldSelector: "status.phase!=Running"})
		if err != nil {
			return false, err
		}
		for i := range l.Items {
			if p := &l.Items[i]; p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
				terminal = append(terminal, describePod(p))
			}
		}
		return len(l.Items) == 0 || len(terminal) > 0, nil
	})
	if len(terminal) > 0 {
		t.Fatalf("%d new pods ended although nobody deleted them: %v", len(terminal), terminal[:min(5, len(terminal))])
	}
	t.Logf("15,000 pods created in %s; all Running (written by the agent) %s after the first create",
		created.Round(time.Millisecond), time.Since(createStart).Round(time.Millisecond))

	// Steady state: 30 s of heartbeat lag samples, CPU and memory.
	cpu0, _, _, err := procStats(pid)
	if err != nil {
		t.Fatal(err)
	}
	window := 30 * time.Second
	t0 := time.Now()
	var ages []time.Duration
	for time.Since(t0) < window {
		tick := time.Now()
		l, err := pc.CoordinationV1().Leases(agent.LeaseNamespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		for i := range l.Items {
			if strings.HasPrefix(l.Items[i].Name, prefix+"-") && l.Items[i].Spec.RenewTime != nil {
				ages = append(ages, now.Sub(l.Items[i].Spec.RenewTime.Time))
			}
		}
		time.Sleep(time.Second - time.Since(tick)) // one sample a second (a negative sleep returns at once)
	}
	cpu1, rss, hwm, err := procStats(pid)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(t0)
	sort.Slice(ages, func(i, j int) bool { return ages[i] < ages[j] })
	pct := func(q float64) time.Duration { return ages[int(q*float64(len(ages)-1))].Round(time.Millisecond) }
	t.Logf("steady state over %s: Lease age (renew every %s) p50 %s, p99 %s, max %s (%d samples); agent CPU %.2f cores (%s of %s), RSS %s, peak RSS %s",
		elapsed.Round(time.Millisecond), scaleRenew, pct(0.5), pct(0.99), pct(1), len(ages),
		float64(cpu1-cpu0)/float64(elapsed), (cpu1 - cpu0).Round(time.Millisecond), elapsed.Round(time.Millisecond), mib(rss), mib(hwm))
	if max := ages[len(ages)-1]; max > scaleGrace {
		t.Errorf("a Lease aged %s, beyond the grace period %s", max, scaleGrace)
	}

	// The silent zone.
	silentNodes := map[string]bool{}
	for i := range scaleNodes {
		if scaleZone(i) == scaleSilentZn {
			silentNodes[scaleNodeName(prefix, i)] = true
		}
	}
	// countSilent counts the pods on the silent nodes (one indexed list per
	// node from the watch cache).
	countSilent := func(ctx context.Context) (int, error) {
		n := 0
		for name := range silentNodes {
			l, err := pc.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{ResourceVersion: "0", FieldSelector: "spec.nodeName=" + name})
			if err != nil {
				return 0, err
			}
			n += len(l.Items)
		}
		return n, nil
	}
	want, err := countSilent(context.Background())
	if err != nil || want != scalePods/scaleZones {
		t.Fatalf("pods on the silent zone = %d, %v; want %d", want, err, scalePods/scaleZones)
	}
	cpuS0, _, _, _ := procStats(pid)
	silenced := time.Now()
	if err := child.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	var firstUnknown, firstGone, allUnknown time.Duration
	var lastBeat time.Time // the latest heartbeat of a silent node the API holds
	cluster.Eventually(t, scaleWait, "every pod of the silent zone confirmed deleted", func(ctx context.Context) (bool, error) {
		if allUnknown == 0 {
			l, err := pc.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, err
			}
			unknown := 0
			for i := range l.Items {
				n := &l.Items[i]
				if !silentNodes[n.Name] {
					continue
				}
				for _, c := range n.Status.Conditions {
					if c.Type == v1.NodeReady && c.LastHeartbeatTime.After(lastBeat) {
						lastBeat = c.LastHeartbeatTime.Time
					}
				}
				if readyStatus(n) == v1.ConditionUnknown {
					unknown++
				}
			}
			if unknown > 0 && firstUnknown == 0 {
				firstUnknown = time.Since(silenced)
			}
			if unknown == len(silentNodes) {
				allUnknown = time.Since(silenced)
			}
			leases, err := pc.CoordinationV1().Leases(agent.LeaseNamespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			for i := range leases.Items {
				if l := &leases.Items[i]; silentNodes[l.Name] && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(lastBeat) {
					lastBeat = l.Spec.RenewTime.Time
				}
			}
		}
		n, err := countSilent(ctx)
		if err != nil {
			return false, err
		}
		if n < want && firstGone == 0 {
			firstGone = time.Since(silenced)
		}
		return n == 0, nil
	})
	lastGone := time.Since(silenced)
	cpuS1, _, hwm2, _ := procStats(pid)
	rest, err := pc.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	untouched := 0
	for i := range rest.Items {
		if p := &rest.Items[i]; p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil {
			untouched++
		}
	}
	if untouched != scalePods-want || len(rest.Items) != untouched {
		t.Errorf("pods outside the silent zone: %d, of which %d Running and not deleting; want %d of each", len(rest.Items), untouched, scalePods-want)
	}
	if d := lastBeat.Sub(silenced); d > time.Second {
		t.Errorf("a silent node's heartbeat (Lease or Ready) is %s after the silence", d)
	}
	t.Logf("silent zone (%d nodes, %d pods): last heartbeat %s after the silence; first node Unknown after %s, all after %s (grace %s); first pod confirmed deleted after %s, last after %s; agent CPU meanwhile %.2f cores, peak RSS %s",
		len(silentNodes), want, lastBeat.Sub(silenced).Round(time.Millisecond), firstUnknown.Round(time.Millisecond), allUnknown.Round(time.Millisecond), scaleGrace,
		firstGone.Round(time.Millisecond), lastGone.Round(time.Millisecond),
		float64(cpuS1-cpuS0)/float64(lastGone), mib(hwm2))

	stopChild()
	if b, err := os.ReadFile(statsFile); err == nil {
		var cnt agent.Counters
		if json.Unmarshal(b, &cnt) == nil {
			t.Logf("agent counters: %d Lease renewals (max lag from due to done %s), %d node status posts, %d pod status writes (%d conflicts), %d deletions confirmed, %d housekeeping passes",
				cnt.LeaseRenewals, cnt.MaxRenewLag.Round(time.Millisecond), cnt.NodeStatusPosts, cnt.StatusWrites, cnt.StatusConflicts, cnt.PodsDeleted, cnt.Housekeepings)
		}
	}
}
