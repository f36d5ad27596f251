package simulate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// MaxReadBytes is the most bytes ReadObjects reads.
const MaxReadBytes = 1 << 30

// readLimit is MaxReadBytes, lowered by the tests.
var readLimit int64 = MaxReadBytes

// ReadObjects reads nodes and pods from YAML or JSON as kubectl prints them
// (kubectl get nodes,pods -A -o yaml): a stream of documents, each a Node, a
// Pod, or a List, NodeList or PodList of them. Other kinds are errors that
// name the document and the kind. At most MaxReadBytes and MaxObjects.
func ReadObjects(r io.Reader) (nodes []v1.Node, pods []v1.Pod, err error) {
	lr := &limitReader{r: r, left: readLimit}
	dec := utilyaml.NewYAMLOrJSONDecoder(lr, 4096)
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return nodes, pods, nil
			}
			if lr.over {
				return nil, nil, fmt.Errorf("%w: more than %d bytes (MaxReadBytes)", ErrLimit, readLimit)
			}
			return nil, nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		if err := add(raw, "", false, &nodes, &pods); err != nil {
			return nil, nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if n := len(nodes) + len(pods); n > MaxObjects {
			return nil, nil, fmt.Errorf("%w: more than %d nodes and pods (MaxObjects)", ErrLimit, MaxObjects)
		}
	}
}

// add decodes one object (kind defaulting to the list's item kind; inList:
// it is an item of a list).
func add(raw json.RawMessage, itemKind string, inList bool, nodes *[]v1.Node, pods *[]v1.Pod) error {
	var head struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return err
	}
	kind := head.Kind
	if kind == "" {
		kind = itemKind
	}
	switch kind {
	case "Node":
		var n v1.Node
		if err := json.Unmarshal(raw, &n); err != nil {
			return fmt.Errorf("node: %w", err)
		}
		*nodes = append(*nodes, n)
	case "Pod":
		var p v1.Pod
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("pod: %w", err)
		}
		*pods = append(*pods, p)
	case "List", "NodeList", "PodList":
		if inList {
			return fmt.Errorf("a %s inside a list", kind)
		}
		item := map[string]string{"NodeList": "Node", "PodList": "Pod"}[kind]
		for i, it := range head.Items {
			if err := add(it, item, true, nodes, pods); err != nil {
				return fmt.Errorf("items[%d]: %w", i, err)
			}
			if n := len(*nodes) + len(*pods); n > MaxObjects {
				return fmt.Errorf("%w: more than %d nodes and pods (MaxObjects)", ErrLimit, MaxObjects)
			}
		}
	default:
		return fmt.Errorf("kind %q: want Node, Pod, or a List, NodeList or PodList of them", kind)
	}
	return nil
}

// limitReader reads at most left bytes, and notes when the input had more.
type limitReader struct {
	r    io.Reader
	left int64
	over bool
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var one [1]byte
		if n, _ := l.r.Read(one[:]); n > 0 {
			l.over = true
			return 0, ErrLimit
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
