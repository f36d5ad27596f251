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
	raw, err := json.Marshal(sc)
	if err != nil {
		return nil, fmt.Errorf("policysim: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("policysim: %w", err)
	}
	var v any
	if err := yamlv3.Unmarshal([]byte(value), &v); err != nil || v == nil {
		return nil, fmt.Errorf("policysim: %s=%q: not a YAML scalar", field, value)
	}
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		// JSON, through which the value reaches the scenario, has no NaN
		// or infinity; no field takes one anyway.
		return nil, fmt.Errorf("policysim: -sweep field %s: value %q is not a finite number", field, value)
	}
	path := field
	if !strings.ContainsAny(field, ".[") {
		switch {
		case hasKey(doc, field):
		case hasKey(doc["policy"], field):
			path = "policy." + field
		case hasKey(doc["kubelet"], field):
			path = "kubelet." + field
		}
	}
	if err := setPath(doc, path, v); err != nil {
		return nil, fmt.Errorf("policysim: -sweep field %s: %w", field, err)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("policysim: %w", err)
	}
	return LoadScenario(sc.Name+" with "+field+"="+value, out)
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

// SweepRun is one run of a sweep: the field's value and its result (or
// error).
type SweepRun struct {
	Value  string
	Result *Result
	Err    error
}

// Sweep runs the scenario once per value of field (see Scenario.With),
// with opt, up to parallel runs at once (0: one per CPU), and returns the
// runs in the order of values. The runs are independent; each is
// deterministic, so the results do not depend on parallel. Each Result is
// released as its run ends (Result.Release: Pods returns nil), so a sweep
// holds at most parallel clusters at once. A value the scenario rejects is
// an error before anything runs, and so is a sweep whose runs together
// (the sum of their Scenario.Work) are over opt.Budget: the budget bounds
// the whole sweep, not each run.
//
// Once ctx ends no further run starts (its Err is ctx's error) and the runs
// in progress stop as Run does; Sweep then returns ctx's error.
func Sweep(ctx context.Context, sc *Scenario, field string, values []string, opt Options, parallel int) ([]SweepRun, error) {
	if len(values) == 0 {
		return nil, errors.New("policysim: -sweep needs at least one value")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("policysim: sweep not started: %w", err)
	}
	runs := make([]SweepRun, len(values))
	scs := make([]*Scenario, len(values))
	var total Budget
	for i, v := range values {
		s, err := sc.With(field, v)
		if err != nil {
			return nil, err
		}
		s.Name = sc.Name
		scs[i] = s
		runs[i].Value = v
		total = total.add(s.Work())
	}
	if err := opt.Budget.allow(total, fmt.Sprintf("the sweep's %d runs in all", len(values))); err != nil {
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
			runs[i].Err = fmt.Errorf("policysim: run %s=%s not started: %w", field, runs[i].Value, err)
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

// WriteSweep writes a sweep's table: per value and zone, when the last
// node was tainted (legacy: queued for eviction) and the last pod evicted,
// how many pods were evicted, whether the zone entered FullDisruption, and
// whether work was still pending at the end.
func WriteSweep(w io.Writer, field string, runs []SweepRun) error {
	ew := &errWriter{w: w}
	if len(runs) == 0 {
		return nil
	}
	writeHeader(ew, runs[0].Result)
	fmt.Fprintf(ew, "\nSWEEP  %s = %s\n", field, strings.Join(valuesOf(runs), ", "))
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	verb := "last taint"
	if runs[0].Result.Options.PodEvictionTimeout > 0 {
		verb = "last queued"
	}
	fmt.Fprintf(tw, "%s\tzone\t%s\tlast eviction\tpods evicted\tFullDisruption\tpending at the end\n", field, verb)
	for _, r := range runs {
		sum := r.Result.Summary
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Value, z.Zone, when(last), when(z.LastEviction), z.PodsEvicted, full, pending)
		}
	}
	tw.Flush()
	return ew.err
}

func valuesOf(runs []SweepRun) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.Value
	}
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
