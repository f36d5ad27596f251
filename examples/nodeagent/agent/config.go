package agent

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubelifecycle/lifecycle/podworker"
)

// Defaults, the kubelet's (pkg/kubelet/apis/config/v1beta1/defaults.go and
// pkg/kubelet/kubelet.go at v1.37.2).
const (
	// DefaultLeaseDuration is nodeLeaseDurationSeconds (40 s).
	DefaultLeaseDuration = 40 * time.Second
	// DefaultLeaseRenewInterval is a quarter of the lease duration, as the
	// kubelet's lease controller renews (10 s).
	DefaultLeaseRenewInterval = 10 * time.Second
	// DefaultStatusUpdateFrequency is nodeStatusUpdateFrequency (10 s).
	DefaultStatusUpdateFrequency = 10 * time.Second
	// DefaultStatusSyncPeriod is the kubelet status manager's syncPeriod
	// (10 s, a constant in pkg/kubelet/status/status_manager.go at
	// v1.37.2).
	DefaultStatusSyncPeriod = 10 * time.Second
	// DefaultHousekeepingPeriod is housekeepingPeriod (2 s), the period of
	// HandlePodCleanups.
	DefaultHousekeepingPeriod = 2 * time.Second
	// LeaseNamespace is where node Leases live (kube-node-lease).
	LeaseNamespace = "kube-node-lease"
	// MirrorAnnotation marks a mirror pod: the API copy of a static pod
	// (kubetypes.ConfigMirrorAnnotationKey).
	MirrorAnnotation = "kubernetes.io/config.mirror"
	// ConfigHashAnnotation carries the static pod's hash
	// (kubetypes.ConfigHashAnnotationKey).
	ConfigHashAnnotation = "kubernetes.io/config.hash"
	// MaxNodes bounds Config.Nodes.
	MaxNodes = 10000
	// MaxLeaseDuration bounds Config.LeaseDuration: a Lease holds whole
	// seconds in an int32 (leaseDurationSeconds), and a node silent for a
	// day is dead whatever its Lease says.
	MaxLeaseDuration = 24 * time.Hour
)

// NodeConfig describes one Node the agent serves.
type NodeConfig struct {
	// Name is the Node name (required).
	Name string
	// Labels are added to the Node when it registers (zone and region
	// labels, for example); kubernetes.io/hostname is always set.
	Labels map[string]string
}

// Config configures an Agent. Start from DefaultConfig.
type Config struct {
	// Nodes are the nodes this agent serves (1 to MaxNodes, unique names).
	Nodes []NodeConfig
	// Runtime runs the containers (required).
	Runtime Runtime
	// Namespace, when set, restricts the pods the agent sees (tests);
	// empty means every namespace, as a kubelet.
	Namespace string
	// LeaseDuration is the Lease's leaseDurationSeconds.
	LeaseDuration time.Duration
	// LeaseRenewInterval is how often each node's Lease is renewed.
	LeaseRenewInterval time.Duration
	// StatusUpdateFrequency is how often each node's status is posted
	// (conditions with a new heartbeat); a condition change is posted at
	// once. A status another writer left (the node lifecycle controller's
	// Ready=Unknown) is overwritten at the next post.
	StatusUpdateFrequency time.Duration
	// StatusReportFrequency, when positive, makes a StatusUpdateFrequency
	// tick post the node's status only when it differs from the Node in
	// the API (a condition's status, reason or message: the node lifecycle
	// controller's Ready=Unknown, for one) or StatusReportFrequency has
	// passed since the last post, as the kubelet does
	// (nodeStatusReportFrequency, 5 min: tryUpdateNodeStatus in
	// pkg/kubelet/kubelet_node_status.go at v1.37.2; the agent reads the
	// Node with a GET where the kubelet reads its informer). 0, the
	// default, posts at every tick, as the agent always did: unlike the
	// kubelet, so that tests that time heartbeats by status posts keep
	// them.
	StatusReportFrequency time.Duration
	// StatusSyncPeriod is how often the pods' statuses in the API are
	// checked, as the kubelet's status manager does (SyncStatuses): a
	// running pod whose Ready condition another writer set to False (the
	// node lifecycle controller's MarkPodsNotReady) is synced again, which
	// writes Ready=True back.
	StatusSyncPeriod time.Duration
	// HousekeepingPeriod is how often the workers are reconciled with the
	// API's pods and the runtime (SyncKnownPods, restarts, orphans).
	HousekeepingPeriod time.Duration
	// Parallelism is the number of goroutines that run pod worker steps.
	Parallelism int
	// PodWorker configures the pod worker (resync and backoff).
	PodWorker podworker.Config
	// StaticPodPath, when set, is a directory of static pod manifests
	// (YAML or JSON, one pod per file), read every FileCheckFrequency.
	StaticPodPath string
	// FileCheckFrequency is how often StaticPodPath is read (the kubelet's
	// fileCheckFrequency, 20 s).
	FileCheckFrequency time.Duration
}

// DefaultConfig returns the kubelet's defaults, with no node and no
// runtime.
func DefaultConfig() Config {
	return Config{
		LeaseDuration:         DefaultLeaseDuration,
		LeaseRenewInterval:    DefaultLeaseRenewInterval,
		StatusUpdateFrequency: DefaultStatusUpdateFrequency,
		StatusSyncPeriod:      DefaultStatusSyncPeriod,
		HousekeepingPeriod:    DefaultHousekeepingPeriod,
		Parallelism:           8,
		PodWorker:             podworker.DefaultConfig(),
		FileCheckFrequency:    20 * time.Second,
	}
}

// ErrInvalidConfig is wrapped by New's configuration errors.
var ErrInvalidConfig = errors.New("agent: invalid config")

// Validate reports whether New accepts c, the pod worker's settings and
// the node names and labels (which the API server would reject only at
// registration) included, without connecting to anything: a program calls
// it before it creates its client. The error wraps ErrInvalidConfig and
// names the field and the value.
func (c *Config) Validate() error {
	if err := c.validate(); err != nil {
		return err
	}
	if _, err := podworker.New(c.PodWorker); err != nil {
		return fmt.Errorf("%w: PodWorker: %w", ErrInvalidConfig, err)
	}
	for _, n := range c.Nodes {
		if errs := validation.IsDNS1123Subdomain(n.Name); len(errs) > 0 {
			return fmt.Errorf("%w: node name %q: %s", ErrInvalidConfig, n.Name, strings.Join(errs, "; "))
		}
		for k, v := range n.Labels {
			errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...)
			if len(errs) > 0 {
				return fmt.Errorf("%w: node %s label %s=%s: %s", ErrInvalidConfig, n.Name, k, v, strings.Join(errs, "; "))
			}
		}
	}
	return nil
}

func (c *Config) validate() error {
	switch {
	case len(c.Nodes) == 0:
		return fmt.Errorf("%w: no node", ErrInvalidConfig)
	case len(c.Nodes) > MaxNodes:
		return fmt.Errorf("%w: %d nodes, more than the limit of %d", ErrInvalidConfig, len(c.Nodes), MaxNodes)
	case c.Runtime == nil:
		return fmt.Errorf("%w: no runtime", ErrInvalidConfig)
	case c.LeaseDuration < time.Second || c.LeaseDuration > MaxLeaseDuration:
		return fmt.Errorf("%w: LeaseDuration %v outside [1s, %v] (MaxLeaseDuration)", ErrInvalidConfig, c.LeaseDuration, MaxLeaseDuration)
	case c.LeaseRenewInterval <= 0 || c.StatusUpdateFrequency <= 0 || c.StatusSyncPeriod <= 0 || c.HousekeepingPeriod <= 0:
		return fmt.Errorf("%w: LeaseRenewInterval, StatusUpdateFrequency, StatusSyncPeriod and HousekeepingPeriod must be positive", ErrInvalidConfig)
	case c.StatusReportFrequency < 0:
		return fmt.Errorf("%w: StatusReportFrequency %v is negative", ErrInvalidConfig, c.StatusReportFrequency)
	case c.Parallelism < 1 || c.Parallelism > 1000:
		return fmt.Errorf("%w: Parallelism %d outside [1, 1000]", ErrInvalidConfig, c.Parallelism)
	case c.StaticPodPath != "" && c.FileCheckFrequency <= 0:
		return fmt.Errorf("%w: FileCheckFrequency must be positive", ErrInvalidConfig)
	}
	seen := make(map[string]bool, len(c.Nodes))
	for _, n := range c.Nodes {
		if n.Name == "" || seen[n.Name] {
			return fmt.Errorf("%w: node name %q empty or duplicated", ErrInvalidConfig, n.Name)
		}
		seen[n.Name] = true
	}
	return nil
}
