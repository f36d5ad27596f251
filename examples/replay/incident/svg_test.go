package incident

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// svgDoc is what a test reads back from an SVG: the node rows' labels,
// every text outside tooltips, every tooltip.
type svgDoc struct {
	nodes, texts, titles []string
}

// parseSVG walks the SVG with an XML decoder: it fails on anything that
// is not well-formed XML.
func parseSVG(t *testing.T, b []byte) svgDoc {
	t.Helper()
	var doc svgDoc
	dec := xml.NewDecoder(bytes.NewReader(b))
	type open struct {
		name string
		node bool
		text strings.Builder
	}
	var stack []*open
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, b)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
			o := &open{name: tok.Name.Local}
			for _, a := range tok.Attr {
				o.node = o.node || (a.Name.Local == "class" && a.Value == "node")
			}
			stack = append(stack, o)
		case xml.CharData:
			if n := len(stack); n > 0 {
				stack[n-1].text.Write(tok)
			}
		case xml.EndElement:
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			switch o.name {
			case "title":
				doc.titles = append(doc.titles, o.text.String())
			case "text", "tspan":
				doc.texts = append(doc.texts, o.text.String())
				if o.node {
					doc.nodes = append(doc.nodes, o.text.String())
				}
			}
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	return doc
}

func writeSVG(t *testing.T, r *Report) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteSVG(&b); err != nil {
		t.Fatalf("WriteSVG() error = %v", err)
	}
	return b.Bytes()
}

func containing(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.Contains(x, s) })
}

// TestWriteSVG draws the shipped outage under a 60s grace with a Lease
// watch stall: n1's row with both lanes' decisions as tooltips, its
// silence, the stall, the first divergence and the two pods saved.
func TestWriteSVG(t *testing.T) {
	opt := ReplayOptions{Policy: policy(t, "--node-monitor-grace-period=60s"),
		LeaseWatchStalls: []Window{{From: epoch.Add(10 * time.Second), To: epoch.Add(40 * time.Second)}}}
	h, run, _ := replayLog(t, shipped("Request").build(), opt)
	rep := NewReport(h, opt, run)
	b := writeSVG(t, rep)
	doc := parseSVG(t, b)
	if want := []string{"n1"}; !slices.Equal(doc.nodes, want) {
		t.Errorf("rows %q, want %q", doc.nodes, want)
	}
	for _, d := range h.Recorded {
		if want := fmt.Sprintf("recorded %s at %s (%s)\nnode: %s", d.Kind, rfc(d.Time), Offset(h.First, d.Time), d.Node); !containing(doc.titles, want) {
			t.Errorf("no tooltip %q", want)
		}
	}
	for _, d := range run.Replayed {
		if want := fmt.Sprintf("replayed %s at %s", d.Kind, rfc(d.Time)); !containing(doc.titles, want) {
			t.Errorf("no tooltip %q", want)
		}
	}
	for _, want := range []string{"2 pods:\n  default/n1-web-0\n  default/n1-web-1", "taint: node.kubernetes.io/unreachable:NoExecute", "missing from the replay",
		"kubelet of n1 silent (no Lease renewal or status post) from +50.01s to +2m20.01s", "Lease watch stalled (modelled) from +9.999s to +39.999s",
		"first divergence at 2026-01-01T00:01:40Z (+1m39.999s): late node-unknown n1 (20.001s)", "saved: default/n1-web-0"} {
		if !containing(doc.titles, want) {
			t.Errorf("no tooltip %q in %q", want, doc.titles)
		}
	}
	for _, want := range []string{"replay of the audit log from 2026-01-01T00:00:00.001Z to 2026-01-01T00:04:00.021Z",
		"policy: --node-monitor-grace-period=1m0s; monitor pass phase 0s", "decisions matched 7, missing 2, extra 0; pods saved 2, newly lost 0",
		"+30s", "+4m", "2 saved", "0 lost", "first divergence +1m39.999s"} {
		if !containing(doc.texts, want) {
			t.Errorf("no text %q in %q", want, doc.texts)
		}
	}
	if !bytes.Equal(b, writeSVG(t, rep)) {
		t.Error("two writes of one report differ")
	}
}

// TestWriteSVGDeterministic: two replays of a log give the same bytes.
func TestWriteSVGDeterministic(t *testing.T) {
	opt := ReplayOptions{Policy: policy(t, "--feature-gates=NodeControllerLeaseCircuitBreaker=false"),
		LeaseWatchStalls: []Window{{From: epoch.Add(10 * time.Second), To: epoch.Add(70 * time.Second)}},
		NodeWatchStalls:  []Window{{From: epoch.Add(20 * time.Second), To: epoch.Add(30 * time.Second)}}}
	var first []byte
	for i := range 2 {
		h, run, _ := replayLog(t, (&gen{nodes: 6, podsPerNode: 3, duration: 7 * time.Minute, stop: "n0", stopAt: time.Second}).build(), opt)
		b := writeSVG(t, NewReport(h, opt, run))
		if i == 0 {
			first = b
			doc := parseSVG(t, b)
			if len(doc.nodes) != 6 || !containing(doc.titles, "Node watch stalled (modelled) from +19.999s to +29.999s") {
				t.Errorf("rows %q, want the 6 nodes, and the Node stall", doc.nodes)
			}
			continue
		}
		if !bytes.Equal(b, first) {
			t.Fatal("the second replay's SVG differs from the first's")
		}
	}
}

// hostileName is a node and pod name no API server admits, as a forged log
// may carry.
const hostileName = `<script>&"`

// syntheticReport is a report of nodes decisions, one node-unknown and one
// pod eviction each, recorded and replayed, without a log.
func syntheticReport(nodes int, name func(i int) string) *Report {
	h := &History{First: epoch, Last: epoch.Add(10 * time.Minute)}
	run := &Run{Policy: DefaultPolicy(), Origin: epoch, End: epoch.Add(10 * time.Minute)}
	for i := range nodes {
		at := epoch.Add(time.Duration(i) * time.Second)
		n := name(i)
		h.Recorded = append(h.Recorded, Decision{Time: at, Kind: KindNodeUnknown, Node: n},
			Decision{Time: at.Add(5 * time.Minute), Kind: KindPodEvicted, Node: n, Pod: "ns/" + n})
		run.Replayed = append(run.Replayed, Decision{Time: at.Add(10 * time.Second), Kind: KindNodeUnknown, Node: n})
	}
	sortDecisions(h.Recorded)
	return NewReport(h, ReplayOptions{Policy: run.Policy}, run)
}

func TestWriteSVGEscapes(t *testing.T) {
	rep := syntheticReport(1, func(int) string { return hostileName })
	rep.Run.Replayed = append(rep.Run.Replayed, Decision{Time: epoch.Add(time.Minute), Kind: KindTaintAdded, Node: hostileName, Detail: hostileName + ":NoExecute"})
	rep.Comparison = Compare(rep.History, rep.Run)
	b := writeSVG(t, rep)
	if bytes.Contains(b, []byte("<script")) {
		t.Errorf("the SVG holds %q unescaped:\n%s", "<script", b)
	}
	doc := parseSVG(t, b) // the escaped names read back as they were
	if want := []string{hostileName}; !slices.Equal(doc.nodes, want) {
		t.Errorf("rows %q, want %q", doc.nodes, want)
	}
	for _, want := range []string{"node: " + hostileName, "pod: ns/" + hostileName, "taint: " + hostileName + ":NoExecute", "saved: ns/" + hostileName} {
		if !containing(doc.titles, want) {
			t.Errorf("no tooltip %q in %q", want, doc.titles)
		}
	}
	// Control characters and invalid UTF-8 XML cannot carry.
	rep = syntheticReport(1, func(int) string { return "n\x00\x1b\xff" + strings.Repeat("x", 10_000) })
	b = writeSVG(t, rep)
	parseSVG(t, b)
	if len(b) > 30_000 {
		t.Errorf("a 10,000-character name makes an SVG of %d bytes, want its text clipped", len(b))
	}
}

func TestWriteSVGBounds(t *testing.T) {
	rep := syntheticReport(MaxSVGRows+7, func(i int) string { return fmt.Sprintf("node-%04d", i) })
	doc := parseSVG(t, writeSVG(t, rep))
	if len(doc.nodes) != MaxSVGRows || doc.nodes[0] != "node-0000" || doc.nodes[MaxSVGRows-1] != fmt.Sprintf("node-%04d", MaxSVGRows-1) {
		t.Errorf("%d rows (%q ... %q), want the first %d nodes hit", len(doc.nodes), doc.nodes[0], doc.nodes[len(doc.nodes)-1], MaxSVGRows)
	}
	if want := fmt.Sprintf("and 7 more nodes not drawn (at most %d rows", MaxSVGRows); !containing(doc.texts, want) {
		t.Errorf("no text %q", want)
	}

	// One node's decisions, each at its own instant, past the markers'
	// bound.
	h := &History{First: epoch, Last: epoch.Add(time.Hour)}
	run := &Run{Policy: DefaultPolicy(), Origin: epoch, End: epoch.Add(time.Hour)}
	for i := range MaxSVGMarkers + 5 {
		h.Recorded = append(h.Recorded, Decision{Time: epoch.Add(time.Duration(i) * 100 * time.Millisecond), Kind: KindTaintRemoved, Node: "n", Detail: "k:NoSchedule"})
	}
	b := writeSVG(t, &Report{History: h, Run: run, Comparison: &Comparison{}})
	if n := bytes.Count(b, []byte("<g><title>")); n != MaxSVGMarkers {
		t.Errorf("%d markers, want %d", n, MaxSVGMarkers)
	}
	if want := fmt.Sprintf("and 5 more decisions not drawn (at most %d markers)", MaxSVGMarkers); !bytes.Contains(b, []byte(want)) {
		t.Errorf("no text %q", want)
	}

	// Kubelet silences (at most maxSilences a node) and watch stalls.
	run = &Run{Policy: DefaultPolicy(), Origin: epoch, End: epoch.Add(24 * time.Hour), nodes: map[string]*nodeFacts{}}
	nodes := MaxSVGMarkers/maxSilences + 1
	for i := range nodes {
		f := &nodeFacts{}
		for k := range maxSilences {
			from := epoch.Add(time.Duration(k) * time.Minute)
			f.silences = append(f.silences, Window{From: from, To: from.Add(30 * time.Second)})
		}
		run.nodes[fmt.Sprint("n", i)] = f
	}
	for k := range svgMaxStalls + 3 {
		at := epoch.Add(time.Duration(k) * time.Minute)
		run.Notes = append(run.Notes, Note{Time: at, Kind: NoteLeaseStalled}, Note{Time: at.Add(time.Second), Kind: NoteLeaseResumed})
	}
	b = writeSVG(t, &Report{History: &History{First: epoch}, Run: run})
	doc = parseSVG(t, b)
	for _, want := range []string{fmt.Sprintf("and %d more kubelet silences not drawn", nodes*maxSilences-MaxSVGMarkers), "and 3 more watch stalls not drawn"} {
		if !containing(doc.texts, want) {
			t.Errorf("no text %q", want)
		}
	}
}

// TestWriteSVGOdd: reports a caller may build by hand draw without
// panicking, as well-formed SVG.
func TestWriteSVGOdd(t *testing.T) {
	full := syntheticReport(2, func(i int) string { return fmt.Sprint("n", i) })
	for _, tt := range []struct {
		name string
		r    *Report
	}{
		{"nil report", nil},
		{"empty", &Report{}},
		{"no run", &Report{History: full.History}},
		{"no comparison", &Report{History: full.History, Run: full.Run}},
		{"zero times", &Report{History: &History{Recorded: []Decision{{Kind: KindPodEvicted}, {Kind: "unknown-kind", Node: "n"}}}, Run: &Run{},
			Comparison: &Comparison{First: &Divergence{What: "missing"}, Saved: []PodOutcome{{}}}}},
		{"times before the origin", &Report{History: full.History, Run: &Run{Origin: epoch.Add(time.Hour), End: epoch}, Comparison: full.Comparison}},
		{"open stall", &Report{History: full.History, Run: &Run{Origin: epoch, End: epoch.Add(time.Minute), Notes: []Note{{Time: epoch, Kind: NoteLeaseStalled}, {Time: epoch, Kind: NoteNodeResumed}}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := parseSVG(t, writeSVG(t, tt.r))
			if len(doc.texts) == 0 {
				t.Error("no text")
			}
		})
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteSVGError(t *testing.T) {
	if err := syntheticReport(1, func(int) string { return "n" }).WriteSVG(failWriter{}); err == nil || err.Error() != "disk full" {
		t.Errorf("WriteSVG() error = %v, want disk full", err)
	}
}

// TestWriteSVGShippedIncident draws a reconstructed incident (five nodes,
// a Lease watch stall) and bounds its size.
func TestWriteSVGShippedIncident(t *testing.T) {
	i := slices.IndexFunc(reconstructions(), func(r *reconstruction) bool { return r.file == "reconstructed-121793-lease-watch-http2.audit.jsonl" })
	if i < 0 {
		t.Fatal("no reconstruction of #121793")
	}
	opt := ReplayOptions{Policy: policy(t, measuredPeriod, "--node-monitor-grace-period=40s", "--feature-gates=NodeControllerLeaseCircuitBreaker=false")}
	h, run, _ := replayLog(t, reconstructions()[i].build(), opt)
	b := writeSVG(t, NewReport(h, opt, run))
	if doc := parseSVG(t, b); len(doc.nodes) != 5 {
		t.Errorf("rows %q, want the 5 nodes", doc.nodes)
	}
	if len(b) > 60_000 {
		t.Errorf("%d bytes, want under 60 KB", len(b))
	}
}
