package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// aliasBomb returns a YAML document of under 4 KB in the scenario's shape
// whose aliases expand to n³ tolerations: n zones, each an alias of the
// first, with n pod groups, each an alias of the first, with n tolerations,
// each an alias of the first. Every expanded node is a field the walker
// would visit (and record a position for).
func aliasBomb(n int) string {
	rep := func(alias string) string { return strings.Repeat(", *"+alias, n-1) }
	return fmt.Sprintf("duration: 5m\nzones: [&z {name: a, nodes: 1, pods: [&p {name: p, perNode: 1, tolerations: [&t {key: k, operator: Exists}%s]}%s]}%s]\n",
		rep("t"), rep("p"), rep("z"))
}

// TestAliasBombFailsFast: a file of a few KB whose aliases expand to
// billions of nodes is rejected before any walk or decode, allocating
// in proportion to the file.
func TestAliasBombFailsFast(t *testing.T) {
	src := aliasBomb(300) // 2.7e7 tolerations
	if len(src) > 4096 {
		t.Fatalf("bomb is %d bytes, want a small one", len(src))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := LoadScenario("bomb.yaml", []byte(src))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), "MaxYAMLNodes") {
		t.Fatalf("LoadScenario(alias bomb) = %v, want ErrScenario naming MaxYAMLNodes", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("LoadScenario(alias bomb) allocated %d bytes, want at most 16 MiB", got)
	}
}

// TestAliasesWithinBoundWork: a few aliases are fine.
func TestAliasesWithinBoundWork(t *testing.T) {
	src := `duration: 5m
zones:
  - {name: a, nodes: 2, pods: [&web {name: web, perNode: 2}]}
  - {name: b, nodes: 2, pods: [*web]}
`
	sc, err := LoadScenario("alias.yaml", []byte(src))
	if err != nil {
		t.Fatalf("LoadScenario(aliases) = %v", err)
	}
	if got := sc.Zones[1].Pods[0].PerNode; got != 2 {
		t.Errorf("zones[1].pods[0].perNode = %d, want 2", got)
	}
}

// zeros is /dev/zero.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

// TestReadScenarioBoundsSize: an endless input is read up to MaxFileSize+1
// bytes, then refused naming the limit.
func TestReadScenarioBoundsSize(t *testing.T) {
	z := &zeros{}
	_, _, err := ReadScenario("/dev/zero", z)
	if !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), "MaxFileSize") {
		t.Fatalf("ReadScenario(/dev/zero) = %v, want ErrScenario naming MaxFileSize", err)
	}
	if z.n > 2*MaxFileSize {
		t.Errorf("ReadScenario read %d bytes of /dev/zero, want about %d", z.n, MaxFileSize+1)
	}
	if _, err := LoadScenario("big.yaml", make([]byte, MaxFileSize+1)); !errors.Is(err, ErrScenario) {
		t.Errorf("LoadScenario(%d bytes) = %v, want ErrScenario", MaxFileSize+1, err)
	}
	sc, src, err := ReadScenario("minimal.yaml", io.MultiReader(strings.NewReader(minimal)))
	if err != nil || sc.Zones[0].Nodes != 3 || string(src) != minimal {
		t.Errorf("ReadScenario(minimal) = %v, %q, %v", sc, src, err)
	}
}

// TestRunEnforcesBudget: fields each within their limits, together over the
// work budget, fail before anything is built; the error names the limit
// and the flag that raises it.
func TestRunEnforcesBudget(t *testing.T) {
	huge := `duration: 168h
policy: {nodeMonitorPeriod: 100ms}
kubelet: {leaseRenewInterval: 100ms, statusUpdateInterval: 100ms}
zones:
  - {name: a, nodes: 100000}
`
	manyPods := `duration: 1m
zones:
  - {name: a, nodes: 1000, podsPerNode: 2000}
`
	tests := []struct {
		name, src string
		budget    Budget
		want      string
	}{
		{"node passes", huge, Budget{}, "-max-node-passes"},
		{"pods", manyPods, Budget{}, "-max-pods"},
		{"lowered", minimal, Budget{NodePasses: 10}, "over the budget of 10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := load(t, tc.src)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := RunOptions(context.Background(), sc, Options{Budget: tc.budget})
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want ErrBudget mentioning %q", err, tc.want)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
				t.Errorf("Run over budget allocated %d bytes, want it refused before building the cluster", got)
			}
		})
	}
	if err := (Budget{Pods: 3_000_000}).check(load(t, manyPods)); err != nil {
		t.Errorf("budget check with -max-pods raised = %v, want nil", err)
	}
}

// TestAliasCycleRejected: an alias inside the node it refers to is an
// error, not an endless walk.
func TestAliasCycleRejected(t *testing.T) {
	for _, src := range []string{
		"duration: 5m\nzones: &z [{name: a, nodes: 1}, *z]\n",
		"&d {duration: 5m, zones: [{name: a, nodes: 1}], events: [*d]}\n",
	} {
		if _, err := LoadScenario("cycle.yaml", []byte(src)); !errors.Is(err, ErrScenario) {
			t.Errorf("LoadScenario(%q) = %v, want ErrScenario", src, err)
		}
	}
}
