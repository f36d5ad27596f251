package parity

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Placeholders in [Write.Changes].
const (
	// TimeValue stands for a timestamp; its offset from the origin is in
	// [Write.Times].
	TimeValue = "<time>"
	// CreationValue stands for a timestamp equal to the object's
	// metadata.creationTimestamp (upstream copies it into conditions that
	// were never reported).
	CreationValue = "<creationTimestamp>"
	// RemovedValue marks a field the write removed.
	RemovedValue = "<removed>"
)

// Write is one write to a Node, a Pod or a DeviceTaintRule, reduced to
// what it changed.
type Write struct {
	// At is when the apiserver received the request, from the origin.
	At time.Duration
	// Verb is the audit verb: update, patch, delete, create.
	Verb string
	// Object is resource/namespace/name[/subresource], e.g.
	// "nodes//n1/status" or "pods/ns/p".
	Object string
	// Code is the HTTP status code of the response.
	Code int
	// Changes are the fields the write changed on the object, as paths
	// (array elements named by their type, key:effect or name) to JSON
	// values, or [TimeValue], [CreationValue], [RemovedValue].
	Changes map[string]string
	// Times are the offsets from the origin of the [TimeValue] fields.
	Times map[string]time.Duration
	// Request, for a patch or a delete, is the sorted list of paths the
	// request body sets (the patch's or the DeleteOptions' shape).
	Request []string
	// Setup marks a write made before the scenario started (the
	// controller taking over the nodes): its time is not compared.
	Setup bool
}

// Class is the write without its object's name: verb, resource,
// subresource and the changes (times left out), for comparisons in which
// the order of equivalent objects does not matter.
func (w *Write) Class() string {
	res, _, _ := strings.Cut(w.Object, "/")
	sub := ""
	if parts := strings.Split(w.Object, "/"); len(parts) == 4 {
		sub = "/" + parts[3]
	}
	keys := make([]string, 0, len(w.Changes))
	for k, v := range w.Changes {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	return w.Verb + " " + res + sub + " {" + strings.Join(keys, ", ") + "}"
}

// EventRecord is every Event (core/v1) the controller recorded with one
// involved object and reason.
type EventRecord struct {
	// Key is "Kind namespace/name reason" of the involved object.
	Key string
	// Type, Source (source.component) and Messages (sorted, distinct) of
	// those Events.
	Type, Source string
	Messages     []string
	// Count is the number of occurrences (the sum of the Events' counts).
	Count int
	// First is when the first of them was written, from the origin.
	First time.Duration
	// Setup: the first was written before the scenario started; the
	// time is not compared.
	Setup bool
}

// Trace is what one controller wrote, from one audit log.
type Trace struct {
	// Origin is the scenario's time zero (for example when the silenced
	// nodes last renewed their Leases).
	Origin time.Time
	// Start is when the scenario started (the nodes were silenced): the
	// writes before it are setup.
	Start time.Time
	// Writes are the controller's successful writes to Nodes, Pods and
	// DeviceTaintRules (resource.k8s.io), in the order the apiserver
	// received them.
	Writes []Write
	// Failed are its writes that failed (conflicts, for example).
	Failed []Write
	// Empty counts its successful patches with an empty body ("{}"): they
	// change nothing and are not compared. Upstream sends one when a node's
	// labels turn out consistent on the fresh read (AddOrUpdateLabelsOnNode
	// in pkg/controller/controller_utils.go), which depends on how fast its
	// cache caught up.
	Empty int
	// Events by key, sorted.
	Events []*EventRecord
}

// ignoredPath reports whether a changed field is noise: the resource
// version and the managed fields change with every write.
func ignoredPath(p string) bool {
	return p == "metadata.resourceVersion" || strings.HasPrefix(p, "metadata.managedFields")
}

// BuildTrace reduces the audit events to the writes of the controller
// (byController tells its writes from the test's), with times from origin;
// the writes before start are marked setup. Every
// successful write to a Node, Pod or DeviceTaintRule (when the audit policy
// logs them: PolicyWith), by anyone, updates the object's known state, so
// that each controller write is reduced to its changes.
func BuildTrace(events []AuditEvent, byController func(*AuditEvent) bool, origin, start time.Time) (Trace, error) {
	tr := Trace{Origin: origin, Start: start}
	state := map[string]map[string]any{} // resource/namespace/name → flattened object
	created := map[string]string{}       // → creationTimestamp
	evs := map[string]*EventRecord{}
	evCounts := map[string]map[string]int{} // key → event object name → count
	for i := range events {
		e := &events[i]
		if e.ObjectRef == nil {
			continue
		}
		ref := e.ObjectRef
		code := e.Code()
		ok := code >= 200 && code < 300
		mine := byController(e)
		switch ref.Resource {
		case "events":
			if !mine || !ok || ref.APIGroup != "" {
				continue
			}
			if err := addEvent(evs, evCounts, e, origin, start); err != nil {
				return tr, err
			}
			continue
		case "nodes", "pods":
		case "devicetaintrules": // the device taint eviction controller's rule status
			if ref.APIGroup != "resource.k8s.io" {
				continue
			}
		default:
			continue
		}
		key := ref.Resource + "/" + ref.Namespace + "/" + ref.Name
		var after map[string]any
		if ok && len(e.ResponseObject) > 0 {
			var obj map[string]any
			if err := json.Unmarshal(e.ResponseObject, &obj); err != nil {
				return tr, fmt.Errorf("parity: %s %s response: %w", e.Verb, key, err)
			}
			if kind, _ := obj["kind"].(string); kind != "Status" {
				after = map[string]any{}
				flatten("", obj, after)
				if md, _ := obj["metadata"].(map[string]any); md != nil {
					if ct, _ := md["creationTimestamp"].(string); ct != "" {
						created[key] = ct
					}
				}
			}
		}
		if mine {
			obj := key
			if ref.Subresource != "" {
				obj += "/" + ref.Subresource
			}
			w := Write{At: e.RequestReceivedTimestamp.Sub(origin), Verb: e.Verb, Object: obj, Code: code,
				Setup: e.RequestReceivedTimestamp.Before(start)}
			if e.Verb == "patch" || e.Verb == "delete" {
				w.Request = requestPaths(e.RequestObject)
			}
			if ok {
				w.Changes, w.Times = changes(state[key], after, created[key], origin)
				if e.Verb == "patch" && len(w.Request) == 0 && len(w.Changes) == 0 {
					tr.Empty++
				} else {
					tr.Writes = append(tr.Writes, w)
				}
			} else {
				tr.Failed = append(tr.Failed, w)
			}
		}
		// The log is in the order the responses completed, which is not
		// always the order of the writes: a create's line can follow the
		// line of an update that a watcher made right after it. Keep the
		// newest version of each object.
		if after != nil && newerVersion(after, state[key]) {
			state[key] = after
		}
	}
	for _, k := range keysOf(evs) {
		r := evs[k]
		r.Count = 0
		for _, n := range evCounts[k] {
			r.Count += n
		}
		sort.Strings(r.Messages)
		tr.Events = append(tr.Events, r)
	}
	return tr, nil
}

func addEvent(evs map[string]*EventRecord, counts map[string]map[string]int, e *AuditEvent, origin, start time.Time) error {
	var ev struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		InvolvedObject struct {
			Kind, Namespace, Name string
		} `json:"involvedObject"`
		Reason, Message, Type string
		Source                struct {
			Component string `json:"component"`
		} `json:"source"`
		Count int `json:"count"`
	}
	if err := json.Unmarshal(e.ResponseObject, &ev); err != nil {
		return fmt.Errorf("parity: event %s: %w", e.RequestURI, err)
	}
	key := fmt.Sprintf("%s %s/%s %s", ev.InvolvedObject.Kind, ev.InvolvedObject.Namespace, ev.InvolvedObject.Name, ev.Reason)
	r := evs[key]
	at := e.RequestReceivedTimestamp.Sub(origin)
	if r == nil {
		r = &EventRecord{Key: key, Type: ev.Type, Source: ev.Source.Component, First: at,
			Setup: e.RequestReceivedTimestamp.Before(start)}
		evs[key] = r
		counts[key] = map[string]int{}
	}
	if ev.Type != r.Type {
		r.Type += "," + ev.Type
	}
	if ev.Source.Component != r.Source {
		r.Source += "," + ev.Source.Component
	}
	if !slices.Contains(r.Messages, ev.Message) {
		r.Messages = append(r.Messages, ev.Message)
	}
	n := max(ev.Count, 1)
	if n > counts[key][ev.Metadata.Name] {
		counts[key][ev.Metadata.Name] = n
	}
	return nil
}

// changes returns the fields of after that differ from before, and the
// offsets of the time values among them.
func changes(before, after map[string]any, creation string, origin time.Time) (map[string]string, map[string]time.Duration) {
	out := map[string]string{}
	var times map[string]time.Duration
	for p, v := range after {
		if ignoredPath(p) || emptyContainer(v) {
			continue
		}
		if old, ok := before[p]; ok && equalJSON(old, v) {
			continue
		}
		if s, ok := v.(string); ok {
			if t, ok := parseTime(s); ok {
				if s == creation {
					out[p] = CreationValue
					continue
				}
				out[p] = TimeValue
				if times == nil {
					times = map[string]time.Duration{}
				}
				times[p] = t.Sub(origin)
				continue
			}
		}
		out[p] = jsonString(v)
	}
	for p := range before {
		if _, ok := after[p]; !ok && !ignoredPath(p) && after != nil && !emptyContainer(before[p]) {
			out[p] = RemovedValue
		}
	}
	return out, times
}

// newerVersion reports whether the flattened object a is at a later
// resourceVersion than b (or b is nil, or either version is not a number).
func newerVersion(a, b map[string]any) bool {
	if b == nil {
		return true
	}
	ra, errA := strconv.ParseUint(fmt.Sprint(a["metadata.resourceVersion"]), 10, 64)
	rb, errB := strconv.ParseUint(fmt.Sprint(b["metadata.resourceVersion"]), 10, 64)
	return errA != nil || errB != nil || ra >= rb
}

// emptyContainer reports whether v is an empty object or list: one that
// appears or goes when its first element is added or its last removed
// ("spec": {} once the last taint went). It says nothing the element's own
// paths do not, and whether it shows depends on the order of two writes.
func emptyContainer(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

func parseTime(s string) (time.Time, bool) {
	if len(s) < 20 || s[4] != '-' || s[10] != 'T' {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

func equalJSON(a, b any) bool { return jsonString(a) == jsonString(b) }

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// flatten writes the leaves of v into out under dotted paths. Array
// elements are named, so that two writes that order a list differently
// compare equal: by "type" (conditions), "key:effect" (taints, tolerations),
// "name" (containers), else by index.
func flatten(prefix string, v any, out map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			out[prefix] = x
			return
		}
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, e, out)
		}
	case []any:
		if len(x) == 0 {
			out[prefix] = x
			return
		}
		for i, e := range x {
			flatten(prefix+"["+elementName(e, i)+"]", e, out)
		}
	default:
		out[prefix] = v
	}
}

func elementName(e any, i int) string {
	m, ok := e.(map[string]any)
	if !ok {
		return strconv.Itoa(i)
	}
	if t, ok := m["type"].(string); ok {
		return t
	}
	if k, ok := m["key"].(string); ok {
		eff, _ := m["effect"].(string)
		return k + ":" + eff
	}
	if n, ok := m["name"].(string); ok {
		return n
	}
	return strconv.Itoa(i)
}

// requestPaths returns the sorted leaf paths of a request body, without
// values (they hold resource versions and UIDs, which differ between
// clusters).
func requestPaths(body json.RawMessage) []string {
	if len(body) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return []string{"<not JSON>"}
	}
	m := map[string]any{}
	flatten("", v, m)
	out := make([]string, 0, len(m))
	for p := range m {
		if p == "" || p == "kind" || p == "apiVersion" { // "": the body is {}
			continue
		}
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
