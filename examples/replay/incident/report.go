package incident

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is one replay compared with its recording, as the replay command
// prints it.
type Report struct {
	History    *History
	Options    ReplayOptions
	Run        *Run
	Comparison *Comparison
	// Phases, when set, is the phase sensitivity (Phases).
	Phases *PhaseReport
	// Reader is what the caller's log reader reports (Doctor.Reader).
	Reader []string
	// Watch says where the watch stalls not given explicitly came from
	// (Stall.String lines), printed with the stalls.
	Watch []string
}

// NewReport compares run with the recording and returns the report.
func NewReport(h *History, opt ReplayOptions, run *Run) *Report {
	return &Report{History: h, Options: opt, Run: run, Comparison: Compare(h, run)}
}

func rfc(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

type decisionJSON struct {
	Time     string `json:"time"`
	Kind     Kind   `json:"kind"`
	Node     string `json:"node"`
	Pod      string `json:"pod,omitempty"`
	Detail   string `json:"detail,omitempty"`
	Inferred bool   `json:"inferred,omitempty"`
	Source   string `json:"source,omitempty"`
}

func decisionsJSON(ds []Decision) []decisionJSON {
	out := make([]decisionJSON, 0, len(ds))
	for _, d := range ds {
		out = append(out, decisionJSON{Time: rfc(d.Time), Kind: d.Kind, Node: d.Node, Pod: d.Pod, Detail: d.Detail, Inferred: d.Inferred, Source: d.Source})
	}
	return out
}

type matchJSON struct {
	Kind     Kind   `json:"kind"`
	Node     string `json:"node"`
	Pod      string `json:"pod,omitempty"`
	Detail   string `json:"detail,omitempty"`
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	Delta    string `json:"delta"`
}

type divergenceJSON struct {
	Time     string       `json:"time"`
	What     string       `json:"what"`
	Decision decisionJSON `json:"decision"`
	Delta    string       `json:"delta,omitempty"`
}

type outcomeJSON struct {
	Pod     string `json:"pod"`
	Node    string `json:"node"`
	Evicted string `json:"evicted"`
	Reason  string `json:"reason"`
}

type windowJSON struct {
	From string `json:"from"`
	To   string `json:"to"`
}

type noteJSON struct {
	Time   string `json:"time"`
	Kind   string `json:"kind"`
	Node   string `json:"node,omitempty"`
	Pod    string `json:"pod,omitempty"`
	Detail string `json:"detail"`
}

type policyValueJSON struct {
	Value  string `json:"value"`
	Source string `json:"source"`
	Reason string `json:"reason,omitempty"`
}

type reportJSON struct {
	Log struct {
		First  string `json:"first"`
		Last   string `json:"last"`
		Events int64  `json:"events"`
		Nodes  int    `json:"nodes"`
		Pods   int    `json:"pods"`
	} `json:"log"`
	Policy map[string]policyValueJSON `json:"policy"`
	Phase  string                     `json:"phase"`
	Watch  struct {
		LeaseWatchStalls []windowJSON `json:"leaseWatchStalls"`
		NodeWatchStalls  []windowJSON `json:"nodeWatchStalls"`
		Sources          []string     `json:"sources,omitempty"`
	} `json:"watch"`
	Modelled   []string       `json:"modelled"`
	Recorded   []decisionJSON `json:"recorded"`
	Replayed   []decisionJSON `json:"replayed"`
	Notes      []noteJSON     `json:"notes"`
	Comparison struct {
		Matched         []matchJSON     `json:"matched"`
		Missing         []decisionJSON  `json:"missing"`
		Extra           []decisionJSON  `json:"extra"`
		FirstDivergence *divergenceJSON `json:"firstDivergence"`
	} `json:"comparison"`
	Saved     []outcomeJSON `json:"saved"`
	NewlyLost []outcomeJSON `json:"newlyLost"`
	Phases    *phasesJSON   `json:"phases,omitempty"`
	Reader    []string      `json:"reader,omitempty"`
}

func windows(ws []Window) []windowJSON {
	out := []windowJSON{}
	for _, w := range ws {
		out = append(out, windowJSON{rfc(w.From), rfc(w.To)})
	}
	return out
}

func outcomes(os []PodOutcome) []outcomeJSON {
	out := []outcomeJSON{}
	for _, o := range os {
		out = append(out, outcomeJSON{Pod: o.Pod, Node: o.Node, Evicted: rfc(o.Evicted), Reason: o.Reason})
	}
	return out
}

func (r *Report) json() reportJSON {
	var j reportJSON
	h, run, c := r.History, r.Run, r.Comparison
	j.Log.First, j.Log.Last, j.Log.Events, j.Log.Nodes, j.Log.Pods = rfc(h.First), rfc(h.Last), h.Events, len(h.Nodes), len(h.Pods)
	j.Policy = map[string]policyValueJSON{}
	for _, v := range run.Policy.Values() {
		j.Policy[v.Flag] = policyValueJSON{v.Value, v.Source, v.Reason}
	}
	j.Phase = run.Phase.String()
	j.Watch.LeaseWatchStalls, j.Watch.NodeWatchStalls = windows(r.Options.LeaseWatchStalls), windows(r.Options.NodeWatchStalls)
	j.Watch.Sources = r.Watch
	j.Modelled = h.Doctor().Modelled
	j.Recorded, j.Replayed = decisionsJSON(h.Recorded), decisionsJSON(run.Replayed)
	j.Notes = []noteJSON{}
	for _, n := range run.Notes {
		j.Notes = append(j.Notes, noteJSON{rfc(n.Time), n.Kind, n.Node, n.Pod, n.Detail})
	}
	j.Comparison.Matched = []matchJSON{}
	for _, m := range c.Matched {
		j.Comparison.Matched = append(j.Comparison.Matched, matchJSON{m.Kind, m.Node, m.Pod, m.Detail, rfc(m.Recorded), rfc(m.Replayed), m.Delta().String()})
	}
	j.Comparison.Missing, j.Comparison.Extra = decisionsJSON(c.Missing), decisionsJSON(c.Extra)
	if d := c.First; d != nil {
		j.Comparison.FirstDivergence = &divergenceJSON{Time: rfc(d.Time), What: d.What, Decision: decisionsJSON([]Decision{d.Decision})[0]}
		if d.Delta != 0 {
			j.Comparison.FirstDivergence.Delta = d.Delta.String()
		}
	}
	j.Saved, j.NewlyLost = outcomes(c.Saved), outcomes(c.NewlyLost)
	if r.Phases != nil {
		p := r.Phases.json()
		j.Phases = &p
	}
	j.Reader = r.Reader
	return j
}

// WriteJSON writes the report as one indented JSON object. Every list is
// sorted, so the bytes are the same on every run.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r.json())
}

// row is one line of the postmortem table: a decision both made, or one
// only one of them made, for one node or a group of a node's pods.
type row struct {
	at                 time.Duration // the earlier of the two, from the origin
	kind               Kind
	node, what         string
	recorded, replayed string
	delta              string
	n                  int
	group              string // what pod rows group by ("" for node rows)
}

// WriteText writes the report as a postmortem: the policy, the decisions
// side by side (a node's pods with the same times on one line), what
// diverged first, the pods saved and lost and why, and what was modelled.
func (r *Report) WriteText(w io.Writer) error {
	h, run, c := r.History, r.Run, r.Comparison
	o := func(t time.Time) string { return Offset(h.First, t) }
	var b strings.Builder
	fmt.Fprintf(&b, "Incident replay: %s to %s (%s), %d audit events, %d nodes, %d pods\n", rfc(h.First), rfc(h.Last),
		h.Last.Sub(h.First).Round(time.Millisecond), h.Events, len(h.Nodes), len(h.Pods))
	for _, l := range r.Reader {
		fmt.Fprintf(&b, "Reader: %s\n", l)
	}
	fmt.Fprintf(&b, "Times are offsets from %s.\n\nPolicy:\n", rfc(h.First))
	writePolicy(&b, run.Policy)
	fmt.Fprintf(&b, "  monitor pass phase: %v\n", run.Phase)
	for _, ww := range r.Options.LeaseWatchStalls {
		fmt.Fprintf(&b, "  lease-watch-stall: %s to %s (modelled)\n", o(ww.From), o(ww.To))
	}
	for _, ww := range r.Options.NodeWatchStalls {
		fmt.Fprintf(&b, "  node-watch-stall: %s to %s (modelled)\n", o(ww.From), o(ww.To))
	}
	for _, l := range r.Watch {
		fmt.Fprintf(&b, "  watch: %s\n", l)
	}
	// The table.
	var rows []row
	add := func(at time.Time, kind Kind, node, pod, detail, rec, rep, delta string) {
		what := node
		if pod != "" {
			what = "pods of " + node
		}
		if detail != "" {
			what += " " + detail
		}
		x := row{at: at.Sub(h.First), kind: kind, node: node, what: what, recorded: rec, replayed: rep, delta: delta, n: 1}
		if pod != "" {
			x.group = what
		}
		if pod != "" && len(rows) > 0 {
			last := &rows[len(rows)-1]
			if last.group == x.group && last.kind == x.kind && last.recorded == x.recorded && last.replayed == x.replayed && last.delta == x.delta {
				last.n++
				return
			}
		}
		if pod != "" {
			x.what = pod + " (" + cmp.Or(node, "node unknown") + ")"
		}
		rows = append(rows, x)
	}
	type ent struct {
		at   time.Time
		d    Decision
		rec  string
		rep  string
		dlt  string
		kind int
	}
	var ents []ent
	for _, m := range c.Matched {
		at := m.Recorded
		if m.Replayed.Before(at) {
			at = m.Replayed
		}
		dl := m.Delta().Round(time.Millisecond)
		ds := dl.String()
		if dl >= 0 {
			ds = "+" + ds
		}
		if dl.Abs() > run.Policy.NodeMonitorPeriod {
			ds += " !"
		}
		ents = append(ents, ent{at, Decision{Time: at, Kind: m.Kind, Node: m.Node, Pod: m.Pod, Detail: m.Detail}, o(m.Recorded), o(m.Replayed), ds, 0})
	}
	for _, d := range c.Missing {
		ents = append(ents, ent{d.Time, d, o(d.Time), "-", "missing", 1})
	}
	for _, d := range c.Extra {
		ents = append(ents, ent{d.Time, d, "-", o(d.Time), "extra", 2})
	}
	// Within an instant and kind, a node's pods sit together.
	slices.SortStableFunc(ents, func(a, b ent) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(kindOrder(a.d.Kind), kindOrder(b.d.Kind)), cmp.Compare(a.d.Node, b.d.Node),
			cmp.Compare(a.kind, b.kind), cmp.Compare(a.rec, b.rec), cmp.Compare(a.rep, b.rep), cmp.Compare(a.d.Pod, b.d.Pod), cmp.Compare(a.d.Detail, b.d.Detail))
	})
	for _, e := range ents {
		add(e.at, e.d.Kind, e.d.Node, e.d.Pod, e.d.Detail, e.rec, e.rep, e.dlt)
	}
	fmt.Fprintf(&b, "\nDecisions (recorded vs replayed; \"!\" more than a monitor period apart):\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  KIND\tOBJECT\tRECORDED\tREPLAYED\tDELTA")
	for _, x := range rows {
		what := x.what
		if x.n > 1 {
			what = fmt.Sprintf("%d pods of %s", x.n, x.node)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", x.kind, what, x.recorded, x.replayed, x.delta)
	}
	if len(rows) == 0 {
		fmt.Fprintln(tw, "  (none)\t\t\t\t")
	}
	tw.Flush()
	fmt.Fprintf(&b, "\nMatched %d, missing %d, extra %d.\n", len(c.Matched), len(c.Missing), len(c.Extra))
	if d := c.First; d != nil {
		obj := d.Decision.Node
		if d.Decision.Pod != "" {
			obj = d.Decision.Pod
		}
		fmt.Fprintf(&b, "First divergence at %s: %s %s %s%s", o(d.Time), d.What, d.Decision.Kind, obj, strings.TrimRight(" "+d.Decision.Detail, " "))
		if d.Delta != 0 {
			fmt.Fprintf(&b, " (%v)", d.Delta.Round(time.Millisecond))
		}
		b.WriteString("\n")
	} else {
		b.WriteString("No divergence: every recorded decision replayed within a monitor period.\n")
	}
	writeOutcomes(&b, "Pods saved (the recording evicted them, the replay did not)", c.Saved, o)
	writeOutcomes(&b, "Pods newly lost (the replay evicted them, the recording did not)", c.NewlyLost, o)
	if r.Phases != nil {
		r.Phases.writeText(&b)
	}
	counts, podDrops := map[string]int{}, 0
	for _, n := range run.Notes {
		counts[n.Kind]++
		if n.Kind == NoteReactionDropped && n.Pod != "" {
			podDrops++
		}
	}
	if len(counts) > 0 {
		b.WriteString("\nModelled during the replay:\n")
		listed := 0
		for _, n := range run.Notes {
			if n.Kind == NoteKubeletReposted || n.Kind == NoteKubeletPodsReady || (n.Kind == NoteReactionDropped && n.Pod != "") {
				continue
			}
			if n.Kind == NoteReactionDropped {
				// The first few by name; all are counted below (and in JSON).
				if listed++; listed > maxListedReactions {
					continue
				}
				fmt.Fprintf(&b, "  %s %s %s: %s\n", o(n.Time), n.Kind, n.Node, n.Detail)
				continue
			}
			fmt.Fprintf(&b, "  %s %s: %s\n", o(n.Time), n.Kind, n.Detail)
		}
		if k := counts[NoteKubeletReposted]; k > 0 {
			fmt.Fprintf(&b, "  %d kubelet reposts of Ready after a replayed Unknown the recording lacks (at the kubelet's next write, within 10s)\n", k)
		}
		if k := counts[NoteKubeletPodsReady]; k > 0 {
			fmt.Fprintf(&b, "  %d pod status syncs putting back Ready after replayed Ready=False writes the recording lacks\n", k)
		}
		if k := counts[NoteReactionDropped]; k > 0 {
			more := ""
			if k-podDrops > maxListedReactions {
				more = fmt.Sprintf("; the first %d node posts named above, all in the JSON notes", maxListedReactions)
			}
			fmt.Fprintf(&b, "  %d recorded kubelet status posts left out (%d node, %d pod): reactions to recorded controller writes the replay did not make%s\n", k, k-podDrops, podDrops, more)
		}
	}
	b.WriteString("\nModelled, not recorded (see -doctor):\n")
	for _, m := range h.Doctor().Modelled {
		fmt.Fprintf(&b, "  - %s\n", m)
	}
	if k := counts[NoteReactionDropped]; k > 0 {
		fmt.Fprintf(&b, "  - this replay left out %d of those recorded reactions (%d node status posts, %d pod status posts; the notes list each)\n", k, k-podDrops, podDrops)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writePolicy writes the policy's values, a guess with its reason on its
// own line so that no one takes it for a value given.
func writePolicy(b *strings.Builder, p Policy) {
	guessed := 0
	for _, v := range p.Values() {
		if v.Source == SourceGuessed {
			guessed++
			fmt.Fprintf(b, "  --%s=%s   guessed: %s\n", v.Flag, v.Value, v.Reason)
			continue
		}
		fmt.Fprintf(b, "  --%s=%s (%s)\n", v.Flag, v.Value, v.Source)
	}
	if guessed > 0 {
		what, them := fmt.Sprintf("%d values", guessed), "them"
		if guessed == 1 {
			what, them = "1 value", "it"
		}
		fmt.Fprintf(b, "  (%s guessed from the log, not given: check %s against the cluster's kube-controller-manager; a flag given overrides its guess)\n", what, them)
	}
}

// maxListedReactions bounds the node reactions left out that the text
// report names one by one.
const maxListedReactions = 20

func writeOutcomes(b *strings.Builder, title string, os []PodOutcome, o func(time.Time) string) {
	fmt.Fprintf(b, "\n%s: %d\n", title, len(os))
	for _, p := range os {
		fmt.Fprintf(b, "  %s (evicted %s): %s\n", p.Pod, o(p.Evicted), p.Reason)
	}
}

// WriteText writes the doctor's report.
func (d Doctor) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Audit log: %s to %s, %d events\n", rfc(d.First), rfc(d.Last), d.Events)
	b.WriteString("Levels of the events used:")
	for _, l := range d.Levels {
		fmt.Fprintf(&b, " %s %d", l.Level, l.N)
	}
	b.WriteString("\n")
	for _, l := range d.Reader {
		fmt.Fprintf(&b, "Reader: %s\n", l)
	}
	b.WriteString("\nRecorded decisions, rebuilt from:\n")
	writeChecks(&b, d.Decisions)
	b.WriteString("\nInputs, rebuilt from:\n")
	writeChecks(&b, d.Inputs)
	if len(d.Policy) > 0 {
		b.WriteString("\nPolicy the recorded controller ran with (given > guessed > assumed), and what the guess rests on:\n")
		for _, l := range d.Policy {
			fmt.Fprintf(&b, "  - %s\n", l)
		}
	}
	b.WriteString("\nModelled, not recorded:\n")
	for _, m := range d.Modelled {
		fmt.Fprintf(&b, "  - %s\n", m)
	}
	if len(d.Watch) > 0 {
		b.WriteString("\nWatch delivery (a recording's stalls are applied; inferred candidates only with -apply-inferred-stalls):\n")
		for _, l := range d.Watch {
			fmt.Fprintf(&b, "  - %s\n", l)
		}
	}
	ws := d.Warnings()
	fmt.Fprintf(&b, "\n%d warnings.\n", len(ws))
	_, err := io.WriteString(w, b.String())
	return err
}

func writeChecks(b *strings.Builder, cs []Check) {
	for _, c := range cs {
		fmt.Fprintf(b, "  %s: %s\n", c.What, c.From)
		if c.Warning != "" {
			fmt.Fprintf(b, "    WARNING: %s\n", c.Warning)
		}
	}
}

// WriteJSON writes the doctor's report as JSON.
func (d Doctor) WriteJSON(w io.Writer) error {
	j := struct {
		First     string       `json:"first"`
		Last      string       `json:"last"`
		Events    int64        `json:"events"`
		Levels    []LevelCount `json:"levels"`
		Decisions []Check      `json:"decisions"`
		Inputs    []Check      `json:"inputs"`
		Policy    []string     `json:"policy,omitempty"`
		Modelled  []string     `json:"modelled"`
		Reader    []string     `json:"reader,omitempty"`
		Watch     []string     `json:"watch,omitempty"`
		Warnings  []string     `json:"warnings"`
	}{rfc(d.First), rfc(d.Last), d.Events, d.Levels, d.Decisions, d.Inputs, d.Policy, d.Modelled, d.Reader, d.Watch, d.Warnings()}
	if j.Warnings == nil {
		j.Warnings = []string{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(j)
}
