package sim

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// wellFormed parses the whole document and returns its root element's name
// and every text node.
func wellFormed(t *testing.T, doc []byte) (string, string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	root, depth := "", 0
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				if root != "" {
					t.Fatalf("SVG has a second root element %q", tok.Name.Local)
				}
				root = tok.Name.Local
			}
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			text.Write(tok)
			text.WriteByte('\n')
		}
	}
	if depth != 0 {
		t.Fatalf("SVG ends with %d elements open", depth)
	}
	return root, text.String()
}

func svgOf(t *testing.T, res *Result) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteSVG(&buf, res); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSVGWellFormed(t *testing.T) {
	for _, tt := range []struct {
		name string
		opt  Options
		want []string // texts the chart must show
	}{
		{"offline-node-1.2x", Options{}, []string{"zone-a-0", "Unknown +45.0s", "10 evicted", "9 nodes Ready throughout, not shown", "zone-a", "Normal"}},
		{"offline-node-1.2x", Options{PodEvictionTimeout: 5 * time.Minute}, []string{"legacy node eviction", "queued for eviction at +5m5.0s", "10 evicted"}},
		{"all-dark", Options{}, []string{"full disruption", "FullDisruption", "zone-b-0 … zone-b-9", "10 nodes alike", "Ready +8m0.0s"}},
		{"zone-partial", Options{}, []string{"PartialDisruption", "zone-a-11 … zone-a-59", "49 nodes alike", "240 nodes Ready throughout"}},
		{"flapping-node", Options{}, []string{"Ready +5m0.0s", "kubelet stopped from +9m0.0s", "2 pods evicted at +1m55.0s"}},
	} {
		root, text := wellFormed(t, svgOf(t, runEmbedded(t, tt.name, tt.opt)))
		if root != "svg" {
			t.Errorf("%s: root element %q, want svg", tt.name, root)
		}
		for _, w := range tt.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s (%s): SVG lacks the text %q", tt.name, tt.opt.Mode(), w)
			}
		}
	}
}

// TestSVGBands: the flapping node's row has one band per health state it
// went through and one taint bar per outage, each ending when the state
// or the taint ended.
func TestSVGBands(t *testing.T) {
	doc := string(svgOf(t, runEmbedded(t, "flapping-node", Options{})))
	for _, want := range []string{
		"<title>Ready from +0.0s</title>", "<title>Unknown from +55.0s</title>", "<title>Ready from +2m0.0s</title>",
		"<title>Unknown from +3m55.0s</title>", "<title>Ready from +5m0.0s</title>",
		"<title>NoExecute health taint from +55.0s</title>", "<title>NoExecute health taint from +3m55.0s</title>",
		"<title>NoExecute health taint from +6m55.0s</title>",
		"<title>kubelet stopped from +9m0.0s</title>",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("SVG lacks %s", want)
		}
	}
	if n := strings.Count(doc, "<title>NoExecute health taint from"); n != 3 {
		t.Errorf("SVG has %d taint bars, want 3", n)
	}
	// A taint bar spans 55s to 2m: 1m5s of the 11m chart.
	want := fmt.Sprintf(`width="%.1f" height="4" fill="%s"><title>NoExecute health taint from +55.0s`, float64(svgChartW)*65/660, colTainted)
	if !strings.Contains(doc, want) {
		t.Errorf("SVG lacks the first taint bar %s", want)
	}
}

// TestSVGLimitsRows: with more changed nodes than rows, the chart draws at
// most svgMaxNodeRows of them, from every zone, and counts the rest.
func TestSVGLimitsRows(t *testing.T) {
	var b strings.Builder
	b.WriteString("duration: 30m\nzones:\n  - {name: a, nodes: 60}\n  - {name: b, nodes: 60}\n  - {name: c, nodes: 5}\nevents:\n")
	for i := range 60 { // each node stops at its own time: no two rows alike
		fmt.Fprintf(&b, "  - {at: %ds, action: stop, node: a-%02d}\n  - {at: %ds, action: stop, node: b-%02d}\n", 10*i, i, 10*i+5, i)
	}
	res := mustRun(t, load(t, b.String()), Options{})
	doc := svgOf(t, res)
	_, text := wellFormed(t, doc)
	rows := strings.Count(string(doc), `<text class="node"`)
	for _, want := range []string{"a-00", "a-59", "b-00", "b-59", "rows sampled: at most 40 rows, shared round-robin across zones", "80 more changed nodes not shown (40 in a, 40 in b)", "5 nodes Ready throughout, not shown"} {
		if !strings.Contains(text, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if rows != svgMaxNodeRows {
		t.Errorf("SVG has %d node rows, want %d", rows, svgMaxNodeRows)
	}
}

// TestSVGCumulativeAndPending: per zone, the cumulative nodes tainted and
// pods evicted, and the work pending at the end at the right edge.
func TestSVGCumulativeAndPending(t *testing.T) {
	res := runEmbedded(t, "zone-partial", Options{})
	doc := string(svgOf(t, res))
	_, text := wellFormed(t, []byte(doc))
	for _, want := range []string{
		"CUMULATIVE (per zone)", "11/60 nodes tainted", "80/600 pods evicted", "0/0 nodes tainted",
		"pending at the end: 49 nodes queued, 30 evictions scheduled; last eviction ≈ +1h45m15.0s",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if !strings.Contains(doc, "<title>nodes tainted: 11 by the end</title>") || !strings.Contains(doc, "<title>pods evicted: 80 by the end</title>") {
		t.Errorf("SVG lacks the cumulative step lines of zone-a")
	}
	// A finished run marks nothing pending.
	if doc := string(svgOf(t, runEmbedded(t, "offline-node-1.2x", Options{}))); strings.Contains(doc, "pending at the end:") {
		t.Errorf("offline-node SVG marks pending work; the run finished")
	}
}
