package sim

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kubelifecycle/lifecycle/internal/axis"
)

// svgMaxNodeRows is how many node rows the chart draws at most; the other
// changed nodes are counted in a note.
const svgMaxNodeRows = 40

// Chart geometry, in pixels.
const (
	svgWidth     = 1100
	svgLeft      = 160 // label column
	svgRight     = 30
	svgZoneRow   = 18
	svgNodeRow   = 28
	svgCumRow    = 48 // a zone's cumulative chart
	svgCumH      = 36
	svgChartW    = svgWidth - svgLeft - svgRight
	svgFont      = "font-family=\"Helvetica, Arial, sans-serif\""
	svgMinLabelW = 7 // pixels per character, to decide whether a label fits
)

// Colours.
const (
	colReady       = "#8fd694"
	colUnknown     = "#aab2bd"
	colNotReady    = "#f4a259"
	colTainted     = "#d62828"
	colKubeletDown = "#222222"
	colGrid        = "#e4e4e4"
	colEvicted     = "#1d3557"
	colPending     = "#f77f00"
	// Devices.
	colDevTainted = "#7b2cbf" // a driver's NoExecute taint on a device
	colDevEvicted = "#9d4edd" // pods evicted for device taints
	colHolding    = "#e85d04" // a driver's breaker holding
	colReleased   = "#ffba08" // ... released by an operator
)

var stateColor = map[string]string{
	"Initial":           "#dddddd",
	"Normal":            "#cdeccb",
	"PartialDisruption": "#ffd166",
	"FullDisruption":    "#ef476f",
}

// span is a coloured interval on a row.
type span struct {
	from, to time.Duration
	what     string
}

// nodeTrack is everything drawn on one node's row.
type nodeTrack struct {
	name, zone  string
	last        string // a group of alike nodes: the last one's name
	count       int    // how many nodes the row stands for
	order       int    // position in res.Nodes
	health      []span
	tainted     []span
	kubeletDown []span
	evictions   []mark
	evicting    []time.Duration // legacy: queued for eviction
	devTainted  []span          // while a device of the node carries its driver's taint
	devEvicted  []mark          // pods evicted for device taints
}

type mark struct {
	at time.Duration
	n  int
}

// WriteSVG draws the run as a timeline chart: the zones' states along the
// top (and full disruption mode); per zone, the cumulative nodes tainted
// (legacy: queued for eviction) and pods evicted over time, with the work
// still pending at the end marked at the right edge; then one row per node
// that changed (bands
// for Ready, NotReady and Unknown, a red bar while it carries a NoExecute
// health taint, a black bar while its kubelet is down, and a mark with the
// number of pods evicted), a time axis and a legend. At most
// svgMaxNodeRows nodes are drawn, taken round-robin across zones; the rest
// are counted, and the sampling rule is written on the picture.
func WriteSVG(w io.Writer, res *Result) error {
	bw := bufio.NewWriter(w)
	ew := &errWriter{w: bw}
	drawSVG(ew, res)
	if ew.err != nil {
		return ew.err
	}
	return bw.Flush()
}

func drawSVG(w io.Writer, res *Result) {
	end := res.Scenario.Duration.D()
	tracks, changed := nodeTracks(res)
	tracks = mergeAlike(tracks)
	shown := pickRows(tracks, res.Scenario.Zones, svgMaxNodeRows)
	zoneStates := zoneSpans(res)
	disruption := disruptionSpans(res)

	x := func(t time.Duration) float64 {
		return svgLeft + float64(svgChartW)*float64(min(max(t, 0), end))/float64(end)
	}

	// Vertical layout.
	y := 24.0
	titleY := y
	y += 20
	subY := y
	y += 34
	zonesTop := y
	y += float64(len(res.Scenario.Zones)) * svgZoneRow
	if len(disruption) > 0 {
		y += svgZoneRow
	}
	y += 30
	cumTop := y
	y += float64(len(res.Scenario.Zones)) * svgCumRow
	devTop := 0.0
	if d := res.Summary.Devices; d != nil {
		y += 30
		devTop = y
		y += float64(len(d.Drivers)) * svgCumRow
	}
	y += 24
	nodesTop := y
	y += float64(max(len(shown), 1)) * svgNodeRow
	axisY := y + 4
	y = axisY + 46
	noteY := y
	y += 16 * 3 // the notes: at most three lines
	legendY := y + 4
	height := legendY + 40
	if res.Summary.Devices != nil {
		height += 20 // the device legend's line
	}

	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" %s font-size="12">`+"\n", svgWidth, height, svgWidth, height, svgFont)
	fmt.Fprintf(w, `<rect x="0" y="0" width="%d" height="%.0f" fill="white"/>`+"\n", svgWidth, height)
	mode := "taint-based eviction"
	if res.Options.PodEvictionTimeout > 0 {
		mode = fmt.Sprintf("legacy node eviction (pod-eviction-timeout %v)", res.Options.PodEvictionTimeout)
	}
	fmt.Fprintf(w, `<text x="12" y="%.0f" font-size="16" font-weight="bold">policysim: %s — %s</text>`+"\n", titleY, esc(res.Scenario.Name), esc(mode))
	sub := fmt.Sprintf("%d nodes, %d pods, %s simulated; %d pods evicted", res.Summary.Nodes, res.Summary.Pods, Dur(end), res.Summary.PodsEvicted)
	if d := res.Summary.Devices; d != nil {
		sub += fmt.Sprintf(" (%d for device taints)", d.PodsEvicted)
	}
	if res.Scenario.Description != "" {
		sub = res.Scenario.Description + " — " + sub
	}
	fmt.Fprintf(w, `<text x="12" y="%.0f" fill="#444">%s</text>`+"\n", subY, esc(sub))

	// Grid lines and the time axis.
	step := axis.Step(end)
	fmt.Fprintf(w, `<g stroke="%s" stroke-width="1">`+"\n", colGrid)
	for t := time.Duration(0); t <= end; t += step {
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f"/>`+"\n", x(t), zonesTop-4, x(t), axisY)
	}
	fmt.Fprintln(w, `</g>`)
	fmt.Fprintf(w, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#444"/>`+"\n", svgLeft, axisY, svgLeft+svgChartW, axisY)
	for t := time.Duration(0); t <= end; t += step {
		fmt.Fprintf(w, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#444"/>`+"\n", x(t), axisY, x(t), axisY+5)
		fmt.Fprintf(w, `<text x="%.1f" y="%.0f" text-anchor="middle" font-size="11">%s</text>`+"\n", x(t), axisY+18, esc(axis.Label(t)))
	}
	fmt.Fprintf(w, `<text x="%d" y="%.0f" font-size="11" fill="#444">time since start</text>`+"\n", svgLeft+svgChartW/2-45, axisY+31)

	// Zone states.
	fmt.Fprintf(w, `<text x="12" y="%.0f" font-size="11" fill="#444" font-weight="bold">ZONES</text>`+"\n", zonesTop-8)
	for i, z := range res.Scenario.Zones {
		ry := zonesTop + float64(i)*svgZoneRow
		fmt.Fprintf(w, `<text x="12" y="%.0f">%s</text>`+"\n", ry+12, esc(z.Name))
		for _, s := range zoneStates[z.Name] {
			drawBand(w, x(s.from), x(s.to), ry+1, svgZoneRow-3, stateColor[s.what], s.what, "#222")
		}
	}
	if len(disruption) > 0 {
		ry := zonesTop + float64(len(res.Scenario.Zones))*svgZoneRow
		fmt.Fprintf(w, `<text x="12" y="%.0f">full disruption</text>`+"\n", ry+12)
		for _, s := range disruption {
			drawBand(w, x(s.from), x(s.to), ry+1, svgZoneRow-3, "#7b2cbf", "no evictions anywhere", "white")
		}
	}

	// Cumulative nodes tainted and pods evicted, per zone.
	drawCumulative(w, res, cumTop, x)
	if res.Summary.Devices != nil {
		drawDevices(w, res, devTop, x)
	}

	// Node rows.
	fmt.Fprintf(w, `<text x="12" y="%.0f" font-size="11" fill="#444" font-weight="bold">NODES</text>`+"\n", nodesTop-4)
	if len(shown) == 0 {
		fmt.Fprintf(w, `<text x="%d" y="%.0f" fill="#444">no node changed</text>`+"\n", svgLeft+8, nodesTop+14)
	}
	for i, tr := range shown {
		ry := nodesTop + float64(i)*svgNodeRow
		if i%2 == 1 {
			fmt.Fprintf(w, `<rect x="8" y="%.0f" width="%d" height="%d" fill="#f7f7f7"/>`+"\n", ry, svgWidth-16, svgNodeRow)
		}
		if tr.count > 1 {
			fmt.Fprintf(w, `<text class="node" x="12" y="%.0f" font-size="11">%s … %s</text>`+"\n", ry+13, esc(tr.name), esc(tr.last))
			fmt.Fprintf(w, `<text x="12" y="%.0f" font-size="10" fill="#666">%d nodes alike</text>`+"\n", ry+25, tr.count)
		} else {
			fmt.Fprintf(w, `<text class="node" x="12" y="%.0f">%s</text>`+"\n", ry+18, esc(tr.name))
		}
		var marks []float64 // where eviction labels go: band labels keep clear
		for _, m := range tr.evictions {
			marks = append(marks, x(m.at))
		}
		for _, m := range tr.devEvicted {
			marks = append(marks, x(m.at))
		}
		for _, s := range tr.kubeletDown {
			c := colKubeletDown
			if s.what == kubeletWord(KindKubeletNotReady) {
				c = colNotReady
			}
			fmt.Fprintf(w, `<rect x="%.1f" y="%.0f" width="%.1f" height="3" fill="%s"><title>kubelet %s from %s</title></rect>`+"\n", x(s.from), ry+3, max(x(s.to)-x(s.from), 1), c, esc(s.what), Offset(s.from))
		}
		for _, s := range tr.health {
			c := map[string]string{"Ready": colReady, "Unknown": colUnknown, "NotReady": colNotReady}[s.what]
			label := ""
			if s.from > 0 {
				label = s.what + " " + Offset(s.from)
				x1 := x(s.from)
				x2 := x1 + float64(len(label)*svgMinLabelW) + 8
				if slices.ContainsFunc(marks, func(m float64) bool { return m > x1-70 && m < x2 }) {
					label = "" // the eviction label is there
				}
			}
			drawBandTitled(w, x(s.from), x(s.to), ry+8, 12, c, label, s.what+" from "+Offset(s.from), "#222")
		}
		for _, s := range tr.tainted {
			fmt.Fprintf(w, `<rect x="%.1f" y="%.0f" width="%.1f" height="4" fill="%s"><title>%s from %s</title></rect>`+"\n", x(s.from), ry+21, max(x(s.to)-x(s.from), 1), colTainted, esc(s.what), Offset(s.from))
		}
		for _, s := range tr.devTainted {
			fmt.Fprintf(w, `<rect x="%.1f" y="%.0f" width="%.1f" height="3" fill="%s"><title>%s from %s</title></rect>`+"\n", x(s.from), ry+25, max(x(s.to)-x(s.from), 1), colDevTainted, esc(s.what), Offset(s.from))
		}
		for _, m := range tr.devEvicted {
			fmt.Fprintf(w, `<rect x="%.1f" y="%.0f" width="2" height="22" fill="%s"><title>%d pods evicted for device taints at %s</title></rect>`+"\n", x(m.at)-1, ry+3, colDevEvicted, m.n, Offset(m.at))
			label := fmt.Sprintf("%d evicted", m.n)
			lx, anchor := x(m.at)+4, "start"
			if lx+float64(len(label))*6.5 > svgLeft+svgChartW {
				lx, anchor = x(m.at)-4, "end"
			}
			fmt.Fprintf(w, `<text x="%.1f" y="%.0f" text-anchor="%s" font-size="10" font-weight="bold" fill="%s" stroke="white" stroke-width="3" paint-order="stroke">%s</text>`+"\n", lx, ry+18, anchor, colDevEvicted, label)
		}
		for _, t := range tr.evicting {
			fmt.Fprintf(w, `<path d="M%.1f %.0f l5 -6 l5 6 l-5 6 z" fill="%s" stroke="white"><title>queued for eviction at %s</title></path>`+"\n", x(t)-5, ry+14, colTainted, Offset(t))
		}
		for _, m := range tr.evictions {
			fmt.Fprintf(w, `<rect x="%.1f" y="%.0f" width="2" height="22" fill="black"><title>%d pods evicted at %s</title></rect>`+"\n", x(m.at)-1, ry+3, m.n, Offset(m.at))
			label := fmt.Sprintf("%d evicted", m.n)
			if m.n == 1 {
				label = "1 evicted"
			}
			lx, anchor := x(m.at)+4, "start"
			if lx+float64(len(label))*6.5 > svgLeft+svgChartW {
				lx, anchor = x(m.at)-4, "end"
			}
			fmt.Fprintf(w, `<text x="%.1f" y="%.0f" text-anchor="%s" font-size="10" font-weight="bold" stroke="white" stroke-width="3" paint-order="stroke">%s</text>`+"\n", lx, ry+18, anchor, label)
		}
	}

	// Note and legend.
	var notes []string
	drawn := 0
	for _, tr := range shown {
		drawn += tr.count
	}
	if more := changed - drawn; more > 0 {
		per := map[string]int{}
		for _, tr := range tracks {
			per[tr.zone] += tr.count
		}
		for _, tr := range shown {
			per[tr.zone] -= tr.count
		}
		var parts []string
		for _, z := range res.Scenario.Zones {
			if n := per[z.Name]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d in %s", n, z.Name))
			}
		}
		notes = append(notes, fmt.Sprintf("rows sampled: at most %d rows, shared round-robin across zones, each zone's evenly spaced over its changed nodes (first and last always)", svgMaxNodeRows),
			fmt.Sprintf("%d more changed nodes not shown (%s)", more, strings.Join(parts, ", ")))
	}
	if same := len(res.Nodes) - changed; same > 0 {
		notes = append(notes, fmt.Sprintf("%d nodes Ready throughout, not shown", same))
	}
	for i, n := range notes {
		fmt.Fprintf(w, `<text x="12" y="%.0f" fill="#444">%s</text>`+"\n", noteY+float64(i)*16, esc(n))
	}
	lx, ly := 12.0, legendY
	item := func(draw func(x, y float64), label string) {
		draw(lx, ly)
		fmt.Fprintf(w, `<text x="%.0f" y="%.0f" font-size="11">%s</text>`+"\n", lx+24, ly+10, esc(label))
		lx += 24 + float64(len(label))*6.2 + 18
	}
	newline := func() { lx, ly = 12, ly+20 }
	box := func(c string, h, dy float64) func(float64, float64) {
		return func(x, y float64) {
			fmt.Fprintf(w, `<rect x="%.0f" y="%.0f" width="18" height="%.0f" fill="%s"/>`+"\n", x, y+dy, h, c)
		}
	}
	item(box(colReady, 8, 2), "Ready")
	item(box(colNotReady, 8, 2), "NotReady")
	item(box(colUnknown, 8, 2), "Unknown")
	item(box(colTainted, 4, 4), "NoExecute health taint")
	item(box(colEvicted, 2, 5), "pods evicted (cumulative)")
	item(func(x, y float64) {
		fmt.Fprintf(w, `<rect x="%.0f" y="%.0f" width="2" height="12" fill="black"/>`+"\n", x+8, y)
	}, "pods evicted (count)")
	if res.Options.PodEvictionTimeout > 0 {
		item(func(x, y float64) {
			fmt.Fprintf(w, `<path d="M%.0f %.0f l5 -6 l5 6 l-5 6 z" fill="%s"/>`+"\n", x+4, y+6, colTainted)
		}, "queued for eviction (legacy)")
	}
	item(box(colPending, 8, 2), "pending at the end")
	newline()
	if res.Summary.Devices != nil {
		item(box(colDevTainted, 3, 4), "device tainted by its driver")
		item(box(colDevEvicted, 2, 5), "pods evicted for device taints")
		item(box(colHolding, 10, 0), "driver's breaker holding")
		item(box(colReleased, 10, 0), "hold released")
		newline()
	}
	item(box(colKubeletDown, 3, 4), "kubelet stopped")
	if slices.ContainsFunc(shown, func(tr *nodeTrack) bool {
		return slices.ContainsFunc(tr.kubeletDown, func(s span) bool { return s.what == kubeletWord(KindKubeletNotReady) })
	}) {
		item(box(colNotReady, 3, 4), "kubelet reports NotReady")
	}
	for _, st := range []string{"Normal", "PartialDisruption", "FullDisruption"} {
		item(box(stateColor[st], 10, 0), "zone "+st)
	}
	fmt.Fprintln(w, `</svg>`)
}

// drawBand draws a filled interval, labelled when the label fits.
func drawBand(w io.Writer, x1, x2, y, h float64, fill, label, labelColor string) {
	drawBandTitled(w, x1, x2, y, h, fill, label, label, labelColor)
}

// drawBandTitled is drawBand with a tooltip different from the label.
func drawBandTitled(w io.Writer, x1, x2, y, h float64, fill, label, title, labelColor string) {
	width := max(x2-x1, 1)
	fmt.Fprintf(w, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="%s">`, x1, y, width, h, fill)
	if title != "" {
		fmt.Fprintf(w, `<title>%s</title>`, esc(title))
	}
	fmt.Fprintln(w, `</rect>`)
	if label != "" && width > float64(len(label)*svgMinLabelW) {
		fmt.Fprintf(w, `<text x="%.1f" y="%.0f" font-size="10" fill="%s">%s</text>`+"\n", x1+4, y+h-3, labelColor, esc(label))
	}
}

func esc(s string) string { return html.EscapeString(s) }

// nodeTracks builds every changed node's row from the timeline; it also
// returns how many nodes changed.
func nodeTracks(res *Result) ([]*nodeTrack, int) {
	end := res.Scenario.Duration.D()
	order := make(map[string]int, len(res.Nodes))
	for i, n := range res.Nodes {
		order[n.Name] = i
	}
	type state struct {
		health      string
		healthFrom  time.Duration
		taints      map[string]time.Duration // health NoExecute taint → since
		taintedFrom time.Duration
		downFrom    time.Duration
		down        Kind
		devTainted  map[string]bool // devices carrying a driver's taint
		devFrom     time.Duration
	}
	tracks := map[string]*nodeTrack{}
	states := map[string]*state{}
	get := func(e Entry) (*nodeTrack, *state) {
		tr, ok := tracks[e.Node]
		if !ok {
			tr = &nodeTrack{name: e.Node, zone: res.Nodes[order[e.Node]].Zone, order: order[e.Node]}
			tracks[e.Node] = tr
			states[e.Node] = &state{health: "Ready", taints: map[string]time.Duration{}, devTainted: map[string]bool{}}
		}
		return tr, states[e.Node]
	}
	setHealth := func(tr *nodeTrack, st *state, h string, t time.Duration) {
		if h == st.health {
			return
		}
		if t > st.healthFrom {
			tr.health = append(tr.health, span{st.healthFrom, t, st.health})
		}
		st.health, st.healthFrom = h, t
	}
	for _, e := range res.Entries {
		if e.Node == "" {
			continue
		}
		if _, ok := order[e.Node]; !ok {
			continue
		}
		tr, st := get(e)
		switch e.Kind {
		case KindNodeUnknown:
			setHealth(tr, st, "Unknown", e.At)
		case KindNodeNotReady:
			setHealth(tr, st, "NotReady", e.At)
		case KindNodeReady:
			setHealth(tr, st, "Ready", e.At)
		case KindTaintAdded, KindTaintRemoved:
			if !isHealthNoExecute(e.Taint) {
				continue
			}
			was := len(st.taints) > 0
			if e.Kind == KindTaintAdded {
				st.taints[e.Detail] = e.At
			} else {
				delete(st.taints, e.Detail)
			}
			switch now := len(st.taints) > 0; {
			case !was && now:
				st.taintedFrom = e.At
			case was && !now:
				tr.tainted = append(tr.tainted, span{st.taintedFrom, e.At, "NoExecute health taint"})
			}
		case KindKubeletStopped, KindKubeletNotReady:
			if st.down == "" {
				st.downFrom = e.At
			} else if st.down != e.Kind {
				tr.kubeletDown = append(tr.kubeletDown, span{st.downFrom, e.At, kubeletWord(st.down)})
				st.downFrom = e.At
			}
			st.down = e.Kind
		case KindKubeletStarted:
			if st.down != "" {
				tr.kubeletDown = append(tr.kubeletDown, span{st.downFrom, e.At, kubeletWord(st.down)})
				st.down = ""
			}
		case KindPodEvicted:
			if n := len(tr.evictions); n > 0 && tr.evictions[n-1].at == e.At {
				tr.evictions[n-1].n++
			} else {
				tr.evictions = append(tr.evictions, mark{e.At, 1})
			}
		case KindNodeEvicting:
			tr.evicting = append(tr.evicting, e.At)
		case KindDeviceTaint, KindDeviceUntaint:
			was := len(st.devTainted) > 0
			if e.Kind == KindDeviceTaint {
				st.devTainted[e.Device] = true
			} else {
				delete(st.devTainted, e.Device)
			}
			switch now := len(st.devTainted) > 0; {
			case !was && now:
				st.devFrom = e.At
			case was && !now:
				tr.devTainted = append(tr.devTainted, span{st.devFrom, e.At, "device tainted by its driver"})
			}
		case KindDevicePodEvicted:
			if n := len(tr.devEvicted); n > 0 && tr.devEvicted[n-1].at == e.At {
				tr.devEvicted[n-1].n++
			} else {
				tr.devEvicted = append(tr.devEvicted, mark{e.At, 1})
			}
		}
	}
	var out []*nodeTrack
	for name, tr := range tracks {
		st := states[name]
		tr.health = append(tr.health, span{st.healthFrom, end, st.health})
		if len(st.taints) > 0 {
			tr.tainted = append(tr.tainted, span{st.taintedFrom, end, "NoExecute health taint"})
		}
		if st.down != "" {
			tr.kubeletDown = append(tr.kubeletDown, span{st.downFrom, end, kubeletWord(st.down)})
		}
		if len(st.devTainted) > 0 {
			tr.devTainted = append(tr.devTainted, span{st.devFrom, end, "device tainted by its driver"})
		}
		out = append(out, tr)
	}
	slices.SortFunc(out, func(a, b *nodeTrack) int { return a.order - b.order })
	return out, len(out)
}

func kubeletWord(kind Kind) string {
	if kind == KindKubeletNotReady {
		return "reports NotReady"
	}
	return "stopped"
}

// mergeAlike merges runs of consecutive nodes of one zone whose rows would
// look the same into one row.
func mergeAlike(tracks []*nodeTrack) []*nodeTrack {
	sig := func(tr *nodeTrack) string {
		return fmt.Sprint(tr.zone, tr.health, tr.tainted, tr.kubeletDown, tr.evictions, tr.evicting, tr.devTainted, tr.devEvicted)
	}
	var out []*nodeTrack
	prev := ""
	for _, tr := range tracks {
		s := sig(tr)
		if n := len(out); n > 0 && s == prev && out[n-1].order+out[n-1].count == tr.order {
			out[n-1].count++
			out[n-1].last = tr.name
			continue
		}
		tr.count = 1
		out = append(out, tr)
		prev = s
	}
	return out
}

// pickRows chooses at most n rows: the rows are shared out round-robin
// across zones, and each zone shows its share evenly spaced over its rows
// (always its first and last), in name order.
func pickRows(tracks []*nodeTrack, zones []Zone, n int) []*nodeTrack {
	if len(tracks) <= n {
		return tracks
	}
	byZone := map[string][]*nodeTrack{}
	for _, tr := range tracks {
		byZone[tr.zone] = append(byZone[tr.zone], tr)
	}
	quota := map[string]int{}
	for left := n; left > 0; {
		gave := false
		for _, z := range zones {
			if quota[z.Name] < len(byZone[z.Name]) && left > 0 {
				quota[z.Name]++
				left--
				gave = true
			}
		}
		if !gave {
			break
		}
	}
	var out []*nodeTrack
	for _, z := range zones {
		ts, q := byZone[z.Name], quota[z.Name]
		switch {
		case q == 0:
		case q == 1:
			out = append(out, ts[0])
		default:
			for k := range q {
				out = append(out, ts[k*(len(ts)-1)/(q-1)])
			}
		}
	}
	slices.SortFunc(out, func(a, b *nodeTrack) int { return a.order - b.order })
	return slices.Compact(out)
}

// zoneSpans returns each zone's states over the run.
func zoneSpans(res *Result) map[string][]span {
	end := res.Scenario.Duration.D()
	out := map[string][]span{}
	for _, z := range res.Summary.Zones {
		var spans []span
		for i, s := range z.States {
			to := end
			if i+1 < len(z.States) {
				to = z.States[i+1].T
			}
			spans = append(spans, span{s.T, to, s.State})
		}
		out[z.Zone] = spans
	}
	return out
}

func disruptionSpans(res *Result) []span {
	var out []span
	for _, s := range res.Summary.FullDisruption {
		to := res.Scenario.Duration.D()
		if s.To != nil {
			to = *s.To
		}
		out = append(out, span{s.From, to, "full disruption"})
	}
	return out
}

// cumPoint is a cumulative count from an instant on.
type cumPoint struct {
	at time.Duration
	n  int
}

// cumulative returns, per zone (in Scenario.Zones order), the cumulative
// NoExecute health taints added (legacy: nodes queued for eviction) and
// pods evicted.
func cumulative(res *Result) (tainted, evicted [][]cumPoint) {
	zi := map[string]int{}
	for i, z := range res.Scenario.Zones {
		zi[z.Name] = i
	}
	tainted = make([][]cumPoint, len(zi))
	evicted = make([][]cumPoint, len(zi))
	add := func(series []cumPoint, at time.Duration) []cumPoint {
		n := len(series)
		if n > 0 && series[n-1].at == at {
			series[n-1].n++
			return series
		}
		c := 1
		if n > 0 {
			c = series[n-1].n + 1
		}
		return append(series, cumPoint{at, c})
	}
	legacy := res.Options.PodEvictionTimeout > 0
	for _, e := range res.Entries {
		i, ok := zi[e.Zone]
		if !ok {
			continue
		}
		switch {
		case !legacy && e.Kind == KindTaintAdded && isHealthNoExecute(e.Taint),
			legacy && e.Kind == KindNodeEvicting:
			tainted[i] = add(tainted[i], e.At)
		case e.Kind == KindPodEvicted:
			evicted[i] = add(evicted[i], e.At)
		}
	}
	return tainted, evicted
}

// drawCumulative draws one small chart per zone from top: the cumulative
// nodes tainted (red) and pods evicted (dark blue) as step lines, each
// scaled to the zone's nodes or pods, and the pending work at the right
// edge (orange).
func drawCumulative(w io.Writer, res *Result, top float64, x func(time.Duration) float64) {
	end := res.Scenario.Duration.D()
	tainted, evicted := cumulative(res)
	verb := "tainted"
	if res.Options.PodEvictionTimeout > 0 {
		verb = "queued"
	}
	fmt.Fprintf(w, `<text x="12" y="%.0f" font-size="11" fill="#444"><tspan font-weight="bold">CUMULATIVE (per zone)</tspan>  nodes %s and pods evicted over time, each line scaled to the zone's nodes that went down (n/down) and their pods</text>`+"\n", top-8, verb)
	for i, z := range res.Summary.Zones {
		ry := top + float64(i)*svgCumRow
		fmt.Fprintf(w, `<text x="12" y="%.0f">%s</text>`+"\n", ry+13, esc(z.Zone))
		nt, ne := 0, 0
		if n := len(tainted[i]); n > 0 {
			nt = tainted[i][n-1].n
		}
		if n := len(evicted[i]); n > 0 {
			ne = evicted[i][n-1].n
		}
		// Scale: the nodes that went down (or were tainted) and their pods.
		down := max(z.NodesUnknown, nt)
		downPods := max(ne, down*z.Pods/max(z.Nodes, 1))
		fmt.Fprintf(w, `<text x="12" y="%.0f" font-size="10" fill="%s">%d/%d nodes %s</text>`+"\n", ry+26, colTainted, nt, down, verb)
		fmt.Fprintf(w, `<text x="12" y="%.0f" font-size="10" fill="%s">%d/%d pods evicted</text>`+"\n", ry+38, colEvicted, ne, downPods)
		fmt.Fprintf(w, `<rect x="%d" y="%.0f" width="%d" height="%d" fill="none" stroke="#ccc"/>`+"\n", svgLeft, ry+2, svgChartW, svgCumH)
		base := ry + 2 + svgCumH
		step := func(series []cumPoint, total int, colour, what string) {
			if len(series) == 0 {
				return
			}
			total = max(total, series[len(series)-1].n, 1)
			yv := func(n int) float64 { return base - float64(svgCumH-2)*float64(n)/float64(total) }
			var b strings.Builder
			fmt.Fprintf(&b, "%.1f,%.1f", x(0), base)
			prev := 0
			for _, p := range series {
				fmt.Fprintf(&b, " %.1f,%.1f %.1f,%.1f", x(p.at), yv(prev), x(p.at), yv(p.n))
				prev = p.n
			}
			fmt.Fprintf(&b, " %.1f,%.1f", x(end), yv(prev))
			fmt.Fprintf(w, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"><title>%s: %d by the end</title></polyline>`+"\n", b.String(), colour, esc(what), prev)
		}
		step(tainted[i], down, colTainted, "nodes "+verb)
		step(evicted[i], downPods, colEvicted, "pods evicted")
		if p := res.Summary.Pending; p != nil && i < len(p.Zones) && (p.Zones[i].NodesQueued > 0 || p.Zones[i].Evictions > 0) {
			zp := p.Zones[i]
			label := "pending at the end: " + pendingLabel(zp)
			xr := x(end)
			fmt.Fprintf(w, `<path d="M%.1f %.1f l-9 -6 l0 12 z" fill="%s"><title>%s</title></path>`+"\n", xr, ry+2+svgCumH/2, colPending, esc(label))
			fmt.Fprintf(w, `<text x="%.1f" y="%.0f" text-anchor="end" font-size="10" fill="%s" font-weight="bold" stroke="white" stroke-width="3" paint-order="stroke">%s</text>`+"\n", xr-12, ry+14, colPending, esc(label))
		}
	}
}

// pendingLabel says in one line what a zone still had to do at the end
// (without a "pending at the end: " prefix).
func pendingLabel(zp ZonePending) string {
	var parts []string
	if zp.NodesQueued > 0 {
		parts = append(parts, plural(zp.NodesQueued, "node", "nodes")+" queued")
	}
	if zp.Evictions > 0 {
		parts = append(parts, plural(zp.Evictions, "eviction", "evictions")+" scheduled")
	}
	s := strings.Join(parts, ", ")
	switch {
	case zp.NodesQueued > 0 && zp.Rate == 0:
		s += "; zone rate 0: never tainted"
	case zp.LastEviction != nil:
		s += "; last eviction ≈ " + Offset(*zp.LastEviction)
	case zp.LastTaint != nil:
		s += "; last taint ≈ " + Offset(*zp.LastTaint)
	}
	return s
}
