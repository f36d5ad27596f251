package nodehealth

import (
	"errors"
	"strconv"
)

// ErrInstanceNotFound is the error a cloud provider wraps (with %w) when the
// instance behind a node does not exist. It plays the role of upstream's
// cloudprovider.InstanceNotFound, which many call sites compare with == and
// so miss once it is wrapped (the cloud node lifecycle controller does so at
// v1.36; at v1.37.2 it uses errors.Is on the provider-ID lookup of the
// legacy Instances interface, ensureNodeExistsByProviderID); here it is
// always matched with errors.Is. A provider adapter maps its own not-found
// answer onto it, for example:
//
//	if errors.Is(err, cloudprovider.InstanceNotFound) {
//		err = fmt.Errorf("instance %s: %w", id, nodehealth.ErrInstanceNotFound)
//	}
var ErrInstanceNotFound = errors.New("nodehealth: cloud instance not found")

// ErrParentNotFound is the error a cloud provider wraps when the group that
// held the instance (scale set, resource group, node pool) does not exist
// any more. A missing parent means its instances are gone: the Azure VMSS
// bug (kubernetes/kubernetes#95288) was this answer read as "unknown", so the node was never
// deleted and every retry forced another throttled List call.
var ErrParentNotFound = errors.New("nodehealth: parent group of cloud instance not found")

// Existence is the three-valued answer to "does this node's cloud instance
// exist?". An error is never read as "exists" nor as "gone".
//
// The zero value is ExistenceUnknown: an Existence nobody set is the safe
// answer (it never deletes and never counts toward deletion).
type Existence uint8

const (
	// ExistenceUnknown: the cloud could not say (throttling, 5xx, auth,
	// timeout, cache error). Nothing may be concluded.
	ExistenceUnknown Existence = iota
	// ExistenceExists: the instance exists (running, stopped or sleeping).
	ExistenceExists
	// ExistenceNotFound: the instance, or the group that held it, is gone.
	ExistenceNotFound
)

// String returns "Unknown", "Exists" or "NotFound" (or "Existence(n)").
func (e Existence) String() string {
	switch e {
	case ExistenceUnknown:
		return "Unknown"
	case ExistenceExists:
		return "Exists"
	case ExistenceNotFound:
		return "NotFound"
	}
	return "Existence(" + strconv.Itoa(int(e)) + ")"
}

// ClassifyExistence turns a provider's (exists, err) answer, as from
// InstanceExistsByProviderID or InstancesV2.InstanceExists, into an
// Existence:
//
//   - an error wrapping ErrInstanceNotFound or ErrParentNotFound → NotFound
//     (whatever exists says);
//   - any other error → Unknown;
//   - (true, nil) → Exists;
//   - (false, nil) → NotFound (the upstream contract: false with no error
//     means the instance is gone).
func ClassifyExistence(exists bool, err error) Existence {
	switch {
	case err == nil && exists:
		return ExistenceExists
	case err == nil:
		return ExistenceNotFound
	case errors.Is(err, ErrInstanceNotFound), errors.Is(err, ErrParentNotFound):
		return ExistenceNotFound
	default:
		return ExistenceUnknown
	}
}
