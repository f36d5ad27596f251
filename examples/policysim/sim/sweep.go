package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"
)

// With returns a copy of the scenario with one field set from its YAML
// text, validated as LoadScenario validates a file. field is the YAML path
// ("policy.nodeEvictionRate", "kubelet.leaseRenewInterval",
// "zones[1].nodes", "duration"); a bare policy or kubelet field name
// ("nodeEvictionRate") is looked up under policy, then kubelet. value is
// YAML ("0.05", "300", "40s").
func (sc *Scenario) With(field, value string) (*Scenario, error) {
	return sc.withAll([]string{field}, []string{value})
}

// withAll is With for several fields at once: every value is set before
// the scenario is validated, so fields that constrain each other (a resume
// level at most the max share) can be swept in any order.
func (sc *Scenario) withAll(fields, values []string) (*Scenario, error) {
	raw, err := json.Marshal(sc)
	if err != nil {
		return nil, fmt.Errorf("policysim: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("policysim: %w", err)
	}
	name := sc.Name + " with "
	for i, field := range fields {
		value := values[i]
		var v any
		if err := yamlv3.Unmarshal([]byte(value), &v); err != nil || v == nil {
			return nil, fmt.Errorf("policysim: %s=%q: not a YAML scalar", field, value)
		}
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			// JSON, through which the value reaches the scenario, has no NaN
			// or infinity; no field takes one anyway.
			return nil, fmt.Errorf("policysim: -sweep field %s: value %q is not a finite number", field, value)
		}
		path := fieldPath(doc, field)
		if err := setPath(doc, path, v); err != nil {
			return nil, fmt.Errorf("policysim: -sweep field %s: %w", field, err)
		}
		if i > 0 {
			name += ","
		}
		name += field + "=" + value
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("policysim: %w", err)
	}
	return LoadScenario(name, out)
}

// fieldPath returns the YAML path field names in doc (the scenario as
// JSON): field itself, or a bare policy or kubelet field name with its
// section.
func fieldPath(doc map[string]any, field string) string {
	if !strings.ContainsAny(field, ".[") {
		switch {
		case hasKey(doc, field):
		case hasKey(doc["policy"], field):
			return "policy." + field
		case hasKey(doc["kubelet"], field):
			return "kubelet." + field
		}
	}
	return field
}

func hasKey(m any, k string) bool {
	mm, ok := m.(map[string]any)
	if !ok {
		return false
	}
	_, ok = mm[k]
	return ok
}

// setPath sets a dotted path with optional [i] indexes in a JSON tree; the
// last key must exist (or be a pointer field left out, such as
// fullDisruptionQPS) in a mapping.
func setPath(doc map[string]any, path string, v any) error {
	var cur any = doc
	parts := strings.Split(path, ".")
	for i, part := range parts {
		key, idx := part, -1
		if j := strings.IndexByte(part, '['); j >= 0 && strings.HasSuffix(part, "]") {
			n, err := strconv.Atoi(part[j+1 : len(part)-1])
			if err != nil {
				return fmt.Errorf("bad index in %q", part)
			}
			key, idx = part[:j], n
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return fmt.Errorf("%q is not a mapping", strings.Join(parts[:i], "."))
		}
		last := i == len(parts)-1
		if last && idx < 0 {
			if _, ok := m[key]; !ok && key != "fullDisruptionQPS" {
				return fmt.Errorf("unknown field %q", path)
			}
			m[key] = v
			return nil
		}
		next, ok := m[key]
		if !ok {
			return fmt.Errorf("unknown field %q", strings.Join(parts[:i+1], "."))
		}
		if idx >= 0 {
			list, ok := next.([]any)
			if !ok || idx >= len(list) {
				return fmt.Errorf("%s has no element %d", key, idx)
			}
			if last {
				list[idx] = v
				return nil
			}
			next = list[idx]
		}
		cur = next
	}
	return nil
}

// SweepRun is one run of a sweep: its fields' values and its result (or
// error).
type SweepRun struct {
	// Value is the value of a one-field sweep (Sweep); in a grid
	// (SweepGrid) the run's values joined by commas.
	Value string
	// Values are the run's values, one per field of the sweep, in the
	// order of its fields.
	Values []string
	Result *Result
	Err    error
}

// SweepField is one field of a sweep and the values it takes.
type SweepField struct {
	Field  string
	Values []string
}

// MaxSweepRuns bounds the runs of a sweep: the product of its fields'
// numbers of values.
const MaxSweepRuns = 1000

// Sweep runs the scenario once per value of field (see Scenario.With),
// with opt, up to parallel runs at once (0: one per CPU), and returns the
// runs in the order of values: SweepGrid with one field.
func Sweep(ctx context.Context, sc *Scenario, field string, values []string, opt Options, parallel int) ([]SweepRun, error) {
	return SweepGrid(ctx, sc, []SweepField{{Field: field, Values: values}}, opt, parallel)
}

// SweepGrid runs the scenario once per combination of its fields' values
// (see Scenario.With), with opt, up to parallel runs at once (0: one per
// CPU), and returns the runs in the order of the grid: the first field's
// values vary slowest, the last field's fastest, as nested loops in the
// order of fields. A field given twice (also under two names, such as
// nodeEvictionRate and policy.nodeEvictionRate), a field without values
// and a grid of more than MaxSweepRuns runs are errors. The runs are
// independent; each is deterministic, so the results do not depend on
// parallel. Each Result is released as its run ends (Result.Release: Pods
// returns nil), so a sweep holds at most parallel clusters at once. A
// combination the scenario rejects is an error before anything runs, and
// so is a sweep whose runs together (the sum of their Scenario.Work) are
// over opt.Budget: the budget bounds the whole sweep, not each run.
//
// Once ctx ends no further run starts (its Err is ctx's error) and the runs
// in progress stop as Run does; SweepGrid then returns ctx's error.
func SweepGrid(ctx context.Context, sc *Scenario, fields []SweepField, opt Options, parallel int) ([]SweepRun, error) {
	if len(fields) == 0 {
		return nil, errors.New("policysim: -sweep needs a field")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("policysim: sweep not started: %w", err)
	}
	n, err := gridSize(sc, fields)
	if err != nil {
		return nil, err
	}
	runs := make([]SweepRun, n)
	scs := make([]*Scenario, n)
	var total Budget
	for i := range runs {
		vals := make([]string, len(fields))
		rest := i
		for f := len(fields) - 1; f >= 0; f-- {
			k := len(fields[f].Values)
			vals[f] = fields[f].Values[rest%k]
			rest /= k
		}
		names := make([]string, len(fields))
		for f := range fields {
			names[f] = fields[f].Field
		}
		s, err := sc.withAll(names, vals)
		if err != nil {
			return nil, err
		}
		s.Name = sc.Name
		scs[i] = s
		runs[i].Values, runs[i].Value = vals, strings.Join(vals, ",")
		total = total.add(s.Work())
	}
	if err := opt.Budget.allow(total, fmt.Sprintf("the sweep's %d runs in all", n)); err != nil {
		return nil, err
	}
	if parallel <= 0 {
		parallel = runtime.NumCPU()
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range runs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if err := ctx.Err(); err != nil {
			runs[i].Err = fmt.Errorf("policysim: run %s not started: %w", runLabel(fields, runs[i].Values), err)
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			runs[i].Result, runs[i].Err = RunOptions(ctx, scs[i], opt)
			if runs[i].Result != nil {
				runs[i].Result.Release()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return runs, fmt.Errorf("policysim: sweep stopped: %w", err)
	}
	for _, r := range runs {
		if r.Err != nil {
			return runs, r.Err
		}
	}
	return runs, nil
}

// gridSize checks a sweep's fields (each once, each with values) and
// returns its number of runs, at most MaxSweepRuns.
func gridSize(sc *Scenario, fields []SweepField) (int, error) {
	raw, err := json.Marshal(sc)
	if err != nil {
		return 0, fmt.Errorf("policysim: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return 0, fmt.Errorf("policysim: %w", err)
	}
	seen := map[string]string{}
	n := 1
	for _, f := range fields {
		if len(f.Values) == 0 {
			return 0, fmt.Errorf("policysim: -sweep %s needs at least one value", f.Field)
		}
		path := fieldPath(doc, f.Field)
		if prev, ok := seen[path]; ok {
			return 0, fmt.Errorf("policysim: -sweep %s given twice (as %s and %s); list its values once", path, prev, f.Field)
		}
		seen[path] = f.Field
		if n > MaxSweepRuns/len(f.Values) {
			return 0, fmt.Errorf("policysim: -sweep grid of %s runs, more than %d (MaxSweepRuns); sweep fewer values", gridProduct(fields), MaxSweepRuns)
		}
		n *= len(f.Values)
	}
	if n > MaxSweepRuns {
		return 0, fmt.Errorf("policysim: -sweep grid of %s runs, more than %d (MaxSweepRuns); sweep fewer values", gridProduct(fields), MaxSweepRuns)
	}
	return n, nil
}

// gridProduct writes a grid's size as its factors ("3 × 400").
func gridProduct(fields []SweepField) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = strconv.Itoa(len(f.Values))
	}
	return strings.Join(parts, " × ")
}

// runLabel names one run of a sweep: "field=value" for each field.
func runLabel(fields []SweepField, values []string) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.Field + "=" + values[i]
	}
	return strings.Join(parts, " ")
}

// ParseSweep splits "FIELD=v1,v2,..." into the field and its values.
func ParseSweep(s string) (string, []string, error) {
	field, list, ok := strings.Cut(s, "=")
	field = strings.TrimSpace(field)
	if !ok || field == "" || strings.TrimSpace(list) == "" {
		return "", nil, fmt.Errorf("policysim: -sweep wants FIELD=v1,v2,... (e.g. nodeEvictionRate=0.05,0.1,0.2), got %q", s)
	}
	var values []string
	for _, v := range strings.Split(list, ",") {
		if v = strings.TrimSpace(v); v != "" {
			values = append(values, v)
		}
	}
	return field, slices.Compact(values), nil
}

// WriteSweep writes a one-field sweep's table: WriteSweepGrid with one
// field.
func WriteSweep(w io.Writer, field string, runs []SweepRun) error {
	return WriteSweepGrid(w, []string{field}, runs)
}

// WriteSweepGrid writes a sweep's table: per run (a column per field) and
// zone, when the last node was tainted (legacy: queued for eviction) and
// the last pod evicted, how many pods were evicted, how many nodes went
// Unknown (or NotReady) and how many pods were marked not ready, how long
// nodes and pods were down (their time added up, and the longest), whether
// the zone entered FullDisruption, and whether work was still pending at
// the end.
func WriteSweepGrid(w io.Writer, fields []string, runs []SweepRun) error {
	ew := &errWriter{w: w}
	if len(runs) == 0 {
		return nil
	}
	writeHeader(ew, runs[0].Result)
	axes := make([]string, len(fields))
	for i, f := range fields {
		var vals []string
		for _, r := range runs {
			if v := runValues(r, len(fields)); !slices.Contains(vals, v[i]) {
				vals = append(vals, v[i])
			}
		}
		axes[i] = f + " = " + strings.Join(vals, ", ")
	}
	fmt.Fprintf(ew, "\nSWEEP  %s", strings.Join(axes, "  ×  "))
	if len(fields) > 1 {
		fmt.Fprintf(ew, "  (%d runs)", len(runs))
	}
	fmt.Fprintln(ew)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	verb := "last taint"
	if runs[0].Result.Options.PodEvictionTimeout > 0 {
		verb = "last queued"
	}
	fmt.Fprintf(tw, "%s\tzone\t%s\tlast eviction\tpods evicted\tnodes Unknown\tpods NotReady\tnode time down\tlongest node down\tpod time NotReady\tlongest pod NotReady\tFullDisruption\tpending at the end\n",
		strings.Join(fields, "\t"), verb)
	for _, r := range runs {
		sum := r.Result.Summary
		vals := strings.Join(runValues(r, len(fields)), "\t")
		for i, z := range sum.Zones {
			last := z.LastTaint
			if r.Result.Options.PodEvictionTimeout > 0 {
				last = lastNodeEvicting(r.Result, z.Zone)
			}
			full := "no"
			if slices.ContainsFunc(z.States, func(s StateChange) bool { return s.State == "FullDisruption" }) {
				full = "yes"
			}
			pending := "-"
			if p := sum.Pending; p != nil && i < len(p.Zones) {
				if zp := p.Zones[i]; zp.NodesQueued > 0 || zp.Evictions > 0 {
					pending = pendingLabel(zp)
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", vals, z.Zone, when(last), when(z.LastEviction), z.PodsEvicted,
				z.NodesUnknown, z.PodsMarkedNotReady, seconds(z.NodeSecondsDown), Dur(z.LongestNodeDown), seconds(z.PodSecondsNotReady), Dur(z.LongestPodNotReady), full, pending)
		}
	}
	tw.Flush()
	writeDeviceSweep(ew, fields, runs)
	return ew.err
}

// runValues returns a run's values for a sweep of n fields (a SweepRun
// built with Value only, for one field, has them there).
func runValues(r SweepRun, n int) []string {
	if len(r.Values) == n {
		return r.Values
	}
	out := make([]string, n)
	out[0] = r.Value
	return out
}

// lastNodeEvicting is the last node-evicting entry of a zone (legacy mode).
func lastNodeEvicting(res *Result, zone string) *time.Duration {
	var last *time.Duration
	for _, e := range res.Entries {
		if e.Zone == zone && e.Kind == KindNodeEvicting {
			last = at(e.At)
		}
	}
	return last
}
