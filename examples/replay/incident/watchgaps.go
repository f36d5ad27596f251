package incident

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"time"

	"github.com/kubelifecycle/lifecycle/examples/replay/audit"
)

// SourceInferred labels the stalls InferredStalls finds: candidates, never
// applied unless the caller says so (the replay command's
// -apply-inferred-stalls).
const SourceInferred = "inferred candidate"

// DefaultInferGap is the shortest time without an open watch that
// InferredStalls reports: a reflector rewatches at once after a watch
// times out, and backs off from 800ms after an error.
const DefaultInferGap = 5 * time.Second

// ControllerUsers returns the users whose requests are the recorded
// controller's (Options.ControllerUsers, or DefaultControllerUsers).
func (h *History) ControllerUsers() []string {
	if len(h.opt.ControllerUsers) == 0 {
		return slices.Clone(DefaultControllerUsers)
	}
	return slices.Clone(h.opt.ControllerUsers)
}

// watchReq is one finished list or watch of the controller's.
type watchReq struct {
	verb       string
	start, end time.Time
	rv         string // the request's resourceVersion parameter
	code       int
}

// InferredStalls reads the recorded controller users' list and watch
// requests on Leases (coordination.k8s.io) and Nodes in src and returns
// candidate watch stalls: each time, longer than minGap (0:
// DefaultInferGap), between the first request's start and the last
// one's end when none of the users' watches or lists of the resource was
// open. An audit event of a watch at stage ResponseComplete spans the
// watch (requestReceivedTimestamp its start, stageTimestamp its end), so
// such a time is one the informer had no watch and received nothing. The
// Why names the request that closed the gap and whether it was a relist
// (a list with no resourceVersion or resourceVersion=0: the informer
// started over) and the code of the watch that ended it.
//
// These are candidates: a watch can stay open and still deliver late (the
// incidents' fault is often that), which only an informer recording shows
// (InformerStalls); and a log that lacks the requests (an audit policy
// that does not log them, at level None) shows no gaps. The controller's
// writes are not used: a controller that writes nothing during an outage
// may have nothing to write.
func InferredStalls(src Source, users []string, minGap time.Duration) ([]Stall, error) {
	if minGap <= 0 {
		minGap = DefaultInferGap
	}
	isUser := map[string]bool{}
	for _, u := range users {
		isUser[u] = true
	}
	reqs := map[string][]watchReq{}
	for {
		ev, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		kind := watchKind(ev)
		if kind == "" || !isUser[ev.User.Username] {
			continue
		}
		r := watchReq{verb: ev.Verb, start: ev.RequestReceivedTimestamp, end: ev.StageTimestamp, code: ev.Code()}
		if u, err := url.Parse(ev.RequestURI); err == nil {
			q := u.Query()
			r.rv = q.Get("resourceVersion")
			if w := q.Get("watch"); w == "true" || w == "1" {
				r.verb = "watch"
			}
		}
		if r.start.IsZero() || r.start.After(r.end) {
			r.start = r.end
		}
		reqs[kind] = append(reqs[kind], r)
	}
	var out []Stall
	for _, kind := range []string{DeliveryLease, DeliveryNode} {
		rs := reqs[kind]
		slices.SortStableFunc(rs, func(a, b watchReq) int { return a.start.Compare(b.start) })
		var open watchReq // the request open the longest so far
		for i, r := range rs {
			if i > 0 && r.start.Sub(open.end) > minGap {
				why := fmt.Sprintf("no %s watch of the controller's open for %v: its %s ended (code %d) and the next request, a %s",
					lower(kind), r.start.Sub(open.end).Round(time.Millisecond), open.verb, open.code, r.verb)
				if r.verb == "list" && (r.rv == "" || r.rv == "0") {
					why += " with resourceVersion=" + fmt.Sprintf("%q", r.rv) + ", relisted"
				}
				why += " only then"
				out = append(out, Stall{Kind: kind, Window: Window{open.end, r.start}, Source: SourceInferred, Why: why})
			}
			if i == 0 || r.end.After(open.end) {
				open = r
			}
		}
	}
	return out, nil
}

func lower(kind string) string {
	if kind == DeliveryNode {
		return "node"
	}
	return "lease"
}

// watchKind is which informer's list or watch ev is ("": neither).
func watchKind(ev *audit.Event) string {
	r := ev.ObjectRef
	if r == nil || r.Name != "" || r.Subresource != "" || (ev.Verb != "watch" && ev.Verb != "list") {
		return ""
	}
	if ev.Stage != "" && ev.Stage != "ResponseComplete" {
		return ""
	}
	switch {
	case r.Resource == "leases" && r.APIGroup == "coordination.k8s.io":
		return DeliveryLease
	case r.Resource == "nodes" && r.APIGroup == "":
		return DeliveryNode
	}
	return ""
}
