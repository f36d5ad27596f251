package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
// README. A zone is the topology.kubernetes.io/region and zone labels
// (zonestate.Key); a node counts as unhealthy when a condition of the
// table calls for one of its taints.
type ZoneConfig struct {
	// Rate is how many nodes per second a zone's nodes are tainted at
	// (zonestate.Policy.EvictionQPS). 0 stops tainting.
	Rate float64 `json:"rate"`
	// UnhealthyThreshold is the fraction of unhealthy nodes (with more than
	// 2 of them) at which the zone's breaker trips
	// (zonestate.Policy.UnhealthyZoneThreshold).
	UnhealthyThreshold float64 `json:"unhealthyThreshold"`
	// LargeZoneSize is the zone size above which a tripped zone keeps
	// tainting at LargeZoneRate instead of stopping
	// (zonestate.Policy.LargeClusterThreshold).
	LargeZoneSize int `json:"largeZoneSize"`
	// LargeZoneRate is the rate of a tripped zone larger than LargeZoneSize
	// (zonestate.Policy.SecondaryEvictionQPS).
	LargeZoneRate float64 `json:"largeZoneRate"`
	// FullZoneRate is the rate of a zone where every node is unhealthy
	// while some other zone is not (zonestate.Policy.FullDisruptionQPS).
	// When every zone is fully unhealthy, nothing is tainted and the
	// controller's taints are removed (full disruption mode).
	FullZoneRate float64 `json:"fullZoneRate"`
}

// DefaultConfig returns the defaults: upstream's rates (0.1 node/s per
// zone, 0.01 for tripped zones of more than 50 nodes), a breaker at a
// third of a zone (upstream's 0.55 is meant for the Ready condition; a
// third of a zone reporting KernelDeadlock at once is a bad
// node-problem-detector rollout, not a bad zone), fully unhealthy zones
// stopped, a 5s pass, pod evictions on, dry-run off, no condition rows.
func DefaultConfig() Config {
	return Config{
		Zones: ZoneConfig{
			Rate:               0.1,
			UnhealthyThreshold: 0.33,
			LargeZoneSize:      50,
			LargeZoneRate:      0.01,
			FullZoneRate:       0,
		},
		PassPeriod: metav1.Duration{Duration: 5 * time.Second},
		EvictPods:  true,
	}
}

// LoadConfig reads a YAML configuration over DefaultConfig: fields absent
// from data keep their defaults. Input larger than MaxConfigBytes, more
// than one YAML document, unknown or duplicate keys, empty (null) values,
// NaN or infinite numbers and invalid values are errors that name the
// field (and the value).
func LoadConfig(data []byte) (Config, error) {
	cfg := DefaultConfig()
	if len(data) > MaxConfigBytes {
		return cfg, fmt.Errorf("%w: %d bytes, more than the %d-byte limit (MaxConfigBytes)", ErrInvalidConfig, len(data), MaxConfigBytes)
	}
	if err := checkYAML(data); err != nil {
		return cfg, err
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return cfg, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	var tree any
	if err := json.Unmarshal(js, &tree); err != nil {
		return cfg, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if err := checkKeys(reflect.TypeOf(cfg), tree, ""); err != nil {
		return cfg, err
	}
	if err := json.Unmarshal(js, &cfg); err != nil {
		return cfg, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return cfg, cfg.Validate()
}

// checkYAML rejects what the conversion to JSON would drop or garble
// silently, or report without the field:
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
	return checkValues(&doc, "")
}

const nullTag = "!!null"

// checkValues walks a YAML node for null values and NaN or infinite
// numbers, and names the first one's field. Aliases are not followed: the
// value they point to is checked where its anchor is.
func checkValues(n *yamlv3.Node, path string) error {
	switch n.Kind {
	case yamlv3.DocumentNode:
		for _, c := range n.Content {
			if err := checkValues(c, path); err != nil {
				return err
			}
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			field := strings.TrimPrefix(path+"."+n.Content[i].Value, ".")
			v := n.Content[i+1]
			if v.Kind == yamlv3.ScalarNode && v.ShortTag() == nullTag {
				return fmt.Errorf("%w: %s: empty value (%q); write a value, or leave the key out to keep the default", ErrInvalidConfig, field, v.Value)
			}
			if err := checkValues(v, field); err != nil {
				return err
			}
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			if err := checkValues(c, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case yamlv3.ScalarNode:
		var f float64
		if n.ShortTag() == "!!float" && n.Decode(&f) == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return fmt.Errorf("%w: %s: %s is not a finite number", ErrInvalidConfig, path, n.Value)
		}
	}
	return nil
}

// checkKeys rejects, with its path, a key that is not a field of t (json
// tags, matched exactly: encoding/json alone ignores case).
func checkKeys(t reflect.Type, v any, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			if v == nil || t == reflect.TypeOf(metav1.Duration{}) {
				return nil
			}
			return fmt.Errorf("%w: %s: want a mapping", ErrInvalidConfig, strings.TrimPrefix(path, "."))
		}
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			fields[name] = t.Field(i).Type
		}
		for k, sub := range m {
			ft, ok := fields[k]
			if !ok {
				return fmt.Errorf("%w: unknown field %q", ErrInvalidConfig, strings.TrimPrefix(path+"."+k, "."))
			}
			if err := checkKeys(ft, sub, path+"."+k); err != nil {
				return err
			}
		}
	case reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			return nil // encoding/json reports the type error
		}
		for i, e := range l {
			if err := checkKeys(t.Elem(), e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
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

// policy is the zone configuration in the library's form.
func (c *Config) policy() zonestate.Policy {
	full := c.Zones.FullZoneRate
	return zonestate.Policy{
		EvictionQPS:            c.Zones.Rate,
		SecondaryEvictionQPS:   c.Zones.LargeZoneRate,
		LargeClusterThreshold:  c.Zones.LargeZoneSize,
		UnhealthyZoneThreshold: c.Zones.UnhealthyThreshold,
		FullDisruptionQPS:      &full,
	}
}
