package fakecloud

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/kubelifecycle/lifecycle/nodehealth"
)

// Provider is the cloud provider's side of k8s.io/cloud-provider: it
// implements cloudprovider.InstancesV2 on the fake API, and shows how a real
// provider maps its SDK's errors onto nodehealth's sentinels (MapError) so
// that nodehealth.ClassifyExistence reads them right:
//
//   - 404 ResourceNotFound (the instance is gone): InstanceExists answers
//     (false, nil), the cloud-provider contract;
//   - 404 ParentResourceNotFound (its scale set is gone): an error wrapping
//     nodehealth.ErrParentNotFound. Upstream's controller reads any error as
//     "do not delete, retry next period", which is how the Azure VMSS nodes
//     of kubernetes/kubernetes#95288 stayed forever; with the sentinel the
//     instance counts as gone;
//   - 429 and 5xx: the error as it is (Unknown), wrapped in a RetryAfterError
//     when the API said when to come back.
//
// A Provider is safe for concurrent use.
type Provider struct {
	API *Cloud
}

var _ cloudprovider.InstancesV2 = (*Provider)(nil)

// RetryAfterError is an error that carries the API's Retry-After; the
// controller waits at least that long before asking about the node again.
type RetryAfterError struct {
	Err   error
	After time.Duration
}

// Error returns the wrapped error's text.
func (e *RetryAfterError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter returns how long the API asked the caller to wait.
func (e *RetryAfterError) RetryAfter() time.Duration { return e.After }

// MapError maps an error of the fake API onto what a caller of
// cloudprovider.InstancesV2 can branch on: a 404 for a gone parent wraps
// nodehealth.ErrParentNotFound, any other 404 wraps
// nodehealth.ErrInstanceNotFound (and cloudprovider.InstanceNotFound's
// text), a 429 with a Retry-After becomes a *RetryAfterError, anything else
// is returned unchanged. nil stays nil.
func MapError(err error) error {
	if err == nil {
		return nil
	}
	var ae *APIError
	if !errors.As(err, &ae) {
		return err
	}
	switch {
	case ae.StatusCode == http.StatusNotFound && ae.Code == CodeParentResourceNotFound:
		return fmt.Errorf("%w: %w", nodehealth.ErrParentNotFound, err)
	case ae.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w (%w): %w", cloudprovider.InstanceNotFound, nodehealth.ErrInstanceNotFound, err)
	case ae.StatusCode == http.StatusTooManyRequests && ae.RetryAfter > 0:
		return &RetryAfterError{Err: err, After: ae.RetryAfter}
	}
	return err
}

// ErrBadProviderID is wrapped for a providerID the fake cloud did not issue.
var ErrBadProviderID = errors.New("fakecloud: not a fake:// provider ID")

// ParseProviderID splits "fake://<set>/<id>".
func ParseProviderID(pid string) (set, id string, err error) {
	rest, ok := strings.CutPrefix(pid, "fake://")
	if ok {
		set, id, ok = strings.Cut(rest, "/")
	}
	if !ok || set == "" || id == "" {
		return "", "", fmt.Errorf("%w: %q", ErrBadProviderID, pid)
	}
	return set, id, nil
}

// lookup finds the node's instance by spec.providerID, or by name when the
// node has none yet (as the InstancesV2 doc asks).
func (p *Provider) lookup(node *v1.Node) (Instance, error) {
	if node == nil {
		return Instance{}, errors.New("fakecloud: nil node")
	}
	if node.Spec.ProviderID == "" {
		return p.API.FindByNodeName(node.Name)
	}
	set, id, err := ParseProviderID(node.Spec.ProviderID)
	if err != nil {
		return Instance{}, err
	}
	return p.API.GetInstance(set, id)
}

// InstanceExists reports whether the node's instance exists: (false, nil)
// when the API says 404 ResourceNotFound, an error wrapping
// nodehealth.ErrParentNotFound when its scale set is gone, any other error
// mapped by MapError.
func (p *Provider) InstanceExists(_ context.Context, node *v1.Node) (bool, error) {
	_, err := p.lookup(node)
	err = MapError(err)
	if errors.Is(err, nodehealth.ErrInstanceNotFound) {
		return false, nil
	}
	return err == nil, err
}

// InstanceShutdown reports whether the node's instance is stopped. A gone
// instance is not shut down (false, nil), as upstream's
// shutdownInCloudProvider treats cloudprovider.InstanceNotFound; other
// errors are mapped by MapError.
func (p *Provider) InstanceShutdown(_ context.Context, node *v1.Node) (bool, error) {
	in, err := p.lookup(node)
	err = MapError(err)
	switch {
	case errors.Is(err, nodehealth.ErrInstanceNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return in.Power == PowerStopped, nil
}

// InstanceMetadata returns the instance's provider ID, type, zone and
// region; errors are mapped by MapError (a gone instance wraps
// cloudprovider.InstanceNotFound and nodehealth.ErrInstanceNotFound).
func (p *Provider) InstanceMetadata(_ context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	in, err := p.lookup(node)
	if err != nil {
		return nil, MapError(err)
	}
	return &cloudprovider.InstanceMetadata{
		ProviderID:   in.ProviderID(),
		InstanceType: in.Type,
		Zone:         in.Zone,
		Region:       p.API.cfg.Region,
	}, nil
}
