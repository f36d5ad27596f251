// Package parity compares what two node lifecycle controllers wrote to
// their kube-apiservers, from the apiservers' audit logs: which objects,
// which fields, which Events, and when.
//
// Each controller runs against a fresh kube-apiserver whose audit policy
// ([Policy]) logs every write to Nodes, Pods and Events with the request
// and response bodies ([PolicyWith] can add DeviceTaintRules, whose
// status the device taint eviction controller writes). [ReadAuditLog] reads such a log, [BuildTrace] turns
// one controller's writes into a [Trace] (times relative to the scenario's
// origin, every write reduced to the fields it changed), and [Compare]
// lists the [Difference]s between two traces.
package parity

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// Policy is the audit policy (audit.k8s.io/v1) for kube-apiserver's
// --audit-policy-file, logged once per request when the response is
// complete: every create, update, patch and delete of Nodes, Pods and
// Events (and their status) at level RequestResponse; every other request
// by a ServiceAccount at level Metadata (to check that a controller running
// as one is never refused); nothing else, and never the node Leases in
// kube-node-lease (the kubelets' renewals).
const Policy = policyHead + `- level: Metadata
  userGroups: ["system:serviceaccounts"]
` + policyTail

// PolicyWith is the audit policy of [Policy] with rules (YAML list items,
// each line ending in a newline) in place of its Metadata rule for
// ServiceAccounts: nothing from kube-node-lease, the writes to Nodes, Pods
// and Events at level RequestResponse, then rules, then nothing else.
func PolicyWith(rules string) string { return policyHead + rules + policyTail }

// PolicyWithFirst is [PolicyWith](rules) with first (YAML list items, each
// line ending in a newline) before every other rule: the only place where a
// rule can log requests in kube-node-lease (a controller's live reads of
// node Leases), which the rules after it never log.
func PolicyWithFirst(first, rules string) string {
	return policyPreamble + first + policyRules + rules + policyTail
}

// policyHead and policyTail are the rules [Policy] and [PolicyWith] share;
// policyHead is policyPreamble + policyRules.
const (
	policyHead     = policyPreamble + policyRules
	policyPreamble = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted", "Panic"]
rules:
`
	policyRules = `- level: None
  namespaces: ["kube-node-lease"]
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
- level: RequestResponse
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  resources:
  - group: ""
    resources: ["nodes", "nodes/status", "pods", "pods/status", "events"]
  - group: events.k8s.io
    resources: ["events"]
`
	policyTail = `- level: None
`
)

// APIServerFlags returns the kube-apiserver flags that write the audit log
// of policyFile to logPath as JSON lines, synchronously (each event is
// written before the response is sent, so the log is complete as soon as
// the writer has its answer).
func APIServerFlags(policyFile, logPath string) []string {
	return []string{
		"--audit-policy-file=" + policyFile,
		"--audit-log-path=" + logPath,
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--audit-log-maxbackup=0",
		"--audit-log-maxsize=0",
	}
}

// ObjectRef is the audited request's object.
type ObjectRef struct {
	Resource    string `json:"resource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	APIGroup    string `json:"apiGroup"`
	Subresource string `json:"subresource"`
}

// AuditEvent is one line of the audit log: the fields of audit.k8s.io/v1
// Event this package uses.
type AuditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string              `json:"username"`
		Groups   []string            `json:"groups"`
		Extra    map[string][]string `json:"extra"`
	} `json:"user"`
	UserAgent      string     `json:"userAgent"`
	ObjectRef      *ObjectRef `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject            json.RawMessage `json:"requestObject"`
	ResponseObject           json.RawMessage `json:"responseObject"`
	RequestReceivedTimestamp time.Time       `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time       `json:"stageTimestamp"`
}

// Code is the response's HTTP status code (0 when unknown).
func (e *AuditEvent) Code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

// Limits of ReadAuditLog.
const (
	// MaxLineBytes bounds one audit event (a Node with its status and
	// managed fields is a few KiB; a Pod list is never logged here).
	MaxLineBytes = 4 << 20
	// MaxEvents bounds the events read from one log.
	MaxEvents = 200_000
)

// ReadAuditLog reads the ResponseComplete events of the JSON-lines audit log
// at path, in the order they were written.
func ReadAuditLog(path string) ([]AuditEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("parity: %w", err)
	}
	defer f.Close()
	return ParseAuditLog(f)
}

// ParseAuditLog is [ReadAuditLog] on a reader. Lines longer than
// [MaxLineBytes] and logs of more than [MaxEvents] events are errors.
func ParseAuditLog(r io.Reader) ([]AuditEvent, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	var out []AuditEvent
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		if len(out) >= MaxEvents {
			return nil, fmt.Errorf("parity: audit log has more than %d events (MaxEvents)", MaxEvents)
		}
		var e AuditEvent
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("parity: audit log line %d: %w", line, err)
		}
		if e.Stage != "" && e.Stage != "ResponseComplete" {
			continue
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parity: audit log after line %d (lines are limited to MaxLineBytes = %d): %w", line, MaxLineBytes, err)
	}
	return out, nil
}
