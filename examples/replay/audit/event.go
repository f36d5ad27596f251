package audit

import (
	"encoding/json"
	"fmt"
	"time"
)

// ObjectRef is the audited request's object (audit.k8s.io/v1 ObjectReference).
type ObjectRef struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	UID         string `json:"uid,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// User is the authenticated user of a request.
type User struct {
	Username string   `json:"username,omitempty"`
	Groups   []string `json:"groups,omitempty"`
}

// Status is the response status of a request (the fields used here).
type Status struct {
	Code    int    `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Event is one audit event: the fields of audit.k8s.io/v1 Event that a
// replay uses, and where it was read.
//
// User is who authenticated; a request that impersonated another user
// has that user in ImpersonatedUser (EffectiveUser returns the one it
// acted as). Note that kube-apiserver evaluates the audit policy before
// impersonation: a policy rule's users and userGroups match User, not
// ImpersonatedUser.
//
// RequestObject is present from level Request on, ResponseObject at level
// RequestResponse; both are nil at level Metadata.
type Event struct {
	Level                    string            `json:"level,omitempty"`
	AuditID                  string            `json:"auditID,omitempty"`
	Stage                    string            `json:"stage,omitempty"`
	RequestURI               string            `json:"requestURI,omitempty"`
	Verb                     string            `json:"verb,omitempty"`
	User                     User              `json:"user"`
	ImpersonatedUser         *User             `json:"impersonatedUser,omitempty"`
	UserAgent                string            `json:"userAgent,omitempty"`
	ObjectRef                *ObjectRef        `json:"objectRef,omitempty"`
	ResponseStatus           *Status           `json:"responseStatus,omitempty"`
	RequestObject            json.RawMessage   `json:"requestObject,omitempty"`
	ResponseObject           json.RawMessage   `json:"responseObject,omitempty"`
	RequestReceivedTimestamp time.Time         `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time         `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`

	// Source is where the event was read (not part of the audit event).
	Source Position `json:"-"`
}

// EffectiveUser is the user the request acted as: ImpersonatedUser when
// the request impersonated one (User is then the impersonator), else User.
func (e *Event) EffectiveUser() User {
	if e.ImpersonatedUser != nil {
		return *e.ImpersonatedUser
	}
	return e.User
}

// Code is the response's HTTP status code (0 when the event has none).
func (e *Event) Code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

// Position names a line of an input file.
type Position struct {
	File string
	Line int64
}

// String returns "file:line".
func (p Position) String() string { return fmt.Sprintf("%s:%d", p.File, p.Line) }
