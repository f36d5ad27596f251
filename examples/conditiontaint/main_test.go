package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubelifecycle/lifecycle/examples/conditiontaint/controller"
	"github.com/kubelifecycle/lifecycle/taints"
)

func TestFlagsAndManagerOptions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	cfgYAML := "conditions:\n- {type: KernelDeadlock, status: \"True\", taint: {key: example.com/kd, effect: NoExecute}}\nnodeSelector: pool=general\n"
	if err := os.WriteFile(path, []byte(cfgYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := parseFlags([]string{"-config", path, "-dry-run", "-leader-elect-resource-namespace", "kube-system", "-leader-elect-lease-duration", "30s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.DryRun {
		t.Error("-dry-run did not override the file")
	}
	opts, err := managerOptions(f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !opts.LeaderElection || opts.LeaderElectionID != "lifecycle-conditiontaint" || opts.LeaderElectionNamespace != "kube-system" ||
		*opts.LeaseDuration != 30*time.Second || !opts.LeaderElectionReleaseOnCancel {
		t.Errorf("leader election options = %+v", opts)
	}
	if opts.Metrics.BindAddress != ":8080" || opts.HealthProbeBindAddress != ":8081" {
		t.Errorf("metrics %q, probes %q", opts.Metrics.BindAddress, opts.HealthProbeBindAddress)
	}
	for obj, by := range opts.Cache.ByObject {
		switch obj.(type) {
		case *v1.Node:
			if by.Label.String() != "pool=general" {
				t.Errorf("node cache label selector = %v, want pool=general", by.Label)
			}
		case *v1.Pod:
			if by.Field.String() != "spec.nodeName!=" {
				t.Errorf("pod cache field selector = %v, want bound pods", by.Field)
			}
		default:
			t.Errorf("unexpected cache ByObject %T", obj)
		}
	}

	// Settings the manager would reject only once running fail here, before
	// anything connects (the old code accepted all of them).
	for _, bad := range [][]string{
		{"-leader-elect-lease-duration", "5s"},
		{"-leader-elect-retry-period", "0s"},
		{"-kube-api-qps", "NaN"},
		{"-kube-api-burst", "-1"},
	} {
		if _, err := parseFlags(bad, io.Discard); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("parseFlags(%v) = %v, want an error naming %s", bad, err, bad[0])
		}
	}
	if _, err := parseFlags([]string{"extra"}, io.Discard); err == nil {
		t.Error("parseFlags accepted a positional argument")
	}
	f.config = filepath.Join(dir, "missing.yaml")
	if _, err := loadConfig(f); err == nil {
		t.Error("loadConfig accepted a missing file")
	}
}

// TestDeployFiles checks deploy/: the shipped configuration loads, the
// Deployment's arguments parse, and the controller tolerates every
// NoExecute taint it may write (it must not evict itself).
func TestDeployFiles(t *testing.T) {
	data, err := os.ReadFile("deploy/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := controller.LoadConfig(data)
	if err != nil {
		t.Fatalf("deploy/config.yaml: %v", err)
	}
	if !cfg.DryRun {
		t.Error("deploy/config.yaml should start in dry-run mode")
	}
	data, err = os.ReadFile("deploy/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		t.Fatalf("deploy/deployment.yaml: %v", err)
	}
	spec := d.Spec.Template.Spec
	if _, err := parseFlags(spec.Containers[0].Args, io.Discard); err != nil {
		t.Errorf("Deployment args: %v", err)
	}
	for _, r := range cfg.Conditions {
		if r.Taint.Effect != string(v1.TaintEffectNoExecute) {
			continue
		}
		all, used := taints.MatchingTolerations([]v1.Taint{{Key: r.Taint.Key, Value: r.Taint.Value, Effect: v1.TaintEffectNoExecute}}, spec.Tolerations)
		if _, forever := taints.MinTolerationTime(used); !all || !forever {
			t.Errorf("the Deployment does not tolerate %s forever", r.Taint.Key)
		}
	}
}

func TestSimulateCommand(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	cfgYAML := "conditions:\n- {type: KernelDeadlock, status: \"True\", taint: {key: example.com/kd, effect: NoExecute}}\nzones: {rate: 0.5}\n"
	objects := `kind: List
items:
- {kind: Node, metadata: {name: a-0}, status: {conditions: [{type: KernelDeadlock, status: "True"}]}}
- {kind: Node, metadata: {name: a-1}, status: {conditions: [{type: KernelDeadlock, status: "True"}]}}
- {kind: Node, metadata: {name: a-2}, status: {conditions: [{type: KernelDeadlock, status: "False"}]}}
- {kind: Pod, metadata: {name: web, namespace: ns}, spec: {nodeName: a-1}}
`
	objPath := filepath.Join(dir, "objects.yaml")
	for path, data := range map[string]string{cfgPath: cfgYAML, objPath: objects} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	err := simulateCmd([]string{"-config", cfgPath, "-start", "2026-01-01T00:00:00Z", objPath}, nil, &out, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"+0s node/a-0 ConditionTaintWouldAdd",
		"+2s node/a-1 ConditionTaintWouldAdd",
		"+2s pod/ns/web ConditionTaintWouldEvict",
		"after 2s: tainted a-0, a-1; held by the breaker none; evicted ns/web; evictions paused none",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Objects from stdin; errors name the file or the flag.
	out.Reset()
	if err := simulateCmd([]string{"-config", cfgPath, "-"}, strings.NewReader(objects), &out, io.Discard); err != nil || !strings.Contains(out.String(), "evicted ns/web") {
		t.Errorf("from stdin: %v\n%s", err, out.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-config", cfgPath}, "no object files"},
		{[]string{"-config", cfgPath, "-start", "yesterday", objPath}, "-start"},
		{[]string{"-config", cfgPath, "-for", "1000h", objPath}, "MaxFor"},
		{[]string{"-config", filepath.Join(dir, "missing.yaml"), objPath}, "missing.yaml"},
		{[]string{"-config", cfgPath, cfgPath}, "config.yaml: document 1: kind \"\""},
	} {
		if err := simulateCmd(tc.args, nil, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("simulate %v = %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}
