package controller

import (
	"fmt"

	yamlv3 "go.yaml.in/yaml/v3"
)

// Limits on the work LoadConfig does for one file. A real configuration is
// at most five levels deep (conditions[].taint.key) and, at the largest
// table Validate accepts (4*taints.MaxConditionTaints rows), about 3,700
// nodes; the limits leave room for that and refuse the rest before the
// document is converted, decoded or walked with paths.
const (
	// MaxConfigDepth is the deepest nesting of mappings and sequences
	// LoadConfig accepts.
	MaxConfigDepth = 16
	// MaxConfigNodes is the most YAML nodes (scalars, mappings, sequences)
	// LoadConfig accepts, counting every alias as the nodes it expands to.
	MaxConfigNodes = 8192
)

// scanLimits reads data once, without allocating, for lower bounds of its
// nesting depth and of its node count, and refuses it, with the line, when
// one passes MaxConfigDepth or MaxConfigNodes. It is the cheap refusal of
// the documents that cost the parser and the conversion to JSON the most
// (8,000 nested mappings in 40 KB used to cost LoadConfig 84 MiB, and
// 30,000 flow entries cost the parser 7 MiB); the exact limits are checked
// on the parsed tree (checkTree).
//
// The depth bound counts the flow collections ('[', '{') and the compact
// block sequences ("- - -") it can see without parsing; block mappings are
// not counted. The node bound counts the scalars that start where a node
// starts, the flow collections, and the block sequence entries left empty.
// What it skips never raises either bound: quoted scalars, comments, block
// scalars (from the indicator on, the lines indented deeper than their
// parent), and the continuation lines of a multi-line scalar. Outside
// quoted scalars a '[' or '{' inside a flow collection always opens one,
// and so does one at the start of a block node. FuzzScanLowerBound checks
// the bounds against the parsed tree.
func scanLimits(data []byte) error {
	if line := scan(data, MaxConfigDepth, MaxConfigNodes, nil); line < 0 {
		return fmt.Errorf("%w: more than %d YAML nodes (MaxConfigNodes), at line %d", ErrInvalidConfig, MaxConfigNodes, -line)
	} else if line > 0 {
		return fmt.Errorf("%w: nested deeper than %d levels (MaxConfigDepth) at line %d", ErrInvalidConfig, MaxConfigDepth, line)
	}
	return nil
}

// scanBounds are scan's estimates, for the tests.
type scanBounds struct{ depth, nodes int }

// scan is scanLimits' reader: it returns the line at which the depth bound
// passes maxDepth, minus the line at which the node bound passes maxNodes,
// or 0; into b, when not nil, the bounds it reached.
func scan(data []byte, maxDepth, maxNodes int, b *scanBounds) (line int) {
	const none = -2
	var (
		flow      int  // open flow collections
		lineSeq   int  // block sequence entries begun on this line ("- - ")
		nodeStart bool // a quoted scalar may start here
		strict    bool // and a node does start here (':' of "a:b" is not an indicator)
		lineStart = true
		skipAbove = none // skip the lines indented deeper than this
		parentCol = -1   // column of the last block key or "-" whose value is pending
		tokenCol  = -1   // column of the block token (scalar or flow collection) being read
		hasValue  bool   // this line's last block node has a value on it
		emptyDash = none // column of a "-" that ended its line: its entry may be empty
		quoteEnd  = -1   // index just after the last quoted scalar
		col       int
		depth     int
		nodes     int
	)
	line = 1
	if b != nil {
		defer func() { *b = scanBounds{depth, nodes} }()
	}
	// deeper and node record one more level or node, and report a limit.
	deeper := func() bool {
		depth = max(depth, flow+lineSeq)
		return flow+lineSeq > maxDepth
	}
	node := func() bool {
		nodes++
		return nodes > maxNodes
	}
	space := func(i int) bool {
		return i >= len(data) || data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r'
	}
	skipLine := func(i int) int {
		for i < len(data) && data[i] != '\n' {
			i++
		}
		return i
	}
	for i := 0; i < len(data); {
		c := data[i]
		if c == '\n' {
			if flow == 0 && hasValue {
				skipAbove = parentCol
			}
			line++
			i++
			lineStart, lineSeq, col, hasValue = true, 0, 0, false
			continue
		}
		if lineStart {
			lineStart = false
			indent := 0
			for i+indent < len(data) && (data[i+indent] == ' ' || data[i+indent] == '\t') {
				indent++
			}
			j := i + indent
			if flow > 0 || j >= len(data) || data[j] == '\n' || data[j] == '\r' || data[j] == '#' {
				i, col = j, indent // inside a flow collection, or a blank or comment line
				continue
			}
			if skipAbove != none && indent > skipAbove {
				i = skipLine(j) // a continuation or block scalar line
				hasValue = true
				continue
			}
			if emptyDash != none {
				if indent <= emptyDash && node() { // the entry was empty: a null node
					return -line
				}
				emptyDash = none
			}
			skipAbove = none
			if indent == 0 && j+3 <= len(data) && (string(data[j:j+3]) == "---" || string(data[j:j+3]) == "...") && space(j+3) {
				parentCol = -1
				if data[j] == '.' {
					i = skipLine(j)
					continue
				}
				j += 3 // a document start: a node may follow on the line
			} else if indent == 0 && data[j] == '%' {
				i = skipLine(j) // a directive
				continue
			}
			nodeStart, strict = true, true
			i, col = j, j-i
			continue
		}
		if c == ' ' || c == '\t' || c == '\r' {
			i++
			col++
			continue
		}
		if c == '#' && (i == 0 || space(i-1)) {
			i = skipLine(i)
			continue
		}
		if flow > 0 {
			wasStart, wasStrict := nodeStart, strict
			nodeStart, strict = false, false
			switch {
			case c == '[' || c == '{':
				flow++
				if deeper() {
					return line
				}
				if node() {
					return -line
				}
				nodeStart, strict = true, true
			case c == ']' || c == '}':
				flow--
				if flow == 0 {
					hasValue = true
				}
			case c == ',':
				nodeStart, strict = true, true
			case c == ':' || c == '?':
				// A quoted scalar may follow any ':'; a node follows an
				// indicator, which a ':' of a plain scalar ("a:b") is not.
				nodeStart = true
				strict = space(i+1) || isFlowIndicator(data[min(i+1, len(data)-1)]) || i == quoteEnd
			case wasStrict && (c == '&' || c == '!'):
				for i < len(data) && !space(i) && !isFlowIndicator(data[i]) {
					i++
				}
				nodeStart, strict = true, true
				continue
			default:
				if wasStrict && node() {
					return -line
				}
				if wasStart && (c == '"' || c == '\'') {
					i, line = skipQuoted(data, i, line)
					quoteEnd = i
					continue
				}
				// A plain scalar: read up to the next indicator.
				for i++; i < len(data) && !isFlowIndicator(data[i]) && data[i] != ':' && data[i] != '\n' && !(data[i] == '#' && space(i-1)); i++ {
				}
				continue
			}
			i++
			continue
		}
		// Block context.
		if nodeStart {
			switch {
			case (c == '-' || c == '?' || c == ':') && space(i+1):
				if c == '-' {
					lineSeq++
					if deeper() {
						return line
					}
					if j := skipSpaces(data, i+1); j >= len(data) || data[j] == '\n' || data[j] == '\r' || data[j] == '#' {
						emptyDash = col
					}
				}
				parentCol, hasValue = col, false
			case c == '[' || c == '{':
				flow++
				if deeper() {
					return line
				}
				if node() {
					return -line
				}
				tokenCol = col
				nodeStart, strict = true, true
			case c == '&' || c == '!':
				for i < len(data) && !space(i) {
					i++
					col++
				}
				continue
			default: // a scalar: plain, quoted, block or an alias
				if node() {
					return -line
				}
				tokenCol = col
				nodeStart, strict, hasValue = false, false, true
				switch c {
				case '"', '\'':
					start := line
					i, line = skipQuoted(data, i, line)
					if line != start {
						col = -len(data) // a key after a multi-line scalar is not read
					}
					continue
				case '|', '>':
					i = skipLine(i)
					continue
				}
			}
			i++
			col++
			continue
		}
		if c == ':' && space(i+1) {
			// The token before was a mapping key: its value is pending.
			parentCol, nodeStart, strict, hasValue = tokenCol, true, true, false
		}
		i++
		col++
	}
	if emptyDash != none && node() {
		return -line
	}
	return 0
}

func skipSpaces(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t') {
		i++
	}
	return i
}

func isFlowIndicator(c byte) bool { return c == ',' || c == '[' || c == ']' || c == '{' || c == '}' }

// skipQuoted skips the quoted scalar that starts at data[i] (a double or single quote)
// and returns the index after it and the line it ends on; an unterminated
// one runs to the end.
func skipQuoted(data []byte, i, line int) (int, int) {
	q := data[i]
	for i++; i < len(data); i++ {
		switch c := data[i]; {
		case c == '\n':
			line++
		case q == '"' && c == '\\':
			if i+1 < len(data) && data[i+1] == '\n' {
				line++
			}
			i++
		case c == q:
			if q == '\'' && i+1 < len(data) && data[i+1] == '\'' {
				i++
				continue
			}
			return i + 1, line
		}
	}
	return i, line
}

// checkTree enforces MaxConfigDepth and MaxConfigNodes on the parsed
// document, following aliases (an alias counts as what it expands to, so
// nested aliases, "billion laughs", stop at the node limit; a recursive one
// at the depth limit). It stops at the first node past a limit, so its own
// work is bounded by the limits.
func checkTree(doc *yamlv3.Node) error {
	nodes := 0
	var walk func(n *yamlv3.Node, depth int) error
	walk = func(n *yamlv3.Node, depth int) error {
		if n.Kind == yamlv3.AliasNode && n.Alias != nil {
			return walk(n.Alias, depth)
		}
		nodes++
		if nodes > MaxConfigNodes {
			return fmt.Errorf("%w: more than %d YAML nodes, aliases expanded (MaxConfigNodes), at line %d", ErrInvalidConfig, MaxConfigNodes, n.Line)
		}
		if n.Kind == yamlv3.MappingNode || n.Kind == yamlv3.SequenceNode {
			depth++
			if depth > MaxConfigDepth {
				return fmt.Errorf("%w: nested deeper than %d levels (MaxConfigDepth) at line %d", ErrInvalidConfig, MaxConfigDepth, n.Line)
			}
		}
		for _, c := range n.Content {
			if err := walk(c, depth); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(doc, 0)
}
