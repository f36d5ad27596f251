package controller

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
)

// exactBounds measures a parsed document as scan estimates it: the nesting
// of mappings and sequences, and its nodes with an alias counted once.
func exactBounds(doc *yamlv3.Node) scanBounds {
	var b scanBounds
	var walk func(n *yamlv3.Node, depth int)
	walk = func(n *yamlv3.Node, depth int) {
		if n.Kind != yamlv3.DocumentNode {
			b.nodes++
		}
		if n.Kind == yamlv3.MappingNode || n.Kind == yamlv3.SequenceNode {
			depth++
			b.depth = max(b.depth, depth)
		}
		for _, c := range n.Content {
			walk(c, depth)
		}
	}
	walk(doc, 0)
	return b
}

func TestScanBounds(t *testing.T) {
	for _, tc := range []struct {
		name, yaml   string
		depth, nodes int
	}{
		{"flow", "{a: [b, c], d: {e: f}}\n", 2, 9},
		{"block", "a:\n  b: c\n  d:\n  - e\n  - f\n", 1, 6},
		{"compact sequences", "- - - x\n", 3, 1},
		{"empty entries", "-\n-\n- a\n", 1, 3},
		{"entry on the next line", "-\n  [a]\n", 1, 2},
		{"plain scalar with brackets", "a: b [c {d\nx: y\n", 0, 4},
		{"continuation lines", "a: b\n  [c\n  [d\n", 0, 2},
		{"continuation after the key's line", "a:\n    b\n  [c\n", 0, 2},
		{"quoted", "a: \"[[[\\\"[[\"\nb: '[[''[['\n", 0, 4},
		{"quoted in flow", "[\"]]]\", '[[', x]\n", 1, 4},
		{"multi-line quoted", "a: \"x\n  [[[\"\nb: c\n", 0, 4},
		{"comments", "# [[[[\na: b # [[[[\n", 0, 2},
		{"block scalar", "a: |\n  [[[[\n  - - -\nb: [c]\n", 1, 5},
		{"document markers", "--- [a]\n...\n", 1, 2},
		{"directive", "%YAML 1.1\n---\n- [a]\n", 2, 2},
		{"colon in flow plain scalar", "[a:b, \"c\":d]\n", 1, 4},
		{"anchors and aliases", "a: &x [b]\nc: *x\n", 1, 5},
		{"list of rows", "conditions:\n- type: A\n  status: \"True\"\n  taint: {key: k, effect: NoExecute}\n", 1, 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got scanBounds
			if line := scan([]byte(tc.yaml), 1<<30, 1<<30, &got); line != 0 {
				t.Fatalf("scan = line %d, want no limit", line)
			}
			if got.depth != tc.depth || got.nodes != tc.nodes {
				t.Errorf("scan bounds = %+v, want depth %d, nodes %d", got, tc.depth, tc.nodes)
			}
			var doc yamlv3.Node
			if err := yamlv3.Unmarshal([]byte(tc.yaml), &doc); err != nil {
				t.Fatal(err)
			}
			if exact := exactBounds(&doc); got.depth > exact.depth || got.nodes > exact.nodes {
				t.Errorf("scan bounds %+v above the parsed document's %+v", got, exact)
			}
		})
	}
}

// FuzzScanLowerBound: scan never estimates more depth or nodes than the
// document the YAML parser reads has, so its refusals are never wrong.
func FuzzScanLowerBound(f *testing.F) {
	for _, s := range []string{
		goodConfig, "- - - x\n", "-\n-\n- a\n", "a: b [c\n  [d\n", "[\"]]]\", '[[', x]\n", "a: |\n  [[\n",
		"--- [a]\n", "[a:b, \"c\":d]\n", "a: &x [b]\nc: *x\n", "? - a\n: - b\n", "{a: 1, b: [2, {c: 3}]}\n",
		"a:\n  - b: c\n    d: [e]\n", "- [a]\n- {b: c}\n", "a: >-\n  x\n\n  y\nb: 1\n", "\"a\": [b]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got scanBounds
		scan(data, 1<<30, 1<<30, &got)
		// The documents LoadConfig parses: one, read to its end (after an
		// indented root mapping the parser stops reading at a line less
		// indented, and the second Decode reports it).
		dec := yamlv3.NewDecoder(bytes.NewReader(data))
		var doc, next yamlv3.Node
		if dec.Decode(&doc) != nil || !errors.Is(dec.Decode(&next), io.EOF) {
			return
		}
		if exact := exactBounds(&doc); got.depth > exact.depth || got.nodes > exact.nodes {
			t.Fatalf("scan(%q) bounds %+v above the parsed document's %+v", data, got, exact)
		}
	})
}

func TestScanLimitsLines(t *testing.T) {
	deep := "a: b\nc: " + strings.Repeat("[", MaxConfigDepth+1) + "\n"
	if err := scanLimits([]byte(deep)); err == nil || !strings.Contains(err.Error(), "deeper than 16 levels (MaxConfigDepth) at line 2") {
		t.Errorf("scanLimits(deep) = %v", err)
	}
	wide := "a: b\nc: [" + strings.Repeat("x,", MaxConfigNodes) + "]\n"
	if err := scanLimits([]byte(wide)); err == nil || !strings.Contains(err.Error(), "more than 8192 YAML nodes (MaxConfigNodes), at line 2") {
		t.Errorf("scanLimits(wide) = %v", err)
	}
	if err := scanLimits([]byte(goodConfig)); err != nil {
		t.Errorf("scanLimits(good) = %v", err)
	}
}
