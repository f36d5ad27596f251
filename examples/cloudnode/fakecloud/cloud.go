package fakecloud

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Error codes the fake API returns in APIError.Code, in the style of a
// cloud REST API (Azure's are the model: a 404 for a missing VM is
// "ResourceNotFound", a 404 whose scale set is gone is
// "ParentResourceNotFound").
const (
	CodeResourceNotFound       = "ResourceNotFound"
	CodeParentResourceNotFound = "ParentResourceNotFound"
	CodeTooManyRequests        = "TooManyRequests"
	CodeInternalError          = "InternalError"
)

// APIError is the error the fake API returns: an HTTP status, a code and,
// for 429, the Retry-After the client should honour. It is what a real
// provider's SDK returns (an HTTP response error); Provider maps it onto
// nodehealth's sentinels.
type APIError struct {
	StatusCode int
	Code       string
	Message    string
	RetryAfter time.Duration // 0 unless StatusCode is 429
}

// Error returns "fakecloud: <status> <code>: <message>".
func (e *APIError) Error() string {
	s := "fakecloud: " + strconv.Itoa(e.StatusCode) + " " + e.Code + ": " + e.Message
	if e.RetryAfter > 0 {
		s += " (retry after " + e.RetryAfter.String() + ")"
	}
	return s
}

// Power is an instance's power state.
type Power uint8

const (
	// PowerRunning: the instance runs.
	PowerRunning Power = 1 + iota
	// PowerStopped: the instance exists but is stopped (deallocated).
	PowerStopped
)

// String returns "Running" or "Stopped" (or "Power(n)").
func (p Power) String() string {
	switch p {
	case PowerRunning:
		return "Running"
	case PowerStopped:
		return "Stopped"
	}
	return "Power(" + strconv.Itoa(int(p)) + ")"
}

// Instance is what GetInstance returns.
type Instance struct {
	ScaleSet string
	ID       string
	NodeName string
	Power    Power
	Zone     string
	Type     string
}

// ProviderID returns the instance's provider ID, "fake://<set>/<id>", the
// value a Node's spec.providerID holds.
func (i Instance) ProviderID() string { return ProviderID(i.ScaleSet, i.ID) }

// ProviderID returns "fake://<set>/<id>".
func ProviderID(set, id string) string { return "fake://" + set + "/" + id }

// Method names a call of the fake API, for CallStats.
type Method string

// The fake API's methods.
const (
	MethodGetInstance Method = "GetInstance"
)

// Result names the outcome of a call, for CallStats.
type Result string

// Results of a call.
const (
	ResultOK             Result = "ok"
	ResultNotFound       Result = "not_found"
	ResultParentNotFound Result = "parent_not_found"
	ResultThrottled      Result = "throttled"
	ResultError          Result = "error"
)

// CallKey indexes CallStats.
type CallKey struct {
	Method Method
	Result Result
}

// Config configures a Cloud.
type Config struct {
	// SetDeleteDelay is how long a deleted scale set stays after its
	// instances are gone: during it, asking about one of its instances
	// answers 404 ResourceNotFound; after it, 404 ParentResourceNotFound.
	SetDeleteDelay time.Duration
	// Region is reported by every instance's metadata.
	Region string
}

// Cloud is a fake cloud API that models scale sets: instances belong to a
// set; DeleteScaleSet removes the instances first and the set itself
// SetDeleteDelay later; while a set is gone, asking about any of its
// instances answers 404 ParentResourceNotFound (the answer the Azure VMSS
// incident, kubernetes/kubernetes#95288, turned into nodes never deleted).
// The API can be made to throttle (429 with a Retry-After) or to fail (500)
// for a period, and every call is counted by method and result.
//
// Time comes from the clock given to New (a fake clock in tests). A Cloud is
// safe for concurrent use.
type Cloud struct {
	mu    sync.Mutex
	clk   clock.PassiveClock
	cfg   Config
	sets  map[string]*scaleSet
	calls map[CallKey]int

	throttleUntil time.Time
	retryAfter    time.Duration
	failUntil     time.Time
}

type scaleSet struct {
	instances map[string]*Instance
	deleted   bool      // DeleteScaleSet was called
	goneAt    time.Time // when the set itself disappears (deleted only)
}

// New returns an empty Cloud on clk.
func New(clk clock.PassiveClock, cfg Config) *Cloud {
	return &Cloud{clk: clk, cfg: cfg, sets: make(map[string]*scaleSet), calls: make(map[CallKey]int)}
}

// ErrExists is returned by AddInstance for an instance that is already there.
var ErrExists = errors.New("fakecloud: already exists")

// AddInstance creates instance id of node nodeName, running, in scale set
// set (created if needed; a set being deleted cannot take instances).
func (c *Cloud) AddInstance(set, id, nodeName, zone string) (Instance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sets[set]
	if s == nil {
		s = &scaleSet{instances: make(map[string]*Instance)}
		c.sets[set] = s
	}
	if s.deleted {
		return Instance{}, fmt.Errorf("fakecloud: scale set %s is being deleted", set)
	}
	if _, ok := s.instances[id]; ok {
		return Instance{}, fmt.Errorf("%w: instance %s/%s", ErrExists, set, id)
	}
	in := &Instance{ScaleSet: set, ID: id, NodeName: nodeName, Power: PowerRunning, Zone: zone, Type: "fake.standard"}
	s.instances[id] = in
	return *in, nil
}

// DeleteScaleSet deletes the set: its instances at once, the set itself
// SetDeleteDelay later. It reports whether the set existed.
func (c *Cloud) DeleteScaleSet(set string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sets[set]
	if s == nil || s.deleted {
		return false
	}
	s.deleted = true
	s.instances = nil
	s.goneAt = c.clk.Now().Add(c.cfg.SetDeleteDelay)
	return true
}

// DeleteInstance deletes one instance; it reports whether it existed.
func (c *Cloud) DeleteInstance(set, id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sets[set]; s != nil && s.instances[id] != nil {
		delete(s.instances, id)
		return true
	}
	return false
}

// SetPower stops or starts an instance; it reports whether it exists.
func (c *Cloud) SetPower(set, id string, p Power) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sets[set]; s != nil && s.instances[id] != nil {
		s.instances[id].Power = p
		return true
	}
	return false
}

// Throttle makes every call answer 429 TooManyRequests with Retry-After
// retryAfter, from now for d.
func (c *Cloud) Throttle(d, retryAfter time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.throttleUntil = c.clk.Now().Add(d)
	c.retryAfter = retryAfter
}

// Fail makes every call answer 500 InternalError, from now for d.
func (c *Cloud) Fail(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failUntil = c.clk.Now().Add(d)
}

// GetInstance is the API call: the instance id of scale set set. Errors are
// *APIError: 404 ResourceNotFound (no such instance, or no such set that
// never existed), 404 ParentResourceNotFound (the set was deleted and is
// gone), 429 TooManyRequests (throttled), 500 InternalError (failing).
func (c *Cloud) GetInstance(set, id string) (Instance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clk.Now()
	in, err := c.getLocked(now, set, id)
	c.calls[CallKey{MethodGetInstance, resultOf(err)}]++
	return in, err
}

func (c *Cloud) getLocked(now time.Time, set, id string) (Instance, error) {
	switch {
	case now.Before(c.failUntil):
		return Instance{}, &APIError{StatusCode: http.StatusInternalServerError, Code: CodeInternalError,
			Message: "the service is unavailable"}
	case now.Before(c.throttleUntil):
		return Instance{}, &APIError{StatusCode: http.StatusTooManyRequests, Code: CodeTooManyRequests,
			Message: "request rate exceeded", RetryAfter: c.retryAfter}
	}
	s := c.sets[set]
	if s != nil && s.deleted && !now.Before(s.goneAt) {
		return Instance{}, &APIError{StatusCode: http.StatusNotFound, Code: CodeParentResourceNotFound,
			Message: "scale set " + set + " not found"}
	}
	if s == nil || s.instances[id] == nil {
		return Instance{}, &APIError{StatusCode: http.StatusNotFound, Code: CodeResourceNotFound,
			Message: "instance " + set + "/" + id + " not found"}
	}
	return *s.instances[id], nil
}

// FindByNodeName returns the instance whose NodeName is name (a lookup a
// provider does when a node has no providerID yet). It is counted as a
// GetInstance call and fails like one while the API is failing or
// throttled.
func (c *Cloud) FindByNodeName(name string) (Instance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clk.Now()
	in, err := c.getLocked(now, "", "")
	var ae *APIError
	if errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound {
		err = &APIError{StatusCode: http.StatusNotFound, Code: CodeResourceNotFound, Message: "no instance for node " + name}
		for _, s := range c.sets {
			for _, i := range s.instances {
				if i.NodeName == name {
					in, err = *i, nil
				}
			}
		}
	}
	c.calls[CallKey{MethodGetInstance, resultOf(err)}]++
	return in, err
}

func resultOf(err error) Result {
	if err == nil {
		return ResultOK
	}
	var ae *APIError
	switch {
	case !errors.As(err, &ae):
		return ResultError
	case ae.Code == CodeParentResourceNotFound:
		return ResultParentNotFound
	case ae.StatusCode == http.StatusNotFound:
		return ResultNotFound
	case ae.StatusCode == http.StatusTooManyRequests:
		return ResultThrottled
	}
	return ResultError
}

// CallStats is a copy of the call counts, by method and result.
type CallStats map[CallKey]int

// Total returns the number of calls.
func (s CallStats) Total() int {
	n := 0
	for _, v := range s {
		n += v
	}
	return n
}

// String lists the counts, sorted: "GetInstance/ok=3 GetInstance/error=7".
func (s CallStats) String() string {
	keys := make([]CallKey, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Method != keys[j].Method {
			return keys[i].Method < keys[j].Method
		}
		return keys[i].Result < keys[j].Result
	})
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += " "
		}
		out += string(k.Method) + "/" + string(k.Result) + "=" + strconv.Itoa(s[k])
	}
	return out
}

// Calls returns the call counts so far.
func (c *Cloud) Calls() CallStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(CallStats, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}
