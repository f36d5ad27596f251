package e2e

import (
	"os"
	"testing"

	"github.com/kubelifecycle/lifecycle/examples/e2e/cluster"
)

// env is the one etcd + kube-apiserver shared by every test in this package.
// Tests must not call t.Parallel: TestSmokeAPIServerRestart stops the apiserver.
var env cluster.Shared

func TestMain(m *testing.M) { os.Exit(env.Main(m)) }
