package cluster

import (
	"context"
	"errors"
	"time"
)

// ErrEtcdRunning is returned by [Cluster.StartEtcd] when etcd is already
// running.
var ErrEtcdRunning = errors.New("cluster: etcd is already running")

// KillEtcd kills etcd with SIGKILL (a crash: no snapshot, no clean close of
// its WAL) and leaves the apiserver running, which then fails the requests
// that need storage until etcd is back. It is a no-op when etcd is not
// running.
func (c *Cluster) KillEtcd() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return ErrStopped
	}
	if c.etcd == nil {
		return nil
	}
	pid := c.etcd.pid()
	if !c.etcd.exited() {
		c.etcd.kill()
		c.logf("etcd (pid %d) killed", pid)
	}
	c.etcd = nil
	return nil
}

// StartEtcd starts etcd again on the same client and peer ports and the
// same data directory, and waits for its /health. The running apiserver
// reconnects by itself. It fails with [ErrEtcdRunning] when etcd runs, and
// with the log tail when it cannot become healthy (for example if another
// process took a port meanwhile).
func (c *Cluster) StartEtcd(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return ErrStopped
	}
	if c.etcd != nil && !c.etcd.exited() {
		return ErrEtcdRunning
	}
	c.etcd = nil
	t0 := time.Now()
	p, err := startProcess("etcd", c.bins.Etcd, c.etcdArgs(), c.EtcdLog())
	if err != nil {
		return err
	}
	if err := c.waitReady(ctx, p, c.etcdHealthy); err != nil {
		p.kill()
		return err
	}
	c.etcd = p
	c.logf("etcd restarted in %.2fs (pid %d, %s)", time.Since(t0).Seconds(), p.pid(), c.EtcdEndpoint())
	return nil
}
