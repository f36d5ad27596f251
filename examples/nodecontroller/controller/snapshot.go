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

// ConfigMapStore is a SnapshotStore backed by one ConfigMap, created on the
// first Save. Save reads the ConfigMap and writes it back with its
// resourceVersion, so a concurrent writer makes it fail with a conflict
// rather than be overwritten.
type ConfigMapStore struct {
	client          kubernetes.Interface
	namespace, name string
}

// NewConfigMapStore returns a store that keeps the snapshot in the ConfigMap
// namespace/name.
func NewConfigMapStore(client kubernetes.Interface, namespace, name string) (*ConfigMapStore, error) {
	if client == nil || namespace == "" || name == "" {
		return nil, fmt.Errorf("%w: ConfigMapStore needs a client, a namespace and a name", ErrInvalidConfig)
	}
	return &ConfigMapStore{client: client, namespace: namespace, name: name}, nil
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
	rs, err := decodeRecords(data)
	if err != nil {
		return nil, fmt.Errorf("nodecontroller: load snapshot %s/%s: %w", s.namespace, s.name, err)
	}
	return rs, nil
}

// Save writes the records, creating the ConfigMap when it does not exist.
func (s *ConfigMapStore) Save(ctx context.Context, records []nodehealth.Record) error {
	data, err := encodeRecords(records)
	if err != nil {
		return fmt.Errorf("nodecontroller: save snapshot: %w", err)
	}
	cms := s.client.CoreV1().ConfigMaps(s.namespace)
	cm, err := cms.Get(ctx, s.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, &v1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.namespace},
			BinaryData: map[string][]byte{SnapshotKey: data},
		}, metav1.CreateOptions{FieldManager: Name})
	case err == nil:
		cm = cm.DeepCopy()
		if cm.BinaryData == nil {
			cm.BinaryData = map[string][]byte{}
		}
		cm.BinaryData[SnapshotKey] = data
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

func decodeRecords(data []byte) ([]nodehealth.Record, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(io.LimitReader(zr, 64<<20))
	if err != nil {
		return nil, err
	}
	var rs []nodehealth.Record
	if err := json.Unmarshal(raw, &rs); err != nil {
		return nil, errors.Join(errors.New("corrupt snapshot"), err)
	}
	return rs, nil
}
