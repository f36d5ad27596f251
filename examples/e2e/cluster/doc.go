// Package cluster runs a real etcd and kube-apiserver on 127.0.0.1 for the
// lifecycle end-to-end tests.
//
// The binaries are built once from the Go module proxy by
// examples/e2e/hack/build.sh (versions pinned in examples/e2e/testbin/go.mod:
// kube-apiserver v1.37.2, etcd v3.7.0) and cached by version under the user's
// cache directory; [FindBinaries] locates them ($LIFECYCLE_E2E_BIN wins).
//
// [Start] picks free loopback ports (the kernel chooses: listen on :0, close,
// use the port), generates a service-account key and an admin bearer token
// (group system:masters), starts etcd and then kube-apiserver with the flags
// a minimal single-node control plane needs (see [Start]), waits for etcd's /health and the
// apiserver's /readyz, writes a kubeconfig and returns a [Cluster] whose
// [Cluster.Config] is a ready *rest.Config. Both logs go to files in the work
// directory ([Cluster.LogTails] prints their ends). [Cluster.Stop] stops both
// by PID, the apiserver first: SIGTERM, then SIGKILL after a timeout.
//
// The apiserver alone can be stopped ([Cluster.StopAPIServer]), killed
// ([Cluster.KillAPIServer]) and started again ([Cluster.StartAPIServer]) on
// the same port, certificates and etcd data, so tests can cut the control
// plane in the middle of a scenario. Clients built from [Cluster.Config]
// keep working after the restart. etcd alone can be killed
// ([Cluster.KillEtcd], SIGKILL) and started again ([Cluster.StartEtcd]) on
// the same ports and data directory while the apiserver keeps running.
//
// Nothing else runs: no kube-controller-manager, scheduler or kubelet. The
// test plays the kubelet. Consequences: namespaces never finish deleting,
// there is no garbage collection, a bound pod deleted with a grace period
// keeps its deletionTimestamp until it is deleted with grace 0, and extra
// ServiceCIDRs get neither a Ready condition nor the
// networking.k8s.io/service-cidr-finalizer (the default "kubernetes" one does,
// from the apiserver itself). Admission does run: DefaultTolerationSeconds
// adds the two 300 s NoExecute tolerations to every pod; ServiceAccount
// admission is disabled so pods need no service account.
//
// For tests, [Shared] runs one cluster for a whole package from TestMain and
// skips (or, with LIFECYCLE_E2E_REQUIRED=1, fails) every test when the
// binaries are missing:
//
//	var env cluster.Shared
//
//	func TestMain(m *testing.M) { os.Exit(env.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		c := env.Cluster(t)
//		cs := c.Clientset(t)
//		ns := c.Namespace(t)
//		...
//	}
//
// The child processes get SIGKILL if the test binary dies (Linux
// Pdeathsig), so a test timeout never leaves servers behind. Tests that stop
// the apiserver must not run in parallel with tests that use it.
package cluster
