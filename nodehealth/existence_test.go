package nodehealth

import (
	"errors"
	"fmt"
	"testing"
)

func TestClassifyExistence(t *testing.T) {
	wrappedInstance := fmt.Errorf("azure: vm abc: %w", ErrInstanceNotFound)
	wrappedParent := fmt.Errorf("list vmss vms: %w", fmt.Errorf("404 ParentResourceNotFound: %w", ErrParentNotFound))
	tests := []struct {
		name   string
		exists bool
		err    error
		want   Existence
	}{
		{"exists", true, nil, ExistenceExists},
		{"false with no error is gone (upstream contract)", false, nil, ExistenceNotFound},
		{"instance not found", false, ErrInstanceNotFound, ExistenceNotFound},
		{"wrapped instance not found", false, wrappedInstance, ExistenceNotFound},
		{"wrapped parent not found", false, wrappedParent, ExistenceNotFound},
		{"not found wins over exists=true", true, wrappedParent, ExistenceNotFound},
		{"joined errors", false, errors.Join(errors.New("x"), ErrParentNotFound), ExistenceNotFound},
		{"throttled", false, errors.New("429 Too Many Requests"), ExistenceUnknown},
		{"error with exists=true is still unknown", true, errors.New("timeout"), ExistenceUnknown},
		// Same text as the sentinel but another value: never string-matched.
		{"look-alike error", false, errors.New("nodehealth: cloud instance not found"), ExistenceUnknown},
	}
	for _, tt := range tests {
		if got := ClassifyExistence(tt.exists, tt.err); got != tt.want {
			t.Errorf("%s: ClassifyExistence(%v, %v) = %v, want %v", tt.name, tt.exists, tt.err, got, tt.want)
		}
	}
}

func TestEnumStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{ExistenceUnknown.String(), "Unknown"},
		{ExistenceExists.String(), "Exists"},
		{ExistenceNotFound.String(), "NotFound"},
		{Existence(9).String(), "Existence(9)"},
		{OrphanReason(0).String(), "OrphanReason(0)"},
		{OrphanInvalidNode.String(), "InvalidNode"},
		{OrphanNodeReady.String(), "NodeReady"},
		{OrphanExists.String(), "Exists"},
		{OrphanCloudUnknown.String(), "CloudUnknown"},
		{OrphanAwaitingConfirmations.String(), "AwaitingConfirmations"},
		{OrphanAwaitingAge.String(), "AwaitingAge"},
		{OrphanNotFound.String(), "NotFound"},
		{OrphanReason(200).String(), "OrphanReason(200)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}
