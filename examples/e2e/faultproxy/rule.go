package faultproxy

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Action is what a [Rule] does to the requests it matches.
type Action int

const (
	// Stall holds the request open and sends nothing while the rule is in
	// place; a streaming watch stops forwarding events (see the package
	// doc). When the rule is removed the request is forwarded, or the
	// watch resumes.
	Stall Action = 1 + iota
	// Delay forwards the request after Rule.Delay.
	Delay
	// Respond answers with Rule.Status (and Retry-After: Rule.RetryAfter
	// seconds when it is positive) and a metav1.Status body.
	Respond
	// Gone answers a watch with 200 and one ERROR event whose Status is
	// 410 Expired, then ends the stream. It matches watches only.
	Gone
)

func (a Action) String() string {
	switch a {
	case Stall:
		return "stall"
	case Delay:
		return "delay"
	case Respond:
		return "respond"
	case Gone:
		return "gone"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// WatchMatch selects watches, other requests, or both.
type WatchMatch int

const (
	// AnyRequest matches watches and other requests (the zero value).
	AnyRequest WatchMatch = iota
	// OnlyWatch matches watch requests only.
	OnlyWatch
	// NoWatch matches every request but watches.
	NoWatch
	// OnlyResumeWatch matches the watches that resume from a
	// resourceVersion, not a watch-list (sendInitialEvents=true, client-go's
	// WatchListClient relist), which kube-apiserver never answers 410 (it
	// serves a resourceVersion "not older than" the one asked). A Gone rule
	// should use it: answering 410 to the relist too keeps the client in a
	// tight retry loop.
	OnlyResumeWatch
)

// Rule selects requests and says what to do with them. Empty fields match
// everything.
type Rule struct {
	// Name identifies the rule in the request log.
	Name string
	// Methods are HTTP methods (GET, PUT, PATCH, ...).
	Methods []string
	// Resource is the resource of the path ("leases", "nodes", "pods"),
	// and Subresource its subresource ("status").
	Resource, Subresource string
	// Namespace is the namespace of the path.
	Namespace string
	// PathPrefix is a prefix of the URL path.
	PathPrefix string
	// Watch selects watches, other requests, or both.
	Watch WatchMatch
	// UserAgent is a substring of the User-Agent header (as the client sent
	// it, before Options.UserAgentSuffix).
	UserAgent string

	Action Action
	// Delay is the delay of a Delay rule.
	Delay time.Duration
	// Status is the HTTP status of a Respond rule (400–599), and RetryAfter
	// the seconds of its Retry-After header (0: none).
	Status, RetryAfter int
	// Times limits the rule to the first Times requests it matches (0: no
	// limit). A Stall rule with a limit holds only requests it matched when
	// they arrived; one without also stalls the watches already streaming.
	Times int
}

// validate reports a rule that could never do what it says.
func (r Rule) validate() error {
	switch r.Action {
	case Stall, Gone:
	case Delay:
		if r.Delay <= 0 {
			return fmt.Errorf("faultproxy: rule %q: Delay %v, want > 0", r.Name, r.Delay)
		}
	case Respond:
		if r.Status < 400 || r.Status > 599 {
			return fmt.Errorf("faultproxy: rule %q: Status %d, want 400-599", r.Name, r.Status)
		}
		if r.RetryAfter < 0 {
			return fmt.Errorf("faultproxy: rule %q: RetryAfter %d, want >= 0", r.Name, r.RetryAfter)
		}
	default:
		return fmt.Errorf("faultproxy: rule %q: Action %v, want Stall, Delay, Respond or Gone", r.Name, r.Action)
	}
	if r.Action == Gone && r.Watch == NoWatch {
		return fmt.Errorf("faultproxy: rule %q: a Gone rule with Watch NoWatch matches nothing", r.Name)
	}
	if r.Times < 0 {
		return fmt.Errorf("faultproxy: rule %q: Times %d, want >= 0", r.Name, r.Times)
	}
	return nil
}

// matches reports whether the rule selects the request.
func (r *Rule) matches(req *request) bool {
	if len(r.Methods) > 0 && !slices.ContainsFunc(r.Methods, func(m string) bool { return strings.EqualFold(m, req.method) }) {
		return false
	}
	if r.Resource != "" && r.Resource != req.target.Resource ||
		r.Subresource != "" && r.Subresource != req.target.Subresource ||
		r.Namespace != "" && r.Namespace != req.target.Namespace ||
		r.PathPrefix != "" && !strings.HasPrefix(req.path, r.PathPrefix) ||
		r.UserAgent != "" && !strings.Contains(req.userAgent, r.UserAgent) {
		return false
	}
	watch := req.target.Watch
	switch {
	case r.Watch == OnlyWatch && !watch, r.Watch == NoWatch && watch,
		r.Watch == OnlyResumeWatch && (!watch || req.target.InitialEvents):
		return false
	case r.Action == Gone && !watch:
		return false
	}
	return true
}

// Target is what an API path names.
type Target struct {
	Group, Version                         string
	Namespace, Resource, Name, Subresource string
	// Watch: the request is a watch (?watch=true or a legacy /watch/ path;
	// the query part is set by the caller). InitialEvents: a watch-list
	// (?sendInitialEvents=true, set by the caller).
	Watch, InitialEvents bool
	// API: the path is under /api or /apis.
	API bool
}

// maxPathSegments bounds the work on a hostile path.
const maxPathSegments = 16

// ParsePath reads an API path: /api/v1/[watch/][namespaces/NS/]RESOURCE[/NAME[/SUB]]
// or /apis/GROUP/VERSION/... Other paths (/healthz, /version, discovery)
// give a Target with API false or an empty Resource. It never fails; at
// most maxPathSegments segments are read.
func ParsePath(path string) Target {
	var t Target
	seg := strings.SplitN(strings.Trim(path, "/"), "/", maxPathSegments+1)
	if len(seg) > maxPathSegments {
		seg = seg[:maxPathSegments]
	}
	switch {
	case len(seg) >= 2 && seg[0] == "api":
		t.API, t.Version, seg = true, seg[1], seg[2:]
	case len(seg) >= 3 && seg[0] == "apis":
		t.API, t.Group, t.Version, seg = true, seg[1], seg[2], seg[3:]
	default:
		return t
	}
	if len(seg) > 0 && seg[0] == "watch" {
		t.Watch, seg = true, seg[1:]
	}
	if len(seg) >= 3 && seg[0] == "namespaces" {
		t.Namespace, seg = seg[1], seg[2:]
	}
	for i, p := range []*string{&t.Resource, &t.Name, &t.Subresource} {
		if i < len(seg) {
			*p = seg[i]
		}
	}
	return t
}

// request is what the rules see of an incoming request.
type request struct {
	method, path, userAgent string
	target                  Target
}

func newRequest(r *http.Request) *request {
	t := ParsePath(r.URL.Path)
	q := r.URL.Query()
	if w := q.Get("watch"); w == "true" || w == "1" {
		t.Watch = true
	}
	t.InitialEvents = t.Watch && q.Get("sendInitialEvents") == "true"
	return &request{method: r.Method, path: r.URL.Path, userAgent: r.UserAgent(), target: t}
}
