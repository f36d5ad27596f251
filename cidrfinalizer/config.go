package cidrfinalizer

import (
	"errors"
	"fmt"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
)

// Finalizer is the finalizer that protects a ServiceCIDR while IPAddresses
// still depend on it (upstream ServiceCIDRProtectionFinalizer).
const Finalizer = "networking.k8s.io/service-cidr-finalizer"

// AllocatorName is the value of the networkingv1.LabelManagedBy label that the
// apiserver's ClusterIP allocator puts on the IPAddresses it creates. Only
// such addresses protect a ServiceCIDR; any other IPAddress is ignored, as
// upstream does.
const AllocatorName = "ipallocator.k8s.io"

// Ready condition fields written by Decide. ConditionReady and
// ReasonTerminating are the upstream networking/v1 constants.
const (
	// ConditionReady is the type of the condition Decide manages.
	ConditionReady = networkingv1.ServiceCIDRConditionReady
	// ReasonTerminating is the reason of Ready=False while the ServiceCIDR is
	// being deleted.
	ReasonTerminating = networkingv1.ServiceCIDRReasonTerminating
	// MessageReady is the upstream message of Ready=True (its reason is empty).
	MessageReady = "Kubernetes Service CIDR is ready"
	// MessageBlocked is the upstream message of Ready=False while IPAddresses
	// that no other ServiceCIDR covers keep the object from being deleted.
	MessageBlocked = "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR"
	// MessageTerminating is the message of Ready=False while the object is
	// being deleted and nothing blocks it (the grace period). Upstream has no
	// such message because it leaves Ready=True during the grace period.
	MessageTerminating = "The ServiceCIDR is being deleted"
)

// Errors returned by this package. Callers branch on them with errors.Is.
var (
	// ErrInvalidConfig reports a Config with a negative duration.
	ErrInvalidConfig = errors.New("cidrfinalizer: invalid config")
	// ErrInvalidCIDR reports a ServiceCIDR whose spec holds a string that
	// net/netip cannot parse as a prefix.
	ErrInvalidCIDR = errors.New("cidrfinalizer: invalid CIDR")
	// ErrNilObject reports a nil ServiceCIDR or IPAddress argument.
	ErrNilObject = errors.New("cidrfinalizer: nil object")
	// ErrNotFound reports an Index.Decide for a ServiceCIDR the Index does not
	// hold (deleted, or never set). A controller treats it as "nothing to do".
	ErrNotFound = errors.New("cidrfinalizer: ServiceCIDR not found")
)

// Config holds the timing of the finalizer. The zero value is valid and
// literal: no grace period (the finalizer goes as soon as nothing blocks) and
// no periodic recheck of a blocked object.
type Config struct {
	// GracePeriod is how long after the deletion a ServiceCIDR keeps its
	// finalizer once nothing blocks it, so that every apiserver's allocator
	// has seen the deletion and stopped allocating from the range. Measured
	// from the deletionTimestamp, or from the first time the deletion was
	// observed when that is earlier (clock skew). Upstream: 10s.
	GracePeriod time.Duration
	// RecheckInterval, when positive, is the RequeueAfter of a blocked
	// decision, so that a missed IPAddress event cannot leave a ServiceCIDR
	// blocked forever. Zero keeps upstream behaviour: a blocked object is
	// re-evaluated only on events.
	RecheckInterval time.Duration
}

// DefaultConfig returns the upstream settings: a 10s grace period and no
// periodic recheck.
func DefaultConfig() Config {
	return Config{GracePeriod: 10 * time.Second}
}

func (c Config) validate() error {
	if c.GracePeriod < 0 {
		return fmt.Errorf("%w: negative GracePeriod %v", ErrInvalidConfig, c.GracePeriod)
	}
	if c.RecheckInterval < 0 {
		return fmt.Errorf("%w: negative RecheckInterval %v", ErrInvalidConfig, c.RecheckInterval)
	}
	return nil
}
