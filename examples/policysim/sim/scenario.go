package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Scenario is one what-if: a cluster (zones of identical nodes and their
// pods), the controller policy, the kubelets' timing, the events that happen
// to the cluster, and how long to simulate. LoadScenario reads it from YAML;
// the field names below are the YAML keys (see README.md and -h).
type Scenario struct {
	// Name names the scenario in reports (default: the file name).
	Name string `json:"name"`
	// Description is a one-line summary for -list.
	Description string `json:"description"`
	// Duration is how long to simulate (required, at most MaxDuration).
	Duration Duration `json:"duration"`
	// Policy is the node lifecycle controller's configuration.
	Policy Policy `json:"policy"`
	// Kubelet is how often every live kubelet heartbeats, and how it
	// undoes the controller's writes over its status (Reconcile).
	Kubelet Kubelet `json:"kubelet"`
	// Zones is the cluster: at least one zone.
	Zones []Zone `json:"zones"`
	// Events is what happens, in any order (applied in time order, ties in
	// file order).
	Events []Event `json:"events"`
	// Devices are DRA drivers' devices on every node of every zone (a
	// zone's own Devices add to them); see DeviceSet.
	Devices []DeviceSet `json:"devices"`
}

// Policy is the node lifecycle controller's configuration, named after the
// kube-controller-manager and kube-apiserver flags. Omitted fields keep the
// Kubernetes v1.37.2 defaults (DefaultPolicy).
type Policy struct {
	NodeMonitorPeriod         Duration `json:"nodeMonitorPeriod"`         // --node-monitor-period, 5s
	NodeMonitorGracePeriod    Duration `json:"nodeMonitorGracePeriod"`    // --node-monitor-grace-period, 50s (40s before 1.32)
	NodeStartupGracePeriod    Duration `json:"nodeStartupGracePeriod"`    // --node-startup-grace-period, 60s
	NodeEvictionRate          float64  `json:"nodeEvictionRate"`          // --node-eviction-rate, 0.1 nodes/s per zone
	SecondaryNodeEvictionRate float64  `json:"secondaryNodeEvictionRate"` // --secondary-node-eviction-rate, 0.01
	LargeClusterSizeThreshold int      `json:"largeClusterSizeThreshold"` // --large-cluster-size-threshold, 50
	UnhealthyZoneThreshold    float64  `json:"unhealthyZoneThreshold"`    // --unhealthy-zone-threshold, 0.55
	// FullDisruptionQPS, when set, is the tainting rate of a fully disrupted
	// zone while another zone is not (0 pauses it); unset keeps upstream's
	// nodeEvictionRate (zonestate.Policy.FullDisruptionQPS).
	FullDisruptionQPS *float64 `json:"fullDisruptionQPS"`
	// DefaultNotReadyTolerationSeconds and DefaultUnreachableTolerationSeconds
	// are what the DefaultTolerationSeconds admission plugin gives pods
	// (--default-not-ready-toleration-seconds, 300, and the unreachable one).
	DefaultNotReadyTolerationSeconds    int64 `json:"defaultNotReadyTolerationSeconds"`
	DefaultUnreachableTolerationSeconds int64 `json:"defaultUnreachableTolerationSeconds"`
	// NodeControllerLeaseCircuitBreaker is kube-controller-manager's
	// feature gate (v1.37, Beta, on by default; omitted: true): before a
	// node goes Unknown its Lease is read live, and while the controller's
	// Lease cache is behind (lease-watch-stall) nothing is written Unknown.
	// false is the v1.36 behaviour.
	NodeControllerLeaseCircuitBreaker bool `json:"nodeControllerLeaseCircuitBreaker"`
	// The device taint eviction controller's blast-radius limit
	// (taints.DeviceBlastRadius, ours: upstream has none), per DRA driver.
	// The defaults (0) limit nothing: upstream v1.37.2, which deletes at
	// once every pod a NoExecute device taint reaches.
	//
	// DeviceEvictionQPS is each driver's eviction rate, pods/s (0: none);
	// DeviceEvictionBurst its bucket (default 1; used with a rate).
	DeviceEvictionQPS   float64 `json:"deviceEvictionQPS"`
	DeviceEvictionBurst int     `json:"deviceEvictionBurst"`
	// DeviceMaxShare is the breaker: once more than this share of a
	// driver's allocated devices have an untolerated NoExecute taint (and
	// more than DeviceMinDevices of them), the driver's taints evict no pod
	// (0: no breaker) until its share is back at DeviceResumeShare or
	// below and has stayed there for DeviceResumeAfter.
	DeviceMaxShare   float64 `json:"deviceMaxShare"`
	DeviceMinDevices int     `json:"deviceMinDevices"`
	// DeviceResumeShare is the breaker's resume level, in [0,
	// DeviceMaxShare]: 0 (the default) holds until none of the driver's
	// devices is tainted; DeviceMaxShare is the breaker without
	// hysteresis, which resumes half-way through a roll-back.
	// DeviceResumeAfter is how long the share must stay there first (0:
	// at once).
	DeviceResumeShare float64  `json:"deviceResumeShare"`
	DeviceResumeAfter Duration `json:"deviceResumeAfter"`
}

// Kubelet is the simulated kubelets' timing. Every live kubelet renews its
// Lease every LeaseRenewInterval and posts its node status (a new Ready
// heartbeat) every StatusUpdateInterval, both first at t=0. A kubelet that
// resumes reports its pods Ready again PodReadyDelay later.
//
// With Reconcile (DefaultKubelet; omitted in a file: true) a running
// kubelet puts back what the controller wrote over its own status, as the
// kubelet does (v1.37.2): its node's Ready condition at its next node
// status update (every NodeStatusUpdateFrequency from its start), its
// pods' Ready condition at its status manager's next sync (every
// PodStatusSyncPeriod from its start). Without it, the behaviour of this
// simulator before it modelled that: a node falsely written Unknown stays
// so until the kubelet's next status report (StatusUpdateInterval), and
// its pods stay NotReady for the rest of the run.
type Kubelet struct {
	LeaseRenewInterval   Duration `json:"leaseRenewInterval"`   // 10s (25% of the 40s lease)
	StatusUpdateInterval Duration `json:"statusUpdateInterval"` // 5m (nodeStatusReportFrequency)
	// PodReadyDelay is how long after resuming the kubelet marks its pods
	// Ready again (containers restarted, readiness probes passing); 10s.
	// Shorter than the monitor period, they are Ready before the
	// controller has seen the node Ready, and stay so: the controller does
	// not mark them again (upstream's podUpdated acts on a pod only when
	// its node is set or changes, never on a status update).
	PodReadyDelay Duration `json:"podReadyDelay"`
	// Reconcile makes a running kubelet undo the controller's writes over
	// its status (see the type's doc); false turns that off.
	Reconcile bool `json:"reconcile"`
	// NodeStatusUpdateFrequency is how often a running kubelet computes its
	// node status and compares it with the API server's, posting it when
	// they differ (--node-status-update-frequency, 10s: syncNodeStatus and
	// tryUpdateNodeStatus in pkg/kubelet/kubelet_node_status.go). The
	// controller's Ready=Unknown is such a difference. Used with Reconcile.
	NodeStatusUpdateFrequency Duration `json:"nodeStatusUpdateFrequency"`
	// PodStatusSyncPeriod is how often the kubelet's status manager
	// compares every pod's status in the API server with its own and
	// writes back what differs (syncPeriod, 10s, a constant upstream:
	// syncBatch and needsReconcile in pkg/kubelet/status/status_manager.go).
	// The controller's pod Ready=False is such a difference. Used with
	// Reconcile.
	PodStatusSyncPeriod Duration `json:"podStatusSyncPeriod"`
}

// Zone is a group of identical nodes named <zone>-<index> (zero-padded),
// labelled topology.kubernetes.io/zone=<name> (and region when set).
type Zone struct {
	Name   string `json:"name"`
	Region string `json:"region"`
	Nodes  int    `json:"nodes"`
	// PodsPerNode is shorthand for one pod group {name: pod, perNode: N}
	// with the admission defaults; it cannot be combined with Pods.
	PodsPerNode int        `json:"podsPerNode"`
	Pods        []PodGroup `json:"pods"`
	// Devices are DRA drivers' devices on every node of the zone, beside
	// the scenario's cluster-wide ones; see DeviceSet.
	Devices []DeviceSet `json:"devices"`
}

// PodGroup is a set of identical pods on every node of a zone, named
// <node>-<group>-<index>, in namespace default.
type PodGroup struct {
	Name    string `json:"name"`    // default "pod"
	PerNode int    `json:"perNode"` // pods of this group on each node
	// Tolerations are the pod's own tolerations (Kubernetes syntax).
	Tolerations []v1.Toleration `json:"tolerations"`
	// AdmissionDefaults: when true (the default, as in any cluster) the
	// DefaultTolerationSeconds admission plugin appends its not-ready and
	// unreachable tolerations unless the pod already has them.
	AdmissionDefaults *bool `json:"admissionDefaults"`
	// DaemonSet makes the pods DaemonSet pods: owned by a DaemonSet and
	// tolerating not-ready and unreachable forever, as the DaemonSet
	// controller sets them up, so neither mode ever evicts them.
	DaemonSet bool `json:"daemonSet"`
	// DeviceClaim, when set, gives the group's pods ResourceClaims
	// allocated devices of a driver on their node; see DeviceClaim.
	DeviceClaim *DeviceClaim `json:"deviceClaim"`
}

// Event is something that happens to kubelets at a given time.
type Event struct {
	At     Duration `json:"at"`
	Action string   `json:"action"`
	// Target: exactly one of Node, Nodes or Zone (with an optional Count:
	// the zone's first Count nodes) for stop, resume and not-ready; Zone
	// alone for zone-dark and zone-restore; none for lease-watch-stall and
	// lease-watch-resume.
	Node  string   `json:"node"`
	Nodes []string `json:"nodes"`
	Zone  string   `json:"zone"`
	Count int      `json:"count"`

	// The device actions' fields (see the Action constants and
	// README.md): Driver names a DRA driver; device-taint taints Count
	// devices, or Share of them (default: all), of the scope (Node, Nodes
	// or Zone; none: the whole cluster), spread over Over in batches Every
	// apart, with Taint (default: <driver>/unhealthy, NoExecute);
	// device-untaint removes Taint's key from the scope's devices, node by
	// node over Over in batches Every apart; device-rule creates or
	// changes the DeviceTaintRule named Rule with Selector and Taint.
	Driver   string           `json:"driver"`
	Share    float64          `json:"share"`
	Over     Duration         `json:"over"`
	Every    Duration         `json:"every"`
	Taint    *DeviceTaintSpec `json:"taint"`
	Rule     string           `json:"rule"`
	Selector *DeviceSelector  `json:"selector"`
}

// The event actions.
const (
	ActionStop        = "stop"         // the kubelet stops: no Lease renewal, no status
	ActionResume      = "resume"       // the kubelet runs again, Ready=True, heartbeats at once
	ActionNotReady    = "not-ready"    // the kubelet (running) reports Ready=False
	ActionZoneDark    = "zone-dark"    // stop every kubelet of the zone
	ActionZoneRestore = "zone-restore" // resume every kubelet of the zone
	// ActionLeaseWatchStall freezes the controller's Lease cache (its
	// watch stalls) while the kubelets keep renewing; no target.
	ActionLeaseWatchStall = "lease-watch-stall"
	// ActionLeaseWatchResume lets the Lease cache catch up; no target.
	ActionLeaseWatchResume = "lease-watch-resume"
)

var actions = []string{ActionStop, ActionResume, ActionNotReady, ActionZoneDark, ActionZoneRestore,
	ActionLeaseWatchStall, ActionLeaseWatchResume,
	ActionDeviceTaint, ActionDeviceUntaint, ActionDeviceRule, ActionDeviceRuleDelete, ActionDeviceReleaseHold}

// Limits that keep a scenario's cost bounded. A scenario file is read
// through MaxFileSize and its YAML tree, with every alias expanded, may
// have at most MaxYAMLNodes nodes: both are checked before any field is
// looked at, so a small file whose aliases expand to millions of nodes (an
// alias bomb) is rejected in time and memory proportional to its size.
// Run also enforces a Budget on the whole run's work.
const (
	MaxFileSize  = 1 << 20
	MaxYAMLNodes = 100_000
	MaxDuration  = 7 * 24 * time.Hour
	MaxNodes     = 100_000
	MaxPods      = 3_000_000
	// MinInterval is the shortest monitor period and kubelet interval: the
	// taint pass period, the simulation's time step.
	MinInterval = 100 * time.Millisecond
)

// Duration is a time.Duration written in YAML as a Go duration string
// ("40s", "5m", "1h30m").
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"40s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// DefaultPolicy returns the Kubernetes v1.37.2 defaults (kube-controller-
// manager's and kube-apiserver's), the Lease circuit breaker on.
func DefaultPolicy() Policy {
	return Policy{
		NodeMonitorPeriod:                   Duration(5 * time.Second),
		NodeMonitorGracePeriod:              Duration(50 * time.Second),
		NodeStartupGracePeriod:              Duration(60 * time.Second),
		NodeEvictionRate:                    0.1,
		SecondaryNodeEvictionRate:           0.01,
		LargeClusterSizeThreshold:           50,
		UnhealthyZoneThreshold:              0.55,
		DefaultNotReadyTolerationSeconds:    300,
		DefaultUnreachableTolerationSeconds: 300,
		NodeControllerLeaseCircuitBreaker:   true,
		DeviceEvictionBurst:                 1,
	}
}

// DefaultKubelet returns the kubelet's v1.37.2 defaults: Lease renewed
// every 10s, status reported every 5m when nothing changes, node status
// compared with the API server's every 10s and pod statuses every 10s, the
// controller's writes over them undone (Reconcile).
func DefaultKubelet() Kubelet {
	return Kubelet{LeaseRenewInterval: Duration(10 * time.Second), StatusUpdateInterval: Duration(5 * time.Minute), PodReadyDelay: Duration(10 * time.Second),
		Reconcile: true, NodeStatusUpdateFrequency: Duration(10 * time.Second), PodStatusSyncPeriod: Duration(10 * time.Second)}
}

// ErrScenario is wrapped by every error LoadScenario returns.
var ErrScenario = errors.New("policysim: invalid scenario")

// FieldError is one problem with a scenario, located at a field.
type FieldError struct {
	File string
	Line int // 1-based; 0 when the field is not in the file
	Col  int
	Path string // e.g. zones[1].nodes
	Msg  string
}

// Error formats the problem as file:line:col: path: message.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// pos is a position in the YAML text.
type pos struct{ line, col int }

// LoadScenario parses and validates a scenario. file names it in errors.
// Every problem found is reported (joined), each as a *FieldError naming the
// field and its line; all wrap ErrScenario. Omitted fields get the defaults
// (DefaultPolicy, DefaultKubelet; a missing name is file without extension).
func LoadScenario(file string, data []byte) (*Scenario, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%w: %s: %d bytes; a scenario file is at most %d bytes (MaxFileSize)", ErrScenario, file, len(data), MaxFileSize)
	}
	var doc, next yamlv3.Node
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return nil, fmt.Errorf("%w: %s: %v", ErrScenario, file, err)
	}
	if doc.Kind != yamlv3.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%w: %s: empty scenario", ErrScenario, file)
	}
	if err := dec.Decode(&next); err != io.EOF {
		return nil, fmt.Errorf("%w: %s:%d: one scenario per file, found a second YAML document", ErrScenario, file, next.Line)
	}
	if err := checkExpansion(doc.Content[0]); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrScenario, file, err)
	}
	w := &walker{file: file, pos: map[string]pos{}}
	w.walk(doc.Content[0], reflect.TypeFor[Scenario](), "")
	if len(w.errs) > 0 {
		return nil, w.joined()
	}
	sc := &Scenario{Policy: DefaultPolicy(), Kubelet: DefaultKubelet()}
	if err := yaml.UnmarshalStrict(data, sc); err != nil {
		// The walker accepts only what decodes, so this is a corner the
		// walker does not model (e.g. YAML 1.1 booleans such as "on").
		return nil, fmt.Errorf("%w: %s: %v", ErrScenario, file, err)
	}
	if sc.Name == "" {
		sc.Name = strings.TrimSuffix(baseName(file), ".yaml")
		sc.Name = strings.TrimSuffix(sc.Name, ".yml")
	}
	v := &validator{w: w}
	v.scenario(sc)
	if len(w.errs) > 0 {
		return nil, w.joined()
	}
	return sc, nil
}

// ReadScenario reads a scenario from r (at most MaxFileSize bytes: a longer
// input, such as /dev/zero, is an error once MaxFileSize+1 bytes have been
// read) and parses it with LoadScenario.
func ReadScenario(file string, r io.Reader) (*Scenario, []byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, nil, fmt.Errorf("policysim: reading %s: %w", file, err)
	}
	if len(data) > MaxFileSize {
		return nil, nil, fmt.Errorf("%w: %s: larger than %d bytes (MaxFileSize)", ErrScenario, file, MaxFileSize)
	}
	sc, err := LoadScenario(file, data)
	return sc, data, err
}

// checkExpansion counts the nodes of the YAML tree as a decoder sees it,
// every alias expanded, and fails when they exceed MaxYAMLNodes or an alias
// refers to a node that contains it. Each node's expanded size is computed
// once (memoized), so the check costs O(nodes in the file) however much the
// aliases would expand.
func checkExpansion(root *yamlv3.Node) error {
	const inProgress = -1
	size := map[*yamlv3.Node]int{}
	var count func(n *yamlv3.Node) (int, error)
	count = func(n *yamlv3.Node) (int, error) {
		if n.Kind == yamlv3.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		switch s, ok := size[n]; {
		case ok && s == inProgress:
			return 0, fmt.Errorf("line %d: an alias refers to a node that contains it", n.Line)
		case ok:
			return s, nil
		}
		size[n] = inProgress
		total := 1
		for _, c := range n.Content {
			s, err := count(c)
			if err != nil {
				return 0, err
			}
			if total += s; total > MaxYAMLNodes {
				return 0, fmt.Errorf("line %d: the YAML expands to more than %d nodes with its aliases (MaxYAMLNodes); a scenario needs a few hundred", n.Line, MaxYAMLNodes)
			}
		}
		size[n] = total
		return total, nil
	}
	_, err := count(root)
	return err
}

// Validate checks a scenario built or changed in code the way LoadScenario
// checks a file (without lines). Run calls it.
func (sc *Scenario) Validate() error {
	if sc == nil {
		return fmt.Errorf("%w: nil scenario", ErrScenario)
	}
	w := &walker{file: "scenario " + sc.Name, pos: map[string]pos{}}
	(&validator{w: w}).scenario(sc)
	if len(w.errs) > 0 {
		return w.joined()
	}
	return nil
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// walker checks the YAML tree against the Go types before decoding, so every
// unknown key and type error gets its line, and records the position of
// every field for the semantic checks.
type walker struct {
	file string
	pos  map[string]pos
	errs []error
}

func (w *walker) fail(p pos, path, format string, args ...any) {
	w.errs = append(w.errs, &FieldError{File: w.file, Line: p.line, Col: p.col, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// failAt reports a problem at a field path, located where the walker saw it
// (or at its closest recorded ancestor).
func (w *walker) failAt(path, format string, args ...any) {
	p, ok := w.pos[path]
	for q := path; !ok && q != ""; {
		q = parentPath(q)
		p, ok = w.pos[q]
	}
	w.fail(p, path, format, args...)
}

func parentPath(p string) string {
	if i := strings.LastIndexAny(p, ".["); i >= 0 {
		return p[:i]
	}
	return ""
}

func (w *walker) joined() error {
	const max = 20
	errs := w.errs
	if len(errs) > max {
		errs = append(errs[:max:max], fmt.Errorf("%s: ... and %d more problems", w.file, len(w.errs)-max))
	}
	return fmt.Errorf("%w:\n%w", ErrScenario, errors.Join(errs...))
}

var durationType = reflect.TypeFor[Duration]()

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (w *walker) walk(n *yamlv3.Node, t reflect.Type, path string) {
	for n.Kind == yamlv3.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	p := pos{n.Line, n.Column}
	if _, seen := w.pos[path]; !seen {
		w.pos[path] = p
	}
	isNull := n.Kind == yamlv3.ScalarNode && n.ShortTag() == "!!null"
	if t.Kind() == reflect.Pointer {
		if isNull {
			return
		}
		t = t.Elem()
	}
	if t == durationType {
		if n.Kind != yamlv3.ScalarNode || n.ShortTag() != "!!str" {
			w.fail(p, path, "want a duration string such as \"40s\" or \"5m\", got %s", describe(n))
			return
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			w.fail(p, path, "invalid duration %q (Go syntax: \"300ms\", \"40s\", \"5m\", \"1h30m\")", n.Value)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yamlv3.MappingNode {
			w.fail(p, path, "want a mapping, got %s", describe(n))
			return
		}
		fields := jsonFields(t)
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			kp := join(path, k.Value)
			kpos := pos{k.Line, k.Column}
			if k.Kind != yamlv3.ScalarNode || k.ShortTag() != "!!str" {
				w.fail(kpos, path, "keys are field names, got %s", describe(k))
				continue
			}
			f, ok := fields[k.Value]
			if !ok {
				w.fail(kpos, kp, "unknown field %q (known: %s)", k.Value, strings.Join(fieldNames(t), ", "))
				continue
			}
			if seen[k.Value] {
				w.fail(kpos, kp, "duplicate field %q", k.Value)
				continue
			}
			seen[k.Value] = true
			w.pos[kp] = kpos
			w.walk(val, f.Type, kp)
		}
	case reflect.Slice:
		if isNull {
			return
		}
		if n.Kind != yamlv3.SequenceNode {
			w.fail(p, path, "want a list, got %s", describe(n))
			return
		}
		for i, item := range n.Content {
			w.walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.String:
		switch {
		case n.Kind != yamlv3.ScalarNode || n.ShortTag() != "!!str":
			w.fail(p, path, "want a string, got %s (quote it)", describe(n))
		case n.Style&notPlain == 0 && yaml11Bools[n.Value]:
			// YAML 1.2 (the walker) reads it as a string, YAML 1.1
			// (sigs.k8s.io/yaml, the decoder) as a boolean it would
			// then store as "true" or "false".
			w.fail(p, path, "%s is a boolean in YAML 1.1; quote it (\"%s\")", n.Value, n.Value)
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		var v int64
		if n.Kind != yamlv3.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
			w.fail(p, path, "want an integer, got %s", describe(n))
		} else if t.Kind() == reflect.Int32 && (v < math.MinInt32 || v > math.MaxInt32) {
			w.fail(p, path, "%d is out of range", v)
		}
	case reflect.Float64:
		var v float64
		tag := n.ShortTag()
		if n.Kind != yamlv3.ScalarNode || (tag != "!!int" && tag != "!!float") || n.Decode(&v) != nil {
			w.fail(p, path, "want a number, got %s", describe(n))
		} else if math.IsNaN(v) || math.IsInf(v, 0) {
			w.fail(p, path, "must be a finite number, got %s", n.Value)
		}
	case reflect.Bool:
		if n.Kind != yamlv3.ScalarNode || n.ShortTag() != "!!bool" {
			w.fail(p, path, "want true or false, got %s", describe(n))
		}
	default:
		w.fail(p, path, "unsupported field type %v", t)
	}
}

// notPlain are the styles of a scalar that is not a plain (unquoted,
// untagged) one.
const notPlain = yamlv3.TaggedStyle | yamlv3.DoubleQuotedStyle | yamlv3.SingleQuotedStyle | yamlv3.LiteralStyle | yamlv3.FoldedStyle

// yaml11Bools are the plain scalars that YAML 1.1 resolves to a boolean and
// YAML 1.2 to a string (true and false are booleans in both).
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"n": true, "N": true, "no": true, "No": true, "NO": true, "off": true, "Off": true, "OFF": true,
}

// describe names a YAML node for an error message.
func describe(n *yamlv3.Node) string {
	switch n.Kind {
	case yamlv3.MappingNode:
		return "a mapping"
	case yamlv3.SequenceNode:
		return "a list"
	case yamlv3.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!str":
			return strconv.Quote(n.Value)
		}
		return n.Value
	}
	return "something else"
}

// jsonFields maps JSON names to struct fields (exported fields; the name
// from the json tag, as encoding/json reads it).
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	return out
}

func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && name != "-" && name != "" {
			out = append(out, name)
		}
	}
	return out
}

// validator checks what the types cannot express.
type validator struct {
	w     *walker
	zones map[string]*Zone
	// The devices (devscenario.go): each zone's drivers and devices per
	// node, every driver, the rules the events create.
	zoneDrivers map[string]map[string]int
	drivers     map[string]bool
	rules       map[string]bool
}

func (v *validator) scenario(sc *Scenario) {
	w := v.w
	if sc.Duration <= 0 {
		w.failAt("duration", "required, and must be positive (e.g. \"10m\")")
	} else if sc.Duration.D() > MaxDuration {
		w.failAt("duration", "at most %v", MaxDuration)
	}
	v.policy(&sc.Policy)
	for _, d := range []struct {
		path string
		v    Duration
	}{
		{"kubelet.leaseRenewInterval", sc.Kubelet.LeaseRenewInterval},
		{"kubelet.statusUpdateInterval", sc.Kubelet.StatusUpdateInterval},
	} {
		if d.v.D() < MinInterval || d.v.D() > MaxDuration {
			w.failAt(d.path, "must be in [%v, %v], got %v", MinInterval, MaxDuration, d.v.D())
		}
	}
	if d := sc.Kubelet.PodReadyDelay.D(); d < 0 || d > MaxDuration {
		w.failAt("kubelet.podReadyDelay", "must be in [0s, %v], got %v", MaxDuration, d)
	}
	for _, d := range []struct {
		path string
		v    Duration
	}{
		{"kubelet.nodeStatusUpdateFrequency", sc.Kubelet.NodeStatusUpdateFrequency},
		{"kubelet.podStatusSyncPeriod", sc.Kubelet.PodStatusSyncPeriod},
	} {
		switch {
		case sc.Kubelet.Reconcile && (d.v.D() < MinInterval || d.v.D() > MaxDuration):
			w.failAt(d.path, "must be in [%v, %v] with reconcile, got %v", MinInterval, MaxDuration, d.v.D())
		case d.v < 0 || d.v.D() > MaxDuration:
			w.failAt(d.path, "must be in [0s, %v], got %v", MaxDuration, d.v.D())
		}
	}
	v.zonesOf(sc)
	v.devicesOf(sc)
	for i := range sc.Events {
		v.event(sc, fmt.Sprintf("events[%d]", i), &sc.Events[i])
	}
	v.deviceEventLimits(sc)
}

func (v *validator) policy(p *Policy) {
	w := v.w
	if d := p.NodeMonitorPeriod.D(); d < MinInterval || d > MaxDuration {
		w.failAt("policy.nodeMonitorPeriod", "must be in [%v, %v], got %v", MinInterval, MaxDuration, d)
	}
	for _, d := range []struct {
		path string
		v    Duration
	}{
		{"policy.nodeMonitorGracePeriod", p.NodeMonitorGracePeriod},
		{"policy.nodeStartupGracePeriod", p.NodeStartupGracePeriod},
	} {
		if d.v < 0 || d.v.D() > MaxDuration {
			w.failAt(d.path, "must be in [0s, %v], got %v", MaxDuration, d.v.D())
		}
	}
	for _, r := range []struct {
		path string
		v    float64
	}{
		{"policy.nodeEvictionRate", p.NodeEvictionRate},
		{"policy.secondaryNodeEvictionRate", p.SecondaryNodeEvictionRate},
	} {
		v.rate(r.path, r.v)
	}
	if p.FullDisruptionQPS != nil {
		v.rate("policy.fullDisruptionQPS", *p.FullDisruptionQPS)
	}
	if p.LargeClusterSizeThreshold < 0 {
		w.failAt("policy.largeClusterSizeThreshold", "must not be negative, got %d", p.LargeClusterSizeThreshold)
	}
	if t := p.UnhealthyZoneThreshold; math.IsNaN(t) || t < 0 || t > 1 {
		w.failAt("policy.unhealthyZoneThreshold", "must be in [0, 1], got %v", t)
	}
	for _, s := range []struct {
		path string
		v    int64
	}{
		{"policy.defaultNotReadyTolerationSeconds", p.DefaultNotReadyTolerationSeconds},
		{"policy.defaultUnreachableTolerationSeconds", p.DefaultUnreachableTolerationSeconds},
	} {
		if s.v < 0 || s.v > int64(MaxDuration/time.Second) {
			w.failAt(s.path, "must be in [0, %d], got %d", int64(MaxDuration/time.Second), s.v)
		}
	}
	v.devicePolicy(p)
}

func (v *validator) rate(path string, r float64) {
	if math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
		v.w.failAt(path, "must be a finite number >= 0 (nodes per second), got %v", r)
	} else if r > 1e6 {
		v.w.failAt(path, "at most 1e6 nodes per second, got %v", r)
	}
}

func (v *validator) zonesOf(sc *Scenario) {
	w := v.w
	v.zones = map[string]*Zone{}
	if len(sc.Zones) == 0 {
		w.failAt("zones", "at least one zone is required")
	}
	nodes, pods := 0, 0
	for i := range sc.Zones {
		z := &sc.Zones[i]
		path := fmt.Sprintf("zones[%d]", i)
		switch {
		case z.Name == "":
			w.failAt(path+".name", "required")
		case len(validation.IsDNS1123Label(z.Name)) > 0:
			w.failAt(path+".name", "%q is not a valid zone name: %s", z.Name, strings.Join(validation.IsDNS1123Label(z.Name), "; "))
		case v.zones[z.Name] != nil:
			w.failAt(path+".name", "duplicate zone %q", z.Name)
		default:
			v.zones[z.Name] = z
		}
		if z.Region != "" {
			if errs := validation.IsValidLabelValue(z.Region); len(errs) > 0 {
				w.failAt(path+".region", "%q is not a valid label value: %s", z.Region, strings.Join(errs, "; "))
			}
		}
		if z.Nodes < 1 || z.Nodes > MaxNodes {
			w.failAt(path+".nodes", "must be in [1, %d], got %d", MaxNodes, z.Nodes)
		} else {
			nodes += z.Nodes
		}
		if z.PodsPerNode < 0 {
			w.failAt(path+".podsPerNode", "must not be negative, got %d", z.PodsPerNode)
		}
		if z.PodsPerNode > 0 && len(z.Pods) > 0 {
			w.failAt(path+".podsPerNode", "use either podsPerNode or pods, not both")
		}
		perNode := min(z.PodsPerNode, MaxPods+1)
		groups := map[string]bool{}
		for j := range z.Pods {
			g := &z.Pods[j]
			gp := fmt.Sprintf("%s.pods[%d]", path, j)
			name := g.Name
			if name == "" {
				name = "pod"
			}
			if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
				w.failAt(gp+".name", "%q is not a valid pod group name: %s", name, strings.Join(errs, "; "))
			} else if groups[name] {
				w.failAt(gp+".name", "duplicate pod group %q in zone %q", name, z.Name)
			}
			groups[name] = true
			if g.PerNode < 0 {
				w.failAt(gp+".perNode", "must not be negative, got %d", g.PerNode)
			} else {
				perNode = min(perNode+min(g.PerNode, MaxPods+1), MaxPods+1) // no overflow
			}
			for k := range g.Tolerations {
				v.toleration(fmt.Sprintf("%s.tolerations[%d]", gp, k), &g.Tolerations[k])
			}
		}
		if z.Nodes > 0 && z.Nodes <= MaxNodes && perNode >= 0 {
			pods = min(pods+z.Nodes*min(perNode, MaxPods+1), MaxNodes*(MaxPods+1))
		}
	}
	if nodes > MaxNodes {
		w.failAt("zones", "%d nodes in all; at most %d", nodes, MaxNodes)
	}
	if pods > MaxPods {
		w.failAt("zones", "%d pods in all; at most %d", pods, MaxPods)
	}
}

// toleration applies the API server's validation of a pod toleration.
func (v *validator) toleration(path string, t *v1.Toleration) {
	w := v.w
	switch t.Operator {
	case v1.TolerationOpExists:
		if t.Value != "" {
			w.failAt(path+".value", "must be empty when operator is Exists")
		}
	case v1.TolerationOpEqual, "":
		if t.Key == "" {
			w.failAt(path+".operator", "must be Exists when key is empty")
		}
	case v1.TolerationOpLt, v1.TolerationOpGt:
		w.failAt(path+".operator", "%s is not supported (alpha feature gate off)", t.Operator)
	default:
		w.failAt(path+".operator", "must be Exists or Equal, got %q", t.Operator)
	}
	switch t.Effect {
	case "", v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	default:
		w.failAt(path+".effect", "must be NoSchedule, PreferNoSchedule or NoExecute, got %q", t.Effect)
	}
	if t.TolerationSeconds != nil && t.Effect != v1.TaintEffectNoExecute {
		w.failAt(path+".tolerationSeconds", "needs effect NoExecute")
	}
	if t.Key != "" {
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
			w.failAt(path+".key", "%q is not a valid taint key: %s", t.Key, strings.Join(errs, "; "))
		}
	}
}

func (v *validator) event(sc *Scenario, path string, e *Event) {
	w := v.w
	if e.At < 0 {
		w.failAt(path+".at", "must not be negative, got %v", e.At.D())
	} else if sc.Duration > 0 && e.At > sc.Duration {
		w.failAt(path+".at", "%v is after the end of the run (duration %v)", e.At.D(), sc.Duration.D())
	}
	if isDeviceAction(e.Action) {
		v.deviceEvent(sc, path, e)
		return
	}
	v.noDeviceFields(path, e)
	targets := 0
	for _, set := range []bool{e.Node != "", len(e.Nodes) > 0, e.Zone != ""} {
		if set {
			targets++
		}
	}
	switch e.Action {
	case ActionStop, ActionResume, ActionNotReady:
		if targets != 1 {
			w.failAt(path, "%s needs exactly one of node, nodes or zone (with an optional count)", e.Action)
		}
	case ActionZoneDark, ActionZoneRestore:
		if e.Zone == "" || e.Node != "" || len(e.Nodes) > 0 || e.Count != 0 {
			w.failAt(path, "%s needs zone, and no node, nodes or count", e.Action)
		}
	case ActionLeaseWatchStall, ActionLeaseWatchResume:
		if targets != 0 || e.Count != 0 {
			w.failAt(path, "%s needs no node, nodes, zone or count (it is the controller's cache)", e.Action)
		}
	case "":
		w.failAt(path+".action", "required (one of %s)", strings.Join(actions, ", "))
	default:
		w.failAt(path+".action", "unknown action %q (one of %s)", e.Action, strings.Join(actions, ", "))
	}
	if e.Node != "" {
		v.node(path+".node", e.Node)
	}
	for i, n := range e.Nodes {
		v.node(fmt.Sprintf("%s.nodes[%d]", path, i), n)
	}
	if e.Count != 0 && e.Zone == "" {
		w.failAt(path+".count", "needs zone")
	}
	if e.Zone != "" {
		z, ok := v.zones[e.Zone]
		if !ok {
			w.failAt(path+".zone", "unknown zone %q (zones: %s)", e.Zone, strings.Join(zoneNames(sc), ", "))
		} else if e.Count < 0 || e.Count > z.Nodes {
			w.failAt(path+".count", "must be in [1, %d] (the nodes of zone %q), got %d", z.Nodes, e.Zone, e.Count)
		}
	}
}

// node checks that name is one of the scenario's nodes.
func (v *validator) node(path, name string) {
	if _, _, ok := v.parseNode(name); !ok {
		var hints []string
		for _, z := range v.zones {
			if strings.HasPrefix(name, z.Name+"-") {
				hints = append(hints, fmt.Sprintf("zone %s has %s … %s", z.Name, NodeName(z.Name, 0, z.Nodes), NodeName(z.Name, z.Nodes-1, z.Nodes)))
			}
		}
		hint := ""
		if len(hints) > 0 {
			hint = " (" + strings.Join(hints, "; ") + ")"
		}
		v.w.failAt(path, "unknown node %q%s", name, hint)
	}
}

// parseNode finds the zone and index of a node name.
func (v *validator) parseNode(name string) (string, int, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	z, ok := v.zones[name[:i]]
	if !ok || z.Nodes < 1 {
		return "", 0, false
	}
	idx, err := strconv.Atoi(name[i+1:])
	if err != nil || idx < 0 || idx >= z.Nodes || NodeName(z.Name, idx, z.Nodes) != name {
		return "", 0, false
	}
	return z.Name, idx, true
}

func zoneNames(sc *Scenario) []string {
	out := make([]string, 0, len(sc.Zones))
	for _, z := range sc.Zones {
		out = append(out, z.Name)
	}
	return out
}

// NodeName is the name of the index-th node of a zone of n nodes: the zone
// name, a dash and the index zero-padded to the width of n-1.
func NodeName(zone string, index, n int) string {
	width := len(strconv.Itoa(max(n-1, 0)))
	return fmt.Sprintf("%s-%0*d", zone, width, index)
}

// PodGroups returns the zone's pod groups, expanding PodsPerNode.
func (z *Zone) PodGroups() []PodGroup {
	if z.PodsPerNode > 0 {
		return []PodGroup{{Name: "pod", PerNode: z.PodsPerNode}}
	}
	out := make([]PodGroup, len(z.Pods))
	for i, g := range z.Pods {
		if g.Name == "" {
			g.Name = "pod"
		}
		out[i] = g
	}
	return out
}

// admissionDefaults reports whether the group's pods get the admission
// plugin's default tolerations.
func (g *PodGroup) admissionDefaults() bool {
	return g.AdmissionDefaults == nil || *g.AdmissionDefaults
}

// Marshal returns the scenario as YAML (defaults filled in).
func (sc *Scenario) Marshal() ([]byte, error) {
	b, err := yaml.Marshal(sc)
	if err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b), nil
}

// SchemaHelp is the scenario file reference (the policysim command prints
// it with -h; README.md has the same with examples).
const SchemaHelp = `Scenario file (YAML; unknown keys are errors; durations are Go strings such as "40s", "5m"):

  name: my-outage                  # default: the file name
  description: one line for -list
  duration: 10m                    # required: how long to simulate (t=0 .. duration)
  policy:                          # omitted fields keep the Kubernetes v1.37.2 defaults
    nodeMonitorPeriod: 5s          # --node-monitor-period
    nodeMonitorGracePeriod: 50s    # --node-monitor-grace-period (40s before 1.32)
    nodeStartupGracePeriod: 60s    # --node-startup-grace-period
    nodeEvictionRate: 0.1          # --node-eviction-rate, nodes/s per zone
    secondaryNodeEvictionRate: 0.01  # --secondary-node-eviction-rate
    largeClusterSizeThreshold: 50  # --large-cluster-size-threshold (per zone)
    unhealthyZoneThreshold: 0.55   # --unhealthy-zone-threshold, in [0, 1]
    fullDisruptionQPS: 0           # optional: rate of a dark zone among healthy ones (unset: nodeEvictionRate)
    defaultNotReadyTolerationSeconds: 300     # kube-apiserver admission defaults
    defaultUnreachableTolerationSeconds: 300
    nodeControllerLeaseCircuitBreaker: true   # the v1.37 feature gate (false: v1.36)
    deviceEvictionQPS: 0           # device taints, per DRA driver (ours; 0: no limit, upstream): pods/s
    deviceEvictionBurst: 1         #   the rate's burst
    deviceMaxShare: 0              #   breaker: hold a driver's evictions once more than this share of
    deviceMinDevices: 0            #   its allocated devices (and more than this many) are tainted...
    deviceResumeShare: 0           #   ...until the share is back at this one (0: none tainted)...
    deviceResumeAfter: 0s          #   ...and has stayed there this long
  kubelet:
    leaseRenewInterval: 10s        # every live kubelet renews its Lease...
    statusUpdateInterval: 5m       # ...and posts its status (a Ready heartbeat), both first at t=0
    podReadyDelay: 10s             # a resumed kubelet reports its pods Ready again this much later
    reconcile: true                # a running kubelet puts back what the controller wrote over its status:
    nodeStatusUpdateFrequency: 10s #   its node's Ready at its next node status update (--node-status-update-frequency)
    podStatusSyncPeriod: 10s       #   its pods' Ready at its status manager's next sync
  zones:                           # at least one
    - name: zone-a                 # nodes are zone-a-0, zone-a-1, ... (zero-padded)
      region: region-1             # optional
      nodes: 10
      podsPerNode: 30              # shorthand for pods: [{perNode: 30}]
    - name: zone-b
      nodes: 10
      pods:                        # pod groups on every node: <node>-<group>-<i>
        - name: web                # default "pod"
          perNode: 20
          tolerations: []          # Kubernetes tolerations (key, operator, value, effect, tolerationSeconds)
          admissionDefaults: true  # default: the admission plugin adds the 300s tolerations
        - name: logs
          perNode: 1
          daemonSet: true          # tolerates not-ready/unreachable forever
    - name: zone-c
      nodes: 10
      devices:                     # DRA devices on every node: slice <node>-<driver>, pool <node>,
        - {driver: gpu.nvidia.com, perNode: 8}   # devices gpu-0 … gpu-7 (at most 128)
      pods:
        - name: train
          perNode: 8
          deviceClaim:             # each pod uses a ResourceClaim allocated devices on its node
            driver: gpu.nvidia.com
            share: 1               # the share of the group's pods with a claim (default 1)
            podsPerClaim: 1        # pods sharing a claim (default 1)
            devicesPerClaim: 1     # devices per claim (default 1)
            tolerations: [{key: gpu.nvidia.com/xid, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]
  devices: []                      # device sets on every node of every zone, beside each zone's
  events:                          # applied in time order (ties: file order)
    - at: 1m
      action: stop                 # stop | resume | not-ready | zone-dark | zone-restore | lease-watch-stall | lease-watch-resume
      node: zone-a-3               # stop/resume/not-ready: node, nodes: [...], or zone (+ count: first N nodes)
    - {at: 5m, action: zone-dark, zone: zone-b}
    - {at: 6m, action: lease-watch-stall}   # no target
    - {at: 7m, action: lease-watch-resume}
    - at: 2m
      action: device-taint         # a driver taints devices NoExecute (TimeAdded: when each is tainted)
      driver: gpu.nvidia.com
      share: 0.1                   # or count: N (default: every device of the scope)
      zone: zone-c                 # scope: node, nodes or zone (default: the whole cluster)
      over: 1m                     # spread over a window (default: all at once)...
      every: 5s                    # ...in batches (default: one device at a time)
      taint: {key: gpu.nvidia.com/xid, value: "79", effect: NoExecute}   # default key <driver>/unhealthy
    - {at: 6m, action: device-untaint, driver: gpu.nvidia.com, taint: {key: gpu.nvidia.com/xid}, over: 1m, every: 5s}   # node by node
    - at: 3m
      action: device-rule          # a DeviceTaintRule (created, or changed)
      rule: drain-c-0
      selector: {pool: zone-c-0}   # driver, pool (a node), device; {} selects every device
      taint: {key: maintenance, effect: NoExecute}   # NoExecute, NoSchedule or None (dry run)
    - {at: 4m, action: device-rule-delete, rule: drain-c-0}
    - {at: 5m, action: device-release-hold, driver: gpu.nvidia.com}   # an operator ends a breaker's hold

  stop: the kubelet stops renewing its Lease and posting status.
  resume: it runs again, renews and posts Ready=True at once, then on schedule.
  not-ready: it runs and reports Ready=False (the controller taints not-ready, no Unknown).
  zone-dark / zone-restore: stop / resume every kubelet of the zone.
  lease-watch-stall / lease-watch-resume: the controller's Lease cache freezes / catches up
    while the kubelets keep renewing.
  device-taint / device-untaint: a DRA driver adds / removes a taint on devices of its slices.
  device-rule / device-rule-delete: a DeviceTaintRule is created or changed / deleted.
  device-release-hold: the blast-radius breaker's hold on a driver is released.
`
