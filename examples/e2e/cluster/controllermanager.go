package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Process is a child process a test started against a [Cluster]
// (kube-controller-manager, or a controller binary): its output goes to a
// log file in the cluster's work directory, and it dies with the test
// binary. Stop or Kill it when the test ends.
type Process struct {
	p *process
}

// StartProcess starts bin with args, appending its stdout and stderr to
// <work dir>/<name>.log, and returns at once. The child gets the test's
// environment without ETCD_* variables.
func (c *Cluster) StartProcess(name, bin string, args ...string) (*Process, error) {
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		return nil, ErrStopped
	}
	if strings.ContainsAny(name, `/\`) || name == "" {
		return nil, fmt.Errorf("cluster: process name %q: want a plain file name", name)
	}
	p, err := startProcess(name, bin, args, c.path(name+".log"))
	if err != nil {
		return nil, err
	}
	c.logf("%s started (pid %d, log %s)", name, p.pid(), p.logPath)
	return &Process{p: p}, nil
}

// ControllerManagerArgs are the flags [Cluster.StartControllerManager]
// always gives kube-controller-manager: the cluster's kubeconfig (the admin
// token), only the given controllers, no leader election, and no serving
// (--secure-port=0: nothing to authenticate, no port to collide).
func (c *Cluster) ControllerManagerArgs(controllers ...string) []string {
	return []string{
		"--kubeconfig=" + c.Kubeconfig(),
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
	}
}

// StartControllerManager starts kube-controller-manager (bins.ControllerManager,
// see [Binaries.RequireControllerManager]) against c with
// [Cluster.ControllerManagerArgs] for controllers followed by extra, logging
// to <work dir>/kube-controller-manager.log. It returns once the process is
// started; it has no health endpoint (serving is off), so wait for what
// its controllers write.
func (c *Cluster) StartControllerManager(bins Binaries, controllers []string, extra ...string) (*Process, error) {
	bin, err := bins.RequireControllerManager()
	if err != nil {
		return nil, err
	}
	if len(controllers) == 0 {
		return nil, fmt.Errorf("cluster: StartControllerManager: no controllers (kube-controller-manager would run them all)")
	}
	return c.StartProcess("kube-controller-manager", bin, append(c.ControllerManagerArgs(controllers...), extra...)...)
}

// Binaries returns the binaries the cluster runs (the apiserver and etcd),
// with kube-controller-manager when it was found next to them.
func (c *Cluster) Binaries() Binaries {
	b := c.bins
	if b.ControllerManager == "" && b.Dir != "" {
		if kcm := filepath.Join(b.Dir, "kube-controller-manager"); isExecutable(kcm) {
			b.ControllerManager = kcm
		}
	}
	return b
}

// PID returns the process ID.
func (p *Process) PID() int { return p.p.pid() }

// LogPath returns the file the process's output goes to.
func (p *Process) LogPath() string { return p.p.logPath }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool { return p.p.exited() }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.p.done }

// Err describes how the process ended; nil while it runs.
func (p *Process) Err() error {
	if !p.p.exited() {
		return nil
	}
	return p.p.exitError()
}

// Stop sends SIGTERM, waits up to timeout, then SIGKILLs; it waits for the
// exit and reports whether SIGKILL was needed. It is a no-op after the exit.
func (p *Process) Stop(timeout time.Duration) (killed bool) { return p.p.stop(timeout) }

// Kill sends SIGKILL (a crash: no cleanup in the child) and waits for the exit.
func (p *Process) Kill() { p.p.kill() }

// Signal sends sig without waiting.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.p.exited() {
		return os.ErrProcessDone
	}
	return p.p.cmd.Process.Signal(sig)
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string { return tailFile(p.p.logPath, n) }
