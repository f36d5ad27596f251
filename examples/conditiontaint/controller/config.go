package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/kubelifecycle/lifecycle/taints"
	"github.com/kubelifecycle/lifecycle/zonestate"
)

// MaxConfigBytes is the largest configuration file LoadConfig accepts.
const MaxConfigBytes = 64 << 10

// ErrInvalidConfig is wrapped by every configuration error.
var ErrInvalidConfig = errors.New("conditiontaint: invalid configuration")

// Config is the controller's configuration, read from a small YAML file
// (see LoadConfig and the README). DefaultConfig gives every field but
// Conditions a value.
type Config struct {
	// Conditions maps node conditions (as node-problem-detector sets them)
	// to taints. At least one row; at most taints.MaxConditionTaints
	// distinct taints and condition types.
	Conditions []ConditionRule `json:"conditions"`
	// Zones is the per-zone rate limit and circuit breaker.
	Zones ZoneConfig `json:"zones"`
	// PassPeriod is how often the zone pass runs when nothing else wakes
	// it (upstream's --node-monitor-period, 5s). Between 100ms and 10m.
	PassPeriod metav1.Duration `json:"passPeriod"`
	// NodeSelector is a label selector (kubectl syntax) restricting the
	// nodes the controller manages and counts; empty: every node.
	NodeSelector string `json:"nodeSelector"`
	// DryRun records Events and metrics for every decision, and writes no
	// taint and deletes no pod.
	DryRun bool `json:"dryRun"`
	// EvictPods deletes the pods that do not tolerate the NoExecute taints
	// this controller manages, when their toleration runs out. Set it to
	// false to leave evictions to kube-controller-manager's
	// taint-eviction-controller.
	EvictPods bool `json:"evictPods"`
}

// ConditionRule is one row: a node whose condition Type has Status gets
// Taint.
type ConditionRule struct {
	Type   string    `json:"type"`
	Status string    `json:"status"`
	Taint  TaintSpec `json:"taint"`
}

// TaintSpec is the taint of a ConditionRule.
type TaintSpec struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// ZoneConfig holds the zonestate.Policy fields, with the names of the
// README, and the per-group settings beside them. A group is a zone (the
// topology.kubernetes.io/region and zone labels, zonestate.Key) unless
// GroupBy names a node label; a node counts as unhealthy when a condition of
// the table calls for one of its taints. The zero values of GroupBy, Burst,
// MaxUnhealthy and PauseEvictions keep the behaviour the controller had
// before they existed.
type ZoneConfig struct {
	// GroupBy is the node label whose values group the nodes for the rate
	// limit and the breaker, instead of zones: a node pool label such as
	// karpenter.sh/nodepool, cloud.google.com/gke-nodepool,
	// eks.amazonaws.com/nodegroup or kubernetes.azure.com/agentpool. Nodes
	// without the label form one group. "" (the default): zones.
	GroupBy string `json:"groupBy,omitempty"`
	// Rate is how many nodes per second a group's nodes are tainted at
	// (zonestate.Policy.EvictionQPS). 0 stops tainting.
	Rate float64 `json:"rate"`
	// Burst is how many of a group's nodes may be tainted back to back
	// before Rate paces the rest (the token bucket's size,
	// evictionqueue.Config.Burst). 0 means 1, the default and upstream's
	// EvictionRateLimiterBurst. At most MaxBurst.
	Burst int `json:"burst"`
	// UnhealthyThreshold is the fraction of unhealthy nodes (with more than
	// 2 of them) at which the group's breaker trips
	// (zonestate.Policy.UnhealthyZoneThreshold). Not used when MaxUnhealthy
	// is set.
	UnhealthyThreshold float64 `json:"unhealthyThreshold"`
	// MaxUnhealthy, when set, replaces UnhealthyThreshold: the group's
	// breaker trips when more than MaxUnhealthy of its counted nodes are
	// unhealthy, a count (3) or a whole percentage of the group's counted
	// nodes, rounded down ("30%"), as medik8s NodeHealthCheck's
	// maxUnhealthy. 0 (or "0%") trips on the first unhealthy node. A group
	// tripped this way stops (LargeZoneSize and LargeZoneRate apply to
	// UnhealthyThreshold only). nil: UnhealthyThreshold decides.
	MaxUnhealthy *intstr.IntOrString `json:"maxUnhealthy,omitempty"`
	// LargeZoneSize is the group size above which a group tripped by
	// UnhealthyThreshold keeps tainting at LargeZoneRate instead of stopping
	// (zonestate.Policy.LargeClusterThreshold).
	LargeZoneSize int `json:"largeZoneSize"`
	// LargeZoneRate is the rate of a tripped group larger than
	// LargeZoneSize (zonestate.Policy.SecondaryEvictionQPS).
	LargeZoneRate float64 `json:"largeZoneRate"`
	// FullZoneRate is the rate of a group where every node is unhealthy
	// while some other group is not (zonestate.Policy.FullDisruptionQPS).
	// When every group is fully unhealthy, nothing is tainted and the
	// controller's taints are removed (full disruption mode).
	FullZoneRate float64 `json:"fullZoneRate"`
	// PauseEvictions holds the evictions of the pods on a tripped group's
	// nodes (state PartialDisruption or FullDisruption, or every group in
	// full disruption mode) until the group recovers, instead of only
	// holding its new taints. Toleration countdowns keep running; a pod
	// whose toleration ran out meanwhile goes when the group recovers.
	// false (the default): only tainting stops.
	PauseEvictions bool `json:"pauseEvictions"`
}

// MaxBurst is the largest ZoneConfig.Burst Validate accepts.
const MaxBurst = 1000

// burst is Burst with 0 meaning 1.
func (z *ZoneConfig) burst() int { return max(z.Burst, 1) }

// maxUnhealthy is how many of size counted nodes may be unhealthy before
// the group trips, when MaxUnhealthy is set (a validated value).
func (z *ZoneConfig) maxUnhealthy(size int) int {
	m := z.MaxUnhealthy
	if m.Type == intstr.Int {
		return int(m.IntVal)
	}
	pct, _ := parsePercent(m.StrVal)
	return pct * size / 100
}

// parsePercent reads a whole percentage from 0% to 100%.
func parsePercent(s string) (int, bool) {
	digits, ok := strings.CutSuffix(s, "%")
	if !ok || digits == "" || len(digits) > 3 {
		return 0, false
	}
	n := 0
	for _, d := range []byte(digits) {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = 10*n + int(d-'0')
	}
	return n, n <= 100
}

// DefaultConfig returns the defaults: upstream's rates (0.1 node/s per
// zone, 0.01 for tripped zones of more than 50 nodes), a breaker at a
// third of a zone (upstream's 0.55 is meant for the Ready condition; a
// third of a zone reporting KernelDeadlock at once is a bad
// node-problem-detector rollout, not a bad zone), fully unhealthy zones
// stopped, groups by zone, a burst of 1, evictions not paused by the
// breaker, a 5s pass, pod evictions on, dry-run off, no condition rows.
func DefaultConfig() Config {
	return Config{
		Zones: ZoneConfig{
			Rate:               0.1,
			UnhealthyThreshold: 0.33,
			Burst:              1,
			LargeZoneSize:      50,
			LargeZoneRate:      0.01,
			FullZoneRate:       0,
		},
		PassPeriod: metav1.Duration{Duration: 5 * time.Second},
		EvictPods:  true,
	}
}

// LoadConfig reads a YAML configuration over DefaultConfig: fields absent
// from data keep their defaults. Input larger than MaxConfigBytes, nested
// deeper than MaxConfigDepth or with more than MaxConfigNodes nodes (aliases
// expanded), more than one YAML document, unknown or duplicate keys, empty
// (null) values, NaN or infinite numbers and invalid values are errors that
// name the field (and the value) or the limit. The limits are checked before
// the document is converted and decoded: a cheap scan of the bytes refuses
// deep nesting before it is parsed, and the parsed tree is measured before
// anything else walks it.
func LoadConfig(data []byte) (Config, error) {
	cfg := DefaultConfig()
	if len(data) > MaxConfigBytes {
		return cfg, fmt.Errorf("%w: %d bytes, more than the %d-byte limit (MaxConfigBytes)", ErrInvalidConfig, len(data), MaxConfigBytes)
	}
	if err := scanLimits(data); err != nil {
		return cfg, err
	}
	if err := checkYAML(data); err != nil {
		return cfg, err
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return cfg, fmt.Errorf("%w: %s", ErrInvalidConfig, shortError(err))
	}
	var tree any
	if err := json.Unmarshal(js, &tree); err != nil {
		return cfg, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	var p path
	if err := checkKeys(reflect.TypeOf(cfg), tree, &p); err != nil {
		return cfg, err
	}
	root, _ := tree.(map[string]any)
	if zones, ok := root["zones"].(map[string]any); ok {
		_, max := zones["maxUnhealthy"]
		_, threshold := zones["unhealthyThreshold"]
		if max && threshold {
			return cfg, fmt.Errorf("%w: zones.maxUnhealthy and zones.unhealthyThreshold: set one of them (maxUnhealthy replaces unhealthyThreshold)", ErrInvalidConfig)
		}
	}
	if err := json.Unmarshal(js, &cfg); err != nil {
		return cfg, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return cfg, cfg.Validate()
}

// shortError keeps the first lines of a conversion error: a file of
// thousands of duplicate keys would otherwise yield an error of thousands
// of lines.
func shortError(err error) string {
	const keep = 4
	msg := err.Error()
	lines := strings.SplitN(msg, "\n", keep+1)
	if len(lines) <= keep {
		return msg
	}
	return strings.Join(lines[:keep], "\n") + fmt.Sprintf("\n  (and %d more lines)", strings.Count(msg, "\n")-keep+1)
}

// checkYAML rejects what the conversion to JSON would drop or garble
// silently, or report without the field, after checking the limits on the
// parsed tree (checkTree):
//   - a second YAML document (even an empty one): the conversion reads the
//     first and drops the rest, so a "---" before "dryRun: true" would
//     taint and evict for real while the operator believes it is a dry run;
//   - an empty (null) value: it would keep the field's default unseen, so
//     "dryRun:" with the value forgotten would mean false;
//   - NaN and infinite numbers, which JSON cannot carry (the conversion's
//     error names neither the field nor the value).
func checkYAML(data []byte) error {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var doc yamlv3.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: empty file", ErrInvalidConfig)
	case err != nil:
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if err := checkTree(&doc); err != nil {
		return err
	}
	var next yamlv3.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	default:
		return fmt.Errorf("%w: a second YAML document starts at line %d; the file must hold exactly one (only the first would be read)", ErrInvalidConfig, next.Line)
	}
	if len(doc.Content) == 1 && doc.Content[0].ShortTag() == nullTag {
		return fmt.Errorf("%w: empty file", ErrInvalidConfig)
	}
	var p path
	return checkValues(&doc, &p)
}

const nullTag = "!!null"

// path is the field being checked, rendered only for an error (building
// every node's path as a string cost time and memory quadratic in the
// nesting depth).
type path []pathElem

type pathElem struct {
	key   string // a mapping key, or
	index int    // a sequence index, when key is ""
	isKey bool
}

func (p *path) pushKey(k string) { *p = append(*p, pathElem{key: k, isKey: true}) }
func (p *path) pushIndex(i int)  { *p = append(*p, pathElem{index: i}) }
func (p *path) pop()             { *p = (*p)[:len(*p)-1] }

// String renders the path as the README names fields: zones.rate,
// conditions[1].taint.key; the document itself is "the file".
func (p path) String() string {
	if len(p) == 0 {
		return "the file"
	}
	var b strings.Builder
	for i, e := range p {
		if e.isKey {
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e.key)
			continue
		}
		fmt.Fprintf(&b, "[%d]", e.index)
	}
	return b.String()
}

// checkValues walks a YAML node for null values and NaN or infinite
// numbers, and names the first one's field. Aliases are not followed: the
// value they point to is checked where its anchor is.
func checkValues(n *yamlv3.Node, p *path) error {
	switch n.Kind {
	case yamlv3.DocumentNode:
		for _, c := range n.Content {
			if err := checkValues(c, p); err != nil {
				return err
			}
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p.pushKey(n.Content[i].Value)
			v := n.Content[i+1]
			if v.Kind == yamlv3.ScalarNode && v.ShortTag() == nullTag {
				return fmt.Errorf("%w: %s: empty value (%q); write a value, or leave the key out to keep the default", ErrInvalidConfig, p, v.Value)
			}
			if err := checkValues(v, p); err != nil {
				return err
			}
			p.pop()
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			p.pushIndex(i)
			if err := checkValues(c, p); err != nil {
				return err
			}
			p.pop()
		}
	case yamlv3.ScalarNode:
		var f float64
		if n.ShortTag() == "!!float" && n.Decode(&f) == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return fmt.Errorf("%w: %s: %s is not a finite number", ErrInvalidConfig, p, n.Value)
		}
	}
	return nil
}

var (
	durationType    = reflect.TypeOf(metav1.Duration{})
	intOrStringType = reflect.TypeOf(intstr.IntOrString{})
)

// checkKeys rejects, with its path, a key that is not a field of t (json
// tags, matched exactly: encoding/json alone ignores case), and a
// count-or-percentage field (intstr.IntOrString) that holds neither.
func checkKeys(t reflect.Type, v any, p *path) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == intOrStringType:
		switch x := v.(type) {
		case string:
			return nil // Validate reads it
		case float64:
			if x == math.Trunc(x) && x >= math.MinInt32 && x <= math.MaxInt32 {
				return nil
			}
		}
		return fmt.Errorf("%w: %s: %v is neither a count (3) nor a percentage (\"30%%\")", ErrInvalidConfig, p, v)
	case t.Kind() == reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			if v == nil || t == durationType {
				return nil
			}
			return fmt.Errorf("%w: %s: want a mapping", ErrInvalidConfig, p)
		}
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			fields[name] = t.Field(i).Type
		}
		for _, k := range slices.Sorted(maps.Keys(m)) { // the first unknown key, in a stable order
			sub := m[k]
			p.pushKey(k)
			ft, ok := fields[k]
			if !ok {
				return fmt.Errorf("%w: unknown field %q", ErrInvalidConfig, p.String())
			}
			if err := checkKeys(ft, sub, p); err != nil {
				return err
			}
			p.pop()
		}
	case t.Kind() == reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			return nil // encoding/json reports the type error
		}
		for i, e := range l {
			p.pushIndex(i)
			if err := checkKeys(t.Elem(), e, p); err != nil {
				return err
			}
			p.pop()
		}
	}
	return nil
}

// reservedTaintDomains are the taint key prefixes kube-controller-manager
// and the kubelet own; the controller never writes or removes them.
var reservedTaintDomains = []string{"kubernetes.io", "k8s.io"}

// Validate checks every field and returns the first error, naming the
// field (conditions[1].taint.key, zones.rate, …).
func (c *Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	if len(c.Conditions) == 0 {
		return bad("conditions", "at least one row is needed")
	}
	if len(c.Conditions) > 4*taints.MaxConditionTaints {
		return bad("conditions", "%d rows, more than the limit of %d", len(c.Conditions), 4*taints.MaxConditionTaints)
	}
	for i, r := range c.Conditions {
		f := fmt.Sprintf("conditions[%d]", i)
		if r.Type == "" {
			return bad(f+".type", "empty")
		}
		if r.Type == string(v1.NodeReady) {
			return bad(f+".type", "Ready is kube-controller-manager's (node.kubernetes.io/not-ready and unreachable)")
		}
		switch v1.ConditionStatus(r.Status) {
		case v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown:
		default:
			return bad(f+".status", "%q is not True, False or Unknown", r.Status)
		}
		key := r.Taint.Key
		if domain, _, ok := strings.Cut(key, "/"); ok {
			for _, res := range reservedTaintDomains {
				if domain == res || strings.HasSuffix(domain, "."+res) {
					return bad(f+".taint.key", "%q is in the %s domain, which Kubernetes reserves (node.kubernetes.io/* taints are kube-controller-manager's); use your own domain", key, res)
				}
			}
		}
	}
	if _, err := taints.NewConditionTaints(c.table()); err != nil {
		return fmt.Errorf("%w: conditions: %v", ErrInvalidConfig, err)
	}
	z := c.Zones
	rate := func(field string, v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return bad(field, "%v is not a finite rate >= 0", v)
		}
		return nil
	}
	if err := rate("zones.rate", z.Rate); err != nil {
		return err
	}
	if err := rate("zones.largeZoneRate", z.LargeZoneRate); err != nil {
		return err
	}
	if err := rate("zones.fullZoneRate", z.FullZoneRate); err != nil {
		return err
	}
	if !(z.UnhealthyThreshold >= 0 && z.UnhealthyThreshold <= 1) {
		return bad("zones.unhealthyThreshold", "%v is not in [0, 1]", z.UnhealthyThreshold)
	}
	if z.GroupBy != "" {
		if errs := validation.IsQualifiedName(z.GroupBy); len(errs) > 0 {
			return bad("zones.groupBy", "%q is not a label key: %s", z.GroupBy, strings.Join(errs, "; "))
		}
	}
	if z.Burst < 0 || z.Burst > MaxBurst {
		return bad("zones.burst", "%d is not between 0 and %d (MaxBurst); 0 means 1", z.Burst, MaxBurst)
	}
	if m := z.MaxUnhealthy; m != nil {
		switch m.Type {
		case intstr.Int:
			if m.IntVal < 0 {
				return bad("zones.maxUnhealthy", "%d is negative; want a count >= 0 or a percentage from \"0%%\" to \"100%%\"", m.IntVal)
			}
		case intstr.String:
			if _, ok := parsePercent(m.StrVal); !ok {
				return bad("zones.maxUnhealthy", "%q is not a whole percentage from \"0%%\" to \"100%%\" (or write a count, 3, without quotes)", m.StrVal)
			}
		default:
			return bad("zones.maxUnhealthy", "type %d is neither a count nor a percentage", m.Type)
		}
	}
	if z.LargeZoneSize < 0 {
		return bad("zones.largeZoneSize", "%d is negative", z.LargeZoneSize)
	}
	if p := c.PassPeriod.Duration; p < 100*time.Millisecond || p > 10*time.Minute {
		return bad("passPeriod", "%v is not between 100ms and 10m", p)
	}
	if _, err := labels.Parse(c.NodeSelector); err != nil {
		return bad("nodeSelector", "%v", err)
	}
	if _, err := zonestate.NewTracker(c.policy()); err != nil {
		return fmt.Errorf("%w: zones: %v", ErrInvalidConfig, err)
	}
	return nil
}

// table is the condition rows in the library's form.
func (c *Config) table() []taints.ConditionTaint {
	t := make([]taints.ConditionTaint, len(c.Conditions))
	for i, r := range c.Conditions {
		t[i] = taints.ConditionTaint{
			Type:   v1.NodeConditionType(r.Type),
			Status: v1.ConditionStatus(r.Status),
			Taint:  v1.Taint{Key: r.Taint.Key, Value: r.Taint.Value, Effect: v1.TaintEffect(r.Taint.Effect)},
		}
	}
	return t
}

// policy is the zone configuration in the library's form. With
// MaxUnhealthy the Tracker's threshold is 1, where it never decides
// PartialDisruption (that takes a Ready node and every node not ready):
// the Controller trips groups by MaxUnhealthy itself (applyMaxUnhealthy),
// and the Tracker keeps FullDisruption and full disruption mode.
func (c *Config) policy() zonestate.Policy {
	full := c.Zones.FullZoneRate
	threshold := c.Zones.UnhealthyThreshold
	if c.Zones.MaxUnhealthy != nil {
		threshold = 1
	}
	return zonestate.Policy{
		EvictionQPS:            c.Zones.Rate,
		SecondaryEvictionQPS:   c.Zones.LargeZoneRate,
		LargeClusterThreshold:  c.Zones.LargeZoneSize,
		UnhealthyZoneThreshold: threshold,
		FullDisruptionQPS:      &full,
	}
}
