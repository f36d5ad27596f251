package controller

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubelifecycle/lifecycle/nodehealth"
	"github.com/kubelifecycle/lifecycle/taints"
)

// SnapshotStore persists the node health records (nodehealth.Record) across
// controller restarts. Load returns nil records and a nil error when nothing
// was saved yet. Implementations must be safe for concurrent use.
type SnapshotStore interface {
	Load(ctx context.Context) ([]nodehealth.Record, error)
	Save(ctx context.Context, records []nodehealth.Record) error
}

// NoSnapshots is the default SnapshotStore: it saves nothing and loads
// nothing, so a restart starts every node's grace period afresh (upstream).
type NoSnapshots struct{}

// Load returns no records.
func (NoSnapshots) Load(context.Context) ([]nodehealth.Record, error) { return nil, nil }

// Save does nothing.
func (NoSnapshots) Save(context.Context, []nodehealth.Record) error { return nil }

// SnapshotKey is the ConfigMap binaryData key ConfigMapStore uses: the
// records as gzip-compressed JSON. Compression keeps 5,000 nodes (about
// 1.5 MB of JSON) well under the 1 MiB object size limit.
const SnapshotKey = "nodehealth.json.gz"

// DeviceSnapshotKey is the ConfigMap binaryData key where ConfigMapStore
// keeps the device taint eviction duty's snapshot (DeviceSnapshotStore):
// a taints.DeviceSnapshot as gzip-compressed JSON.
const DeviceSnapshotKey = "devicetaints.json.gz"

// Limits on a snapshot ConfigMapStore reads, so that a corrupt or hostile
// ConfigMap (a small gzip stream can expand to gigabytes) cannot exhaust the
// controller's memory. They are ten times what the largest supported
// cluster (5,000 nodes, about 300 bytes of JSON each) needs.
const (
	// DefaultSnapshotMaxRecords is ConfigMapStore.MaxRecords' default.
	DefaultSnapshotMaxRecords = 50_000
	// DefaultSnapshotMaxBytes is ConfigMapStore.MaxBytes' default: the
	// decompressed JSON size.
	DefaultSnapshotMaxBytes = 32 << 20
)

// ErrSnapshotLimit is wrapped by the errors of a snapshot that exceeds
// ConfigMapStore.MaxRecords or MaxBytes.
var ErrSnapshotLimit = errors.New("snapshot exceeds a limit")

// ConfigMapStore is a SnapshotStore backed by one ConfigMap, created on the
// first Save. Save reads the ConfigMap and writes it back with its
// resourceVersion, so a concurrent writer makes it fail with a conflict
// rather than be overwritten. Load decodes the snapshot as a stream and
// stops with an error at MaxRecords records or MaxBytes decompressed bytes.
type ConfigMapStore struct {
	// MaxRecords is the most records Load accepts and Save writes; 0 means
	// DefaultSnapshotMaxRecords.
	MaxRecords int
	// MaxBytes is the most decompressed JSON bytes Load reads; 0 means
	// DefaultSnapshotMaxBytes.
	MaxBytes int64

	client          kubernetes.Interface
	namespace, name string
}

// NewConfigMapStore returns a store that keeps the snapshot in the ConfigMap
// namespace/name, with the default limits.
func NewConfigMapStore(client kubernetes.Interface, namespace, name string) (*ConfigMapStore, error) {
	if client == nil || namespace == "" || name == "" {
		return nil, fmt.Errorf("%w: ConfigMapStore needs a client, a namespace and a name", ErrInvalidConfig)
	}
	return &ConfigMapStore{client: client, namespace: namespace, name: name}, nil
}

// ObjectReference references the ConfigMap, for the Warning Event the
// controller records on it when the snapshot cannot be read.
func (s *ConfigMapStore) ObjectReference() *v1.ObjectReference {
	return &v1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: s.namespace, Name: s.name}
}

func (s *ConfigMapStore) limits() (records int, bytes int64) {
	records, bytes = s.MaxRecords, s.MaxBytes
	if records <= 0 {
		records = DefaultSnapshotMaxRecords
	}
	if bytes <= 0 {
		bytes = DefaultSnapshotMaxBytes
	}
	return records, bytes
}

// Load reads the records; a missing ConfigMap or key is no records.
func (s *ConfigMapStore) Load(ctx context.Context) ([]nodehealth.Record, error) {
	cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("nodecontroller: load snapshot %s/%s: %w", s.namespace, s.name, err)
	}
	data, ok := cm.BinaryData[SnapshotKey]
	if !ok {
		return nil, nil
	}
	maxRecords, maxBytes := s.limits()
	rs, err := decodeRecords(data, maxRecords, maxBytes)
	if err != nil {
		return nil, fmt.Errorf("nodecontroller: load snapshot %s/%s key %s: %w", s.namespace, s.name, SnapshotKey, err)
	}
	return rs, nil
}

// Save writes the records, creating the ConfigMap when it does not exist.
func (s *ConfigMapStore) Save(ctx context.Context, records []nodehealth.Record) error {
	if maxRecords, _ := s.limits(); len(records) > maxRecords {
		return fmt.Errorf("nodecontroller: save snapshot %s/%s: %w: %d records, more than MaxRecords = %d",
			s.namespace, s.name, ErrSnapshotLimit, len(records), maxRecords)
	}
	data, err := encodeRecords(records)
	if err != nil {
		return fmt.Errorf("nodecontroller: save snapshot: %w", err)
	}
	return s.save(ctx, SnapshotKey, data)
}

// LoadDevices reads the device taint eviction snapshot (DeviceSnapshotKey);
// a missing ConfigMap or key is an empty one. It is bounded as Load:
// MaxBytes of decompressed JSON, and MaxRecords entries (pods and rules).
func (s *ConfigMapStore) LoadDevices(ctx context.Context) (taints.DeviceSnapshot, error) {
	cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return taints.DeviceSnapshot{}, nil
	}
	if err != nil {
		return taints.DeviceSnapshot{}, fmt.Errorf("nodecontroller: load snapshot %s/%s: %w", s.namespace, s.name, err)
	}
	data, ok := cm.BinaryData[DeviceSnapshotKey]
	if !ok {
		return taints.DeviceSnapshot{}, nil
	}
	maxRecords, maxBytes := s.limits()
	ds, err := decodeDeviceSnapshot(data, maxRecords, maxBytes)
	if err != nil {
		return taints.DeviceSnapshot{}, fmt.Errorf("nodecontroller: load snapshot %s/%s key %s: %w", s.namespace, s.name, DeviceSnapshotKey, err)
	}
	return ds, nil
}

// SaveDevices writes the device taint eviction snapshot
// (DeviceSnapshotKey) beside the node health records, creating the
// ConfigMap when it does not exist; like Save, it fails with a conflict
// when the ConfigMap changed between its read and its write.
func (s *ConfigMapStore) SaveDevices(ctx context.Context, ds taints.DeviceSnapshot) error {
	if maxRecords, _ := s.limits(); len(ds.Evicted)+len(ds.Rules) > maxRecords {
		return fmt.Errorf("nodecontroller: save snapshot %s/%s: %w: %d device entries, more than MaxRecords = %d",
			s.namespace, s.name, ErrSnapshotLimit, len(ds.Evicted)+len(ds.Rules), maxRecords)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	err := json.NewEncoder(zw).Encode(ds)
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return fmt.Errorf("nodecontroller: save snapshot: %w", err)
	}
	return s.save(ctx, DeviceSnapshotKey, buf.Bytes())
}

// decodeDeviceSnapshot decodes a gzip-compressed JSON DeviceSnapshot,
// reading at most maxBytes decompressed bytes and accepting at most
// maxRecords entries.
func decodeDeviceSnapshot(data []byte, maxRecords int, maxBytes int64) (taints.DeviceSnapshot, error) {
	var ds taints.DeviceSnapshot
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return ds, fmt.Errorf("corrupt snapshot: %w", err)
	}
	defer zr.Close()
	dec := json.NewDecoder(&spaceCollapser{r: &capReader{r: zr, left: maxBytes, limit: maxBytes}})
	if err := dec.Decode(&ds); err != nil {
		return taints.DeviceSnapshot{}, corrupt(err)
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("data after the snapshot: %v", tok)
		}
		return taints.DeviceSnapshot{}, corrupt(err)
	}
	if n := len(ds.Evicted) + len(ds.Rules); n > maxRecords {
		return taints.DeviceSnapshot{}, fmt.Errorf("%w: %d device entries, more than MaxRecords = %d", ErrSnapshotLimit, n, maxRecords)
	}
	return ds, nil
}

// save writes data under key, creating the ConfigMap when it does not
// exist, else updating it with the resourceVersion read.
func (s *ConfigMapStore) save(ctx context.Context, key string, data []byte) error {
	cms := s.client.CoreV1().ConfigMaps(s.namespace)
	cm, err := cms.Get(ctx, s.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, &v1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.namespace},
			BinaryData: map[string][]byte{key: data},
		}, metav1.CreateOptions{FieldManager: Name})
	case err == nil:
		cm = cm.DeepCopy()
		if cm.BinaryData == nil {
			cm.BinaryData = map[string][]byte{}
		}
		cm.BinaryData[key] = data
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: Name})
	}
	if err != nil {
		return fmt.Errorf("nodecontroller: save snapshot %s/%s: %w", s.namespace, s.name, err)
	}
	return nil
}

func encodeRecords(rs []nodehealth.Record) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(rs); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeRecords decodes the gzip-compressed JSON array of records one
// record at a time, reading at most maxBytes decompressed bytes and
// accepting at most maxRecords records, so that memory stays bounded
// whatever the input, and in time linear in the decompressed size (see
// spaceCollapser). Data after the array is corrupt.
func decodeRecords(data []byte, maxRecords int, maxBytes int64) ([]nodehealth.Record, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("corrupt snapshot: %w", err)
	}
	defer zr.Close()
	dec := json.NewDecoder(&spaceCollapser{r: &capReader{r: zr, left: maxBytes, limit: maxBytes}})
	tok, err := dec.Token()
	if err != nil {
		return nil, corrupt(err)
	}
	if tok == nil { // null: an empty snapshot
		return nil, nil
	}
	if tok != json.Delim('[') {
		return nil, fmt.Errorf("corrupt snapshot: want a JSON array of records, got %v", tok)
	}
	var rs []nodehealth.Record
	for dec.More() {
		if len(rs) == maxRecords {
			return nil, fmt.Errorf("%w: more than MaxRecords = %d records", ErrSnapshotLimit, maxRecords)
		}
		var r nodehealth.Record
		if err := dec.Decode(&r); err != nil {
			return nil, corrupt(err)
		}
		rs = append(rs, r)
	}
	if _, err := dec.Token(); err != nil { // the closing ]
		return nil, corrupt(err)
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("data after the array: %v", tok)
		}
		return nil, corrupt(err)
	}
	return rs, nil
}

func corrupt(err error) error {
	if errors.Is(err, ErrSnapshotLimit) {
		return err
	}
	return fmt.Errorf("corrupt snapshot: %w", err)
}

// capReader reads from r and fails with an error wrapping ErrSnapshotLimit
// once more than limit bytes were read (io.LimitReader would end the stream
// quietly, and the decoder would report a truncated value instead).
type capReader struct {
	r           io.Reader
	left, limit int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		n, err := io.ReadFull(c.r, one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: more than MaxBytes = %d decompressed bytes", ErrSnapshotLimit, c.limit)
		}
		if err == nil || err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// spaceCollapser passes JSON through with every run of whitespace outside
// strings cut to its first byte, which changes no JSON value (and keeps
// invalid input invalid). encoding/json's Decoder needs it for linear time:
// Token and More skip whitespace without consuming it (Decoder.peek), so a
// run of whitespace between tokens stays in the decoder's buffer and is
// scanned again after every read that grows the buffer: quadratic in the
// run's length (16 MiB of spaces, a 16 KiB gzip stream, took seconds). Runs
// of at most one byte keep each rescan to one byte.
type spaceCollapser struct {
	r                         io.Reader
	inString, escaped, spaced bool
}

func (s *spaceCollapser) Read(p []byte) (int, error) {
	for {
		n, err := s.r.Read(p)
		w := 0
		for _, c := range p[:n] {
			switch {
			case s.inString:
				switch {
				case s.escaped:
					s.escaped = false
				case c == '\\':
					s.escaped = true
				case c == '"':
					s.inString = false
				}
			case c == ' ' || c == '\t' || c == '\n' || c == '\r':
				if s.spaced {
					continue
				}
				s.spaced = true
				p[w] = c
				w++
				continue
			case c == '"':
				s.inString = true
			}
			s.spaced = false
			p[w] = c
			w++
		}
		if w > 0 || err != nil || n == 0 {
			return w, err
		}
	}
}
