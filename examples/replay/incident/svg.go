package incident

import (
	"bufio"
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/axis"
)

// MaxSVGRows bounds the node rows WriteSVG draws: a postmortem reads the
// first nodes hit; the others are counted in a line ("and N more nodes
// not drawn"), so a log of 20,000 nodes gives a picture of bounded size.
const MaxSVGRows = 200

// MaxSVGMarkers bounds the decision markers and kubelet silence bars
// WriteSVG draws (decisions of one node, kind and instant share a
// marker); those beyond are counted in a line.
const MaxSVGMarkers = 20_000

// Bounds on the text a hostile log can put into the picture.
const (
	svgMaxLabel       = 22  // characters of a node's name in its row label (the rest in its tooltip)
	svgMaxText        = 256 // characters of a name or detail in a tooltip
	svgMaxTooltipPods = 10  // pods named in one marker's tooltip
	svgMaxTitle       = 160 // characters of the header lines
)

// svgMaxStalls bounds the watch stalls shaded: an informer recording can
// give many.
const svgMaxStalls = 1000

// Geometry, in pixels, as policysim's chart.
const (
	svgW      = 1200
	svgLeft   = 210 // node labels and lane names
	svgRight  = 130 // saved and newly lost counts
	svgChartW = svgW - svgLeft - svgRight
	svgLane   = 15
	svgRowGap = 6
	svgRowH   = 2*svgLane + svgRowGap
	svgFontAt = `font-family="Helvetica, Arial, sans-serif"`
	// svgMarkerGap is the room of a marker; svgMaxNudge how far a marker
	// may move right of its time to keep clear of the one before.
	svgMarkerGap = 11
	svgMaxNudge  = 3 * svgMarkerGap
)

// Colours: policysim's where the meaning is the same.
const (
	svgColUnknown   = "#aab2bd"
	svgColNotReady  = "#f4a259"
	svgColNoExecute = "#d62828"
	svgColNoSched   = "#f77f00"
	svgColRemoved   = "#2a9d8f"
	svgColEvicted   = "#1d3557"
	svgColSilent    = "#6c757d"
	svgColLease     = "#ffd166"
	svgColNode      = "#c77dff"
	svgColGrid      = "#e4e4e4"
	svgColDiverge   = "#d62828"
	svgColSaved     = "#2a9d8f"
	svgColLost      = "#d62828"
)

// svgRow is one node's row.
type svgRow struct {
	node     string
	first    time.Time
	recorded []Decision
	replayed []Decision
	silences []Window
	saved    []string
	lost     []string
}

// svgMarker is the decisions of one lane, node, kind and instant.
type svgMarker struct {
	d         Decision // the first
	pods      []string
	n         int
	inferred  bool
	unmatched bool
}

// WriteSVG draws the report as a timeline (SVG 1.1): the time from the
// log's first event to its end along x, labelled as offsets; one row per
// node with any recorded or replayed decision or kubelet silence (by first
// event, then name), each with a "recorded" lane (what the controller
// wrote) and a "replayed" lane (under the policy), a marker per decision
// kind (node-unknown, taint-added, taint-removed, pod-not-ready,
// pod-evicted; ringed in red when missing from the replay or extra in it)
// with its decision as a tooltip, the kubelet's silences as grey bars, the
// modelled watch stalls shaded, the first divergence as a vertical line,
// and each node's pods saved and newly lost at the right. At most
// MaxSVGRows rows and MaxSVGMarkers markers are drawn; the rest are
// counted. The same report gives the same bytes.
func (r *Report) WriteSVG(w io.Writer) error {
	bw := bufio.NewWriter(w) // keeps the first error; Flush returns it
	r.drawSVG(bw)
	return bw.Flush()
}

func (r *Report) drawSVG(w io.Writer) {
	var (
		h   *History
		run *Run
		c   *Comparison
	)
	if r != nil {
		h, run, c = r.History, r.Run, r.Comparison
	}
	if h == nil {
		h = &History{}
	}
	if c == nil {
		c = &Comparison{}
	}
	origin, end := h.First, h.Last
	if run != nil {
		origin, end = run.Origin, run.End
	}
	span := max(end.Sub(origin), time.Second)
	x := func(t time.Time) float64 {
		d := min(max(t.Sub(origin), 0), span)
		return svgLeft + float64(svgChartW)*float64(d)/float64(span)
	}

	rows := svgRows(h, run, c)
	shown := rows[:min(len(rows), MaxSVGRows)]
	stalls := svgStalls(run, end)

	// Vertical layout.
	const headerH = 96
	axisTop := float64(headerH)
	rowsTop := axisTop + 30
	rowsBottom := rowsTop + float64(max(len(shown), 1))*svgRowH
	axisBottom := rowsBottom + 4
	notesTop := axisBottom + 44
	var notes []string
	if more := len(rows) - len(shown); more > 0 {
		notes = append(notes, fmt.Sprintf("and %d more nodes not drawn (at most %d rows: the first nodes hit)", more, MaxSVGRows))
	}
	markers, undrawn, silencesLeft := svgMarkers(shown, c)
	if undrawn > 0 {
		notes = append(notes, fmt.Sprintf("and %d more decisions not drawn (at most %d markers)", undrawn, MaxSVGMarkers))
	}
	if silencesLeft > 0 {
		notes = append(notes, fmt.Sprintf("and %d more kubelet silences not drawn (at most %d bars and markers)", silencesLeft, MaxSVGMarkers))
	}
	if more := len(stalls) - svgMaxStalls; more > 0 {
		stalls = stalls[:svgMaxStalls]
		notes = append(notes, fmt.Sprintf("and %d more watch stalls not drawn (at most %d)", more, svgMaxStalls))
	}
	legendTop := notesTop + float64(len(notes))*16 + 6
	height := legendTop + 62

	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" %s font-size="12">`+"\n", svgW, height, svgW, height, svgFontAt)
	fmt.Fprintf(w, `<rect x="0" y="0" width="%d" height="%.0f" fill="white"/>`+"\n", svgW, height)

	// Header.
	title := "replay of the audit log from " + svgTime(origin) + " to " + svgTime(end)
	fmt.Fprintf(w, `<text x="12" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", esc(title))
	if run != nil {
		pol := clip("policy: "+run.Policy.String(), svgMaxTitle) + "; monitor pass phase " + run.Phase.String()
		fmt.Fprintf(w, `<text x="12" y="44" fill="#444">%s</text>`+"\n", esc(pol))
	} else {
		fmt.Fprintln(w, `<text x="12" y="44" fill="#444">no replay</text>`)
	}
	counts := fmt.Sprintf("decisions matched %d, missing %d, extra %d; pods saved %d, newly lost %d", len(c.Matched), len(c.Missing), len(c.Extra), len(c.Saved), len(c.NewlyLost))
	fmt.Fprintf(w, `<text x="12" y="62" fill="#444">%s</text>`+"\n", esc(counts))
	div := "no divergence: every recorded decision replayed within a monitor period"
	if d := c.First; d != nil {
		div = "first divergence at " + Offset(origin, d.Time) + ": " + divergenceText(d)
	}
	fmt.Fprintf(w, `<text x="12" y="80" fill="#444">%s</text>`+"\n", esc(clip(div, svgMaxTitle)))

	// Watch stalls, behind everything else.
	for _, s := range stalls {
		x1, x2 := x(s.w.From), x(s.w.To)
		fmt.Fprintf(w, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="%s" fill-opacity="0.35"><title>%s</title></rect>`+"\n",
			x1, rowsTop, max(x2-x1, 1), rowsBottom-rowsTop, s.colour, esc(s.what+" from "+Offset(origin, s.w.From)+" to "+Offset(origin, s.w.To)))
	}

	// Grid and axes.
	step := axis.Step(span)
	fmt.Fprintf(w, `<g stroke="%s" stroke-width="1">`+"\n", svgColGrid)
	for t := time.Duration(0); t <= span; t += step {
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f"/>`+"\n", x(origin.Add(t)), rowsTop, x(origin.Add(t)), rowsBottom)
	}
	fmt.Fprintln(w, `</g>`)
	for _, ay := range []float64{axisTop + 10, axisBottom + 16} {
		for t := time.Duration(0); t <= span; t += step {
			fmt.Fprintf(w, `<text x="%.1f" y="%.0f" text-anchor="middle" font-size="11" fill="#444">%s</text>`+"\n", x(origin.Add(t)), ay, offsetLabel(t))
		}
	}
	fmt.Fprintf(w, `<text x="%d" y="%.0f" font-size="11" fill="#444">time since the log's first event (%s)</text>`+"\n", svgLeft, axisBottom+32, esc(svgTime(origin)))
	fmt.Fprintf(w, `<text x="%d" y="%.0f" font-size="11" fill="#444" font-weight="bold">SAVED / LOST</text>`+"\n", svgLeft+svgChartW+28, axisTop+10)

	// Rows.
	if len(shown) == 0 {
		fmt.Fprintf(w, `<text x="%d" y="%.0f" fill="#444">no decision recorded or replayed, no kubelet silent</text>`+"\n", svgLeft+8, rowsTop+20)
	}
	for i, row := range shown {
		ry := rowsTop + float64(i)*svgRowH
		if i%2 == 1 {
			fmt.Fprintf(w, `<rect x="8" y="%.0f" width="%d" height="%d" fill="#f4f4f4" fill-opacity="0.6"/>`+"\n", ry, svgW-16, svgRowH)
		}
		name := svgNodeName(row.node)
		fmt.Fprintf(w, `<text class="node" x="12" y="%.0f" font-size="11"><title>%s</title>%s</text>`+"\n", ry+svgLane+5, esc(clip(name, svgMaxText)), esc(clip(name, svgMaxLabel)))
		fmt.Fprintf(w, `<text x="%d" y="%.0f" text-anchor="end" font-size="9" fill="#666">recorded</text>`+"\n", svgLeft-10, ry+svgLane-3)
		fmt.Fprintf(w, `<text x="%d" y="%.0f" text-anchor="end" font-size="9" fill="#666">replayed</text>`+"\n", svgLeft-10, ry+2*svgLane-3)
		fmt.Fprintf(w, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#ddd"/>`+"\n", svgLeft, ry+svgLane, svgLeft+svgChartW, ry+svgLane)
		for _, s := range row.silences {
			to := s.To
			if to.IsZero() {
				to = end
			}
			x1, x2 := x(s.From), x(to)
			tip := "kubelet of " + clip(name, svgMaxText) + " silent (no Lease renewal or status post) from " + Offset(origin, s.From)
			if s.To.IsZero() {
				tip += " to the log's end"
			} else {
				tip += " to " + Offset(origin, s.To)
			}
			fmt.Fprintf(w, `<rect x="%.1f" y="%.0f" width="%.1f" height="4" fill="%s"><title>%s</title></rect>`+"\n", x1, ry+svgLane-2, max(x2-x1, 1), svgColSilent, esc(tip))
		}
		for lane, ms := range markers[i] {
			cy := ry + float64(lane)*svgLane + svgLane/2 + 1
			prev := -1e9
			for _, m := range ms {
				// Markers at one instant sit side by side, not on top of
				// each other; a crowd past svgMaxNudge overlaps.
				mx := x(m.d.Time)
				if nx := prev + svgMarkerGap; mx < nx && nx-mx <= svgMaxNudge {
					mx = nx
				}
				drawMarker(w, mx, cy, m, lane == 0, origin)
				prev = mx
			}
		}
		if len(row.saved)+len(row.lost) > 0 {
			tx := svgLeft + svgChartW + 28
			var tip []string
			for _, p := range capList(row.saved, svgMaxTooltipPods) {
				tip = append(tip, "saved: "+clip(p, svgMaxText))
			}
			for _, p := range capList(row.lost, svgMaxTooltipPods) {
				tip = append(tip, "newly lost: "+clip(p, svgMaxText))
			}
			fmt.Fprintf(w, `<text x="%d" y="%.0f" font-size="11"><title>%s</title><tspan fill="%s">%d saved</tspan> <tspan fill="%s">%d lost</tspan></text>`+"\n",
				tx, ry+svgLane+5, esc(strings.Join(tip, "\n")), svgColSaved, len(row.saved), svgColLost, len(row.lost))
		}
	}

	// The first divergence, over the rows.
	if d := c.First; d != nil {
		dx := x(d.Time)
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="%s" stroke-width="1.5" stroke-dasharray="5 3"><title>%s</title></line>`+"\n",
			dx, rowsTop-4, dx, rowsBottom, svgColDiverge, esc("first divergence at "+svgTime(d.Time)+" ("+Offset(origin, d.Time)+"): "+divergenceText(d)))
		label, anchor, lx := "first divergence "+Offset(origin, d.Time), "start", dx+4
		if lx+float64(len(label))*6 > svgLeft+svgChartW {
			anchor, lx = "end", dx-4
		}
		fmt.Fprintf(w, `<text x="%.1f" y="%.0f" text-anchor="%s" font-size="10" font-weight="bold" fill="%s" stroke="white" stroke-width="3" paint-order="stroke">%s</text>`+"\n",
			lx, rowsTop-5, anchor, svgColDiverge, esc(label))
	}
	fmt.Fprintf(w, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#444"/>`+"\n", svgLeft, axisBottom, svgLeft+svgChartW, axisBottom)

	// Notes and legend.
	for i, n := range notes {
		fmt.Fprintf(w, `<text x="12" y="%.0f" fill="#444">%s</text>`+"\n", notesTop+float64(i)*16, esc(n))
	}
	lx, ly := 12.0, legendTop
	item := func(draw func(cx, cy float64), label string) {
		draw(lx+8, ly+6)
		fmt.Fprintf(w, `<text x="%.0f" y="%.0f" font-size="11">%s</text>`+"\n", lx+20, ly+10, esc(label))
		lx += 20 + float64(len(label))*6.2 + 16
	}
	kind := func(k Kind, detail string) func(cx, cy float64) {
		return func(cx, cy float64) { svgShape(w, cx, cy, k, detail) }
	}
	item(kind(KindNodeUnknown, ""), "node-unknown")
	item(kind(KindTaintAdded, "x:NoExecute"), "taint-added NoExecute")
	item(kind(KindTaintAdded, "x:NoSchedule"), "taint-added NoSchedule")
	item(kind(KindTaintRemoved, ""), "taint-removed")
	item(kind(KindPodNotReady, ""), "pod-not-ready")
	item(kind(KindPodEvicted, ""), "pod-evicted")
	item(func(cx, cy float64) {
		fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="6.5" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", cx, cy, svgColDiverge)
	}, "missing from the replay, or extra")
	lx, ly = 12, ly+22
	box := func(c string, opacity string, h float64) func(cx, cy float64) {
		return func(cx, cy float64) {
			fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="16" height="%.0f" fill="%s" fill-opacity="%s"/>`+"\n", cx-8, cy-h/2, h, c, opacity)
		}
	}
	item(box(svgColSilent, "1", 4), "kubelet silent (over "+silenceMin.String()+")")
	for _, st := range []struct{ colour, what string }{{svgColLease, svgLeaseStalled}, {svgColNode, svgNodeStalled}} {
		if slices.ContainsFunc(stalls, func(s svgStall) bool { return s.what == st.what }) {
			item(box(st.colour, "0.35", 12), st.what)
		}
	}
	item(func(cx, cy float64) {
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="5 3"/>`+"\n", cx, cy-7, cx, cy+7, svgColDiverge)
	}, "first divergence")
	fmt.Fprintln(w, `</svg>`)
}

// svgRows returns a row for every node with a decision or a silence, by
// first event, then name. Decisions without a node (a pod's node unknown
// to the log) share the row of the node "".
func svgRows(h *History, run *Run, c *Comparison) []*svgRow {
	byNode := map[string]*svgRow{}
	get := func(node string, at time.Time) *svgRow {
		row := byNode[node]
		if row == nil {
			row = &svgRow{node: node, first: at}
			byNode[node] = row
		}
		if at.Before(row.first) {
			row.first = at
		}
		return row
	}
	for _, d := range h.Recorded {
		row := get(d.Node, d.Time)
		row.recorded = append(row.recorded, d)
	}
	if run != nil {
		for _, d := range run.Replayed {
			row := get(d.Node, d.Time)
			row.replayed = append(row.replayed, d)
		}
		for name, f := range run.nodes {
			if len(f.silences) > 0 {
				get(name, f.silences[0].From).silences = f.silences
			}
		}
	}
	for _, o := range c.Saved {
		row := get(o.Node, o.Evicted)
		row.saved = append(row.saved, o.Pod)
	}
	for _, o := range c.NewlyLost {
		row := get(o.Node, o.Evicted)
		row.lost = append(row.lost, o.Pod)
	}
	rows := make([]*svgRow, 0, len(byNode))
	for _, row := range byNode {
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b *svgRow) int {
		return cmp.Or(a.first.Compare(b.first), cmp.Compare(a.node, b.node))
	})
	return rows
}

// svgMarkers groups each shown row's decisions into markers, per lane
// (recorded, replayed), up to MaxSVGMarkers markers and silence bars in
// all (a row's silences first); it returns them and how many decisions
// and silences were left out.
func svgMarkers(rows []*svgRow, c *Comparison) (markers [][2][]svgMarker, undrawn, silencesLeft int) {
	// The decisions Compare left unmatched, counted by identity.
	key := func(d Decision) string {
		return d.object() + "\x00" + d.Time.UTC().Format(time.RFC3339Nano) + "\x00" + d.Source
	}
	missing, extra := map[string]int{}, map[string]int{}
	for _, d := range c.Missing {
		missing[key(d)]++
	}
	for _, d := range c.Extra {
		extra[key(d)]++
	}
	out := make([][2][]svgMarker, len(rows))
	drawn, undrawn := 0, 0
	for i, row := range rows {
		if k := MaxSVGMarkers - drawn; len(row.silences) > k {
			silencesLeft += len(row.silences) - k
			row.silences = row.silences[:k]
		}
		drawn += len(row.silences)
		for lane, ds := range [2][]Decision{row.recorded, row.replayed} {
			unmatched := missing
			if lane == 1 {
				unmatched = extra
			}
			var ms []svgMarker
			for _, d := range ds {
				um := false
				if k := key(d); unmatched[k] > 0 {
					unmatched[k]--
					um = true
				}
				if n := len(ms); n > 0 {
					m := &ms[n-1]
					if m.d.Time.Equal(d.Time) && m.d.Kind == d.Kind && m.d.Detail == d.Detail && m.unmatched == um {
						m.n++
						m.inferred = m.inferred || d.Inferred
						if d.Pod != "" && len(m.pods) < svgMaxTooltipPods {
							m.pods = append(m.pods, d.Pod)
						}
						continue
					}
				}
				if drawn >= MaxSVGMarkers {
					undrawn++
					continue
				}
				drawn++
				m := svgMarker{d: d, n: 1, inferred: d.Inferred, unmatched: um}
				if d.Pod != "" {
					m.pods = []string{d.Pod}
				}
				ms = append(ms, m)
			}
			out[i][lane] = ms
		}
	}
	return out, undrawn, silencesLeft
}

// drawMarker draws one marker with its decisions as the tooltip.
func drawMarker(w io.Writer, cx, cy float64, m svgMarker, recorded bool, origin time.Time) {
	d := m.d
	lane := "replayed"
	if recorded {
		lane = "recorded"
	}
	var tip strings.Builder
	fmt.Fprintf(&tip, "%s %s at %s (%s)\nnode: %s", lane, d.Kind, svgTime(d.Time), Offset(origin, d.Time), clip(svgNodeName(d.Node), svgMaxText))
	if d.Detail != "" {
		fmt.Fprintf(&tip, "\ntaint: %s", clip(d.Detail, svgMaxText))
	}
	if len(m.pods) > 0 {
		if m.n == 1 {
			fmt.Fprintf(&tip, "\npod: %s", clip(m.pods[0], svgMaxText))
		} else {
			fmt.Fprintf(&tip, "\n%d pods:", m.n)
			for _, p := range m.pods {
				fmt.Fprintf(&tip, "\n  %s", clip(p, svgMaxText))
			}
			if more := m.n - len(m.pods); more > 0 {
				fmt.Fprintf(&tip, "\n  and %d more", more)
			}
		}
	} else if m.n > 1 {
		fmt.Fprintf(&tip, "\n%d decisions", m.n)
	}
	if m.inferred {
		tip.WriteString("\ninferred (a write without a body)")
	}
	if recorded && d.Source != "" {
		fmt.Fprintf(&tip, "\nsource: %s", clip(d.Source, svgMaxText))
	}
	if m.unmatched {
		if recorded {
			tip.WriteString("\nmissing from the replay")
		} else {
			tip.WriteString("\nextra: the recording does not have it")
		}
	}
	fmt.Fprintf(w, `<g><title>%s</title>`, esc(tip.String()))
	if m.unmatched {
		fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="6.5" fill="none" stroke="%s" stroke-width="1.5"/>`, cx, cy, svgColDiverge)
	}
	svgShape(w, cx, cy, d.Kind, d.Detail)
	fmt.Fprintln(w, `</g>`)
}

// svgShape draws a decision kind's shape centred at cx, cy.
func svgShape(w io.Writer, cx, cy float64, k Kind, detail string) {
	switch k {
	case KindNodeUnknown:
		fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="4.5" fill="%s" stroke="#444"/>`, cx, cy, svgColUnknown)
	case KindTaintAdded:
		c := svgColNoSched
		if strings.HasSuffix(detail, ":NoExecute") {
			c = svgColNoExecute
		}
		fmt.Fprintf(w, `<path d="M%.1f %.1f l5 9 h-10 z" fill="%s"/>`, cx, cy-5, c)
	case KindTaintRemoved:
		fmt.Fprintf(w, `<path d="M%.1f %.1f l5 -9 h-10 z" fill="white" stroke="%s" stroke-width="1.5"/>`, cx, cy+5, svgColRemoved)
	case KindPodNotReady:
		fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="8" height="8" fill="%s" stroke="#444" stroke-width="0.5"/>`, cx-4, cy-4, svgColNotReady)
	case KindPodEvicted:
		fmt.Fprintf(w, `<path d="M%.1f %.1f l8 8 m0 -8 l-8 8" stroke="%s" stroke-width="2.5"/>`, cx-4, cy-4, svgColEvicted)
	default:
		fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="3" fill="black"/>`, cx, cy)
	}
}

// What the stalls' shading stands for.
const (
	svgLeaseStalled = "Lease watch stalled (modelled)"
	svgNodeStalled  = "Node watch stalled (modelled)"
)

// svgStall is a modelled watch stall, shaded across the rows.
type svgStall struct {
	w      Window
	what   string
	colour string
}

// svgStalls returns the stalls the run modelled, from its notes: each
// stall note to the next resume note of its cache (a stall not resumed
// lasts to the end).
func svgStalls(run *Run, end time.Time) []svgStall {
	if run == nil {
		return nil
	}
	var out []svgStall
	var lease, node time.Time
	leaseOn, nodeOn := false, false
	for _, n := range run.Notes {
		switch n.Kind {
		case NoteLeaseStalled:
			lease, leaseOn = n.Time, true
		case NoteLeaseResumed:
			if leaseOn {
				out = append(out, svgStall{Window{lease, n.Time}, svgLeaseStalled, svgColLease})
				leaseOn = false
			}
		case NoteNodeStalled:
			node, nodeOn = n.Time, true
		case NoteNodeResumed:
			if nodeOn {
				out = append(out, svgStall{Window{node, n.Time}, svgNodeStalled, svgColNode})
				nodeOn = false
			}
		}
	}
	if leaseOn {
		out = append(out, svgStall{Window{lease, end}, svgLeaseStalled, svgColLease})
	}
	if nodeOn {
		out = append(out, svgStall{Window{node, end}, svgNodeStalled, svgColNode})
	}
	return out
}

// divergenceText says what the first divergence is: "late node-unknown n1
// (20.001s)".
func divergenceText(d *Divergence) string {
	obj := d.Decision.Node
	if d.Decision.Pod != "" {
		obj = d.Decision.Pod
	}
	s := d.What + " " + string(d.Decision.Kind) + " " + clip(obj, svgMaxText)
	if d.Decision.Detail != "" {
		s += " " + clip(d.Decision.Detail, svgMaxText)
	}
	if d.Delta != 0 {
		s += " (" + d.Delta.Round(time.Millisecond).String() + ")"
	}
	return s
}

func svgNodeName(node string) string {
	if node == "" {
		return "(node unknown)"
	}
	return node
}

func svgTime(t time.Time) string {
	if t.IsZero() {
		return "(no time)"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// esc escapes text for XML; invalid characters become U+FFFD.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// clip shortens s to n runes, with an ellipsis.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func capList(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
}

// offsetLabel is an axis label as an offset: "0", "+45s", "+5m30s".
func offsetLabel(t time.Duration) string {
	if t == 0 {
		return "0"
	}
	return "+" + axis.Label(t)
}
