package incident

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// op is what one audit event is to the replay: an input (a kubelet's or
// another client's write the recorded controller saw) or one of the
// recorded controller's writes.
type op uint8

const (
	opLease         op = 1 + iota // a kubelet renewed (or created) its node's Lease
	opNodeStatus                  // a kubelet posted its node's status
	opNodeCreate                  // a node was created
	opNodeDelete                  // a node was deleted
	opNodeWrite                   // someone else wrote a node (labels, taints)
	opPodCreate                   // a pod was created
	opPodBind                     // a pod was bound to a node (pods/binding)
	opPodDelete                   // someone other than the controller deleted (or evicted) a pod
	opPodStatus                   // a kubelet posted a pod's status
	opCtlNodeStatus               // the controller wrote a node's status
	opCtlNodeWrite                // the controller wrote a node (its taints)
	opCtlPodStatus                // the controller wrote a pod's status
	opCtlPodDelete                // the controller deleted a pod
)

// DefaultControllerUsers are the users whose writes are the recorded
// controller's: kube-controller-manager's node lifecycle and taint eviction
// controllers with --use-service-account-credentials, and
// kube-controller-manager's own identity without it.
var DefaultControllerUsers = []string{
	"system:kube-controller-manager",
	"system:serviceaccount:kube-system:node-controller",
	"system:serviceaccount:kube-system:taint-eviction-controller",
}

const kubeletPrefix = "system:node:"

// object is the part of a Node, Pod, Binding or patch body the replay
// reads. Taints is kept raw so that a patch without taints (absent) is told
// from one that removes them all (null).
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name              string            `json:"name"`
		Namespace         string            `json:"namespace"`
		UID               string            `json:"uid"`
		Labels            map[string]string `json:"labels"`
		CreationTimestamp string            `json:"creationTimestamp"`
	} `json:"metadata"`
	Spec struct {
		NodeName    string          `json:"nodeName"`
		Taints      json.RawMessage `json:"taints"`
		Tolerations []v1.Toleration `json:"tolerations"`
	} `json:"spec"`
	StatusRaw struct {
		Conditions []condition `json:"conditions"`
	} `json:"status"`
	Target struct {
		Name string `json:"name"`
	} `json:"target"`

	// whole: the body is a whole object (a create's or update's request,
	// or a response), not a patch.
	whole bool
}

type condition struct {
	Type   string `json:"type"`
	Status string `json:"status"`
}

// ready returns the status of the condition of type t in the body ("" when
// the body has none with a status).
func (o *object) ready(t string) v1.ConditionStatus {
	if o == nil {
		return ""
	}
	// The request's conditions come first; a patch's may carry only a
	// heartbeat (no status), then the response's says.
	for _, c := range o.StatusRaw.Conditions {
		if c.Type == t && c.Status != "" {
			return v1.ConditionStatus(c.Status)
		}
	}
	return ""
}

// taints returns the node's taints as the body sets them: ok is false when
// the body does not mention them (a patch of something else).
func (o *object) taints() (ts []v1.Taint, ok bool, err error) {
	if o == nil {
		return nil, false, nil
	}
	if len(o.Spec.Taints) == 0 {
		// Absent: a whole object without taints has none.
		return nil, o.whole, nil
	}
	if string(o.Spec.Taints) == "null" {
		return nil, true, nil
	}
	if err := json.Unmarshal(o.Spec.Taints, &ts); err != nil {
		return nil, false, err
	}
	return ts, true, nil
}

// item is one classified audit event.
type item struct {
	op    op
	at    time.Time // StageTimestamp: when the write took effect
	recv  time.Time // RequestReceivedTimestamp: when it was made
	node  string
	pod   podKey
	level string
	user  string
	src   audit.Position
	body  *object // nil when the log has no body for it (level Metadata) or it could not be read
	// bad is why a body present in the log could not be read ("" when it
	// could, or there was none).
	bad string
}

// podKey names a pod.
type podKey struct{ Namespace, Name string }

func (k podKey) String() string { return k.Namespace + "/" + k.Name }

// classifier turns audit events into items.
type classifier struct {
	users map[string]bool
	lim   Limits
}

func newClassifier(users []string, lim Limits) *classifier {
	c := &classifier{users: map[string]bool{}, lim: lim}
	if len(users) == 0 {
		users = DefaultControllerUsers
	}
	for _, u := range users {
		c.users[u] = true
	}
	return c
}

func ok2xx(code int) bool { return code >= 200 && code < 300 }

// classify returns the item e is, and false when e plays no part. The error
// is a body over Limits.MaxObjectBytes.
func (c *classifier) classify(e *audit.Event) (item, bool, error) {
	ref := e.ObjectRef
	if ref == nil || (e.Stage != "" && e.Stage != "ResponseComplete") || !ok2xx(e.Code()) {
		return item{}, false, nil
	}
	user := e.EffectiveUser().Username // the impersonated user, when there is one
	kubelet, ctl := "", c.users[user]
	if n, ok := strings.CutPrefix(user, kubeletPrefix); ok && n != "" {
		kubelet = n
	}
	it := item{at: e.StageTimestamp, recv: e.RequestReceivedTimestamp, level: e.Level, user: user, src: e.Source}
	if it.at.IsZero() {
		it.at = it.recv
	}
	if it.recv.IsZero() {
		it.recv = it.at
	}
	if it.at.IsZero() {
		return item{}, false, nil // no time: cannot be placed
	}
	write := e.Verb == "update" || e.Verb == "patch"
	switch {
	case ref.Resource == "leases" && ref.APIGroup == "coordination.k8s.io" && ref.Namespace == v1.NamespaceNodeLease:
		if kubelet == "" || ref.Name == "" || ref.Subresource != "" || !(write || e.Verb == "create") {
			return item{}, false, nil
		}
		it.op, it.node = opLease, ref.Name
		return it, true, nil
	case ref.Resource == "nodes" && ref.APIGroup == "" && ref.Name != "":
		it.node = ref.Name
		switch {
		case ref.Subresource == "status" && write:
			switch {
			case ctl:
				it.op = opCtlNodeStatus
			case kubelet != "":
				it.op = opNodeStatus
			default:
				return item{}, false, nil
			}
		case ref.Subresource != "":
			return item{}, false, nil
		case e.Verb == "create":
			it.op = opNodeCreate
		case e.Verb == "delete":
			it.op = opNodeDelete
		case write && ctl:
			it.op = opCtlNodeWrite
		case write:
			it.op = opNodeWrite
		default:
			return item{}, false, nil
		}
	case ref.Resource == "pods" && ref.APIGroup == "" && ref.Name != "":
		it.pod = podKey{ref.Namespace, ref.Name}
		switch {
		case ref.Subresource == "" && e.Verb == "create":
			it.op = opPodCreate
		case ref.Subresource == "binding" && e.Verb == "create":
			it.op = opPodBind
		case ref.Subresource == "" && e.Verb == "delete" && ctl:
			it.op = opCtlPodDelete
		case (ref.Subresource == "" && e.Verb == "delete") || (ref.Subresource == "eviction" && e.Verb == "create"):
			it.op = opPodDelete
		case ref.Subresource == "status" && write && ctl:
			it.op = opCtlPodStatus
		case ref.Subresource == "status" && write && kubelet != "":
			it.op = opPodStatus
			it.node = kubelet
		default:
			return item{}, false, nil
		}
	default:
		return item{}, false, nil
	}
	if err := c.decode(e, &it); err != nil {
		return item{}, false, err
	}
	return it, true, nil
}

// decode reads the bodies of e into it.body. The request says what the
// write set (a patch's conditions and taints, a Binding's node); the
// response (level RequestResponse) is the whole object after it. The body
// merges both: the request's Ready condition and taints first, the rest
// from whichever has it.
func (c *classifier) decode(e *audit.Event, it *item) error {
	req, err := c.parse(e, e.RequestObject, it)
	if err != nil {
		return err
	}
	resp, err := c.parse(e, e.ResponseObject, it)
	if err != nil {
		return err
	}
	if req != nil && (req.Kind == "DeleteOptions" || req.Kind == "Status") {
		req = nil // a delete's options
	}
	if resp != nil && resp.Kind == "Status" {
		resp = nil // a delete's or a binding's answer
	}
	if req == nil && resp == nil {
		return nil
	}
	o := &object{whole: resp != nil || (req != nil && e.Verb != "patch")}
	for _, b := range []*object{req, resp} {
		if b == nil {
			continue
		}
		o.Kind = cmp.Or(o.Kind, b.Kind)
		o.Metadata.Name = cmp.Or(o.Metadata.Name, b.Metadata.Name)
		o.Metadata.Namespace = cmp.Or(o.Metadata.Namespace, b.Metadata.Namespace)
		o.Metadata.UID = cmp.Or(o.Metadata.UID, b.Metadata.UID)
		o.Metadata.CreationTimestamp = cmp.Or(o.Metadata.CreationTimestamp, b.Metadata.CreationTimestamp)
		if o.Metadata.Labels == nil {
			o.Metadata.Labels = b.Metadata.Labels
		}
		o.Spec.NodeName = cmp.Or(o.Spec.NodeName, b.Spec.NodeName)
		if len(o.Spec.Tolerations) == 0 {
			o.Spec.Tolerations = b.Spec.Tolerations
		}
		// The request's taints (a patch sends the whole list) before the
		// response's.
		if len(o.Spec.Taints) == 0 {
			o.Spec.Taints = b.Spec.Taints
		}
		o.StatusRaw.Conditions = append(o.StatusRaw.Conditions, b.StatusRaw.Conditions...)
		o.Target.Name = cmp.Or(o.Target.Name, b.Target.Name)
	}
	// Only the labels the monitor reads are kept.
	if o.Metadata.Labels != nil {
		keep := map[string]string{}
		for _, k := range []string{v1.LabelTopologyZone, v1.LabelTopologyRegion, v1.LabelFailureDomainBetaZone, v1.LabelFailureDomainBetaRegion} {
			if v, ok := o.Metadata.Labels[k]; ok {
				keep[k] = v
			}
		}
		o.Metadata.Labels = keep
	}
	it.body = o
	return nil
}

// parse decodes one body (nil when empty or unreadable: it.bad says why).
func (c *classifier) parse(e *audit.Event, raw []byte, it *item) (*object, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if max := c.lim.MaxObjectBytes; max > 0 && int64(len(raw)) > max {
		return nil, fmt.Errorf("%w: %s: %s %s body of %d bytes, over MaxObjectBytes=%d (-max-object-bytes)", ErrLimit, e.Source, e.Verb, refString(e.ObjectRef), len(raw), max)
	}
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		if it.bad == "" {
			it.bad = shorten(err.Error())
		}
		return nil, nil
	}
	if n := c.lim.MaxLabels; n > 0 && len(o.Metadata.Labels) > n {
		return nil, fmt.Errorf("%w: %s: %s has %d labels, over MaxLabels=%d (-max-labels)", ErrLimit, e.Source, refString(e.ObjectRef), len(o.Metadata.Labels), n)
	}
	if n := c.lim.MaxTaints; n > 0 && len(o.Spec.Tolerations) > n {
		return nil, fmt.Errorf("%w: %s: %s has %d tolerations, over MaxTaints=%d (-max-taints)", ErrLimit, e.Source, refString(e.ObjectRef), len(o.Spec.Tolerations), n)
	}
	return &o, nil
}

func refString(r *audit.ObjectRef) string {
	s := r.Resource
	if r.Namespace != "" {
		s += " " + r.Namespace + "/" + r.Name
	} else {
		s += " " + r.Name
	}
	if r.Subresource != "" {
		s += "/" + r.Subresource
	}
	return s
}

// shorten clips s to 120 characters (never inside one).
func shorten(s string) string { return clip(s, 121) }

// zoneOf returns the node's zone and region labels.
func zoneOf(labels map[string]string) (zone, region string) {
	zone, region = labels[v1.LabelTopologyZone], labels[v1.LabelTopologyRegion]
	if zone == "" {
		zone = labels[v1.LabelFailureDomainBetaZone]
	}
	if region == "" {
		region = labels[v1.LabelFailureDomainBetaRegion]
	}
	return zone, region
}
